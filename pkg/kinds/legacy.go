package kinds

// legacyKinds are written by hand because no 1.34 discovery document has them.
// Kinds that 1.34 serves in some version need no row here: Resolve finds
// every version of them by group and kind. These are the kinds of groups
// 1.34 serves in no version at all.
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
// The others were removed with no successor; none is stored by 1.34, so none
// takes an override, but their scope still decides where a manifest goes.
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
