package kinds

// cohabitations (zz_generated_cohabitation.go) are the resources that
// kube-apiserver serves in several groups but stores once, each list in its
// priority order, generated from the AddCohabitatingResources calls of
// k8s.io/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go
// (completedStorageFactoryConfig.New). The storage factory (k8s.io/apiserver
// pkg/server/storage/storage_factory.go, getStorageGroupResource) stores, and
// looks overrides up, under the first group of the list that has any resource
// enabled; TestCohabitationFirstGroupServed checks that the first group of each
// list is served and extensions never is.

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
