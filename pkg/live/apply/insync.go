package apply

import (
	"context"

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
	if kptcmdutil.VerifyResourceGroupCRD(t.factory) != nil || !r.resourceGroupCRDMatched(t) {
		return false
	}
	reader, err := status.NewReader(t.factory)
	if err != nil {
		return false
	}
	ssaManager := ""
	if r.strategy.ServerSide {
		ssaManager = r.strategy.FieldManager
	}
	why, err := reader.Mismatch(ctx, t.pkg, ssaManager)
	switch {
	case err != nil:
		r.log.printf(t.name, "could not tell whether its objects match the package (%v): applying it", err)
		return false
	case why != "":
		r.log.printf(t.name, "the plan has no change, but the cluster differs (%s): applying it", why)
		return false
	}
	return true
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
