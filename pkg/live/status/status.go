package status

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
)

// Defaults of Options.
const (
	DefaultTimeout  = 2 * time.Minute
	DefaultParallel = 16
	// DefaultFieldManager is cli-utils' (and so kpt live apply's) field
	// manager: the dry-run applies as an apply would.
	DefaultFieldManager = "kubectl"
	// owningInventoryAnnotation is cli-utils' record of the inventory that
	// applied an object.
	owningInventoryAnnotation = "config.k8s.io/owning-inventory"
	// readsPerContext bounds the requests in flight to one cluster.
	readsPerContext = 16
)

// Options are what status reads and how.
type Options struct {
	// OutDir is the split output: one package per context.
	OutDir string
	// Kubeconfig is the kubeconfig file; "" follows kubectl's rules.
	Kubeconfig string
	// Contexts are the contexts to report, in this order; default: every
	// context of OutDir.
	Contexts []string
	// Timeout bounds each context; one that runs out is reported with an
	// error, the others are not affected.
	Timeout time.Duration
	// Parallel is how many contexts are read at once.
	Parallel int
	// FieldManager is the field manager of the dry-run apply.
	FieldManager string
	// FluxContext is the kube context of the cluster that holds the Flux
	// Kustomizations of a split for Flux (the management cluster); ""
	// reads each context's own (one Flux per cluster).
	FluxContext string
	// Impersonate is who every request acts as (--as); zero: the
	// kubeconfig's user entries, with their as:.
	Impersonate cluster.Impersonation
}

func (o *Options) setDefaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
}

// Run reads every context, at most opts.Parallel at once, and returns the
// fleet's status. Only what concerns every context (OUT_DIR, the
// kubeconfig) fails it as a whole: a context that cannot be read is
// reported as such, with its error, and never hides the others.
func Run(ctx context.Context, opts Options) (*v1alpha1.FleetStatus, error) {
	opts.setDefaults()
	fl, err := openFleet(opts.OutDir, opts.Kubeconfig, opts.Contexts)
	if err != nil {
		return nil, err
	}
	fl.kc.Impersonate(opts.Impersonate)
	names := fl.names
	if fl.flux == nil && fl.untracked == nil {
		fl.kc.ReadTogether(cluster.RecordedInventories(fl.outDir, names,
			func(name string) bool { return fl.record.Context(name) != nil }))
	}
	doc := &v1alpha1.FleetStatus{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.FleetStatusKind), Rollout: fl.rollout,
		Gates: fl.gates, Contexts: make([]v1alpha1.ContextStatus, len(names))}
	var g errgroup.Group
	g.SetLimit(opts.Parallel)
	for i, name := range names {
		g.Go(func() error {
			doc.Contexts[i] = checkWithin(ctx, fl, name, opts)
			return nil
		})
	}
	_ = g.Wait() // the contexts' errors are in the document
	describeRuns(doc, opts.OutDir, opts.Kubeconfig, time.Now())
	return doc, nil
}

// checkWithin checks one context within opts.Timeout. Some of the
// libraries' calls take no context.Context; when the time is up the check
// is left behind and the context reported as timed out.
func checkWithin(ctx context.Context, fl *fleet, name string, opts Options) v1alpha1.ContextStatus {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	done := make(chan v1alpha1.ContextStatus, 1)
	go func() { done <- checkContext(ctx, fl, name, opts) }()
	select {
	case st := <-done:
		return st
	case <-ctx.Done():
		return v1alpha1.ContextStatus{Name: name, Objects: []v1alpha1.ObjectStatus{},
			Inventory: v1alpha1.InventoryState{State: v1alpha1.InventoryUnknown},
			Error:     fmt.Sprintf("timed out after %s (--timeout)", opts.Timeout)}
	}
}

// checkContext reads one context: it probes the cluster and asks who it
// is (refusing another cluster than OUT_DIR recorded), then reads the
// package, the context's Lease, the live inventory, every object of
// either, their health and their drift. The probe, the identity and the
// package are read at once, the Lease and the inventory as soon as the
// package names them and the probe answered (readContext), the objects
// once the identity is checked. The outcome is the one of the same reads
// one after another: an unreachable cluster is reported with the probe's
// error alone (its Lease and inventory are not read). The probe and the
// identity are asked once for the contexts that name the same cluster and
// user entries of the kubeconfig (cluster.SharedProbe, SharedIdentity).
func checkContext(ctx context.Context, fl *fleet, name string, opts Options) v1alpha1.ContextStatus {
	st := v1alpha1.ContextStatus{Name: name, Objects: []v1alpha1.ObjectStatus{},
		Inventory: v1alpha1.InventoryState{State: v1alpha1.InventoryUnknown}}
	c, err := fl.clients(name)
	if err != nil {
		// A cluster that rejected the credentials was reached.
		var cerr *cluster.CredentialsError
		st.Reachable = errors.As(err, &cerr) && cerr.Rejected()
		st.Error = contextError(ctx, err, opts.Timeout)
		return st
	}
	probed := make(chan struct{})
	var probeErr error
	go func() {
		defer close(probed)
		probeErr = fl.probe(ctx, name, c)
	}()
	reached := func() bool { <-probed; return probeErr == nil }
	rd := fl.readContext(ctx, c, reached)
	if !reached() {
		// A cluster that rejected the credentials was reached.
		var cerr *cluster.CredentialsError
		st.Reachable = errors.As(probeErr, &cerr) && cerr.Rejected()
		st.Error = contextError(ctx, probeErr, opts.Timeout)
		return st
	}
	st.Reachable = true
	id, idErr := rd.id, rd.idErr
	if err := checkIdentity(name, fl.record.Context(name), id, idErr); err != nil {
		st.Record = contextRecord(nil, nil, id, nil, time.Now())
		st.Error = contextError(ctx, err, opts.Timeout)
		return st
	}
	// The identity alone, until the Lease is read below (a split for a
	// GitOps engine has none: apply does not write it).
	st.Record = contextRecord(nil, nil, id, idErr, time.Now())
	pkg, err := rd.pkg, rd.pkgErr
	if err != nil {
		st.Error = contextError(ctx, err, opts.Timeout)
		return st
	}
	var inv []v1alpha1.ObjectRef
	var found bool
	if fl.untracked != nil {
		u, ok := fl.untracked[name]
		if !ok {
			st.Error = fmt.Sprintf("%s names no engine object for context %q", filepath.Join(fl.outDir, gitops.Dir), name)
			return st
		}
		st.Inventory = v1alpha1.InventoryState{Namespace: u.namespace, Name: u.name, State: v1alpha1.InventoryUnknown,
			Engine: string(u.engine), Note: u.note()}
		objs, err := checkObjects(ctx, c, pkg, nil, false, opts.FieldManager)
		if err != nil {
			st.Error = contextError(ctx, err, opts.Timeout)
			return st
		}
		st.Objects = objs
		return st
	}
	if fl.flux != nil {
		// The engine's object holds the context's inventory.
		st.Engine, inv, found, err = fl.readKustomization(ctx, name, opts.FluxContext)
		if st.Engine != nil {
			st.Inventory.Namespace, st.Inventory.Name = st.Engine.Namespace, st.Engine.Name
		}
	} else {
		st.Inventory.Namespace, st.Inventory.Name = pkg.Inventory.Namespace(), pkg.Inventory.Name()
		st.Record = contextRecord(rd.lease, rd.leaseErr, id, idErr, time.Now())
		st.OutDirMismatch = outDirMismatch(name, pkg.Inventory.Namespace(), pkg.Inventory.Name(), fl.record.Context(name), rd.lease)
		inv, found, err = rd.inv, rd.found, rd.invErr
	}
	if err != nil {
		st.Error = contextError(ctx, err, opts.Timeout)
		return st
	}
	st.Inventory.State = v1alpha1.InventoryMissing
	if found {
		st.Inventory.State = v1alpha1.InventoryFound
	}
	var objs []v1alpha1.ObjectStatus
	if st.Stale() {
		objs, err = checkHealth(ctx, c, inv)
	} else {
		objs, err = checkObjects(ctx, c, pkg, inv, true, opts.FieldManager)
	}
	if err != nil {
		st.Error = contextError(ctx, err, opts.Timeout)
		return st
	}
	st.Objects = objs
	return st
}

// contextReads are what checkContext reads of a context before its
// objects, each with its error.
type contextReads struct {
	id       cluster.Identity
	idErr    error
	pkg      *cluster.Package
	pkgErr   error
	lease    *lease.State
	leaseErr error
	inv      []v1alpha1.ObjectRef
	found    bool
	invErr   error
}

// readContext reads the cluster's identity and, at the same time, the
// context's package, then, once reached says the probe found the cluster,
// its Lease and its live inventory at once (not for a split for a GitOps
// engine, which has neither). It returns once every read it began ended:
// none is left to log once the command is done.
func (fl *fleet) readContext(ctx context.Context, c *conn, reached func() bool) *contextReads {
	rd := &contextReads{}
	var reads sync.WaitGroup
	defer reads.Wait()
	reads.Go(func() {
		rd.id, rd.idErr = fl.kc.SharedIdentity(ctx, c.name, func() (cluster.Identity, error) { return cluster.IdentityFrom(ctx, c.clients.CoreV1, c.server) })
	})
	if fl.flux != nil || fl.untracked != nil {
		rd.pkg, rd.pkgErr = cluster.ReadObjects(c.factory, c.name, c.dir)
		return rd
	}
	if rd.pkg, rd.pkgErr = cluster.ReadPackage(c.factory, c.name, c.dir); rd.pkgErr != nil || !reached() {
		return rd
	}
	inv := rd.pkg.Inventory
	reads.Go(func() {
		rd.lease, rd.leaseErr = lease.Read(ctx, fl.kc.LeasesOf(c.name, c.clients.CoordinationV1), inv.Namespace(), inv.Name())
	})
	rd.inv, rd.found, rd.invErr = c.readInventory(fl.kc.InventoryReadsOf(c.name, c.factory), rd.pkg)
	return rd
}

// contextError words an error of one context, saying so when it is the
// context's timeout.
func contextError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("timed out after %s (--timeout): %v", timeout, err)
	}
	return err.Error()
}

// checkObjects reads the package's objects and the inventory's in batches,
// then computes each one's health, inventory state and drift. Without
// invKnown (an engine's inventory, not read) every object's inventory
// state is unknown.
func checkObjects(ctx context.Context, cl *conn, pkg *cluster.Package, inv []v1alpha1.ObjectRef, invKnown bool, fieldManager string) ([]v1alpha1.ObjectStatus, error) {
	want := map[v1alpha1.ObjectRef]*unstructured.Unstructured{}
	var refs []v1alpha1.ObjectRef
	for _, u := range pkg.Objects {
		r := refOf(u)
		want[r] = asApplied(u, inventoryID(pkg))
		refs = append(refs, r)
	}
	inInventory := map[v1alpha1.ObjectRef]bool{}
	for _, r := range inv {
		inInventory[r] = true
		if want[r] == nil {
			refs = append(refs, r)
		}
	}
	batches, unserved, err := groupReads(cl.mapper, refs)
	if err != nil {
		return nil, err
	}
	batches = splitSmall(batches, listMin)
	live, err := readLive(ctx, cl.dynamic, batches, readsPerContext)
	if err != nil {
		return nil, err
	}
	out := make([]v1alpha1.ObjectStatus, 0, len(refs))
	var checks []driftCheck
	resources := resourceOf(cl.dynamic, batches)
	for _, r := range refs {
		o := v1alpha1.ObjectStatus{ObjectRef: r, Inventory: v1alpha1.ObjectApplied}
		switch {
		case !invKnown:
			o.Inventory = v1alpha1.ObjectInventoryUnknown
		case want[r] == nil:
			o.Inventory = v1alpha1.ObjectExtra
		case !inInventory[r]:
			o.Inventory = v1alpha1.ObjectNotApplied
		}
		o.Status, o.Message = health(live[r])
		if slices.Contains(unserved, r) {
			o.Message = "the cluster does not serve this kind"
		}
		if want[r] != nil && live[r] != nil {
			checks = append(checks, driftCheck{ref: r, resource: resources[r], want: want[r], live: live[r]})
		}
		out = append(out, o)
	}
	drifts, errs := runDriftChecks(ctx, checks, fieldManager)
	for i := range out {
		out[i].Drift, out[i].Error = drifts[out[i].ObjectRef], errs[out[i].ObjectRef]
	}
	sortByRef(out)
	return out, nil
}

// sortByRef sorts objects by their ref, as the document lists them.
func sortByRef(objs []v1alpha1.ObjectStatus) {
	slices.SortFunc(objs, func(a, b v1alpha1.ObjectStatus) int {
		switch {
		case a.ObjectRef.Less(b.ObjectRef):
			return -1
		case b.ObjectRef.Less(a.ObjectRef):
			return 1
		}
		return 0
	})
}

// runDriftChecks runs the checks, a few at once. An object whose check
// fails gets its error instead of a drift.
func runDriftChecks(ctx context.Context, checks []driftCheck, fieldManager string) (map[v1alpha1.ObjectRef]v1alpha1.Drift, map[v1alpha1.ObjectRef]string) {
	drifts := make([]v1alpha1.Drift, len(checks))
	errs := make([]error, len(checks))
	var g errgroup.Group
	g.SetLimit(readsPerContext)
	for i, c := range checks {
		g.Go(func() error {
			drifts[i], errs[i] = c.drift(ctx, fieldManager)
			return nil
		})
	}
	_ = g.Wait()
	byRef, errByRef := map[v1alpha1.ObjectRef]v1alpha1.Drift{}, map[v1alpha1.ObjectRef]string{}
	for i, c := range checks {
		if errs[i] != nil {
			errByRef[c.ref] = errs[i].Error()
		} else if len(drifts[i]) > 0 {
			byRef[c.ref] = drifts[i]
		}
	}
	return byRef, errByRef
}

// resourceOf gives each batched ref the client of its resource and
// namespace.
func resourceOf(client dynamic.Interface, batches []*batch) map[v1alpha1.ObjectRef]dynamic.ResourceInterface {
	out := map[v1alpha1.ObjectRef]dynamic.ResourceInterface{}
	for _, b := range batches {
		ri := b.client(client)
		for _, r := range b.refs {
			out[r] = ri
		}
	}
	return out
}

func refOf(u *unstructured.Unstructured) v1alpha1.ObjectRef {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return v1alpha1.ObjectRef{Group: gv.Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// inventoryID is the package's cli-utils inventory id; "" for a split for
// a GitOps engine, which has none.
func inventoryID(pkg *cluster.Package) string {
	if pkg.Inventory == nil {
		return ""
	}
	return pkg.Inventory.ID()
}

// AsApplied returns a copy of u as cli-utils sends it to the cluster:
// without kyaml's path and index annotations (kpt's reader adds them), and
// with the owning-inventory annotation.
func AsApplied(u *unstructured.Unstructured, inventoryID string) *unstructured.Unstructured {
	return asApplied(u, inventoryID)
}

func asApplied(u *unstructured.Unstructured, inventoryID string) *unstructured.Unstructured {
	u = u.DeepCopy()
	object.StripKyamlAnnotations(u)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if inventoryID != "" {
		ann[owningInventoryAnnotation] = inventoryID
	}
	u.SetAnnotations(ann)
	return u
}
