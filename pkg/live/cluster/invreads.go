package cluster

import (
	"context"
	"maps"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/inventory"
)

// NewApplierInventoryClient is NewInventoryClient for one run of kpt's
// applier on a context, whose reads of a ResourceGroup that follow one
// another with no write of a ResourceGroup between them are one read.
//
// kpt's engine reads the inventory seven times in a first apply, as kpt
// live apply does: three times as it prepares (the inventory policy, the
// prune set, the task queue), twice as it merges (cli-utils, then kpt's
// ResourceGroup before it creates it; three times for one that exists),
// twice as it replaces at the end. Each is a GET of a custom resource,
// from etcd. With no write between, the second read of each run of reads
// would answer what the first did, but for a write by another client in
// the moments between: that is the answer the first read gives here. What
// the engine writes after such a read carries the resourceVersion it
// read, so such a write by another client fails the run's write with a
// conflict instead of being lost; where kpt's ResourceGroup would create
// an inventory its reads found missing, a create by another client
// meanwhile fails it with "already exists" where kpt's second read would
// have had it overwrite that inventory without a resourceVersion.
//
// Any write of a ResourceGroup through the client (the engine's create,
// update and status update) forgets every read, so the read after it goes
// to the cluster: two reads of an apply reach it, one as the engine
// prepares and one as it replaces, after the apply and its waits (one, as
// it replaces, for an inventory the run read missing: see absent). An
// update that would change nothing but the status (kpt's status update
// follows each) is not sent: kpt's engine sends one whenever it merges
// or replaces with the objects the inventory holds (see unchanged).
//
// policy is kpt's --status-policy: what the engine stores of each object's
// status in the inventory.
//
// absent, when not nil, is an inventory the run read missing before it
// took the context's lock, and has not written since: the engine's reads
// of it until its first write (its create) answer "not found" as that
// read did, so a first apply reads its inventory once, as it replaces it.
// The lock's check found the context's record unchanged since that read,
// so no run of shard-router created it meanwhile; one created by another
// client fails the engine's create with "already exists", before any
// object of the context is written, where a read would have had kpt's
// engine merge into an inventory it did not make.
func NewApplierInventoryClient(f cmdutil.Factory, policy inventory.StatusPolicy, absent inventory.Info) (inventory.Client, error) {
	dyn, err := f.DynamicClient()
	if err == nil {
		reads := &inventoryReads{Interface: dyn, last: map[types.NamespacedName]lastRead{}}
		if absent != nil {
			reads.last[types.NamespacedName{Namespace: absent.Namespace(), Name: absent.Name()}] = lastRead{err: apierrors.NewNotFound(resourceGroups, absent.Name())}
		}
		dyn = reads
	}
	return newInventoryClient(WithDynamic(f, dyn, err), policy)
}

// inventoryReads is a dynamic client whose GETs of a ResourceGroup repeat
// the last answer until a ResourceGroup is written (see
// NewApplierInventoryClient).
type inventoryReads struct {
	dynamic.Interface
	mu sync.Mutex
	// last is the answer of the last read of each ResourceGroup: the
	// object, or not found.
	last map[types.NamespacedName]lastRead
	// writes counts the writes begun, so that a read that a write
	// overlapped keeps no answer.
	writes uint64
}

type lastRead struct {
	obj *unstructured.Unstructured
	err error
}

func (c *inventoryReads) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := c.Interface.Resource(gvr)
	if gvr.GroupResource() != resourceGroups {
		return r
	}
	return inventoryReadsOf{inventoryReadsIn: inventoryReadsIn{ri: r, c: c}, resource: r}
}

// inventoryReadsOf is the ResourceGroup resource of inventoryReads: its
// reads and writes without a namespace are those of inventoryReadsIn
// too (kpt writes ResourceGroups in their namespace, but a write is a
// write).
type inventoryReadsOf struct {
	inventoryReadsIn
	resource dynamic.NamespaceableResourceInterface
}

func (r inventoryReadsOf) Namespace(ns string) dynamic.ResourceInterface {
	return inventoryReadsIn{ri: r.resource.Namespace(ns), c: r.c, ns: ns}
}

// inventoryReadsIn is the ResourceGroups of one namespace (or all).
type inventoryReadsIn struct {
	ri dynamic.ResourceInterface
	c  *inventoryReads
	ns string
}

// Get answers with the last read of the object, if no write came after
// it; else it reads, and keeps the answer when it is the object or not
// found. A read of a subresource or at a resourceVersion is not kept.
func (r inventoryReadsIn) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if len(sub) > 0 || opts.ResourceVersion != "" {
		return r.ri.Get(ctx, name, opts, sub...)
	}
	key := types.NamespacedName{Namespace: r.ns, Name: name}
	r.c.mu.Lock()
	last, ok := r.c.last[key]
	writes := r.c.writes
	r.c.mu.Unlock()
	if ok {
		if last.err != nil {
			return nil, last.err
		}
		return last.obj.DeepCopy(), nil
	}
	obj, err := r.ri.Get(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) {
		return obj, err
	}
	r.c.mu.Lock()
	if r.c.writes == writes {
		r.c.last[key] = lastRead{obj: obj.DeepCopy(), err: err}
	}
	r.c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// write runs a write, forgetting every read before and after it.
func write[T any](c *inventoryReads, do func() (T, error)) (T, error) {
	c.forget()
	defer c.forget()
	return do()
}

// unchanged is the last read of key when obj is that read at its
// resourceVersion but for its status, nil otherwise. kpt's CRD (the one
// an apply checks the cluster serves) makes status a subresource, which
// an update leaves as it is: kube-apiserver would answer such an update
// with the object it holds, unchanged and unwritten, or with a conflict
// if another client wrote it since the read, and the status update kpt
// sends next, at the same resourceVersion, meets that conflict instead.
// kpt's engine sends such an update each time it replaces an inventory
// whose objects did not change (every first apply) and merges into one.
func (c *inventoryReads) unchanged(key types.NamespacedName, obj *unstructured.Unstructured) *unstructured.Unstructured {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.last[key]
	if !ok || last.obj == nil || last.obj.GetResourceVersion() == "" || last.obj.GetResourceVersion() != obj.GetResourceVersion() {
		return nil
	}
	if !reflect.DeepEqual(withoutStatus(last.obj.Object), withoutStatus(obj.Object)) {
		return nil
	}
	return last.obj.DeepCopy()
}

// withoutStatus is a shallow copy of an object's fields but status.
func withoutStatus(obj map[string]any) map[string]any {
	rest := maps.Clone(obj)
	delete(rest, "status")
	return rest
}

func (c *inventoryReads) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	clear(c.last)
}

func (r inventoryReadsIn) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.Create(ctx, obj, opts, sub...) })
}

// Update sends the update, unless it would change nothing: an update of
// the inventory as last read, at its resourceVersion, with no change but
// to its status answers the object as read (see unchanged).
func (r inventoryReadsIn) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	if len(sub) == 0 && len(opts.DryRun) == 0 {
		if kept := r.c.unchanged(types.NamespacedName{Namespace: r.ns, Name: obj.GetName()}, obj); kept != nil {
			return kept, nil
		}
	}
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.Update(ctx, obj, opts, sub...) })
}

func (r inventoryReadsIn) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.UpdateStatus(ctx, obj, opts) })
}

func (r inventoryReadsIn) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	_, err := write(r.c, func() (struct{}, error) { return struct{}{}, r.ri.Delete(ctx, name, opts, sub...) })
	return err
}

func (r inventoryReadsIn) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	_, err := write(r.c, func() (struct{}, error) { return struct{}{}, r.ri.DeleteCollection(ctx, opts, list) })
	return err
}

func (r inventoryReadsIn) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.Patch(ctx, name, pt, data, opts, sub...) })
}

func (r inventoryReadsIn) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, sub ...string) (*unstructured.Unstructured, error) {
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.Apply(ctx, name, obj, opts, sub...) })
}

func (r inventoryReadsIn) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return write(r.c, func() (*unstructured.Unstructured, error) { return r.ri.ApplyStatus(ctx, name, obj, opts) })
}

func (r inventoryReadsIn) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.ri.List(ctx, opts)
}

func (r inventoryReadsIn) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return r.ri.Watch(ctx, opts)
}
