package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	case r.inSync(ctx, t):
		r.skipInSync(t)
		return
	}
	objs := append(append([]*unstructured.Unstructured{}, t.pkg.Objects...), t.kept...)
	if len(t.kept) > 0 {
		r.log.printf(t.name, "applying %d object(s), keeping the %d it hands off", len(t.pkg.Objects), len(t.kept))
	} else {
		r.log.printf(t.name, "applying %d object(s)", len(objs))
	}
	if err := r.applyContext(ctx, t, objs); err != nil {
		t.fail(err)
		r.log.printf(t.name, "failed: %v", err)
		return
	}
	t.firstDone = true
	if len(t.handoffs) == 0 {
		r.commit(t)
	}
}

// secondPhase prunes what a context hands off, once every context that
// takes an object over has applied it and seen it Current.
func (r *run) secondPhase(ctx context.Context, t *target) {
	if len(t.handoffs) == 0 || !t.firstDone {
		return
	}
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
	if len(waiting) > 0 {
		t.report.Status = v1alpha1.ApplySkipped
		t.report.Error = fmt.Sprintf("kept the %d object(s) it hands off, since %s did not take them (failed): the old and the new copies may both exist until a rerun succeeds",
			len(t.handoffs), strings.Join(waiting, ", "))
		r.log.printf(t.name, "holding: %s", t.report.Error)
		return
	}
	r.log.printf(t.name, "every new copy of the %d object(s) it hands off is Current: applying its package, which prunes them", len(t.handoffs))
	if err := r.applyContext(ctx, t, t.pkg.Objects); err != nil {
		t.fail(err)
		r.log.printf(t.name, "failed: %v", err)
		return
	}
	r.commit(t)
}

// commit records the context's new package in OUT_DIR and its status.
func (r *run) commit(t *target) {
	if !r.opts.DryRun {
		if err := r.staged.Commit(t.name); err != nil {
			t.fail(err)
			r.log.printf(t.name, "failed: %v", err)
			return
		}
	}
	t.done = true
	t.report.Status = v1alpha1.ApplyApplied
	if r.unchanged(t) {
		t.report.Status = v1alpha1.ApplyUnchanged
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
		if !t.done {
			r.report.HeldInBoth = append(r.report.HeldInBoth, t.handoffs...)
		}
	}
}
