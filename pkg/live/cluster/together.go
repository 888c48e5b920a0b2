package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/kptdev/kpt/pkg/live"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/dynamic"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/common"
	"sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// InventoryRef is where a context's inventory is: the namespace, name and
// inventory id of its ResourceGroup.
type InventoryRef struct {
	Namespace, Name, ID string
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
// of each context of refs (where OUT_DIR says its inventory is): the
// contexts that name the same cluster and user entries of the kubeconfig
// and keep their inventories in the same namespace are read with one list
// of that namespace's ResourceGroups (of their inventory ids) and one of
// its shard-router Leases, where each context would send a GET of its own.
// On a cluster that serves many contexts (a platform's teams, each a
// context of one cluster; a dense fleet), that is one request instead of
// one per context, and the cheapest for the cluster: a list without a
// resourceVersion is served from kube-apiserver's watch cache once it has
// caught up with etcd (consistent reads from cache), as fresh as a GET.
// A context alone in its group is read as before.
//
// The list answers each context's first read of each object only (its
// rgRead, leaseRead): later reads, after this run's writes, go to the cluster. A
// list that fails (a tenant without the list verb, a cluster without the
// ResourceGroup CRD) or that lacks an object (a Lease without shard-router's
// label, an inventory never applied) leaves each context to its own GET,
// whose answer and error are the ones it always had.
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
		g := &togetherGroup{}
		for _, name := range names {
			g.ids = append(g.ids, refs[name].ID)
			plan[name] = &togetherMember{group: g, ref: refs[name]}
		}
	}
	k.together.Store(plan)
}

// togetherKey is a group of contexts read together.
type togetherKey struct{ cluster, user, namespace string }

// togetherGroup is one group's lists: of its ResourceGroups, of its
// Leases.
type togetherGroup struct {
	ids    []string
	rgs    listOnce[unstructured.Unstructured]
	leases listOnce[coordinationv1.Lease]
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
	return l.byName[name]
}

// togetherMember is one context of a group: where its inventory is, and
// whether its first reads were answered.
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
	return togetherResource{NamespaceableResourceInterface: r, m: d.m}
}

// resourceGroups is the resource of kpt's inventories.
var resourceGroups = schema.GroupResource{Group: live.ResourceGroupGVK.Group, Resource: "resourcegroups"}

type togetherResource struct {
	dynamic.NamespaceableResourceInterface
	m *togetherMember
}

func (r togetherResource) Namespace(ns string) dynamic.ResourceInterface {
	ri := r.NamespaceableResourceInterface.Namespace(ns)
	if ns != r.m.ref.Namespace {
		return ri
	}
	return togetherRGs{ResourceInterface: ri, m: r.m}
}

type togetherRGs struct {
	dynamic.ResourceInterface
	m *togetherMember
}

func (r togetherRGs) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if name != r.m.ref.Name || len(sub) > 0 || opts.ResourceVersion != "" || r.m.rgRead.Swap(true) {
		return r.ResourceInterface.Get(ctx, name, opts, sub...)
	}
	ids := r.m.group.ids
	u := r.m.group.rgs.get(name, func() ([]unstructured.Unstructured, error) {
		sel, err := labels.NewRequirement(common.InventoryLabel, selection.In, ids)
		if err != nil {
			return nil, err
		}
		l, err := r.ResourceInterface.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}, (*unstructured.Unstructured).GetName)
	if u != nil {
		return u.DeepCopy(), nil
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
	l := c.m.group.leases.get(name, func() ([]coordinationv1.Lease, error) {
		l, err := c.LeaseInterface.List(ctx, metav1.ListOptions{LabelSelector: lease.ManagedBySelector})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}, (*coordinationv1.Lease).GetName)
	if l != nil {
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
