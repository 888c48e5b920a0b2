package apply

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/watcher"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// watchingOne is w with a dynamic client that narrows the watcher's
// informers to one object where the package has one object of what the
// informer lists: cli-utils' watcher starts an informer per kind and
// namespace (or per kind, cluster-wide: always for a cluster-scoped kind),
// which lists and watches every object of the kind there. For a package
// with one Namespace, that is every Namespace of the cluster, listed and
// decoded by each context of each run: on a cluster of 5,000 Namespaces,
// 5,000 objects for one; on a fleet where one cluster serves 64 contexts,
// 64 lists of them. Where the informer's objects are the package's one
// object, its list and watch select that object's name (and namespace),
// and see exactly the events the watcher keeps of it: the same statuses.
// Its other informers, and the reads of the objects' generated resources
// (a Deployment's ReplicaSets: the watcher's ClusterReader), are kpt's.
func watchingOne(w *watcher.DefaultStatusWatcher, ids object.ObjMetadataSet, opts watcher.Options) *watcher.DefaultStatusWatcher {
	one := oneObjectInformers(w.Mapper, ids, opts)
	if len(one) == 0 || w.DynamicClient == nil {
		return w
	}
	narrowed := *w
	narrowed.DynamicClient = oneObjectClient{Interface: w.DynamicClient, one: one}
	return &narrowed
}

// informerKey is what one informer of the watcher lists: a resource, in a
// namespace ("": all, or cluster-scoped).
type informerKey struct {
	gr        schema.GroupResource
	namespace string
}

// oneObjectInformers are the informers the watcher starts for ids (as
// opts scope them) that list exactly one of ids, with that one. A kind the
// cluster does not serve yet is left out.
func oneObjectInformers(mapper meta.RESTMapper, ids object.ObjMetadataSet, opts watcher.Options) map[informerKey]object.ObjMetadata {
	if mapper == nil {
		return nil
	}
	perNamespace := opts.RESTScopeStrategy == watcher.RESTScopeNamespace
	if opts.RESTScopeStrategy == watcher.RESTScopeAutomatic {
		// cli-utils' choice: cluster-wide once ids span two namespaces
		// (a cluster-scoped object's "" counts as one).
		namespaces := map[string]bool{}
		for _, id := range ids {
			namespaces[id.Namespace] = true
		}
		perNamespace = len(namespaces) <= 1
	}
	byInformer := map[informerKey][]object.ObjMetadata{}
	for _, id := range ids {
		m, err := mapper.RESTMapping(id.GroupKind)
		if err != nil {
			continue
		}
		key := informerKey{gr: m.Resource.GroupResource()}
		if m.Scope.Name() == meta.RESTScopeNameNamespace && perNamespace {
			key.namespace = id.Namespace
		}
		byInformer[key] = append(byInformer[key], id)
	}
	one := map[informerKey]object.ObjMetadata{}
	for key, in := range byInformer {
		if len(in) == 1 {
			one[key] = in[0]
		}
	}
	return one
}

// oneObjectClient is the watcher's dynamic client, whose lists and watches
// of a oneObjectInformers informer select its one object.
type oneObjectClient struct {
	dynamic.Interface
	one map[informerKey]object.ObjMetadata
}

func (c oneObjectClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return oneObjectResource{NamespaceableResourceInterface: c.Interface.Resource(gvr), c: c, gr: gvr.GroupResource()}
}

type oneObjectResource struct {
	dynamic.NamespaceableResourceInterface
	c  oneObjectClient
	gr schema.GroupResource
}

func (r oneObjectResource) Namespace(ns string) dynamic.ResourceInterface {
	ri := r.NamespaceableResourceInterface.Namespace(ns)
	id, ok := r.c.one[informerKey{gr: r.gr, namespace: ns}]
	if !ok {
		return ri
	}
	return oneObjectReads{ResourceInterface: ri, id: id}
}

func (r oneObjectResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.Namespace("").List(ctx, opts)
}

func (r oneObjectResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.Namespace("").Watch(ctx, opts)
}

// oneObjectReads lists and watches id only.
type oneObjectReads struct {
	dynamic.ResourceInterface
	id object.ObjMetadata
}

func (r oneObjectReads) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if err := r.narrow(&opts); err != nil {
		return nil, err
	}
	return r.ResourceInterface.List(ctx, opts)
}

func (r oneObjectReads) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := r.narrow(&opts); err != nil {
		return nil, err
	}
	return r.ResourceInterface.Watch(ctx, opts)
}

// narrow adds to opts' field selector the object's name, and namespace
// when it has one.
func (r oneObjectReads) narrow(opts *metav1.ListOptions) error {
	set := fields.Set{"metadata.name": r.id.Name}
	if r.id.Namespace != "" {
		set["metadata.namespace"] = r.id.Namespace
	}
	sel := fields.SelectorFromSet(set)
	if opts.FieldSelector != "" {
		given, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return err
		}
		sel = fields.AndSelectors(given, sel)
	}
	opts.FieldSelector = sel.String()
	return nil
}
