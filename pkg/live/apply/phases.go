package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// firstPhase applies a context's new package. A context that hands
// objects off applies them too (its kept copies), so that it prunes none
// of them yet; any other context is then done.
func (r *run) firstPhase(ctx context.Context, t *target) {
	switch {
	case t.failed:
		return
	case t.hold != "":
		t.report.Status, t.report.Error = v1alpha1.ApplySkipped, t.hold
		r.log.printf(t.name, "not applied: %s", t.hold)
		return
	case !r.rollingBack && t.upToDate:
		r.skipInSync(t)
		return
	}
	if err := r.recordChange(t); err != nil {
		r.fail(t, err)
		return
	}
	objs := t.applied()
	switch {
	case len(t.kept) > 0 && len(t.pkg.Objects) == 0:
		r.log.printf(t.name, "applying %d object(s): the ones it hands off, kept until their new copies are Current (its new package has none)", len(objs))
	case len(t.kept) > 0:
		r.log.printf(t.name, "applying %d object(s): the %d of its package and the %d it hands off, kept until their new copies are Current", len(objs), len(t.pkg.Objects), len(t.kept))
	default:
		r.log.printf(t.name, "applying %d object(s)", len(objs))
	}
	if err := r.applyContext(ctx, t, objs); err != nil {
		r.fail(t, err)
		return
	}
	t.firstDone = true
	if len(t.handoffs) == 0 {
		r.commit(t)
	}
}

// waitingFor are the contexts that take over objects t hands off and have
// not applied them yet.
func (r *run) waitingFor(t *target) []string {
	var waiting []string
	for _, h := range t.handoffs {
		for _, to := range h.To {
			if d := r.target(to); d == nil || !d.firstDone {
				if !slices.Contains(waiting, to) {
					waiting = append(waiting, to)
				}
			}
		}
	}
	return waiting
}

// prunable are the contexts whose second phase can run now: they applied
// their kept copies, and every context that takes one over has applied it
// and seen it Current (in this wave or an earlier one).
func (r *run) prunable() []*target {
	var out []*target
	for _, t := range r.targets {
		if len(t.handoffs) > 0 && t.firstDone && !t.done && !t.failed && !t.pruneTried && len(r.waitingFor(t)) == 0 {
			out = append(out, t)
		}
	}
	return out
}

// secondPhase prunes what a context hands off, once every context that
// takes an object over has applied it and seen it Current.
func (r *run) secondPhase(ctx context.Context, t *target) {
	t.pruneTried = true
	r.log.printf(t.name, "every new copy of the %d object(s) it hands off is Current: applying its package, which prunes them", len(t.handoffs))
	if err := r.applyContext(ctx, t, t.pkg.Objects); err != nil {
		r.fail(t, err)
		return
	}
	r.commit(t)
}

// holdRest ends the contexts that still keep objects they hand off
// because a context taking them over did not apply them: held in both
// when it failed or was skipped, pending when --until-wave paused the run
// before its wave.
func (r *run) holdRest() {
	for _, t := range r.targets {
		if len(t.handoffs) == 0 || !t.firstDone || t.done || t.failed {
			continue
		}
		waiting := r.waitingFor(t)
		if r.paused && r.allPending(waiting) {
			t.pendingHandoff = true
			t.report.Status = v1alpha1.ApplyPending
			t.report.Error = fmt.Sprintf("keeps the %d object(s) it hands off until %s, in a later wave, has them Current: apply again to resume (--until-wave paused the run)",
				len(t.handoffs), strings.Join(waiting, ", "))
			r.log.printf(t.name, "pending: %s", t.report.Error)
			continue
		}
		t.report.Status = v1alpha1.ApplySkipped
		t.report.Error = fmt.Sprintf("kept the %d object(s) it hands off, since %s did not take them (%s): the old and the new copies may both exist until a rerun succeeds",
			len(t.handoffs), strings.Join(waiting, ", "), r.whyNotTaken(waiting))
		r.log.printf(t.name, "holding: %s", t.report.Error)
	}
}

// whyNotTaken says why contexts did not take their objects over.
func (r *run) whyNotTaken(names []string) string {
	for _, n := range names {
		if d := r.target(n); d != nil && d.wave != nil && d.wave.report.Status == v1alpha1.WaveSkipped {
			return "skipped: an earlier wave halted"
		}
	}
	return "failed"
}

// commit records the context's new package in OUT_DIR and its status.
func (r *run) commit(t *target) {
	if r.rollingBack {
		if err := r.record.Restore(t.name); err != nil {
			r.fail(t, err)
			return
		}
		t.done = true
		t.report.Status = v1alpha1.ApplyRolledBack
		r.log.printf(t.name, "rolled back: %d applied, %d reconciled, %d pruned", t.report.Applied, t.report.Reconciled, t.report.Pruned)
		return
	}
	if !r.opts.DryRun {
		if err := r.staged.Commit(t.name); err != nil {
			r.fail(t, err)
			return
		}
	}
	t.done = true
	t.report.Status = v1alpha1.ApplyApplied
	if r.unchanged(t) {
		t.report.Status = v1alpha1.ApplyUnchanged
		r.log.printf(t.name, "unchanged: every object matches the package and is Current: nothing to apply")
		return
	}
	r.log.printf(t.name, "%s: %d applied, %d reconciled, %d pruned", strings.ToLower(string(t.report.Status)),
		t.report.Applied, t.report.Reconciled, t.report.Pruned)
}

// unchanged: the context needed no write (see inSync); one that was
// applied, if only to correct drift, is Applied.
func (r *run) unchanged(t *target) bool { return t.inSync }

func (r *run) target(name string) *target {
	for _, t := range r.targets {
		if t.name == name {
			return t
		}
	}
	return nil
}

// heldInBoth lists the handoffs of every context that did not finish.
func (r *run) heldInBoth() {
	for _, t := range r.targets {
		if !t.done && !t.pendingHandoff && !t.rolledBack {
			r.report.HeldInBoth = append(r.report.HeldInBoth, t.handoffs...)
		}
	}
	r.report.HeldInBoth = append(r.report.HeldInBoth, r.rollbackHeld...)
}
