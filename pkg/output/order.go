package output

import (
	"slices"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// At hundreds of contexts a report is read from the top: its summary line
// first, then the contexts that failed, then the rest. The documents
// (JSON, YAML) keep their own order (config order); only what people read
// is ordered so.

// applyRank orders an apply's contexts for people: failed first, then
// rolled back, then the rest.
func applyRank(s v1alpha1.ApplyStatus) int {
	switch s {
	case v1alpha1.ApplyFailed:
		return 0
	case v1alpha1.ApplyRolledBack:
		return 1
	}
	return 2
}

// applyOrder is the report's contexts, failed first, each group in the
// report's order.
func applyOrder(r *v1alpha1.ApplyReport) []v1alpha1.ContextApply {
	out := slices.Clone(r.Contexts)
	slices.SortStableFunc(out, func(a, b v1alpha1.ContextApply) int { return applyRank(a.Status) - applyRank(b.Status) })
	return out
}

// statusRank orders a fleet's contexts for people: unreachable or
// failed first, then those that need attention (or could not be checked
// in full), then those in sync.
func statusRank(c v1alpha1.ContextStatus) int {
	switch {
	case c.Failed():
		return 0
	case c.InSync() && !c.Inventory.EngineKeeps():
		return 2
	}
	return 1
}

// statusOrder is the fleet's contexts, failed first, each group in the
// document's order.
func statusOrder(s *v1alpha1.FleetStatus) []v1alpha1.ContextStatus {
	out := slices.Clone(s.Contexts)
	slices.SortStableFunc(out, func(a, b v1alpha1.ContextStatus) int { return statusRank(a) - statusRank(b) })
	return out
}
