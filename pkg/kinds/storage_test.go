package kinds

import (
	"strings"
	"testing"
)

func TestParseGroupResource(t *testing.T) {
	tests := []struct {
		in      string
		want    GroupResource
		wantErr []string // substrings of the error, all required
	}{
		{in: "/events", want: GroupResource{Resource: "events"}},
		{in: "apps/deployments", want: GroupResource{Group: "apps", Resource: "deployments"}},
		{in: "coordination.k8s.io/leases", want: GroupResource{Group: "coordination.k8s.io", Resource: "leases"}},
		{in: "apps/*", want: GroupResource{Group: "apps", Resource: "*"}},
		{in: "/Events", want: GroupResource{Resource: "Events"}}, // syntax only: StoredResource says no
		{in: "", wantErr: []string{"empty group/resource"}},
		{in: "events", wantErr: []string{"no '/'", `"/events"`}},
		{in: "/registry/events", wantErr: []string{"etcd key path"}},
		{in: "/pods/status", wantErr: []string{"has 2 '/'"}},
		{in: "apps/v1/deployments", wantErr: []string{"has 2 '/'"}},
		{in: "apps/", wantErr: []string{"resource is empty"}},
		{in: "/", wantErr: []string{"resource is empty"}},
		{in: " /events", wantErr: []string{"whitespace at byte 0"}},
		{in: "/events ", wantErr: []string{"whitespace at byte 7"}},
		{in: "/ev\tents", wantErr: []string{"whitespace"}},
		{in: "/events\n", wantErr: []string{"whitespace"}},
		{in: "/events#https://etcd-0:2379", wantErr: []string{`'#'`, "separator"}},
		{in: "/events,/pods", wantErr: []string{`','`, "has 2 '/'"}},
		{in: `"/events"`, wantErr: []string{`'"'`}},
		{in: " events ", wantErr: []string{"whitespace", "no '/'"}}, // every problem at once
	}
	for _, tc := range tests {
		got, err := ParseGroupResource(tc.in)
		if tc.wantErr == nil {
			if err != nil || got != tc.want {
				t.Errorf("ParseGroupResource(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("ParseGroupResource(%q).String() = %q, want the input back", tc.in, got.String())
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseGroupResource(%q) = %+v, want an error", tc.in, got)
			continue
		}
		if got != (GroupResource{}) {
			t.Errorf("ParseGroupResource(%q) returned %+v with its error", tc.in, got)
		}
		for _, sub := range tc.wantErr {
			if !strings.Contains(err.Error(), sub) {
				t.Errorf("ParseGroupResource(%q) error %q does not mention %q", tc.in, err, sub)
			}
		}
	}
}

func TestGroupResourceString(t *testing.T) {
	for gr, want := range map[GroupResource]string{
		{Resource: "events"}:                       "/events",
		{Group: "apps", Resource: "deployments"}:   "apps/deployments",
		{Group: "networking.k8s.io", Resource: ""}: "networking.k8s.io/",
	} {
		if got := gr.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", gr, got, want)
		}
	}
}

func TestStoredResource(t *testing.T) {
	tests := []struct {
		in             string
		wantCanonical  string
		wantNormalised bool
		wantOK         bool
	}{
		// Cohabitation: each served-elsewhere form normalises to the storage.
		{in: "events.k8s.io/events", wantCanonical: "/events", wantNormalised: true, wantOK: true},
		{in: "/events", wantCanonical: "/events", wantOK: true},
		{in: "extensions/deployments", wantCanonical: "apps/deployments", wantNormalised: true, wantOK: true},
		{in: "extensions/daemonsets", wantCanonical: "apps/daemonsets", wantNormalised: true, wantOK: true},
		{in: "extensions/replicasets", wantCanonical: "apps/replicasets", wantNormalised: true, wantOK: true},
		{in: "apps/deployments", wantCanonical: "apps/deployments", wantOK: true},
		{in: "extensions/networkpolicies", wantCanonical: "networking.k8s.io/networkpolicies", wantNormalised: true, wantOK: true},
		{in: "extensions/ingresses", wantCanonical: "networking.k8s.io/ingresses", wantNormalised: true, wantOK: true},
		{in: "extensions/replicationcontrollers", wantCanonical: "/replicationcontrollers", wantNormalised: true, wantOK: true},
		{in: "extensions/podsecuritypolicies", wantCanonical: "policy/podsecuritypolicies", wantNormalised: true}, // removed in 1.25
		{in: "policy/podsecuritypolicies", wantCanonical: "policy/podsecuritypolicies"},
		// Plain stored resources.
		{in: "/pods", wantCanonical: "/pods", wantOK: true},
		{in: "coordination.k8s.io/leases", wantCanonical: "coordination.k8s.io/leases", wantOK: true},
		{in: "/endpoints", wantCanonical: "/endpoints", wantOK: true},
		{in: "discovery.k8s.io/endpointslices", wantCanonical: "discovery.k8s.io/endpointslices", wantOK: true},
		{in: "internal.apiserver.k8s.io/storageversions", wantCanonical: "internal.apiserver.k8s.io/storageversions", wantOK: true},
		// Stored, but not by the storage factory that honours overrides.
		{in: "apiextensions.k8s.io/customresourcedefinitions", wantCanonical: "apiextensions.k8s.io/customresourcedefinitions"},
		{in: "apiregistration.k8s.io/apiservices", wantCanonical: "apiregistration.k8s.io/apiservices"},
		// Virtual, aggregated, custom or wrong.
		{in: "authentication.k8s.io/tokenreviews", wantCanonical: "authentication.k8s.io/tokenreviews"},
		{in: "authorization.k8s.io/selfsubjectaccessreviews", wantCanonical: "authorization.k8s.io/selfsubjectaccessreviews"},
		{in: "/bindings", wantCanonical: "/bindings"},
		{in: "/componentstatuses", wantCanonical: "/componentstatuses"},
		{in: "metrics.k8s.io/pods", wantCanonical: "metrics.k8s.io/pods"},
		{in: "example.com/widgets", wantCanonical: "example.com/widgets"},
		{in: "/Events", wantCanonical: "/Events"},
		{in: "/event", wantCanonical: "/event"},
		{in: "apps/*", wantCanonical: "apps/*"},
		{in: "/serviceipallocations", wantCanonical: "/serviceipallocations"}, // goes with "/services"
	}
	for _, tc := range tests {
		gr, err := ParseGroupResource(tc.in)
		if err != nil {
			t.Fatalf("ParseGroupResource(%q): %v", tc.in, err)
		}
		canonical, normalised, ok := StoredResource(gr)
		if canonical.String() != tc.wantCanonical || normalised != tc.wantNormalised || ok != tc.wantOK {
			t.Errorf("StoredResource(%q) = %q, normalised %v, ok %v; want %q, %v, %v",
				tc.in, canonical, normalised, ok, tc.wantCanonical, tc.wantNormalised, tc.wantOK)
		}
	}
}

// TestEtcdKeyPathRejected: "/registry/events" is an etcd key, not an
// override key (kubernetes #57440); it must not get through both checks.
func TestEtcdKeyPathRejected(t *testing.T) {
	gr, err := ParseGroupResource("/registry/events")
	if err == nil {
		if _, _, ok := StoredResource(gr); ok {
			t.Fatalf("/registry/events accepted as %q", gr)
		}
	}
	// Even built by hand it is no stored resource.
	if _, _, ok := StoredResource(GroupResource{Group: "registry", Resource: "events"}); ok {
		t.Error(`StoredResource("registry/events") is ok`)
	}
}
