package kinds

// cohabitations are the resources that kube-apiserver serves in several groups
// but stores once, each list in its priority order, as kubernetes v1.34.4
// pkg/kubeapiserver/default_storage_factory_builder.go (completedStorageFactoryConfig.New)
// registers them with AddCohabitatingResources. The storage factory
// (k8s.io/apiserver pkg/server/storage/storage_factory.go,
// getStorageGroupResource) stores, and looks overrides up, under the first
// group of the list that has any resource enabled; the first group of each
// list is always enabled in 1.34 and extensions never is.
var cohabitations = [][]GroupResource{
	{{"networking.k8s.io", "networkpolicies"}, {"extensions", "networkpolicies"}},
	{{"apps", "deployments"}, {"extensions", "deployments"}},
	{{"apps", "daemonsets"}, {"extensions", "daemonsets"}},
	{{"apps", "replicasets"}, {"extensions", "replicasets"}},
	{{"", "events"}, {"events.k8s.io", "events"}},
	{{"", "replicationcontrollers"}, {"extensions", "replicationcontrollers"}},
	{{"policy", "podsecuritypolicies"}, {"extensions", "podsecuritypolicies"}},
	{{"networking.k8s.io", "ingresses"}, {"extensions", "ingresses"}},
}

// storageOf maps every member of a cohabitation list to the list's first.
var storageOf = func() map[GroupResource]GroupResource {
	m := map[GroupResource]GroupResource{}
	for _, list := range cohabitations {
		for _, gr := range list {
			m[gr] = list[0]
		}
	}
	return m
}()

// cohabit returns the storage group/resource of gr: the first group of its
// cohabitation list, or gr itself.
func cohabit(gr GroupResource) GroupResource {
	if s, ok := storageOf[gr]; ok {
		return s
	}
	return gr
}
