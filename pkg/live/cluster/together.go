package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/kptdev/kpt/pkg/live"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/common"
	"sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// InventoryRef is where a context's inventory is: the namespace, name and
// inventory id of its ResourceGroup. Unrecorded is set for a context that
// OUT_DIR records no apply of (a first apply): its ResourceGroup and
// Lease may well not exist.
type InventoryRef struct {
	Namespace, Name, ID string
	Unrecorded          bool
}

// InventoryRefOf reads the ResourceGroup file of the package in dir (kpt
// live init's resourcegroup.yaml); ok is false when there is none, or it
// cannot be read.
func InventoryRefOf(dir string) (ref InventoryRef, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, outdir.RGFile))
	if err != nil {
		return InventoryRef{}, false
	}
	var rg metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(b, &rg); err != nil {
		return InventoryRef{}, false
	}
	ref = InventoryRef{Namespace: rg.Namespace, Name: rg.Name, ID: rg.Labels[common.InventoryLabel]}
	return ref, ref.Namespace != "" && ref.Name != "" && ref.ID != ""
}

// ReadTogether plans the first read of the ResourceGroup and of the Lease
// of each context of refs (where OUT_DIR says its inventory is, or, for a
// context it records no apply of, its staged package): the contexts that
// name the same cluster and user entries of the kubeconfig and keep their
// inventories in the same namespace are read with lists of that
// namespace, where each context would send a GET of its own. On a cluster
// that serves many contexts (a platform's teams, each a context of one
// cluster; a dense fleet), that is one request instead of one per
// context, and the cheapest for the cluster: a list without a
// resourceVersion is served from kube-apiserver's watch cache once it has
// caught up with etcd (consistent reads from cache), as fresh as a GET.
// A context alone in its group is read as before.
//
// The lists:
//   - of the ResourceGroups of the recorded contexts' inventory ids, and of
//     the Leases with shard-router's label: what a recorded context reads;
//   - of the names of every ResourceGroup of the namespace (metadata only)
//     and of every Lease, for an unrecorded context, or one the first
//     lists lack: an object not in them does not exist, as a GET's
//     NotFound would say, since they list the whole namespace; one they
//     name is read with a GET.
//
// They answer each context's first read of each object only (its rgRead,
// leaseRead): later reads, after this run's writes, go to the cluster. A
// list that fails (a tenant without the list verb, a cluster without the
// ResourceGroup CRD) leaves each context to its own GET, whose answer and
// error are the ones it always had.
func (k *Kubeconfig) ReadTogether(refs map[string]InventoryRef) {
	byGroup := map[togetherKey][]string{}
	for name, ref := range refs {
		c := k.raw.Contexts[name]
		if c == nil || !validLabelValue(ref.ID) {
			continue
		}
		key := togetherKey{cluster: c.Cluster, user: c.AuthInfo, namespace: ref.Namespace}
		byGroup[key] = append(byGroup[key], name)
	}
	plan := map[string]*togetherMember{}
	for _, names := range byGroup {
		if len(names) < 2 {
			continue
		}
		g := &togetherGroup{metadata: k.metadataOf(names[0])}
		for _, name := range names {
			if !refs[name].Unrecorded {
				g.ids = append(g.ids, refs[name].ID)
			}
			plan[name] = &togetherMember{group: g, ref: refs[name]}
		}
	}
	k.together.Store(plan)
}

// metadataOf makes, once, the metadata client of context, from the REST
// config its factory makes (impersonation and credentials included).
func (k *Kubeconfig) metadataOf(context string) func() (metadata.Interface, error) {
	return sync.OnceValues(func() (metadata.Interface, error) {
		if k.newMetadata != nil {
			return k.newMetadata(context)
		}
		cfg, err := k.Factory(context).ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return metadata.NewForConfig(cfg)
	})
}

// togetherKey is a group of contexts read together.
type togetherKey struct{ cluster, user, namespace string }

// togetherGroup is one group's lists: of its recorded ResourceGroups, of
// its Leases; of every ResourceGroup's and Lease's name in the namespace.
type togetherGroup struct {
	// ids are the inventory ids of the recorded contexts.
	ids    []string
	rgs    listOnce[unstructured.Unstructured]
	leases listOnce[coordinationv1.Lease]
	// rgNames, leaseNames are every ResourceGroup and Lease of the
	// namespace, for the reads the lists above do not answer.
	rgNames    listOnce[metav1.PartialObjectMetadata]
	leaseNames listOnce[coordinationv1.Lease]
	// metadata makes a client for the names of the ResourceGroups.
	metadata func() (metadata.Interface, error)
}

// listOnce is a group's list of one resource, made once, by the first
// read that needs it.
type listOnce[T any] struct {
	once sync.Once
	// byName is the list's objects; nil when the list failed.
	byName map[string]*T
}

// get is the listed object named name, listing first (list) if no read
// did yet; nil when the list failed or lacks it.
func (l *listOnce[T]) get(name string, list func() ([]T, error), nameOf func(*T) string) *T {
	obj, _ := l.lookup(name, list, nameOf)
	return obj
}

// lookup is get, and whether the list was made: a nil object of a list
// made is one the list lacks.
func (l *listOnce[T]) lookup(name string, list func() ([]T, error), nameOf func(*T) string) (obj *T, listed bool) {
	l.once.Do(func() {
		items, err := list()
		if err != nil {
			return
		}
		l.byName = make(map[string]*T, len(items))
		for i := range items {
			l.byName[nameOf(&items[i])] = &items[i]
		}
	})
	return l.byName[name], l.byName != nil
}

// togetherMember is one context of a group: where its inventory is
// (ref.Unrecorded: OUT_DIR records no apply of it), and whether its first
// reads were answered.
type togetherMember struct {
	group             *togetherGroup
	ref               InventoryRef
	rgRead, leaseRead atomic.Bool
}

func (k *Kubeconfig) member(context string) *togetherMember {
	plan, _ := k.together.Load().(map[string]*togetherMember)
	return plan[context]
}

// InventoryReadsOf is f for reading context's live inventory: its first
// GET of its ResourceGroup is answered from its group's list, when
// ReadTogether gave it one (see there). f itself otherwise.
func (k *Kubeconfig) InventoryReadsOf(context string, f cmdutil.Factory) cmdutil.Factory {
	m := k.member(context)
	if m == nil {
		return f
	}
	dyn, err := f.DynamicClient()
	if err != nil {
		return f
	}
	return WithDynamic(f, togetherDynamic{Interface: dyn, m: m}, nil)
}

// LeasesOf is c for reading context's Lease: its first GET of it is
// answered from its group's list, when ReadTogether gave it one. c itself
// otherwise.
func (k *Kubeconfig) LeasesOf(context string, c coordclient.LeasesGetter) coordclient.LeasesGetter {
	if m := k.member(context); m != nil {
		return togetherLeases{LeasesGetter: c, m: m}
	}
	return c
}

type togetherDynamic struct {
	dynamic.Interface
	m *togetherMember
}

func (d togetherDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := d.Interface.Resource(gvr)
	if gvr.GroupResource() != resourceGroups {
		return r
	}
	return togetherResource{NamespaceableResourceInterface: r, gvr: gvr, m: d.m}
}

// resourceGroups is the resource of kpt's inventories.
var resourceGroups = schema.GroupResource{Group: live.ResourceGroupGVK.Group, Resource: "resourcegroups"}

type togetherResource struct {
	dynamic.NamespaceableResourceInterface
	gvr schema.GroupVersionResource
	m   *togetherMember
}

func (r togetherResource) Namespace(ns string) dynamic.ResourceInterface {
	ri := r.NamespaceableResourceInterface.Namespace(ns)
	if ns != r.m.ref.Namespace {
		return ri
	}
	return togetherRGs{ResourceInterface: ri, gvr: r.gvr, ns: ns, m: r.m}
}

type togetherRGs struct {
	dynamic.ResourceInterface
	gvr schema.GroupVersionResource
	ns  string
	m   *togetherMember
}

func (r togetherRGs) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if name != r.m.ref.Name || len(sub) > 0 || opts.ResourceVersion != "" || r.m.rgRead.Swap(true) {
		return r.ResourceInterface.Get(ctx, name, opts, sub...)
	}
	g := r.m.group
	if !r.m.ref.Unrecorded {
		u, listed := g.rgs.lookup(name, func() ([]unstructured.Unstructured, error) {
			sel, err := labels.NewRequirement(common.InventoryLabel, selection.In, g.ids)
			if err != nil {
				return nil, err
			}
			l, err := r.ResourceInterface.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			if err != nil {
				return nil, err
			}
			return l.Items, nil
		}, (*unstructured.Unstructured).GetName)
		switch {
		case u != nil:
			return u.DeepCopy(), nil
		case !listed: // the list of names would fail as this one did
			return r.ResourceInterface.Get(ctx, name, opts, sub...)
		}
	}
	named, listed := g.rgNames.lookup(name, func() ([]metav1.PartialObjectMetadata, error) {
		c, err := g.metadata()
		if err != nil {
			return nil, err
		}
		l, err := c.Resource(r.gvr).Namespace(r.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}, (*metav1.PartialObjectMetadata).GetName)
	if listed && named == nil {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	return r.ResourceInterface.Get(ctx, name, opts, sub...)
}

type togetherLeases struct {
	coordclient.LeasesGetter
	m *togetherMember
}

func (c togetherLeases) Leases(ns string) coordclient.LeaseInterface {
	li := c.LeasesGetter.Leases(ns)
	if ns != c.m.ref.Namespace {
		return li
	}
	return togetherLeaseReads{LeaseInterface: li, m: c.m}
}

type togetherLeaseReads struct {
	coordclient.LeaseInterface
	m *togetherMember
}

func (c togetherLeaseReads) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if name != lease.Name(c.m.ref.Name) || opts.ResourceVersion != "" || c.m.leaseRead.Swap(true) {
		return c.LeaseInterface.Get(ctx, name, opts)
	}
	g := c.m.group
	if !c.m.ref.Unrecorded {
		l, listed := g.leases.lookup(name, func() ([]coordinationv1.Lease, error) {
			l, err := c.LeaseInterface.List(ctx, metav1.ListOptions{LabelSelector: lease.ManagedBySelector})
			if err != nil {
				return nil, err
			}
			return l.Items, nil
		}, (*coordinationv1.Lease).GetName)
		switch {
		case l != nil:
			return l.DeepCopy(), nil
		case !listed: // the list of every Lease would fail as this one did
			return c.LeaseInterface.Get(ctx, name, opts)
		}
	}
	l, listed := g.leaseNames.lookup(name, func() ([]coordinationv1.Lease, error) {
		l, err := c.LeaseInterface.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}, (*coordinationv1.Lease).GetName)
	switch {
	case listed && l == nil:
		return nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
	case l != nil:
		// The list of every Lease holds the object itself: Leases are small.
		return l.DeepCopy(), nil
	}
	return c.LeaseInterface.Get(ctx, name, opts)
}

// validLabelValue is whether id can be a label selector's value.
func validLabelValue(id string) bool {
	_, err := labels.NewRequirement(common.InventoryLabel, selection.In, []string{id})
	return err == nil
}

// RecordedInventories are, of the contexts of names that OUT_DIR's fleet
// record says a run applied (recorded), where OUT_DIR's packages keep
// their inventories: what ReadTogether plans with. The packages are read
// again, whole, by each context's own reads; this is only a plan.
func RecordedInventories(outDir string, names []string, recorded func(string) bool) map[string]InventoryRef {
	refs := map[string]InventoryRef{}
	for _, name := range names {
		if !recorded(name) {
			continue
		}
		if ref, ok := InventoryRefOf(filepath.Join(outDir, name)); ok {
			refs[name] = ref
		}
	}
	return refs
}
