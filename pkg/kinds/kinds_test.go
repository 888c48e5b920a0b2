package kinds

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name           string
		apiVersion     string
		kind           string
		wantOK         bool
		wantResource   string
		wantNamespaced bool
		wantStored     bool
		wantStorage    string // GroupResource.String(); "" when not stored
		wantHonoured   bool   // StoredResource(Storage) ok
		wantLegacy     bool
	}{
		{name: "core Event", apiVersion: "v1", kind: "Event", wantOK: true, wantResource: "events", wantNamespaced: true, wantStored: true, wantStorage: "/events", wantHonoured: true},
		{name: "events.k8s.io Event cohabits with core", apiVersion: "events.k8s.io/v1", kind: "Event", wantOK: true, wantResource: "events", wantNamespaced: true, wantStored: true, wantStorage: "/events", wantHonoured: true},
		{name: "Lease", apiVersion: "coordination.k8s.io/v1", kind: "Lease", wantOK: true, wantResource: "leases", wantNamespaced: true, wantStored: true, wantStorage: "coordination.k8s.io/leases", wantHonoured: true},
		{name: "apps Deployment", apiVersion: "apps/v1", kind: "Deployment", wantOK: true, wantResource: "deployments", wantNamespaced: true, wantStored: true, wantStorage: "apps/deployments", wantHonoured: true},
		{name: "extensions Deployment (legacy)", apiVersion: "extensions/v1beta1", kind: "Deployment", wantOK: true, wantResource: "deployments", wantNamespaced: true, wantStored: true, wantStorage: "apps/deployments", wantHonoured: true, wantLegacy: true},
		{name: "extensions Ingress (legacy)", apiVersion: "extensions/v1beta1", kind: "Ingress", wantOK: true, wantResource: "ingresses", wantNamespaced: true, wantStored: true, wantStorage: "networking.k8s.io/ingresses", wantHonoured: true, wantLegacy: true},
		{name: "extensions NetworkPolicy (legacy)", apiVersion: "extensions/v1beta1", kind: "NetworkPolicy", wantOK: true, wantResource: "networkpolicies", wantNamespaced: true, wantStored: true, wantStorage: "networking.k8s.io/networkpolicies", wantHonoured: true, wantLegacy: true},
		{name: "extensions PodSecurityPolicy (legacy, gone since 1.25)", apiVersion: "extensions/v1beta1", kind: "PodSecurityPolicy", wantOK: true, wantResource: "podsecuritypolicies", wantLegacy: true},
		{name: "ReplicationController", apiVersion: "v1", kind: "ReplicationController", wantOK: true, wantResource: "replicationcontrollers", wantNamespaced: true, wantStored: true, wantStorage: "/replicationcontrollers", wantHonoured: true},
		{name: "Namespace is cluster-scoped", apiVersion: "v1", kind: "Namespace", wantOK: true, wantResource: "namespaces", wantStored: true, wantStorage: "/namespaces", wantHonoured: true},
		{name: "Endpoints", apiVersion: "v1", kind: "Endpoints", wantOK: true, wantResource: "endpoints", wantNamespaced: true, wantStored: true, wantStorage: "/endpoints", wantHonoured: true},
		{name: "CRD is cluster-scoped, stored, override not honoured", apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", wantOK: true, wantResource: "customresourcedefinitions", wantStored: true, wantStorage: "apiextensions.k8s.io/customresourcedefinitions"},
		{name: "APIService override not honoured", apiVersion: "apiregistration.k8s.io/v1", kind: "APIService", wantOK: true, wantResource: "apiservices", wantStored: true, wantStorage: "apiregistration.k8s.io/apiservices"},
		{name: "TokenReview is virtual", apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", wantOK: true, wantResource: "tokenreviews"},
		{name: "LocalSubjectAccessReview is virtual and namespaced", apiVersion: "authorization.k8s.io/v1", kind: "LocalSubjectAccessReview", wantOK: true, wantResource: "localsubjectaccessreviews", wantNamespaced: true},
		{name: "Binding is virtual", apiVersion: "v1", kind: "Binding", wantOK: true, wantResource: "bindings", wantNamespaced: true},
		{name: "ComponentStatus lists but cannot watch", apiVersion: "v1", kind: "ComponentStatus", wantOK: true, wantResource: "componentstatuses"},
		{name: "HPA v2", apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", wantOK: true, wantResource: "horizontalpodautoscalers", wantNamespaced: true, wantStored: true, wantStorage: "autoscaling/horizontalpodautoscalers", wantHonoured: true},
		{name: "alpha StorageVersionMigration", apiVersion: "storagemigration.k8s.io/v1alpha1", kind: "StorageVersionMigration", wantOK: true, wantResource: "storageversionmigrations", wantStored: true, wantStorage: "storagemigration.k8s.io/storageversionmigrations", wantHonoured: true},
		{name: "unknown CRD kind", apiVersion: "example.com/v1", kind: "Widget"},
		{name: "aggregated metrics API", apiVersion: "metrics.k8s.io/v1beta1", kind: "PodMetrics"},
		{name: "removed apps/v1beta1", apiVersion: "apps/v1beta1", kind: "Deployment"},
		{name: "Scale is no resource", apiVersion: "autoscaling/v1", kind: "Scale"},
		{name: "kind is case-sensitive", apiVersion: "v1", kind: "pod"},
		{name: "core spelled as a group", apiVersion: "core/v1", kind: "Pod"},
		{name: "empty group with slash", apiVersion: "/v1", kind: "Pod"},
		{name: "too many slashes", apiVersion: "apps/v1/x", kind: "Deployment"},
		{name: "empty apiVersion", apiVersion: "", kind: "Pod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := Lookup(tc.apiVersion, tc.kind)
			if ok != tc.wantOK {
				t.Fatalf("Lookup(%q, %q) ok = %v, want %v", tc.apiVersion, tc.kind, ok, tc.wantOK)
			}
			if !ok {
				if k != (Kind{}) {
					t.Errorf("Lookup(%q, %q) = %+v, want the zero Kind with ok false", tc.apiVersion, tc.kind, k)
				}
				return
			}
			if k.APIVersion() != tc.apiVersion || k.Kind != tc.kind {
				t.Errorf("Lookup(%q, %q) returned %s", tc.apiVersion, tc.kind, k)
			}
			if k.Resource != tc.wantResource || k.Namespaced != tc.wantNamespaced || k.Stored != tc.wantStored || k.Legacy != tc.wantLegacy {
				t.Errorf("Lookup(%q, %q) = %+v, want resource %q namespaced %v stored %v legacy %v",
					tc.apiVersion, tc.kind, k, tc.wantResource, tc.wantNamespaced, tc.wantStored, tc.wantLegacy)
			}
			gotStorage := ""
			if k.Storage != (GroupResource{}) {
				gotStorage = k.Storage.String()
			}
			if gotStorage != tc.wantStorage {
				t.Errorf("Lookup(%q, %q).Storage = %q, want %q", tc.apiVersion, tc.kind, gotStorage, tc.wantStorage)
			}
			if tc.wantStored {
				canonical, normalised, honoured := StoredResource(k.Storage)
				if canonical != k.Storage || normalised || honoured != tc.wantHonoured {
					t.Errorf("StoredResource(%q) = %q, %v, %v, want itself, false, %v", k.Storage, canonical, normalised, honoured, tc.wantHonoured)
				}
			}
		})
	}
}

func TestLookupGroupKind(t *testing.T) {
	tests := []struct {
		group, kind string
		wantOK      bool
		wantVersion string
	}{
		{group: "", kind: "Pod", wantOK: true, wantVersion: "v1"},
		{group: "apps", kind: "Deployment", wantOK: true, wantVersion: "v1"},
		{group: "extensions", kind: "Deployment", wantOK: true, wantVersion: "v1beta1"},
		{group: "autoscaling", kind: "HorizontalPodAutoscaler", wantOK: true, wantVersion: "v2"},
		{group: "resource.k8s.io", kind: "ResourceClaim", wantOK: true, wantVersion: "v1"},
		{group: "coordination.k8s.io", kind: "LeaseCandidate", wantOK: true, wantVersion: "v1beta1"},
		{group: "storage.k8s.io", kind: "VolumeAttributesClass", wantOK: true, wantVersion: "v1"},
		{group: "events.k8s.io", kind: "Event", wantOK: true, wantVersion: "v1"},
		{group: "apps", kind: "Pod"},
		{group: "metrics.k8s.io", kind: "NodeMetrics"},
		{group: "core", kind: "Pod"},
	}
	for _, tc := range tests {
		k, ok := LookupGroupKind(tc.group, tc.kind)
		if ok != tc.wantOK || k.Version != tc.wantVersion {
			t.Errorf("LookupGroupKind(%q, %q) = %s, %v; want version %q, %v", tc.group, tc.kind, k, ok, tc.wantVersion, tc.wantOK)
		}
		if ok && (k.Group != tc.group || k.Kind != tc.kind) {
			t.Errorf("LookupGroupKind(%q, %q) returned %s", tc.group, tc.kind, k)
		}
	}
}

// TestTableInvariants checks rules every row must follow, whatever the
// discovery documents say.
func TestTableInvariants(t *testing.T) {
	if len(servedKinds) < 80 {
		t.Fatalf("only %d served kinds: the generated table looks truncated", len(servedKinds))
	}
	for _, k := range All() {
		if k.Stored != (k.Storage != GroupResource{}) {
			t.Errorf("%s: Stored is %v but Storage is %q", k, k.Stored, k.Storage)
		}
		if k.Version == "" || k.Kind == "" || k.Resource == "" && !(k.Legacy && !k.Stored) {
			t.Errorf("%s: empty field in %+v", k, k)
		}
		if k.Stored && !k.Legacy {
			if _, ok := separateStorage[k.Group]; !ok {
				if _, _, ok := StoredResource(k.Storage); !ok {
					t.Errorf("%s: storage %q is not reported as stored", k, k.Storage)
				}
			}
		}
		// Whatever group a kind is served in, its own group/resource
		// normalises to its storage.
		if k.Stored {
			if canonical, _, _ := StoredResource(GroupResource{k.Group, k.Resource}); canonical != k.Storage {
				t.Errorf("%s: StoredResource(%s/%s) gives %q, want its storage %q", k, k.Group, k.Resource, canonical, k.Storage)
			}
		}
	}
	// The storage of each cohabitation list must be a resource 1.34 stores,
	// except PodSecurityPolicy, which is gone.
	for _, list := range cohabitations {
		if _, _, ok := StoredResource(list[0]); !ok && list[0].Resource != "podsecuritypolicies" {
			t.Errorf("cohabitation storage %q is not a stored resource of the table", list[0])
		}
	}
}

// guessExceptions are stored kinds whose plural UnsafeGuessKindToResource
// gets wrong. None in 1.34.4: the guesser special-cases "endpoints".
var guessExceptions = map[schema.GroupKind]string{}

func TestResourceMatchesGuessedPlural(t *testing.T) {
	for _, k := range table {
		if !k.Stored {
			continue
		}
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		_, excepted := guessExceptions[gvk.GroupKind()]
		switch {
		case plural.Resource != k.Resource && !excepted:
			t.Errorf("%s: resource %q but UnsafeGuessKindToResource guesses %q; if the table is right, add it to guessExceptions", k, k.Resource, plural.Resource)
		case plural.Resource == k.Resource && excepted:
			t.Errorf("%s: listed in guessExceptions but the guess %q is right", k, plural.Resource)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		wantOK           bool
		wantNamespaced   bool
		wantStorage      string // "" when not stored
		wantServed       bool
		wantInstead      string
	}{
		{"batch/v1", "CronJob", true, true, "batch/cronjobs", true, ""},
		{"batch/v1beta1", "CronJob", true, true, "batch/cronjobs", false, "batch/v1"},
		{"batch/v2alpha1", "CronJob", true, true, "batch/cronjobs", false, "batch/v1"},
		{"policy/v1beta1", "PodDisruptionBudget", true, true, "policy/poddisruptionbudgets", false, "policy/v1"},
		{"policy/v1beta1", "PodSecurityPolicy", true, false, "", false, ""},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", true, true, "autoscaling/horizontalpodautoscalers", false, "autoscaling/v2"},
		{"networking.k8s.io/v1beta1", "Ingress", true, true, "networking.k8s.io/ingresses", false, "networking.k8s.io/v1"},
		{"networking.k8s.io/v1beta1", "IngressClass", true, false, "networking.k8s.io/ingressclasses", false, "networking.k8s.io/v1"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", true, false, "flowcontrol.apiserver.k8s.io/flowschemas", false, "flowcontrol.apiserver.k8s.io/v1"},
		{"rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding", true, false, "rbac.authorization.k8s.io/clusterrolebindings", false, "rbac.authorization.k8s.io/v1"},
		{"events.k8s.io/v1beta1", "Event", true, true, "/events", false, "events.k8s.io/v1"},
		{"extensions/v1beta1", "Deployment", true, true, "apps/deployments", false, "apps/v1"},
		{"extensions/v1beta1", "Ingress", true, true, "networking.k8s.io/ingresses", false, "networking.k8s.io/v1"},
		{"extensions/v1beta1", "PodSecurityPolicy", true, false, "", false, ""},
		{"apps/v1beta2", "StatefulSet", true, true, "apps/statefulsets", false, "apps/v1"},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", true, false, "apiextensions.k8s.io/customresourcedefinitions", false, "apiextensions.k8s.io/v1"},
		{"settings.k8s.io/v1alpha1", "PodPreset", true, true, "", false, ""},
		{"batch/v7", "Job", true, true, "batch/jobs", false, "batch/v1"},
		{"example.com/v1", "Widget", false, false, "", false, ""},
		{"core/v1", "Pod", false, false, "", false, ""},
		{"/v1", "Pod", false, false, "", false, ""},
		{"apps/", "Deployment", false, false, "", false, ""},
		{"", "Pod", false, false, "", false, ""},
	}
	for _, tc := range tests {
		r, ok := Resolve(tc.apiVersion, tc.kind)
		if ok != tc.wantOK {
			t.Errorf("Resolve(%q, %q) ok = %v, want %v", tc.apiVersion, tc.kind, ok, tc.wantOK)
			continue
		}
		if !ok {
			continue
		}
		storage := ""
		if r.Stored {
			storage = r.Storage.String()
		}
		if r.Namespaced != tc.wantNamespaced || storage != tc.wantStorage || r.Served != tc.wantServed || r.Instead != tc.wantInstead {
			t.Errorf("Resolve(%q, %q) = namespaced %v, storage %q, served %v, instead %q; want %v, %q, %v, %q",
				tc.apiVersion, tc.kind, r.Namespaced, storage, r.Served, r.Instead, tc.wantNamespaced, tc.wantStorage, tc.wantServed, tc.wantInstead)
		}
	}
	if got := Release(); got != "1.34" {
		t.Errorf("Release() = %q, want 1.34", got)
	}
}

// TestLegacyRowsAgree: a hand-kept legacy row and the generated row of the
// same kind give the same scope, and the kinds the issue found broadcast
// (resource.k8s.io's old alphas) have their scope.
func TestLegacyRowsAgree(t *testing.T) {
	for _, g := range generatedLegacyKinds {
		for _, h := range legacyKinds {
			if g.Group == h.Group && g.Kind == h.Kind && g.Namespaced != h.Namespaced {
				t.Errorf("%s: namespaced %v by hand, %v generated", h, h.Namespaced, g.Namespaced)
			}
		}
		if g.Stored || !g.Legacy {
			t.Errorf("%s: a generated legacy row is never stored by the table's release", g)
		}
	}
	for _, tc := range []struct {
		apiVersion, kind string
		namespaced       bool
	}{
		{"resource.k8s.io/v1alpha2", "ResourceClaimParameters", true},
		{"resource.k8s.io/v1alpha2", "ResourceClassParameters", true},
		{"resource.k8s.io/v1alpha3", "PodSchedulingContext", true},
		{"resource.k8s.io/v1alpha1", "PodScheduling", true},
		{"resource.k8s.io/v1alpha2", "ResourceClass", false},
		{"networking.k8s.io/v1alpha1", "ClusterCIDR", false},
		{"settings.k8s.io/v1alpha1", "PodPreset", true},
	} {
		r, ok := Resolve(tc.apiVersion, tc.kind)
		if !ok || r.Namespaced != tc.namespaced || r.Served || r.Instead != "" {
			t.Errorf("Resolve(%q, %q) = %+v, %v; want namespaced %v, not served, no successor", tc.apiVersion, tc.kind, r, ok, tc.namespaced)
		}
	}
}
