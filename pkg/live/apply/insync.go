package apply

import (
	"context"
	"sync"

	kptcmdutil "github.com/kptdev/kpt/pkg/lib/util/cmdutil"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// inSync reports whether an apply of the context would change nothing, so
// that it gets no write request at all (not even kpt's inventory update or
// CRD install): the plan saw no change against OUT_DIR, the cluster's
// inventory lists exactly the package's objects (nothing to prune, nothing
// handed off), kpt's ResourceGroup CRD is the one kpt installs, and every
// live object matches the package (status.Reader.Mismatch). Any doubt, or
// a read that fails, answers false: the context is then applied as kpt
// would apply it.
func (r *run) inSync(ctx context.Context, t *target) bool {
	if !r.planUnchanged(t) || t.disagrees || len(t.handoffs) > 0 || len(t.kept) > 0 ||
		!t.live.Found || !t.live.Objects.Equal(t.objects) {
		return false
	}
	rd := t.inSyncRead
	if rd == nil {
		// Not read with the context: read now, the objects only once the
		// CRD is known to be kpt's.
		rd = &inSyncRead{}
		if rd.crd = r.crdServedAndMatched(t); rd.crd {
			rd.readObjects(ctx, t, r.ssaManager())
		}
	}
	if !rd.crd || rd.readerErr != nil {
		return false
	}
	switch {
	case rd.err != nil:
		r.log.printf(t.name, "could not tell whether its objects match the package (%v): applying it", rd.err)
		return false
	case rd.why != "":
		r.log.printf(t.name, "the plan has no change, but the cluster differs (%s): applying it", rd.why)
		return false
	}
	return true
}

// inSyncRead is what inSync reads of a context's cluster: whether kpt's
// ResourceGroup CRD is served and is kpt's (crd), and whether its objects
// match the package (status.Reader.Mismatch's answer, or why no reader).
type inSyncRead struct {
	crd       bool
	readerErr error
	why       string
	err       error
}

// ssaManager is the field manager whose server-side apply status'
// Mismatch judges, "" for kpt's client-side apply.
func (r *run) ssaManager() string {
	if r.strategy.ServerSide {
		return r.strategy.FieldManager
	}
	return ""
}

// readObjects asks the cluster whether t's objects match its package, as
// an apply with ssaManager (see ssaManager) would.
func (rd *inSyncRead) readObjects(ctx context.Context, t *target, ssaManager string) {
	f := t.reads
	if f == nil {
		f = t.factory
	}
	reader, err := status.NewReader(f)
	if rd.readerErr = err; err == nil {
		rd.why, rd.err = reader.Mismatch(ctx, t.pkg, ssaManager)
	}
}

// crdServedAndMatched: kpt's ResourceGroup kind is served and its CRD is
// the one kpt installs.
func (r *run) crdServedAndMatched(t *target) bool {
	return kptcmdutil.VerifyResourceGroupCRD(t.factory) == nil && r.resourceGroupCRDMatched(t)
}

// prefetchInSync makes inSync's reads as soon as load read the context,
// when what is known then says inSync will make them: the plan has no
// change for it, its inventory lists exactly the package's objects, as
// OUT_DIR does, and its kube context reaches the cluster OUT_DIR recorded
// (objects are read only from that cluster). The CRD and the objects are
// read at once. What the refusals find later (handoffs, another run's
// lock) may leave the answer unused: it is only read, never acted on
// before inSync.
func (r *run) prefetchInSync(ctx context.Context, t *target) {
	if r.splitPlan == nil || r.rollingBack || r.opts.CheckOnly || t.hold != "" || !r.planUnchanged(t) ||
		!t.live.Found || !t.live.Objects.Equal(t.objects) || t.old == nil || !t.live.Objects.Equal(t.oldObjects()) {
		return
	}
	if rec := r.fleet.record.Context(t.name); rec != nil && rec.ClusterUID != "" && rec.ClusterUID != t.identity.UID {
		return
	}
	rd := &inSyncRead{}
	var wg sync.WaitGroup
	wg.Go(func() { rd.crd = r.crdServedAndMatched(t) })
	rd.readObjects(ctx, t, r.ssaManager())
	wg.Wait()
	t.inSyncRead = rd
}

// planUnchanged: the plan saw no change for the context against OUT_DIR.
func (r *run) planUnchanged(t *target) bool {
	for _, c := range r.splitPlan.Contexts {
		if c.Name == t.name {
			return c.State == v1alpha1.ContextKept && len(c.Create)+len(c.Update)+len(c.Prune) == 0
		}
	}
	return false
}

// skipInSync records a context that needs no apply: OUT_DIR already holds
// its package, and its cluster its objects.
func (r *run) skipInSync(t *target) {
	t.firstDone, t.inSync = true, true
	r.commit(t) // says so, in one line
}
