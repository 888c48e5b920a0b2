package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/gate"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// A wave's gates (spec.rollout.waves[].gates) measure each of its contexts
// while it bakes, and once more at the end of the bake: a gate that fails
// (or errors past its limit) fails its context exactly as lost health
// does; an inconclusive one pauses the rollout after the wave, as
// --until-wave does, and the next apply measures the wave again.

// gateSpan is how long the wave's bake lasts: its bakeTime, or longer when
// a gate's count needs it.
func gateSpan(w *wave) time.Duration {
	span := w.plan.BakeTime
	for i := range w.plan.Gates {
		span = max(span, w.plan.Gates[i].Span())
	}
	return span
}

// gateTarget is what a gate measures in t's context: its labels, its
// endpoints, and (for the kubernetes provider) its cluster's clients.
func (r *run) gateTarget(w *wave, t *target) (gate.Target, error) {
	gt := gate.Target{Context: t.name}
	for _, c := range r.cfg.Config.Source.Spec.Contexts {
		if c.Name == t.name {
			gt.Labels, gt.Endpoints = c.Labels, c.Endpoints
		}
	}
	for i := range w.plan.Gates {
		if w.plan.Gates[i].Kubernetes == nil || t.factory == nil {
			continue
		}
		dyn, err := t.factory.DynamicClient()
		if err != nil {
			return gt, err
		}
		mapper, err := t.factory.ToRESTMapper()
		if err != nil {
			return gt, err
		}
		gt.Dynamic, gt.Mapper = dyn, mapper
		break
	}
	return gt, nil
}

// startGates compiles the wave's gates and starts them in t's context.
func (r *run) startGates(w *wave, t *target, start time.Time) ([]*gate.Run, error) {
	if len(w.plan.Gates) == 0 {
		return nil, nil
	}
	gt, err := r.gateTarget(w, t)
	if err != nil {
		return nil, fmt.Errorf("context %q: a client for wave %s's gates: %w", t.name, w.plan.Name, err)
	}
	var runs []*gate.Run
	for _, spec := range w.plan.Gates {
		g, err := gate.Compile(spec)
		if err != nil {
			return nil, err
		}
		runs = append(runs, gate.NewRun(g, gt, start))
	}
	return runs, nil
}

// measure takes a measurement of run and says so.
func (r *run) measure(ctx context.Context, w *wave, run *gate.Run) {
	m := run.Measure(ctx)
	r.waveLog(w, "gate %s: %s: %s", run.Result.Gate, run.Target.Context, gate.Describe(m))
}

// measureDue takes t's due measurements, then fails t when a gate failed.
// A context whose credentials failed is failed for them, not measured: a
// kubernetes gate would count the 401 as its own error.
func (r *run) measureDue(ctx context.Context, w *wave, t *target, now time.Time) {
	if cerr := t.credentials(); cerr != nil {
		r.failBake(t, cerr)
		return
	}
	for _, run := range w.gates[t] {
		if run.Due(now) {
			r.measure(ctx, w, run)
		}
	}
	r.judgeGates(w, t)
}

// finishGates takes the end-of-bake measurements of t's gates, then
// decides them.
func (r *run) finishGates(ctx context.Context, w *wave, t *target) {
	for _, run := range w.gates[t] {
		if run.NeedsFinal() {
			r.measure(ctx, w, run)
		}
		run.Finish()
	}
	r.judgeGates(w, t)
}

// judgeGates fails t on its first failed gate, and says which gate was
// decided.
func (r *run) judgeGates(w *wave, t *target) {
	if t.failed {
		return
	}
	for _, run := range w.gates[t] {
		if !run.Done() || !gate.Failing(run.Result.Phase) {
			continue
		}
		r.failBake(t, fmt.Errorf("context %q: gate %s %s during wave %s's bake: %s", t.name, run.Result.Gate,
			strings.ToLower(string(run.Result.Phase)), w.plan.Name, run.Result.Message))
		return
	}
}

// inconclusive names the wave's inconclusive gates and their contexts,
// among the contexts that did not fail.
func (w *wave) inconclusive() []string {
	var out []string
	for _, t := range w.targets {
		if t.failed {
			continue
		}
		for _, run := range w.gates[t] {
			if run.Result.Phase == v1alpha1.GateInconclusive {
				out = append(out, fmt.Sprintf("gate %s in %s: %s", run.Result.Gate, t.name, run.Result.Message))
			}
		}
	}
	return out
}

// reportGates puts the wave's gate results in its report, in context and
// gate order.
func (w *wave) reportGates() {
	w.report.Gates = nil
	for _, t := range w.targets {
		for _, run := range w.gates[t] {
			w.report.Gates = append(w.report.Gates, run.Result)
		}
	}
}

// pauseOnGates pauses the rollout after w when one of its gates was
// inconclusive; the wave is not recorded as baked, so the next apply
// bakes and measures it again.
func (r *run) pauseOnGates(w *wave) bool {
	why := w.inconclusive()
	if len(why) == 0 {
		return false
	}
	w.report.Status = v1alpha1.WavePaused
	w.report.Error = "inconclusive: " + strings.Join(why, "; ") + "; apply again to measure again"
	r.paused = true
	r.waveLog(w, "paused: %s", w.report.Error)
	return true
}

// dryRunGates measures every gate of the wave once in each of its
// contexts, against the clusters as they are, and says what the gates
// would decide; nothing fails or pauses.
func (r *run) dryRunGates(ctx context.Context, w *wave) {
	if len(w.plan.Gates) == 0 {
		return
	}
	w.gates = map[*target][]*gate.Run{}
	var g errgroup.Group
	for _, t := range w.targets {
		runs, err := r.startGates(w, t, time.Now())
		if err != nil {
			r.waveLog(w, "gates: %v", err)
			continue
		}
		w.gates[t] = runs
		g.Go(func() error {
			for _, run := range runs {
				r.measure(ctx, w, run)
				run.Finish()
				switch phase := run.Result.Phase; {
				case gate.Failing(phase):
					r.waveLog(w, "gate %s: %s: would fail the context: %s", run.Result.Gate, t.name, run.Result.Message)
				case phase == v1alpha1.GateInconclusive:
					r.waveLog(w, "gate %s: %s: would pause the rollout: %s", run.Result.Gate, t.name, run.Result.Message)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	w.reportGates()
}

// describeGates is the bake line's account of the gates.
func describeGates(w *wave) string {
	if len(w.plan.Gates) == 0 {
		return ""
	}
	names := make([]string, len(w.plan.Gates))
	for i, g := range w.plan.Gates {
		names[i] = g.Name
	}
	return fmt.Sprintf(", and pass gate(s) %s", strings.Join(names, ", "))
}

// recordGates keeps, in OUT_DIR (outdir.GatesFile), what each wave's
// gates measured in this run, for status to show once the run's report
// is gone. A wave this run did not measure keeps its last measurements.
func (r *run) recordGates() error {
	if r.opts.DryRun || !r.waved || r.rollingBack {
		return nil
	}
	names := make([]string, len(r.waves))
	var measured []v1alpha1.WaveGates
	for i, w := range r.waves {
		names[i] = w.plan.Name
		if len(w.report.Gates) == 0 {
			continue
		}
		wg := v1alpha1.WaveGates{Wave: w.plan.Name, Status: w.report.Status, Gates: w.report.Gates}
		for _, g := range w.report.Gates {
			for _, m := range g.Measurements {
				if wg.MeasuredAt.Before(&m.At) {
					wg.MeasuredAt = m.At
				}
			}
		}
		if wg.MeasuredAt.IsZero() {
			wg.MeasuredAt = metav1.Now()
		}
		measured = append(measured, wg)
	}
	if err := outdir.RecordGates(r.outDir(), names, measured); err != nil {
		return fmt.Errorf("recording the gates' measurements in %s: %w", filepath.Join(r.outDir().Given, outdir.GatesFile), err)
	}
	return nil
}
