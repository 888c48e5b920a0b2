package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/live/preflight"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// target is one context of the run.
type target struct {
	name string
	// dir is the staged package.
	dir     string
	factory cmdutil.Factory
	// kc is the kubeconfig the factory was made from: who the context's
	// requests act as, and whether its credentials failed.
	kc *cluster.Kubeconfig
	// reads is factory for the reads of load and inSync
	// (cluster.ReadFactory); the applier gets factory.
	reads cmdutil.Factory
	// leases is the client of the context's Lease (its lock), built by
	// load; nil: built from factory where needed.
	leases coordinationv1.CoordinationV1Interface
	// engineRan is set once kpt's engine has run on the context in this
	// run: its inventory may exist since, whatever load read.
	engineRan bool
	pkg       *cluster.Package
	// objects are the package's objects as kpt identifies them.
	objects object.ObjMetadataSet
	live    cluster.LiveInventory
	// old is OUT_DIR/<context>, what the context last received (nil when
	// there is none).
	old *cluster.Package
	// handoffs are the objects moving out of this context.
	handoffs []v1alpha1.Handoff
	// kept are the copies it holds of them until the new contexts have
	// theirs: applied with its package in the first phase.
	kept []*unstructured.Unstructured
	// hold, when set, says why the context is not applied at all this run.
	hold string
	// disagrees is set when OUT_DIR and the cluster's inventory differ.
	disagrees bool
	// failed is set once the context failed; done once OUT_DIR holds its
	// new package.
	failed bool
	// firstDone is set once its first apply succeeded and reconciled.
	firstDone bool
	// inSync is set when the context needed no apply at all.
	inSync bool
	done   bool
	// pruneTried is set once its second phase ran; pendingHandoff when a
	// paused run leaves its handoffs to a later wave's contexts.
	pruneTried     bool
	pendingHandoff bool
	// rolledBack is set once a rollback after a halt took the context over.
	rolledBack bool
	// identity is the cluster the kube context reaches; lease its Lease
	// as read before any lock (fleet.go).
	identity cluster.Identity
	lease    *lease.State
	// adopted: --adopt-cluster-state took its inventory as the previous
	// state; upToDate: it needs no write (inSync).
	adopted  bool
	upToDate bool
	// inSyncRead is what inSync reads, when load read it already.
	inSyncRead *inSyncRead
	// recordOnly: locked only to write the first record of an in-sync
	// context (lockAll).
	recordOnly bool
	// wave is the rollout wave it belongs to.
	wave *wave
	// upgrades are the objects whose client-side apply ownership moves to
	// the field manager before its first server-side apply (preflight).
	upgrades []preflight.Upgrade
	// counted are the objects behind the report's counts, each once
	// however many phases saw it.
	counted struct{ applied, reconciled, pruned, failed tally }
	report  v1alpha1.ContextApply
}

// fail records that the context failed and says so.
func (r *run) fail(t *target, err error) {
	err = t.blame(err)
	t.fail(err)
	r.log.printf(t.name, "failed: %v", err)
}

// fail records that the context failed.
func (t *target) fail(err error) {
	t.failed = true
	t.report.Status = v1alpha1.ApplyFailed
	if t.report.Error == "" {
		t.report.Error = err.Error()
	}
}

// prepareAll reads, for every context at once, its staged package, its
// live inventory and what OUT_DIR holds for it. A context that cannot be
// read fails alone.
func (r *run) prepareAll(ctx context.Context, kc *cluster.Kubeconfig) {
	if rec := r.fleet.record; rec != nil {
		kc.ReadTogether(r.inventoriesToRead(rec))
	}
	r.prepareEach(ctx, kc, r.targets, r.prepare)
}

// inventoriesToRead is where each context's inventory is, for
// ReadTogether: in OUT_DIR's package for a context the fleet record says
// a run applied; in its staged package (what load reads), Unrecorded, for
// one it records no apply of, such as every context of a first apply.
func (r *run) inventoriesToRead(rec *outdir.FleetRecord) map[string]cluster.InventoryRef {
	recorded := func(name string) bool { return rec.Context(name) != nil }
	refs := cluster.RecordedInventories(r.outDir().Path, r.contextNames(), recorded)
	for _, t := range r.targets {
		if recorded(t.name) {
			continue
		}
		if ref, ok := cluster.InventoryRefOf(t.dir); ok {
			ref.Unrecorded = true
			refs[t.name] = ref
		}
	}
	return refs
}

// prepareEach runs prepare on every target, --parallel at a time.
func (r *run) prepareEach(ctx context.Context, kc *cluster.Kubeconfig, targets []*target, prepare func(context.Context, *cluster.Kubeconfig, *target) error) {
	g := groupOf(r.opts.Parallel)
	for _, t := range targets {
		g.Go(func() error {
			if err := prepare(ctx, kc, t); err != nil {
				r.fail(t, err)
			}
			return nil
		})
	}
	_ = g.Wait()
}

func (r *run) prepare(ctx context.Context, kc *cluster.Kubeconfig, t *target) error {
	r.log.printf(t.name, "reading the package and the cluster's inventory")
	return r.load(ctx, kc, t, func(err error) error {
		return fmt.Errorf("%s", strings.Replace(err.Error(), t.dir, filepath.Join(r.outDir().Path, t.name)+" (staged)", 1))
	})
}

// load reads the package in t.dir, the cluster's live inventory, its
// identity and its Lease, and the package OUT_DIR holds for the context;
// pkgErr words an error reading t.dir's package. Reads that need nothing
// of each other run at once: the identity from the start, the inventory
// and the Lease as soon as the package names them, and, for a context the
// plan and its inventory say is up to date, the reads that tell whether
// its objects are (prefetchInSync). Whatever fails, the error is the one
// the same reads, one after another in this order, would have returned,
// and what they set of t is set.
func (r *run) load(ctx context.Context, kc *cluster.Kubeconfig, t *target, pkgErr func(error) error) error {
	t.factory, t.kc = kc.Factory(t.name), kc
	t.reads = cluster.ReadFactory(t.factory)
	var reads sync.WaitGroup
	defer reads.Wait()
	cs, csErr := readClients(t.factory) // for the identity and the Lease
	if csErr == nil {
		t.leases = cs.CoordinationV1
	}
	var (
		id    cluster.Identity
		idErr error
	)
	reads.Go(func() {
		id, idErr = kc.SharedIdentity(ctx, t.name, func() (cluster.Identity, error) {
			if csErr != nil {
				return cluster.Identity{}, csErr
			}
			return cluster.IdentityFrom(ctx, cs.CoreV1, cs.Server)
		})
	})
	pkg, err := r.readPackage(t)
	if err != nil {
		return pkgErr(err)
	}
	t.pkg = pkg
	t.objects = object.UnstructuredSetToObjMetadataSet(pkg.Objects)
	t.report.Objects = len(pkg.Objects)
	var (
		live    cluster.LiveInventory
		liveErr error
		st      *lease.State
		stErr   error
	)
	reads.Go(func() { live, liveErr = cluster.ReadLiveInventory(kc.InventoryReadsOf(t.name, t.reads), pkg.Inventory) })
	reads.Go(func() {
		if stErr = csErr; stErr == nil {
			st, stErr = lease.Read(ctx, kc.LeasesOf(t.name, cs.CoordinationV1), pkg.Inventory.Namespace(), pkg.Inventory.Name())
		}
	})
	old, oldErr := r.readOld(t)
	reads.Wait()
	if t.live = live; liveErr != nil {
		return fmt.Errorf("context %q: %w", t.name, liveErr)
	}
	if t.old = old; oldErr != nil {
		return oldErr
	}
	if idErr != nil {
		return fmt.Errorf("context %q: %w", t.name, idErr)
	}
	t.identity = id
	if t.lease = st; stErr != nil {
		return fmt.Errorf("context %q: %w", t.name, stErr)
	}
	r.prefetchInSync(ctx, t)
	return nil
}

// readPackage reads the package in t.dir. A package that was not staged,
// being OUT_DIR's own (split.Staged.Kept), is checked once read to be
// still the one compared, else read where it is staged after all.
func (r *run) readPackage(t *target) (*cluster.Package, error) {
	pkg, err := cluster.ReadPackage(t.factory, t.name, t.dir)
	if err != nil || r.staged == nil || !r.staged.Kept(t.name) {
		return pkg, err
	}
	same, err := r.staged.Recheck(t.name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("context %q: %w", t.name, err)
	case !same:
		t.dir = r.staged.Dir(t.name)
		return cluster.ReadPackage(t.factory, t.name, t.dir)
	}
	return pkg, nil
}

// readOld reads the package OUT_DIR holds for t, if any: the one read
// already (t.pkg, a copy of its objects) when t.dir is that directory.
func (r *run) readOld(t *target) (*cluster.Package, error) {
	oldDir := filepath.Join(r.outDir().Path, t.name)
	if _, err := os.Stat(filepath.Join(oldDir, outdir.RGFile)); err != nil {
		return nil, nil
	}
	if t.dir != oldDir {
		return cluster.ReadPackage(t.factory, t.name, oldDir)
	}
	old := *t.pkg
	old.Objects = make([]*unstructured.Unstructured, len(t.pkg.Objects))
	for i, o := range t.pkg.Objects {
		old.Objects[i] = o.DeepCopy()
	}
	return &old, nil
}

// leasesClient is the client of t's Lease: load's, else one made now.
func (t *target) leasesClient() (coordinationv1.CoordinationV1Interface, error) {
	if t.leases != nil {
		return t.leases, nil
	}
	cs, err := t.factory.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	return cs.CoordinationV1(), nil
}

// readClients are the clients of t's identity and Lease.
func readClients(f cmdutil.Factory) (*cluster.ReadClients, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return cluster.NewReadClients(cfg)
}

// oldObjects are the objects OUT_DIR says the context holds.
func (t *target) oldObjects() object.ObjMetadataSet {
	if t.old == nil || t.adopted {
		return nil
	}
	return object.UnstructuredSetToObjMetadataSet(t.old.Objects)
}

// applied are the objects the context's apply sends: its package's, and
// the copies it keeps of the objects it hands off.
func (t *target) applied() []*unstructured.Unstructured {
	return append(append([]*unstructured.Unstructured{}, t.pkg.Objects...), t.kept...)
}

// leaving are the objects the context holds (its live inventory, or
// OUT_DIR) that its new package lacks: what its apply prunes.
func (t *target) leaving() object.ObjMetadataSet {
	return t.live.Objects.Union(t.oldObjects()).Diff(t.objects)
}

// refOf turns a cli-utils object id into the report's.
func refOf(id object.ObjMetadata) v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Group: id.GroupKind.Group, Kind: id.GroupKind.Kind, Namespace: id.Namespace, Name: id.Name}
}

// describe names an object as messages do.
func describe(id object.ObjMetadata) string { return refOf(id).String() }
