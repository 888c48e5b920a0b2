package status

import (
	"context"
	"slices"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// checkHealth reads the objects a context's live inventory lists, for a
// context OUT_DIR is stale for: another run applied them, so they are
// shown as that run left them, with their health, and not compared with
// OUT_DIR (no drift, no extras, nothing not applied: that run's changes
// are not this OUT_DIR's drift).
func checkHealth(ctx context.Context, cl *conn, inv []v1alpha1.ObjectRef) ([]v1alpha1.ObjectStatus, error) {
	batches, unserved, err := groupReads(cl.mapper, inv)
	if err != nil {
		return nil, err
	}
	live, err := readLive(ctx, cl.dynamic, splitSmall(batches, listMin), readsPerContext)
	if err != nil {
		return nil, err
	}
	out := make([]v1alpha1.ObjectStatus, 0, len(inv))
	for _, r := range inv {
		o := v1alpha1.ObjectStatus{ObjectRef: r, Inventory: v1alpha1.ObjectApplied}
		o.Status, o.Message = health(live[r])
		if slices.Contains(unserved, r) {
			o.Message = "the cluster does not serve this kind"
		}
		out = append(out, o)
	}
	sortByRef(out)
	return out, nil
}
