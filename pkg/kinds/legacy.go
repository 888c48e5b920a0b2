package kinds

// legacyKinds are written by hand because no 1.34 discovery document has them:
// extensions/v1beta1 stopped serving these kinds in 1.16 (DaemonSet,
// Deployment, ReplicaSet, NetworkPolicy, PodSecurityPolicy) and 1.22
// (Ingress), but old manifests still use it. kube-apiserver keeps them in its
// cohabitation lists (cohabitation.go), so each maps to the storage of its
// successor; buildTable fills in Storage.
//
// PodSecurityPolicy is not Stored: the API was removed in 1.25 and 1.34 keeps
// no PodSecurityPolicies anywhere, so an override for it has no effect.
var legacyKinds = []Kind{
	{Group: "extensions", Version: "v1beta1", Kind: "DaemonSet", Resource: "daemonsets", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "Deployment", Resource: "deployments", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "Ingress", Resource: "ingresses", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "NetworkPolicy", Resource: "networkpolicies", Namespaced: true, Stored: true, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "PodSecurityPolicy", Resource: "podsecuritypolicies", Namespaced: false, Stored: false, Legacy: true},
	{Group: "extensions", Version: "v1beta1", Kind: "ReplicaSet", Resource: "replicasets", Namespaced: true, Stored: true, Legacy: true},
}
