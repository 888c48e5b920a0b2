package datastore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/config"
)

// assignSpec: c00 declares events, leases and apps; c01 only events; c02 none.
func assignSpec(overrides ...v1alpha1.DataStoreOverride) *v1alpha1.ShardConfigSpec {
	ds := func(name string) v1alpha1.DataStore {
		return v1alpha1.DataStore{Name: name, Endpoints: []string{"https://etcd-" + name + ":2379"}}
	}
	return &v1alpha1.ShardConfigSpec{
		Contexts: []v1alpha1.Context{
			{Name: "c00", DataStores: []v1alpha1.DataStore{ds("events"), ds("leases"), ds("apps")}},
			{Name: "c01", DataStores: []v1alpha1.DataStore{ds("events")}},
			{Name: "c02"},
		},
		DataStoreOverrides: overrides,
	}
}

// compileSpec compiles a spec through the one compile step, as LoadConfig does.
func compileSpec(spec *v1alpha1.ShardConfigSpec) (*config.Config, []config.Notice, field.ErrorList) {
	return config.Compile(&v1alpha1.ShardConfig{Spec: *spec})
}

func override(resource, dataStore string) v1alpha1.DataStoreOverride {
	return v1alpha1.DataStoreOverride{Resource: resource, DataStore: dataStore}
}

func TestCompileOverrides(t *testing.T) {
	res := func(i int) string { return "spec.dataStoreOverrides[" + string(rune('0'+i)) + "].resource" }
	cases := []struct {
		name      string
		resources []string // each sent to "events"
		// On success: the canonical storage keys, in order, and the fields of notices.
		want    []string
		notices []string
		// On failure: the field of each error, in order, and a fragment of each.
		errFields []string
		errText   []string
	}{
		{name: "core events", resources: []string{"/events"}, want: []string{"/events"}},
		{name: "leases and pods", resources: []string{"coordination.k8s.io/leases", "/pods"},
			want: []string{"coordination.k8s.io/leases", "/pods"}},
		{name: "events.k8s.io/events is normalised to /events with a warning", resources: []string{"events.k8s.io/events"},
			want: []string{"/events"}, notices: []string{res(0)}},
		{name: "extensions/deployments is stored as apps/deployments", resources: []string{"extensions/deployments"},
			want: []string{"apps/deployments"}, notices: []string{res(0)}},
		{name: "extensions/ingresses is stored as networking.k8s.io/ingresses", resources: []string{"extensions/ingresses"},
			want: []string{"networking.k8s.io/ingresses"}, notices: []string{res(0)}},

		{name: "CRD resource", resources: []string{"apiextensions.k8s.io/customresourcedefinitions"},
			errFields: []string{res(0)}, errText: []string{"not a built-in resource"}},
		{name: "custom resource", resources: []string{"example.com/widgets"},
			errFields: []string{res(0)}, errText: []string{"example.com/widgets"}},
		{name: "aggregated resource", resources: []string{"metrics.k8s.io/pods"},
			errFields: []string{res(0)}, errText: []string{"metrics.k8s.io/pods"}},
		{name: "APIService", resources: []string{"apiregistration.k8s.io/apiservices"},
			errFields: []string{res(0)}},
		{name: "virtual resource", resources: []string{"authentication.k8s.io/tokenreviews"},
			errFields: []string{res(0)}, errText: []string{"authentication.k8s.io/tokenreviews"}},
		{name: "virtual core resource", resources: []string{"/bindings"}, errFields: []string{res(0)}},
		{name: "etcd key path", resources: []string{"/registry/events"},
			errFields: []string{res(0)}, errText: []string{"etcd key path"}},
		{name: "no slash", resources: []string{"events"}, errFields: []string{res(0)}, errText: []string{"'/'"}},
		{name: "subresource", resources: []string{"apps/deployments/scale"}, errFields: []string{res(0)}},
		{name: "empty resource", resources: []string{"apps/"}, errFields: []string{res(0)}},
		{name: "leading whitespace", resources: []string{" /events"}, errFields: []string{res(0)}, errText: []string{"whitespace"}},
		{name: "trailing whitespace", resources: []string{"/events "}, errFields: []string{res(0)}, errText: []string{"whitespace"}},
		{name: "inner whitespace", resources: []string{"coordination.k8s.io/ leases"}, errFields: []string{res(0)}, errText: []string{"whitespace"}},
		{name: "flag syntax pasted in", resources: []string{"/events#https://etcd-0:2379"}, errFields: []string{res(0)}},
		{name: "upper case", resources: []string{"/Events"}, errFields: []string{res(0)}},
		{name: "kind instead of resource", resources: []string{"coordination.k8s.io/Lease"}, errFields: []string{res(0)}},
		{name: "duplicate", resources: []string{"/events", "/pods", "/events"},
			errFields: []string{res(2)}, errText: []string{"/events"}},
		{name: "duplicate after cohabitation", resources: []string{"/events", "events.k8s.io/events"},
			notices: []string{res(1)}, errFields: []string{res(1)}, errText: []string{"events.k8s.io/events", "/events"}},
		{name: "duplicate after cohabitation of extensions", resources: []string{"extensions/daemonsets", "apps/daemonsets"},
			notices: []string{res(0)}, errFields: []string{res(1)}},
		{name: "every bad override reported", resources: []string{"/registry/events", "/pods", "metrics.k8s.io/pods", "/pods"},
			errFields: []string{res(0), res(2), res(3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var overrides []v1alpha1.DataStoreOverride
			for _, r := range tc.resources {
				overrides = append(overrides, override(r, "events"))
			}
			table, notices, errs := compileSpec(assignSpec(overrides...))
			var noticeFields []string
			for _, n := range notices {
				noticeFields = append(noticeFields, n.Field)
			}
			if strings.Join(noticeFields, " ") != strings.Join(tc.notices, " ") {
				t.Errorf("notices at %q, want %q (%v)", noticeFields, tc.notices, notices)
			}
			if tc.errFields == nil {
				if len(errs) > 0 {
					t.Fatalf("Compile: %v", errs)
				}
				var got []string
				for _, o := range table.Overrides {
					got = append(got, o.Resource.String())
				}
				if strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Errorf("overrides = %q, want %q", got, tc.want)
				}
				return
			}
			if table != nil {
				t.Errorf("Compile returned a table along with errors")
			}
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if strings.Join(fields, " ") != strings.Join(tc.errFields, " ") {
				t.Errorf("errors at %q, want %q: %v", fields, tc.errFields, errs)
			}
			for _, frag := range tc.errText {
				if !strings.Contains(errs.ToAggregate().Error(), frag) {
					t.Errorf("errors do not mention %q: %v", frag, errs)
				}
			}
		})
	}
}

func TestCompileNormalisationNotice(t *testing.T) {
	_, notices, errs := compileSpec(assignSpec(override("events.k8s.io/events", "events")))
	if len(errs) > 0 || len(notices) != 1 {
		t.Fatalf("want one notice and no error, got %v, %v", notices, errs)
	}
	msg := notices[0].Message
	for _, frag := range []string{`"events.k8s.io/events"`, `"/events"`} {
		if !strings.Contains(msg, frag) {
			t.Errorf("notice %q does not mention %s", msg, frag)
		}
	}
}

func TestAssign(t *testing.T) {
	spec := assignSpec(
		override("/events", "events"),
		override("coordination.k8s.io/leases", "leases"),
		override("apps/deployments", "apps"),
	)
	table, _, errs := compileSpec(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		ctx              int
		apiVersion, kind string
		want             string
	}{
		{0, "v1", "Event", "events"},
		{0, "events.k8s.io/v1", "Event", "events"},
		// a version 1.34 no longer serves still finds its group's storage
		{0, "events.k8s.io/v1beta1", "Event", "events"},
		{1, "v1", "Event", "events"},
		{1, "events.k8s.io/v1", "Event", "events"},
		// c02 does not declare events: the main etcd
		{2, "v1", "Event", "default"},
		{2, "events.k8s.io/v1", "Event", "default"},
		{0, "coordination.k8s.io/v1", "Lease", "leases"},
		{1, "coordination.k8s.io/v1", "Lease", "default"},
		{0, "apps/v1", "Deployment", "apps"},
		{0, "extensions/v1beta1", "Deployment", "apps"},
		{1, "apps/v1", "Deployment", "default"},
		{0, "apps/v1", "StatefulSet", "default"},
		{0, "v1", "Pod", "default"},
		{0, "v1", "Namespace", "default"},
		// a custom resource that happens to be called Event is not an Event
		{0, "example.com/v1", "Event", "default"},
		{0, "example.com/v1", "Lease", "default"},
		// virtual kinds are never stored anywhere
		{0, "authentication.k8s.io/v1", "TokenReview", "default"},
	}
	for _, tc := range cases {
		t.Run(spec.Contexts[tc.ctx].Name+" "+tc.apiVersion+" "+tc.kind, func(t *testing.T) {
			if got := Assign(table, tc.ctx, tc.apiVersion, tc.kind); got != tc.want {
				t.Errorf("Assign = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAssignWithoutOverrides(t *testing.T) {
	table, _, errs := compileSpec(assignSpec())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for ctx := range 3 {
		if got := Assign(table, ctx, "v1", "Event"); got != "default" {
			t.Errorf("context %d: Assign = %q, want \"default\"", ctx, got)
		}
	}
}

func TestEphemeral(t *testing.T) {
	spec := assignSpec(
		v1alpha1.DataStoreOverride{Resource: "/events", DataStore: "events", Ephemeral: true},
		override("coordination.k8s.io/leases", "leases"),
	)
	table, _, errs := compileSpec(spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		apiVersion, kind string
		want             bool
	}{
		{"v1", "Event", true},
		{"events.k8s.io/v1", "Event", true},
		{"coordination.k8s.io/v1", "Lease", false},
		{"v1", "Pod", false},
	}
	for _, tc := range cases {
		if got := Ephemeral(table, tc.apiVersion, tc.kind); got != tc.want {
			t.Errorf("Ephemeral(%s, %s) = %v, want %v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}
