package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/gate"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/live/status"
)

// A rollout (spec.rollout) applies its waves one after the other: a wave
// starts once every context of the wave before it applied, reconciled and
// stayed Current for that wave's bakeTime. More than maxFailures failed
// contexts in a wave halt the rollout: the later waves' clusters get no
// write at all. Without spec.rollout there is one wave with every context
// and no bake: the run as it always was.

// bakePoll is how often a baking wave's objects are read.
const bakePoll = time.Second

// wave is one wave of the run.
type wave struct {
	plan    v1alpha1.WavePlan
	targets []*target
	report  v1alpha1.WaveApply
	// gates are its gates' runs in each context it bakes (gates.go).
	gates map[*target][]*gate.Run
}

// rollout is spec.rollout, nil without it.
func (r *run) rollout() *v1alpha1.Rollout {
	if r.cfg == nil {
		return nil
	}
	return r.cfg.Config.Source.Spec.Rollout
}

// onFailure is what a halt does: --on-failure, else spec.rollout's.
func (r *run) onFailure() v1alpha1.OnFailure {
	if r.opts.OnFailure != "" {
		return r.opts.OnFailure
	}
	return r.rollout().OnFailureOrDefault()
}

// buildWaves resolves the config's waves over the run's contexts.
func (r *run) buildWaves() error {
	for _, wp := range r.cfg.Config.Source.Spec.Waves() {
		w := &wave{plan: wp, report: v1alpha1.WaveApply{Name: wp.Name, Contexts: wp.Contexts, Status: v1alpha1.WavePending}}
		for _, name := range wp.Contexts {
			if t := r.target(name); t != nil {
				w.targets = append(w.targets, t)
				t.wave = w
			}
		}
		r.waves = append(r.waves, w)
	}
	for _, t := range r.targets {
		if t.wave == nil {
			return fmt.Errorf("context %q belongs to no wave of spec.rollout.waves", t.name)
		}
	}
	return nil
}

// checkRolloutOptions refuses --until-wave and --on-failure that the
// config's waves cannot honour, before anything is read or staged.
func (r *run) checkRolloutOptions() error {
	waves := r.cfg.Config.Source.Spec.Waves()
	if r.opts.OnFailure != "" && r.rollout() == nil {
		return fmt.Errorf("--on-failure %s: the config has no spec.rollout, so no waves to halt or roll back", r.opts.OnFailure)
	}
	if u := r.opts.UntilWave; u != "" {
		if r.rollout() == nil {
			return fmt.Errorf("--until-wave %s: the config has no spec.rollout, so no waves", u)
		}
		if !slices.ContainsFunc(waves, func(w v1alpha1.WavePlan) bool { return w.Name == u }) {
			var names []string
			for _, w := range waves {
				names = append(names, w.Name)
			}
			return fmt.Errorf("--until-wave %s: no such wave (the waves are %s)", u, strings.Join(names, ", "))
		}
	}
	return nil
}

// waveLog prints a rollout's progress line about a wave; none without
// spec.rollout.
func (r *run) waveLog(w *wave, format string, args ...any) {
	if r.waved {
		r.log.printf("wave "+w.plan.Name, format, args...)
	}
}

// runWaves applies the waves in order until one halts or --until-wave's
// has baked, then ends the handoffs left open.
func (r *run) runWaves(ctx context.Context) {
	var halted *wave
	for _, w := range r.waves {
		switch {
		case halted != nil:
			r.skipWave(w, halted)
		case r.paused:
			r.pendWave(w)
		default:
			r.runWave(ctx, w)
			if w.report.Status == v1alpha1.WaveHalted && !r.opts.DryRun {
				halted, r.halted = w, w
			} else if w.plan.Name == r.opts.UntilWave {
				r.paused = true
			}
		}
	}
	if r.paused && !slices.ContainsFunc(r.waves, func(w *wave) bool {
		return w.report.Status == v1alpha1.WavePending || w.report.Status == v1alpha1.WavePaused
	}) {
		r.paused = false // --until-wave named the last wave: nothing is left
	}
	r.holdRest()
}

// reportWaves puts the waves in the report, with spec.rollout only.
func (r *run) reportWaves() {
	if !r.waved {
		return
	}
	for _, w := range r.waves {
		r.report.Waves = append(r.report.Waves, w.report)
	}
	r.report.Paused = r.paused
}

// runWave applies one wave: its contexts' first phase, the prunes that
// became possible, then the bake.
func (r *run) runWave(ctx context.Context, w *wave) {
	limit := r.opts.Parallel
	if w.plan.MaxParallel > 0 {
		limit = w.plan.MaxParallel
	}
	verb := "applying"
	if r.opts.DryRun {
		verb = "dry-run of"
	}
	r.waveLog(w, "%s %d context(s): %s", verb, len(w.targets), strings.Join(w.plan.Contexts, ", "))
	// The wave's applies need not wait for the note on every held lock
	// (a Lease write each, hundreds on a large fleet); it is done before
	// the wave goes on, so that the bake's note comes after it.
	noted := make(chan struct{})
	go func() {
		defer close(noted)
		r.noteProgress(ctx, lease.Progress{Wave: w.plan.Name, Phase: lease.PhaseApplying})
	}()
	r.phaseOn(ctx, w.targets, limit, r.firstPhase)
	<-noted
	r.phaseOn(ctx, r.prunable(), limit, r.secondPhase)
	if !r.opts.DryRun {
		r.waveLog(w, "%d of %d context(s) applied and Current", len(w.targets)-len(r.failedIn(w)), len(w.targets))
	}
	if r.halts(w) {
		return
	}
	switch {
	case w.plan.BakeTime <= 0 && len(w.plan.Gates) == 0:
	case r.opts.DryRun:
		r.waveLog(w, "would bake %s: its objects must stay Current that long%s before the next wave starts", gateSpan(w), describeGates(w))
		r.dryRunGates(ctx, w)
	case !r.changed(w) && !r.unbaked(w):
		r.waveLog(w, "every context unchanged: no bake")
	default:
		r.bake(ctx, w)
		if r.halts(w) {
			return
		}
		if r.pauseOnGates(w) {
			return
		}
	}
	if r.record != nil && r.waved {
		if err := r.record.MarkBaked(w.plan.Name); err != nil {
			r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("wave %s: recording its bake: %v", w.plan.Name, err))
		}
	}
	w.report.Status = v1alpha1.WaveApplied
	if !r.changed(w) {
		w.report.Status = v1alpha1.WaveUnchanged
	}
	if failed := r.failedIn(w); len(failed) > 0 {
		w.report.Error = fmt.Sprintf("%d of %d context(s) failed, within maxFailures %d: %s", len(failed), len(w.targets),
			r.rollout().MaxFailuresOf(len(w.targets)), r.failures(failed))
	}
	r.waveLog(w, "%s", strings.ToLower(string(w.report.Status)))
}

// changed reports whether a context of the wave received changes (or
// still keeps objects it hands off to a later wave).
func (r *run) changed(w *wave) bool {
	for _, t := range w.targets {
		if t.failed || t.report.Status != v1alpha1.ApplyUnchanged {
			return true
		}
	}
	return false
}

// unbaked reports a wave of the unfinished rollout that changed one of
// its contexts but never finished its bake (it failed, or the run was
// killed): unchanged since, it bakes again before the next wave.
func (r *run) unbaked(w *wave) bool {
	if r.record == nil || !r.waved || r.record.HasBaked(w.plan.Name) {
		return false
	}
	for _, t := range w.targets {
		if r.record.Recorded(t.name) != nil {
			return true
		}
	}
	return false
}

// failedIn are the wave's contexts that failed or were not applied.
func (r *run) failedIn(w *wave) []*target {
	var out []*target
	for _, t := range w.targets {
		if t.failed || t.hold != "" {
			out = append(out, t)
		}
	}
	return out
}

// failures names each context and why it failed.
func (r *run) failures(ts []*target) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s: %s", t.name, t.report.Error))
	}
	return strings.Join(parts, "; ")
}

// halts marks the wave Halted when more of its contexts failed than
// maxFailures allows.
func (r *run) halts(w *wave) bool {
	failed := r.failedIn(w)
	allowed := r.rollout().MaxFailuresOf(len(w.targets))
	if r.rollout() == nil || len(failed) <= allowed {
		return false
	}
	w.report.Status = v1alpha1.WaveHalted
	w.report.Error = fmt.Sprintf("%d of %d context(s) failed (maxFailures %d): %s", len(failed), len(w.targets), allowed, r.failures(failed))
	if r.opts.DryRun {
		r.waveLog(w, "would halt the rollout: %s", w.report.Error)
	} else {
		r.waveLog(w, "halted: %s", w.report.Error)
	}
	return true
}

// skipWave reports a wave after a halted one: none of its clusters got a
// write.
func (r *run) skipWave(w, halted *wave) {
	w.report.Status = v1alpha1.WaveSkipped
	w.report.Error = fmt.Sprintf("wave %s halted the rollout", halted.plan.Name)
	for _, t := range w.targets {
		if !t.failed {
			t.report.Status, t.report.Error = v1alpha1.ApplySkipped, "not applied: "+w.report.Error
		}
	}
	r.waveLog(w, "skipped: %s", w.report.Error)
}

// pendWave reports a wave after --until-wave's, or after a wave an
// inconclusive gate paused: left for a rerun.
func (r *run) pendWave(w *wave) {
	w.report.Status = v1alpha1.WavePending
	why := fmt.Sprintf("--until-wave %s paused the rollout", r.opts.UntilWave)
	for _, p := range r.waves {
		if p.report.Status == v1alpha1.WavePaused {
			why = fmt.Sprintf("an inconclusive gate of wave %s paused the rollout", p.plan.Name)
		}
	}
	for _, t := range w.targets {
		if !t.failed {
			t.report.Status = v1alpha1.ApplyPending
			t.report.Error = fmt.Sprintf("not applied yet: %s; apply again to resume", why)
		}
	}
	r.waveLog(w, "pending: %s", why)
}

// allPending reports whether every named context is in a pending wave.
func (r *run) allPending(names []string) bool {
	for _, n := range names {
		if d := r.target(n); d == nil || d.wave.report.Status != v1alpha1.WavePending {
			return false
		}
	}
	return len(names) > 0
}

// bake watches the wave's objects with kstatus for its bakeTime: a
// context with an object that leaves Current (or whose cluster cannot be
// read) fails. It stops early once the wave must halt.
func (r *run) bake(ctx context.Context, w *wave) {
	checkers := map[*target]*status.HealthChecker{}
	start := time.Now()
	w.gates = map[*target][]*gate.Run{}
	defer w.reportGates()
	for _, t := range w.targets {
		if t.failed || !t.firstDone {
			continue
		}
		objs := t.applied()
		hc, err := status.NewHealthChecker(t.factory, objs)
		if err != nil {
			r.failBake(t, fmt.Errorf("context %q: reading its objects' health: %w", t.name, err))
			continue
		}
		runs, err := r.startGates(w, t, start)
		if err != nil {
			r.failBake(t, err)
			continue
		}
		checkers[t], w.gates[t] = hc, runs
	}
	end := start.Add(gateSpan(w))
	r.noteProgress(ctx, lease.Progress{Wave: w.plan.Name, Phase: lease.PhaseBaking, BakeEnds: end})
	r.waveLog(w, "baking %s: every object must stay Current%s", gateSpan(w), describeGates(w))
	poll := time.NewTicker(bakePoll)
	defer poll.Stop()
	lastSaid := time.Now()
	for {
		var g errgroup.Group
		for t, hc := range checkers {
			g.Go(func() error {
				bad, err := hc.Check(ctx)
				switch {
				case err != nil:
					r.failBake(t, fmt.Errorf("context %q: health lost during wave %s's bake: %w", t.name, w.plan.Name, err))
				case len(bad) > 0:
					msgs := make([]string, 0, len(bad))
					for _, b := range bad {
						m := fmt.Sprintf("%s: %s", b.Ref, b.Status)
						if b.Message != "" {
							m += ": " + b.Message
						}
						msgs = append(msgs, m)
					}
					r.failBake(t, fmt.Errorf("context %q: health lost during wave %s's bake: %s", t.name, w.plan.Name, strings.Join(msgs, "; ")))
				default:
					r.measureDue(ctx, w, t, time.Now())
				}
				return nil
			})
		}
		_ = g.Wait()
		for t := range checkers {
			if t.failed {
				delete(checkers, t)
			}
		}
		left := time.Until(end)
		if len(r.failedIn(w)) > r.rollout().MaxFailuresOf(len(w.targets)) {
			return
		}
		if left <= 0 || len(checkers) == 0 {
			r.phaseOn(ctx, mapKeys(checkers), 0, func(ctx context.Context, t *target) { r.finishGates(ctx, w, t) })
			return
		}
		if time.Since(lastSaid) >= waitingEvery {
			r.waveLog(w, "baking: %s left", left.Round(time.Second))
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			for t := range checkers {
				r.failBake(t, fmt.Errorf("context %q: wave %s's bake interrupted: %w", t.name, w.plan.Name, ctx.Err()))
			}
			return
		case <-poll.C:
		case <-time.After(left):
		}
	}
}

// mapKeys are the targets of m.
func mapKeys[V any](m map[*target]V) []*target {
	out := make([]*target, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	return out
}

// failBake fails a context whose health was lost while its wave baked;
// the loss is one of its failures too.
func (r *run) failBake(t *target, err error) {
	err = t.blame(err)
	t.report.Failures = append(t.report.Failures, err.Error())
	r.fail(t, err)
}

// phaseOn runs step on targets, limit at a time (0: all).
func (r *run) phaseOn(ctx context.Context, targets []*target, limit int, step func(context.Context, *target)) {
	g := groupOf(limit)
	for _, t := range targets {
		g.Go(func() error {
			step(ctx, t)
			return nil
		})
	}
	_ = g.Wait()
}
