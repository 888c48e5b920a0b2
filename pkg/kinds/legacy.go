package kinds

// legacyKinds are kept by hand, with their plural names, which the source of
// generatedLegacyKinds (zz_generated_legacy.go: the k8s.io/api module of
// every older release the module proxy serves, v0.17 on) does not have. A
// row here wins over its generated one, and TestLegacyRowsAgree checks that
// both give the same scope. Every other kind an older release served and
// 1.34 serves in no version is generated; kinds that 1.34 serves in some
// version need no row: Resolve finds every version of them by group and kind.
//
// extensions/v1beta1 stopped serving these kinds in 1.16 (DaemonSet,
// Deployment, ReplicaSet, NetworkPolicy, PodSecurityPolicy) and 1.22
// (Ingress), but old manifests still use it. kube-apiserver keeps them in its
// cohabitation lists (cohabitation.go), so each maps to the storage of its
// successor; buildTable fills in Storage.
//
// PodSecurityPolicy is not Stored: the API was removed in 1.25 and 1.34 keeps
// no PodSecurityPolicies anywhere, so an override for it has no effect.
//
// InitializerConfiguration and ThirdPartyResource were removed before
// v0.17, so only this list knows them.
var legacyKinds = []Kind{
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Kind: "InitializerConfiguration", Resource: "initializerconfigurations", Namespaced: false, Stored: false, Legacy: true}, // removed in 1.14
	{Group: "auditregistration.k8s.io", Version: "v1alpha1", Kind: "AuditSink", Resource: "auditsinks", Namespaced: false, Stored: false, Legacy: true},                                   // removed in 1.19
	{Group: "extensions", Version: "v1beta1", Kind: "ThirdPartyResource", Resource: "thirdpartyresources", Namespaced: false, Stored: false, Legacy: true},                                // removed in 1.8
	{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy", Resource: "podsecuritypolicies", Namespaced: false, Stored: false, Legacy: true},                                     // removed in 1.25
	{Group: "settings.k8s.io", Version: "v1alpha1", Kind: "PodPreset", Resource: "podpresets", Namespaced: true, Stored: false, Legacy: true},                                             // removed in 1.20
	{Group: "extensions", Version: "v1beta1", Kind: "DaemonSet", Resource: "daemonsets", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "Deployment", Resource: "deployments", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "Ingress", Resource: "ingresses", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "NetworkPolicy", Resource: "networkpolicies", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "PodSecurityPolicy", Resource: "podsecuritypolicies", Namespaced: false, Stored: false, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "ReplicaSet", Resource: "replicasets", Namespaced: true, Stored: true, Legacy: true},
}
