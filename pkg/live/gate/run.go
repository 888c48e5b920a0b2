package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// Run is one gate in one context for one bake: when its measurements are
// due, and what they decided.
type Run struct {
	Gate   *Gate
	Target Target
	// Result is the gate's result so far.
	Result v1alpha1.GateResult
	start  time.Time
	taken  int
	// consecutive counts the errors in a row.
	consecutive int
	done        bool
}

// NewRun starts a gate's run in a context whose wave became Current at
// start.
func NewRun(g *Gate, t Target, start time.Time) *Run {
	return &Run{Gate: g, Target: t, start: start, Result: v1alpha1.GateResult{
		Gate: g.Spec.Name, Context: t.Context, Provider: g.Spec.Provider(), Phase: v1alpha1.GateRunning,
		Measurements: []v1alpha1.GateMeasurement{},
	}}
}

// Done reports whether the gate decided (Failed, Error or Inconclusive
// past its limits), or took all its counted measurements.
func (r *Run) Done() bool { return r.done }

// Due reports whether a measurement is due at now: at initialDelay, then
// every interval, count times when count is set. A gate without interval
// or count measures only at the end (Finish).
func (r *Run) Due(now time.Time) bool {
	if r.done {
		return false
	}
	interval, delay := r.Gate.Spec.Durations()
	count := r.Gate.Spec.Count
	if count != nil && r.taken >= int(*count) {
		return false
	}
	if interval <= 0 && count == nil {
		return false
	}
	next := r.start.Add(delay + time.Duration(r.taken)*interval)
	return !now.Before(next)
}

// Measure takes a measurement now and records it; it returns it.
func (r *Run) Measure(ctx context.Context) v1alpha1.GateMeasurement {
	m := r.Gate.Measure(ctx, r.Target)
	r.Record(m)
	return m
}

// Record tallies a measurement and decides the gate once a limit is
// passed.
func (r *Run) Record(m v1alpha1.GateMeasurement) {
	r.taken++
	res := &r.Result
	res.Measurements = append(res.Measurements, m)
	if n := len(res.Measurements); n > keepMeasurements {
		res.Measurements = append([]v1alpha1.GateMeasurement{}, res.Measurements[n-keepMeasurements:]...)
	}
	failureLimit, inconclusiveLimit, errorLimit := r.Gate.Spec.Limits()
	if m.Phase == v1alpha1.GateError {
		res.Errors++
		r.consecutive++
	} else {
		r.consecutive = 0
	}
	switch m.Phase {
	case v1alpha1.GateSuccessful:
		res.Successful++
	case v1alpha1.GateFailed:
		res.Failed++
	case v1alpha1.GateInconclusive:
		res.Inconclusive++
	}
	switch {
	case res.Failed > failureLimit:
		r.decide(v1alpha1.GateFailed, fmt.Sprintf("%d failed measurement(s), failureLimit %d (last: %s)", res.Failed, failureLimit, describe(m)))
	case r.consecutive > errorLimit:
		r.decide(v1alpha1.GateError, fmt.Sprintf("%d measurement errors in a row, consecutiveErrorLimit %d (last: %s)", r.consecutive, errorLimit, m.Message))
	case res.Inconclusive > inconclusiveLimit:
		r.decide(v1alpha1.GateInconclusive, fmt.Sprintf("%d inconclusive measurement(s), inconclusiveLimit %d (last: %s)", res.Inconclusive, inconclusiveLimit, describe(m)))
	case r.Gate.Spec.Count != nil && r.taken >= int(*r.Gate.Spec.Count):
		r.finish()
	}
}

// NeedsFinal reports whether the gate measures once more at the end of
// the bake: every gate that is not done and has no count.
func (r *Run) NeedsFinal() bool { return !r.done && r.Gate.Spec.Count == nil }

// Finish ends the run at the end of the bake: a gate within its limits is
// Successful, unless it took no measurement or its last one was an Error
// (an error is never a pass).
func (r *Run) Finish() {
	if !r.done {
		r.finish()
	}
}

func (r *Run) finish() {
	ms := r.Result.Measurements
	switch {
	case len(ms) == 0:
		r.decide(v1alpha1.GateError, "no measurement was taken")
	case ms[len(ms)-1].Phase == v1alpha1.GateError:
		r.decide(v1alpha1.GateError, "the last measurement was an error, never a pass: "+ms[len(ms)-1].Message)
	default:
		r.decide(v1alpha1.GateSuccessful, "")
	}
}

func (r *Run) decide(phase v1alpha1.GatePhase, msg string) {
	r.done = true
	r.Result.Phase, r.Result.Message = phase, msg
}

// describe is a measurement as a progress line shows it.
func describe(m v1alpha1.GateMeasurement) string {
	switch {
	case m.Phase == v1alpha1.GateError:
		return "Error: " + m.Message
	case m.Value != "":
		return m.Value + " " + string(m.Phase)
	}
	return string(m.Phase)
}

// Describe is a measurement as a progress line shows it: its value and
// verdict, or the error.
func Describe(m v1alpha1.GateMeasurement) string { return describe(m) }

// Failing reports whether a decided phase fails the context.
func Failing(p v1alpha1.GatePhase) bool {
	return p == v1alpha1.GateFailed || p == v1alpha1.GateError
}
