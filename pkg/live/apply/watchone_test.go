package apply

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/cli-utils/pkg/kstatus/watcher"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// The informers that would list exactly one of the package's objects
// (the one Namespace, a namespace's one ConfigMap) list and watch that
// object by name; the others (two Namespaces, a cluster-wide ConfigMap
// informer of two namespaces' objects) are left as cli-utils makes them.
func TestWatchingOneNarrowsOneObjectInformers(t *testing.T) {
	v1 := schema.GroupVersion{Version: "v1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{v1})
	mapper.Add(v1.WithKind("Namespace"), meta.RESTScopeRoot)
	mapper.Add(v1.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	ns := func(name string) object.ObjMetadata {
		return object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "Namespace"}, Name: name}
	}
	cm := func(namespace, name string) object.ObjMetadata {
		return object.ObjMetadata{GroupKind: schema.GroupKind{Kind: "ConfigMap"}, Namespace: namespace, Name: name}
	}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	for _, tc := range []struct {
		name  string
		ids   object.ObjMetadataSet
		scope watcher.RESTScopeStrategy
		// lists are the informers' lists, resource/namespace, with the
		// field selector each should carry.
		lists map[string]string
	}{
		{"one Namespace, a namespace's one ConfigMap and another's two", object.ObjMetadataSet{ns("a"), cm("a", "x"), cm("b", "y"), cm("b", "z")}, watcher.RESTScopeNamespace,
			map[string]string{"namespaces/": "metadata.name=a", "configmaps/a": "metadata.name=x,metadata.namespace=a", "configmaps/b": ""}},
		{"two Namespaces", object.ObjMetadataSet{ns("a"), ns("b")}, watcher.RESTScopeNamespace,
			map[string]string{"namespaces/": ""}},
		{"cluster-wide: one ConfigMap of its kind", object.ObjMetadataSet{ns("a"), cm("a", "x")}, watcher.RESTScopeRoot,
			map[string]string{"namespaces/": "metadata.name=a", "configmaps/": "metadata.name=x,metadata.namespace=a"}},
		{"cluster-wide: ConfigMaps of two namespaces", object.ObjMetadataSet{cm("a", "x"), cm("b", "y")}, watcher.RESTScopeRoot,
			map[string]string{"configmaps/": ""}},
		{"automatic, two namespaces: cluster-wide", object.ObjMetadataSet{cm("a", "x"), cm("b", "y")}, watcher.RESTScopeAutomatic,
			map[string]string{"configmaps/": ""}},
		{"automatic, one namespace: per namespace", object.ObjMetadataSet{cm("a", "x")}, watcher.RESTScopeAutomatic,
			map[string]string{"configmaps/a": "metadata.name=x,metadata.namespace=a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{namespaces: "NamespaceList", configMaps: "ConfigMapList"})
			w := watchingOne(&watcher.DefaultStatusWatcher{DynamicClient: dyn, Mapper: mapper}, tc.ids, watcher.Options{RESTScopeStrategy: tc.scope})
			for key := range tc.lists {
				gvr, namespace := namespaces, ""
				if r, n, _ := strings.Cut(key, "/"); r == "configmaps" {
					gvr, namespace = configMaps, n
				}
				if _, err := w.DynamicClient.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := w.DynamicClient.Resource(gvr).Namespace(namespace).Watch(context.Background(), metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for _, a := range dyn.Actions() {
				key := a.GetResource().Resource + "/" + a.GetNamespace()
				var got string
				switch a := a.(type) {
				case k8stesting.ListAction:
					got = a.GetListRestrictions().Fields.String()
				case k8stesting.WatchAction:
					got = a.GetWatchRestrictions().Fields.String()
				}
				if want := tc.lists[key]; got != want {
					t.Errorf("%s of %s selects %q, want %q", a.GetVerb(), key, got, want)
				}
			}
		})
	}
}
