package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/object"
	"sigs.k8s.io/cli-utils/pkg/object/dependson"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/plan"
)

// refuse runs the checks that need every context's package and live
// inventory, before anything is applied: depends-on across contexts, the
// mass-deletion guard on what each cluster's inventory will really lose,
// where OUT_DIR disagrees with a cluster, and which objects hand off. It
// reports true when the run must stop.
func (r *run) refuse(ctx context.Context) bool {
	if r.checkFleet() {
		// Another cluster, another owner or a stale OUT_DIR: the guards
		// below would compare with the wrong state.
		r.refused()
		return true
	}
	placed := r.placement()
	r.checkDependsOn(placed)
	r.guardLive()
	r.guardLiveMoves(placed)
	r.compareOutDir()
	r.findHandoffs(ctx, placed)
	if len(r.report.Errors) == 0 {
		return false
	}
	r.refused()
	return true
}

// refused reports every context that did not fail as skipped: the run
// was refused before any write.
func (r *run) refused() {
	for _, t := range r.targets {
		if !t.failed {
			t.report.Status, t.report.Error = v1alpha1.ApplySkipped, "the run was refused"
		}
	}
	r.finishReport()
}

// placement says which contexts each object of the new split goes to. It
// comes from the split itself, so it also knows the objects of a context
// whose cluster could not be read. A namespaced object written without a
// namespace gets one from its kube context; it is keyed without one here
// and matches any namespace (placed.contexts).
type placement map[v1alpha1.ObjectRef][]string

func (r *run) placement() placement {
	p := placement{}
	for _, pkg := range r.layout.Packages {
		for _, ref := range pkg.Objects() {
			p[ref] = append(p[ref], pkg.Context)
		}
	}
	return p
}

// contexts returns the contexts whose new package holds id.
func (p placement) contexts(id object.ObjMetadata) []string {
	ref := refOf(id)
	out := slices.Clone(p[ref])
	if ref.Namespace != "" {
		ref.Namespace = ""
		for _, c := range p[ref] {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// checkDependsOn refuses a config.kubernetes.io/depends-on that points
// into another context: kpt orders objects within one apply only.
func (r *run) checkDependsOn(placed placement) {
	for _, t := range r.targets {
		if t.pkg == nil {
			continue
		}
		for _, obj := range t.pkg.Objects {
			if !dependson.HasAnnotation(obj) {
				continue
			}
			id := object.UnstructuredToObjMetadata(obj)
			deps, err := dependson.ReadAnnotation(obj)
			if err != nil {
				r.report.Errors = append(r.report.Errors, fmt.Sprintf("context %q: %s: %s: %v", t.name, describe(id), dependson.Annotation, err))
				continue
			}
			for _, dep := range deps {
				if t.objects.Contains(dep) {
					continue
				}
				elsewhere := placed.contexts(dep)
				if len(elsewhere) == 0 || slices.Contains(elsewhere, t.name) {
					continue // not in this split: kpt checks it in the cluster
				}
				r.report.Errors = append(r.report.Errors, fmt.Sprintf("context %q: %s depends on %s (%s), which goes to context(s) %s: kpt can only order objects within one cluster's apply; route both to the same context or drop the annotation",
					t.name, describe(id), describe(dep), dependson.Annotation, strings.Join(elsewhere, ", ")))
			}
		}
	}
}

// guardLive is the mass-deletion guard on what each cluster's inventory
// holds: what kpt live apply really prunes. Where the plan's guard (on
// OUT_DIR) warned about the same context, this warning replaces it.
func (r *run) guardLive() {
	pol := r.cfg.Config.Policy
	for _, t := range r.targets {
		if t.pkg == nil || !t.live.Found || len(t.live.Objects) == 0 {
			continue
		}
		pruned := t.live.Objects.Diff(t.objects)
		if !plan.MassPrune(pol, len(t.live.Objects), len(pruned)) {
			continue
		}
		msg := fmt.Sprintf("context %q: this apply would prune %d of the %d objects its ResourceGroup %s/%s holds in the cluster (such as %s): the mass-deletion guard",
			t.name, len(pruned), len(t.live.Objects), t.pkg.Inventory.Namespace(), t.pkg.Inventory.Name(), describe(pruned[0]))
		if r.opts.Plan.AllowMassPrune || pol.AllowMassPrune {
			msg += " (allowed by spec.allowMassPrune or --allow-mass-prune)"
			i, ok := r.massWarned[t.name]
			if ok {
				// The plan's guard saw the same deletion in OUT_DIR: one
				// warning, about what kpt really prunes.
				r.report.Warnings[i] = msg
			} else {
				i = len(r.report.Warnings)
				r.report.Warnings = append(r.report.Warnings, msg)
			}
			if r.liveMassWarned == nil {
				r.liveMassWarned = map[string]int{}
			}
			r.liveMassWarned[t.name] = i
			continue
		}
		r.report.Errors = append(r.report.Errors, msg+"; check the package, and if the deletion is intended set spec.allowMassPrune: true or pass --allow-mass-prune")
	}
}

// sayMassPrunes words each mass-deletion warning of the live guard by
// what happened, once the run is over: a context that finished pruned
// those objects (the ones it handed off once their new copies were
// Current); one that did not keeps the warning of what an apply would do.
func (r *run) sayMassPrunes() {
	for _, t := range r.targets {
		i, ok := r.liveMassWarned[t.name]
		if !ok || !t.done || r.opts.DryRun || t.report.Status != v1alpha1.ApplyApplied {
			continue
		}
		pruned := t.live.Objects.Diff(t.objects)
		moved := 0
		for _, id := range pruned {
			if slices.ContainsFunc(t.handoffs, func(h v1alpha1.Handoff) bool { return h.Ref == refOf(id) }) {
				moved++
			}
		}
		how := ""
		if moved > 0 {
			how = fmt.Sprintf("; %d of them moved to other contexts, pruned here once their new copies were Current", moved)
		}
		r.report.Warnings[i] = fmt.Sprintf("context %q: pruned %d of the %d objects its ResourceGroup %s/%s held in the cluster (such as %s)%s: past the mass-deletion guard, allowed by spec.allowMassPrune or --allow-mass-prune",
			t.name, len(pruned), len(t.live.Objects), t.pkg.Inventory.Namespace(), t.pkg.Inventory.Name(), describe(pruned[0]), how)
	}
}

// compareOutDir says where OUT_DIR and a cluster's inventory disagree:
// the plan compares with OUT_DIR, kpt prunes what the inventory holds.
func (r *run) compareOutDir() {
	for _, t := range r.targets {
		if t.pkg == nil || t.adopted {
			continue // adopted: the cluster's inventory is the previous state
		}
		old := t.oldObjects()
		onlyLive := t.live.Objects.Diff(old)
		onlyOut := old.Diff(t.live.Objects)
		if len(onlyLive) > 0 {
			r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("context %q: the cluster's inventory holds %d object(s) that OUT_DIR/%s does not (such as %s): OUT_DIR is behind the cluster; this apply prunes those the new package lacks",
				t.name, len(onlyLive), t.name, describe(onlyLive[0])))
		}
		if len(onlyOut) > 0 {
			r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("context %q: OUT_DIR/%s holds %d object(s) that the cluster's inventory does not (such as %s): they were never applied there, or were removed; this apply creates those the new package has",
				t.name, t.name, len(onlyOut), describe(onlyOut[0])))
		}
		if len(onlyLive)+len(onlyOut) > 0 {
			t.disagrees = true
		}
	}
}

// findHandoffs lists the objects that leave a context for others: the old
// context keeps its copy (kept, applied with its new package) until every
// new context holds the object Current. One whose prune an earlier run
// began once its new copies were Current is pruned, not kept
// (prunedBefore).
func (r *run) findHandoffs(ctx context.Context, placed placement) {
	for _, t := range r.targets {
		if t.pkg == nil {
			continue
		}
		leaving := t.leaving()
		moves := map[object.ObjMetadata][]string{}
		for _, id := range leaving {
			if to := slices.DeleteFunc(placed.contexts(id), func(c string) bool { return c == t.name }); len(to) > 0 {
				moves[id] = to
			}
		}
		pruned := r.prunedBefore(ctx, t, moves)
		for _, id := range leaving {
			to := moves[id]
			if len(to) == 0 {
				continue // a plain prune
			}
			h := v1alpha1.Handoff{Ref: refOf(id), From: t.name, To: to}
			r.report.Handoffs = append(r.report.Handoffs, h)
			if pruned[id] {
				r.log.printf(t.name, "%s: an earlier run began to prune it and its new copies are Current: pruning it, not applying it again", describe(id))
				continue
			}
			t.handoffs = append(t.handoffs, h)
			obj := r.keptCopy(t, id)
			if obj == nil {
				// Without a copy to apply, any apply of this context
				// would prune it: hold the whole context.
				t.hold = fmt.Sprintf("it hands %s off, but neither OUT_DIR/%s nor a reachable new context has a copy to keep applying meanwhile; apply again once the new context is reachable", describe(id), t.name)
				continue
			}
			t.kept = append(t.kept, obj)
		}
		if len(t.handoffs) > 0 {
			r.log.printf(t.name, "hands %d object(s) off to other contexts: it keeps them until their new copies are Current", len(t.handoffs))
		}
	}
}

// keptCopy is what the old context applies for an object it hands off:
// the copy OUT_DIR says it last received, else the new contexts' copy.
func (r *run) keptCopy(t *target, id object.ObjMetadata) *unstructured.Unstructured {
	if t.old != nil {
		for _, obj := range t.old.Objects {
			if object.UnstructuredToObjMetadata(obj) == id {
				return obj.DeepCopy()
			}
		}
	}
	for _, o := range r.targets {
		if o == t || o.pkg == nil {
			continue
		}
		for _, obj := range o.pkg.Objects {
			if object.UnstructuredToObjMetadata(obj) == id {
				return obj.DeepCopy()
			}
		}
	}
	return nil
}
