package plan

import (
	"fmt"
	"path"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/pkg/config"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// pruneCount is what one context of the config would lose: of the
// previous objects its package held, how many the new one no longer holds.
type pruneCount struct {
	context          string
	previous, pruned int
}

// massPrune reports whether pruning c trips the guard: a context loses all
// of its objects, however few (as Config Sync's KNV2006 refuses deleting
// every managed object: an empty source is the typical breakage), or a
// context that held at least minObjects objects loses more than maxPercent
// of them.
func massPrune(c pruneCount, maxPercent, minObjects int) bool {
	switch {
	case c.pruned == 0:
		return false
	case c.pruned == c.previous:
		return true
	case c.previous < minObjects:
		return false
	}
	return c.pruned*100 > maxPercent*c.previous
}

// MassPrune reports whether losing pruned of previous objects trips the
// guard with the config's limits; the plan flags each context with it, and
// apply judges each cluster's live inventory with it.
func MassPrune(pol config.Policy, previous, pruned int) bool {
	return massPrune(pruneCount{previous: previous, pruned: pruned}, pol.PruneMaxPercent, pol.PruneMinObjects)
}

// guard is the mass-deletion guard of split, plan and apply: a broken
// generator, a bad merge or an empty file must not make kpt live apply
// delete most of a cluster. It adds an error result per context that trips
// it (a warning with spec.allowMassPrune or --allow-mass-prune). Contexts
// dropped from the config are refused as moves instead.
func guard(l *split.Layout, pol config.Policy, allow bool, out *outdir.OutDir, counts []pruneCount) {
	maxPercent := pol.PruneMaxPercent
	for _, c := range counts {
		if !massPrune(c, maxPercent, pol.PruneMinObjects) {
			continue
		}
		what := fmt.Sprintf("%d of its %d objects (%d%%, more than spec.pruneGuard.maxPercent %d%%)", c.pruned, c.previous, c.pruned*100/c.previous, maxPercent)
		if c.pruned == c.previous {
			what = fmt.Sprintf("all %d of its objects", c.previous)
		}
		msg := fmt.Sprintf("context %q: this split would prune %s: kpt live apply --context %s would delete them from that cluster (the mass-deletion guard: a package that suddenly lacks most of a cluster's objects is usually broken)",
			c.context, what, c.context)
		r := &framework.Result{Field: &framework.Field{Path: "spec.pruneGuard"}}
		if out != nil {
			r.File = &framework.File{Path: path.Join(out.Given, c.context)}
		}
		if allow || pol.AllowMassPrune {
			r.Severity, r.Message = framework.Warning, msg+" (allowed by spec.allowMassPrune or --allow-mass-prune)"
		} else {
			r.Severity, r.Message = framework.Error, msg+"; check the package, and if the deletion is intended set spec.allowMassPrune: true or pass --allow-mass-prune (tune the guard with spec.pruneGuard: {maxPercent, minObjects})"
		}
		l.Results = append(l.Results, r)
	}
}

// pruneCounts is the one count of the guard: for each context of the
// config that the previous split wrote, the objects it held that keys (the
// new package's objects of that context) no longer holds.
func pruneCounts(names []string, out *outdir.OutDir, keys func(ctx int) map[outdir.ObjKey]bool) []pruneCount {
	var counts []pruneCount
	for ctx, name := range names {
		pc := out.Context(name)
		if pc == nil || len(pc.Held) == 0 {
			continue
		}
		now := keys(ctx)
		c := pruneCount{context: name, previous: len(pc.Held)}
		for k := range pc.Held {
			if !now[k] {
				c.pruned++
			}
		}
		counts = append(counts, c)
	}
	return counts
}

// keysOf are the objects of the items idx.
func keysOf(items []function.Item, idx []int) map[outdir.ObjKey]bool {
	keys := make(map[outdir.ObjKey]bool, len(idx))
	for _, i := range idx {
		keys[outdir.KeyOf(&items[i].Object)] = true
	}
	return keys
}
