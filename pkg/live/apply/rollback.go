package apply

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// A rollout keeps, in OUT_DIR (outdir.RolloutRecord), the package each
// context held before the rollout first wrote to it, until the rollout
// completes. A rollback applies those packages again, newest wave first,
// with the handoffs of any apply: an object the rollback moves back keeps
// its copy where it is until its old context has it Current again.

// ErrNoRollout is returned by Rollback when OUT_DIR records no unfinished
// rollout.
var ErrNoRollout = errors.New("no unfinished rollout is recorded in the output directory: nothing to roll back")

// recordChange keeps the context's previous package before the rollout
// first writes to it. A context whose plan shows no change against OUT_DIR
// and whose cluster agrees needs no rollback, so it is not recorded.
func (r *run) recordChange(t *target) error {
	if r.record == nil || !r.waved || r.rollingBack || r.plannedUnchanged(t) {
		return nil
	}
	names := make([]string, len(r.waves))
	for i, w := range r.waves {
		names[i] = w.plan.Name
	}
	r.record.WritesWith(r.strategy)
	return r.record.Save(t.name, t.wave.plan.Name, names)
}

// plannedUnchanged: the plan saw no change against OUT_DIR, the cluster's
// inventory agrees with OUT_DIR, and nothing hands off.
func (r *run) plannedUnchanged(t *target) bool {
	return !t.disagrees && len(t.handoffs) == 0 && r.planUnchanged(t)
}

// Rollback rolls OUT_DIR's unfinished rollout back by hand (apply
// --rollback): every context it recorded gets the package it held before
// the rollout again, newest wave first. OUT_DIR must be locked.
func Rollback(ctx context.Context, out *outdir.OutDir, opts Options) (*v1alpha1.ApplyReport, error) {
	if opts.ReconcileTimeout <= 0 {
		opts.ReconcileTimeout = DefaultReconcileTimeout
	}
	opts.DryRun = false
	rec, err := outdir.OpenRollout(out)
	if err != nil {
		return nil, err
	}
	if !rec.Exists() {
		return nil, ErrNoRollout
	}
	kc, err := cluster.LoadKubeconfig(opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	kc.Impersonate(opts.Impersonate)
	var names []string
	for _, c := range rec.Contexts {
		names = append(names, c.Name)
	}
	if err := kc.Require(names); err != nil {
		return nil, err
	}
	report := newReport(false)
	fl, err := newFleet(out)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fl.lost = cancel
	rb := rollbackRun(opts, &progress{w: opts.Progress}, rec, out, report, fl)
	var how *v1alpha1.ApplyOptions
	if rec.Apply != nil {
		how = rec.Apply.Options()
	}
	if err := rb.resolveStrategy(how); err != nil {
		return nil, err
	}
	rb.rollBack(ctx, kc)
	for _, t := range rb.targets {
		report.Contexts = append(report.Contexts, t.report)
	}
	for _, w := range rb.waves {
		report.Waves = append(report.Waves, w.report)
	}
	return report, nil
}

func newReport(dryRun bool) *v1alpha1.ApplyReport {
	return &v1alpha1.ApplyReport{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.ApplyReportKind), DryRun: dryRun,
		Contexts: []v1alpha1.ContextApply{}, Handoffs: []v1alpha1.Handoff{}, HeldInBoth: []v1alpha1.Handoff{},
		Errors: []string{}, Warnings: []string{}}
}

// rollbackRun is a run that applies the record's previous packages.
func rollbackRun(opts Options, log *progress, rec *outdir.RolloutRecord, out *outdir.OutDir, report *v1alpha1.ApplyReport, fl *fleet) *run {
	opts.Plan.Split.Out = out
	return &run{opts: opts, log: log, report: report, record: rec, rollingBack: true, waved: true, fleet: fl}
}

// rollBack reads every recorded context's previous package, its live
// inventory and OUT_DIR's package, finds the handoffs among them, then
// applies the waves newest first. The record is removed once every
// context is back.
func (r *run) rollBack(ctx context.Context, kc *cluster.Kubeconfig) {
	rec := r.record
	for i := len(rec.Waves) - 1; i >= 0; i-- {
		w := &wave{plan: v1alpha1.WavePlan{Name: rec.Waves[i]}, report: v1alpha1.WaveApply{Name: rec.Waves[i], Contexts: []string{}, Status: v1alpha1.WavePending}}
		for _, c := range rec.Contexts {
			if c.Wave != w.plan.Name {
				continue
			}
			w.plan.Contexts = append(w.plan.Contexts, c.Name)
			w.report.Contexts = append(w.report.Contexts, c.Name)
			t := &target{name: c.Name, dir: rec.PreviousDir(c.Name), wave: w, report: v1alpha1.ContextApply{Name: c.Name}}
			if !c.Previous {
				t.hold = "it had no package before the rollout: not rolled back (kpt live destroy removes what its cluster holds)"
				r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("context %q: %s", c.Name, t.hold))
			}
			w.targets = append(w.targets, t)
			r.targets = append(r.targets, t)
		}
		if len(w.targets) > 0 {
			r.waves = append(r.waves, w)
		}
	}
	var reading []*target
	for _, t := range r.targets {
		if t.hold == "" {
			reading = append(reading, t)
		}
	}
	r.prepareEach(ctx, kc, reading, r.prepareRollback)
	// After a halt the run already wrote: a context whose credentials
	// died fails alone, and the others are rolled back.
	if (!r.afterHalt && r.refuseCredentials(reading)) || r.checkFleet() || !r.lockAll(ctx, r.targets) {
		for _, t := range r.targets {
			if !t.failed {
				t.report.Status, t.report.Error = v1alpha1.ApplySkipped, "the rollback was refused"
			}
		}
		return
	}
	defer r.unlockAll()
	placed := placement{}
	for _, t := range r.targets {
		for _, id := range t.objects {
			placed[refOf(id)] = append(placed[refOf(id)], t.name)
		}
	}
	r.findHandoffs(ctx, placed)
	if r.preflight(ctx, r.targets) {
		// Refused before any write: the locks are given back as taken.
		for _, t := range r.targets {
			if !t.failed {
				t.report.Status, t.report.Error = v1alpha1.ApplySkipped, "the rollback was refused"
			}
		}
		return
	}
	for _, w := range r.waves {
		r.waveLog(w, "rolling back %d context(s) to the package each held before the rollout: %s", len(w.targets), strings.Join(w.plan.Contexts, ", "))
		r.noteProgress(ctx, lease.Progress{Wave: w.plan.Name, Phase: lease.PhaseRollingBack})
		r.phaseOn(ctx, w.targets, r.opts.Parallel, r.firstPhase)
		r.phaseOn(ctx, r.prunable(), r.opts.Parallel, r.secondPhase)
		w.report.Status = v1alpha1.WaveRolledBack
		if failed := r.failedIn(w); len(failed) > 0 {
			w.report.Status = v1alpha1.WaveHalted
			w.report.Error = "rollback failed: " + r.failures(failed)
		}
		r.waveLog(w, "%s", strings.ToLower(string(w.report.Status)))
	}
	r.holdRest()
	r.heldInBoth()
	sortHandoffs(r.report.Handoffs)
	sortHandoffs(r.report.HeldInBoth)
	if slices.ContainsFunc(r.targets, func(t *target) bool { return !t.done && t.hold == "" }) {
		r.report.Errors = append(r.report.Errors, fmt.Sprintf("the rollback did not finish: %s keeps the rollout's record; apply --rollback again", filepath.Join(r.outDir().Given, outdir.RolloutDir)))
		return
	}
	if err := rec.Remove(); err != nil {
		r.report.Errors = append(r.report.Errors, err.Error())
	}
}

// foldWaves reports the waves the rollback rb took back: RolledBack, as
// apply --rollback reports them, each error naming the wave that halted
// and why; a wave whose rollback failed is Halted, its error saying why.
func (r *run) foldWaves(rb *run) {
	halted := fmt.Sprintf("wave %s halted the rollout: %s", r.halted.plan.Name, r.halted.report.Error)
	for _, bw := range rb.waves {
		for _, w := range r.waves {
			if w.plan.Name != bw.plan.Name {
				continue
			}
			switch {
			case bw.report.Status == v1alpha1.WaveRolledBack:
				w.report.Status, w.report.Error = v1alpha1.WaveRolledBack, "rolled back: "+halted
			case w == r.halted:
				w.report.Error += "; then " + bw.report.Error
			default:
				w.report.Status, w.report.Error = bw.report.Status, bw.report.Error
			}
		}
	}
}

// prepareRollback reads what a rollback needs of one context: as
// prepare does, t.dir being its kept previous package.
func (r *run) prepareRollback(ctx context.Context, kc *cluster.Kubeconfig, t *target) error {
	return r.load(ctx, kc, t, func(err error) error { return err })
}

// rollBackAfterHalt rolls back what this run changed once a wave halted
// with onFailure Rollback, and folds the rollback into the run's report.
func (r *run) rollBackAfterHalt(ctx context.Context, kc *cluster.Kubeconfig) {
	rb := rollbackRun(r.opts, r.log, r.record, r.outDir(), newReport(false), r.fleet)
	rb.strategy = r.strategy
	rb.afterHalt = true
	rb.rollBack(ctx, kc)
	for _, bt := range rb.targets {
		t := r.target(bt.name)
		if t == nil {
			continue
		}
		t.rolledBack = true
		why := t.report.Error
		t.report = bt.report
		if bt.report.Status == v1alpha1.ApplyRolledBack {
			t.report.Error = fmt.Sprintf("rolled back: wave %s halted the rollout", r.halted.plan.Name)
			if why != "" {
				t.report.Error = "rolled back; it had failed: " + why
			}
		}
	}
	r.foldWaves(rb)
	r.report.Handoffs = append(r.report.Handoffs, rb.report.Handoffs...)
	r.rollbackHeld = rb.report.HeldInBoth
	r.report.Warnings = append(r.report.Warnings, rb.report.Warnings...)
	r.report.Errors = append(r.report.Errors, rb.report.Errors...)
}
