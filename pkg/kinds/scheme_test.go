package kinds

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	autoscalingv2beta1 "k8s.io/api/autoscaling/v2beta1"
	autoscalingv2beta2 "k8s.io/api/autoscaling/v2beta2"
	batchv1 "k8s.io/api/batch/v1"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1alpha1 "k8s.io/api/certificates/v1alpha1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	nodev1alpha1 "k8s.io/api/node/v1alpha1"
	nodev1beta1 "k8s.io/api/node/v1beta1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1alpha1 "k8s.io/api/rbac/v1alpha1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	storagev1alpha1 "k8s.io/api/storage/v1alpha1"
	storagev1beta1 "k8s.io/api/storage/v1beta1"
	storagemigrationv1alpha1 "k8s.io/api/storagemigration/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// addToSchemes registers every group-version of k8s.io/api v0.34.4 whose
// objects kube-apiserver serves or once served. Left out on purpose:
// admission and imagepolicy (webhook payloads, never served) and apidiscovery
// (the discovery documents themselves). apiextensions.k8s.io and
// apiregistration.k8s.io live in other modules and are not checked here.
var addToSchemes = []func(*runtime.Scheme) error{
	admissionregistrationv1.AddToScheme, admissionregistrationv1alpha1.AddToScheme, admissionregistrationv1beta1.AddToScheme,
	apiserverinternalv1alpha1.AddToScheme,
	appsv1.AddToScheme, appsv1beta1.AddToScheme, appsv1beta2.AddToScheme,
	authenticationv1.AddToScheme, authenticationv1alpha1.AddToScheme, authenticationv1beta1.AddToScheme,
	authorizationv1.AddToScheme, authorizationv1beta1.AddToScheme,
	autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, autoscalingv2beta1.AddToScheme, autoscalingv2beta2.AddToScheme,
	batchv1.AddToScheme, batchv1beta1.AddToScheme,
	certificatesv1.AddToScheme, certificatesv1alpha1.AddToScheme, certificatesv1beta1.AddToScheme,
	coordinationv1.AddToScheme, coordinationv1alpha2.AddToScheme, coordinationv1beta1.AddToScheme,
	corev1.AddToScheme,
	discoveryv1.AddToScheme, discoveryv1beta1.AddToScheme,
	eventsv1.AddToScheme, eventsv1beta1.AddToScheme,
	extensionsv1beta1.AddToScheme,
	flowcontrolv1.AddToScheme, flowcontrolv1beta1.AddToScheme, flowcontrolv1beta2.AddToScheme, flowcontrolv1beta3.AddToScheme,
	networkingv1.AddToScheme, networkingv1beta1.AddToScheme,
	nodev1.AddToScheme, nodev1alpha1.AddToScheme, nodev1beta1.AddToScheme,
	policyv1.AddToScheme, policyv1beta1.AddToScheme,
	rbacv1.AddToScheme, rbacv1alpha1.AddToScheme, rbacv1beta1.AddToScheme,
	resourcev1.AddToScheme, resourcev1alpha3.AddToScheme, resourcev1beta1.AddToScheme, resourcev1beta2.AddToScheme,
	schedulingv1.AddToScheme, schedulingv1alpha1.AddToScheme, schedulingv1beta1.AddToScheme,
	storagev1.AddToScheme, storagev1alpha1.AddToScheme, storagev1beta1.AddToScheme,
	storagemigrationv1alpha1.AddToScheme,
}

func newAPIScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range addToSchemes {
		if err := add(s); err != nil {
			t.Fatalf("building the scheme: %v", err)
		}
	}
	return s
}

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// isTopLevel reports whether a registered Go type is an object of its own: a
// struct embedding ObjectMeta that is not a list. Options, WatchEvent and
// Status have no ObjectMeta.
func isTopLevel(kind string, typ reflect.Type) bool {
	if strings.HasSuffix(kind, "List") || typ.Kind() != reflect.Struct {
		return false
	}
	f, ok := typ.FieldByName("ObjectMeta")
	return ok && f.Anonymous && f.Type == objectMetaType
}

// notServedGroupVersions are group-versions of k8s.io/api v0.34.4 of which
// kube-apiserver 1.34 serves nothing (none is in its discovery documents).
// Removal releases are from the Kubernetes deprecated API migration guide.
var notServedGroupVersions = map[schema.GroupVersion]string{
	{Group: "apps", Version: "v1beta1"}:                         "removed in 1.16; apps/v1",
	{Group: "apps", Version: "v1beta2"}:                         "removed in 1.16; apps/v1",
	{Group: "authentication.k8s.io", Version: "v1alpha1"}:       "pre-GA SelfSubjectReview, no longer served; authentication.k8s.io/v1",
	{Group: "authentication.k8s.io", Version: "v1beta1"}:        "TokenReview removed in 1.22, SelfSubjectReview pre-GA; authentication.k8s.io/v1",
	{Group: "authorization.k8s.io", Version: "v1beta1"}:         "removed in 1.22; authorization.k8s.io/v1",
	{Group: "autoscaling", Version: "v2beta1"}:                  "removed in 1.25; autoscaling/v2",
	{Group: "autoscaling", Version: "v2beta2"}:                  "removed in 1.26; autoscaling/v2",
	{Group: "batch", Version: "v1beta1"}:                        "removed in 1.25; batch/v1",
	{Group: "discovery.k8s.io", Version: "v1beta1"}:             "removed in 1.25; discovery.k8s.io/v1",
	{Group: "events.k8s.io", Version: "v1beta1"}:                "removed in 1.25; events.k8s.io/v1",
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1"}: "removed in 1.26; flowcontrol.apiserver.k8s.io/v1",
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta2"}: "removed in 1.29; flowcontrol.apiserver.k8s.io/v1",
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3"}: "removed in 1.32; flowcontrol.apiserver.k8s.io/v1",
	{Group: "node.k8s.io", Version: "v1alpha1"}:                 "pre-GA RuntimeClass, no longer served; node.k8s.io/v1",
	{Group: "node.k8s.io", Version: "v1beta1"}:                  "removed in 1.25; node.k8s.io/v1",
	{Group: "policy", Version: "v1beta1"}:                       "removed in 1.25 (PodDisruptionBudget, and PodSecurityPolicy altogether); policy/v1",
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1"}:   "pre-GA, no longer served; rbac.authorization.k8s.io/v1",
	{Group: "rbac.authorization.k8s.io", Version: "v1beta1"}:    "removed in 1.22; rbac.authorization.k8s.io/v1",
	{Group: "scheduling.k8s.io", Version: "v1alpha1"}:           "pre-GA PriorityClass, no longer served; scheduling.k8s.io/v1",
	{Group: "scheduling.k8s.io", Version: "v1beta1"}:            "removed in 1.22; scheduling.k8s.io/v1",
}

// notServedKinds are top-level Go types of group-versions that 1.34 serves in
// part, or that are no resource of their own.
var notServedKinds = map[schema.GroupVersionKind]string{
	// Only subresources answer with these; they have no storage.
	{Group: "apps", Version: "v1beta1", Kind: "Scale"}:                    "scale subresource of a removed version",
	{Group: "apps", Version: "v1beta2", Kind: "Scale"}:                    "scale subresource of a removed version",
	{Group: "autoscaling", Version: "v1", Kind: "Scale"}:                  "scale subresource (deployments/scale, replicationcontrollers/scale, ...)",
	{Group: "extensions", Version: "v1beta1", Kind: "Scale"}:              "scale subresource of a removed version",
	{Group: "policy", Version: "v1", Kind: "Eviction"}:                    "pods/eviction subresource",
	{Group: "policy", Version: "v1beta1", Kind: "Eviction"}:               "pods/eviction subresource of a removed version",
	{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}: "serviceaccounts/token subresource",
	// Internal to kube-apiserver, never served.
	{Version: "v1", Kind: "PodStatusResult"}: "internal wire type, never served",
	{Version: "v1", Kind: "RangeAllocation"}: "internal: the service IP and node port allocators keep it under /registry/ranges with the storage config of \"/services\"",
	// Versions that 1.34 serves only for newer kinds.
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "ValidatingAdmissionPolicy"}:        "pre-GA, no longer served; admissionregistration.k8s.io/v1",
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "ValidatingAdmissionPolicyBinding"}: "pre-GA, no longer served; admissionregistration.k8s.io/v1",
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingAdmissionPolicy"}:         "pre-GA, no longer served; admissionregistration.k8s.io/v1",
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingAdmissionPolicyBinding"}:  "pre-GA, no longer served; admissionregistration.k8s.io/v1",
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "MutatingWebhookConfiguration"}:      "removed in 1.22; admissionregistration.k8s.io/v1",
	{Group: "admissionregistration.k8s.io", Version: "v1beta1", Kind: "ValidatingWebhookConfiguration"}:    "removed in 1.22; admissionregistration.k8s.io/v1",
	{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "CertificateSigningRequest"}:                  "removed in 1.22; certificates.k8s.io/v1",
	{Group: "coordination.k8s.io", Version: "v1beta1", Kind: "Lease"}:                                      "removed in 1.22; coordination.k8s.io/v1",
	{Group: "networking.k8s.io", Version: "v1beta1", Kind: "Ingress"}:                                      "removed in 1.22; networking.k8s.io/v1",
	{Group: "networking.k8s.io", Version: "v1beta1", Kind: "IngressClass"}:                                 "removed in 1.22; networking.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1alpha1", Kind: "CSIStorageCapacity"}:                             "pre-GA, no longer served; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1alpha1", Kind: "VolumeAttachment"}:                               "pre-GA, no longer served; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSIDriver"}:                                       "removed in 1.22; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSINode"}:                                         "removed in 1.22; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "StorageClass"}:                                    "removed in 1.22; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "VolumeAttachment"}:                                "removed in 1.22; storage.k8s.io/v1",
	{Group: "storage.k8s.io", Version: "v1beta1", Kind: "CSIStorageCapacity"}:                              "removed in 1.27; storage.k8s.io/v1",
}

// TestTableCoversGoTypes catches a stale table: every top-level kind of the
// k8s.io/api Go types is in the table or is explained above.
func TestTableCoversGoTypes(t *testing.T) {
	s := newAPIScheme(t)
	servedGV := map[schema.GroupVersion]bool{}
	for _, k := range table {
		if !k.Legacy {
			servedGV[schema.GroupVersion{Group: k.Group, Version: k.Version}] = true
		}
	}
	topLevel := map[schema.GroupVersionKind]bool{}
	registeredGV := map[schema.GroupVersion]bool{}
	for gvk, typ := range s.AllKnownTypes() {
		registeredGV[gvk.GroupVersion()] = true
		if !isTopLevel(gvk.Kind, typ) {
			continue
		}
		topLevel[gvk] = true
		_, inTable := Lookup(gvk.GroupVersion().String(), gvk.Kind)
		_, gvExcepted := notServedGroupVersions[gvk.GroupVersion()]
		_, kindExcepted := notServedKinds[gvk]
		switch {
		case inTable && (gvExcepted || kindExcepted):
			t.Errorf("%s is in the table but listed as not served: drop the exception", gvk)
		case !inTable && !gvExcepted && !kindExcepted:
			t.Errorf("%s is a top-level k8s.io/api type but neither in the table nor listed as not served: regenerate the table or explain it", gvk)
		}
	}
	for gv, why := range notServedGroupVersions {
		if !registeredGV[gv] {
			t.Errorf("notServedGroupVersions lists %s (%s), which k8s.io/api does not register", gv, why)
		}
		if servedGV[gv] {
			t.Errorf("notServedGroupVersions lists %s (%s), but the table serves kinds of it", gv, why)
		}
	}
	for gvk, why := range notServedKinds {
		if !topLevel[gvk] {
			t.Errorf("notServedKinds lists %s (%s), which is no top-level k8s.io/api type", gvk, why)
		}
	}
}

// TestTableKindsExistInGoTypes checks the other way: each served kind of a
// group that k8s.io/api holds has a Go type, so no kind name is misspelt.
func TestTableKindsExistInGoTypes(t *testing.T) {
	s := newAPIScheme(t)
	for _, k := range table {
		if (k.Legacy && !k.Stored && k.Group != "extensions") || k.Kind == "PodSecurityPolicy" || k.Kind == "ThirdPartyResource" ||
			k.Group == "apiextensions.k8s.io" || k.Group == "apiregistration.k8s.io" {
			continue // removed kinds left k8s.io/api; the others live in other modules
		}
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		if !s.Recognizes(gvk) {
			t.Errorf("%s is in the table but k8s.io/api v0.34.4 has no Go type for it", gvk)
		}
	}
}

// TestResolveCoversEveryVersion checks that every version of every kind that
// k8s.io/api still has a Go type for (the versions older releases served)
// resolves by group and kind to the same scope and storage as the version
// 1.34 serves, and names that version when 1.34 does not serve its own.
func TestResolveCoversEveryVersion(t *testing.T) {
	s := newAPIScheme(t)
	for gvk, typ := range s.AllKnownTypes() {
		if !isTopLevel(gvk.Kind, typ) {
			continue
		}
		if why := notServedKinds[gvk]; strings.Contains(why, "subresource") || strings.Contains(why, "internal") {
			continue // subresources and internal types are no manifests
		}
		r, ok := Resolve(gvk.GroupVersion().String(), gvk.Kind)
		if !ok {
			t.Errorf("%s does not resolve", gvk)
			continue
		}
		exact, served := Lookup(gvk.GroupVersion().String(), gvk.Kind)
		served = served && !exact.Legacy
		if r.Served != served {
			t.Errorf("%s: Served = %v, but the 1.34 table says %v", gvk, r.Served, served)
		}
		if served {
			if r.Kind != exact {
				t.Errorf("%s: resolved to %s, want its own row %s", gvk, r.Kind, exact)
			}
			continue
		}
		if r.Instead == "" {
			if r.Kind.Kind != "PodSecurityPolicy" {
				t.Errorf("%s: not served, but Resolve names no served version", gvk)
			}
			continue
		}
		want, ok := Lookup(r.Instead, gvk.Kind)
		if !ok || want.Legacy {
			t.Errorf("%s: Instead = %q, which 1.34 does not serve", gvk, r.Instead)
			continue
		}
		if r.Namespaced != want.Namespaced || r.Storage != want.Storage || r.Stored != want.Stored {
			t.Errorf("%s resolves to scope %v storage %s, but %s %s has scope %v storage %s", gvk, r.Namespaced, r.Storage, r.Instead, gvk.Kind, want.Namespaced, want.Storage)
		}
	}
}
