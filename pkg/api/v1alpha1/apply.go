package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ApplyReportKind is the kind of `shard-router apply -o json`.
const ApplyReportKind = "ApplyReport"

// ApplyReport is `shard-router apply -o json`: what apply did in each
// context, and the objects a move left in two clusters.
type ApplyReport struct {
	TypeMeta `json:",inline"`
	// DryRun is true for --dry-run: every cluster was asked for a
	// server-side dry run, and nothing was changed.
	DryRun bool `json:"dryRun"`
	// Apply is how the run wrote: kpt live apply's flags, from the command
	// line, spec.apply and kpt's defaults.
	Apply *ApplyStrategy `json:"apply,omitempty"`
	// Contexts are the contexts of the config in config order, then the
	// contexts that left it, by name.
	Contexts []ContextApply `json:"contexts"`
	// Handoffs are the objects that move from one context to others in
	// this run: the new contexts get them first, the old one prunes them
	// only once every new copy is Current.
	Handoffs []Handoff `json:"handoffs"`
	// HeldInBoth are the handoffs that did not finish: the old context
	// still holds its copy (and the new contexts may hold theirs). A rerun
	// finishes them.
	HeldInBoth []Handoff `json:"heldInBoth"`
	// Errors stopped the run before anything was applied (refusals, bad
	// input); Warnings did not.
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	// Waves are spec.rollout's waves in order, as this run left them;
	// absent without spec.rollout.
	Waves []WaveApply `json:"waves,omitempty"`
	// Paused is set when --until-wave stopped the run after that wave
	// baked, or a gate of a wave was inconclusive (that wave is Paused):
	// the later waves are Pending, and a rerun resumes them.
	Paused bool `json:"paused,omitempty"`
}

// WaveStatus is how one wave of a rollout ended.
type WaveStatus string

const (
	// WaveApplied: every context of the wave is Applied or Unchanged (at
	// least one Applied), Current, and stayed so for its bakeTime, or
	// fewer than maxFailures of them failed.
	WaveApplied WaveStatus = "Applied"
	// WaveUnchanged: every context of the wave was Unchanged; no bake.
	WaveUnchanged WaveStatus = "Unchanged"
	// WaveHalted: more than maxFailures of its contexts failed (applying,
	// reconciling, or during the bake): the rollout stopped here.
	WaveHalted WaveStatus = "Halted"
	// WaveSkipped: an earlier wave halted; its clusters got no write.
	WaveSkipped WaveStatus = "Skipped"
	// WavePending: --until-wave paused the rollout before it; a rerun
	// applies it.
	WavePending WaveStatus = "Pending"
	// WaveRolledBack: its contexts got their previous packages again.
	WaveRolledBack WaveStatus = "RolledBack"
	// WavePaused: its contexts were applied and baked, but a gate was
	// inconclusive: the rollout paused after it, as --until-wave pauses
	// it, and a rerun measures the wave again.
	WavePaused WaveStatus = "Paused"
)

// WaveApply is one wave of a rollout.
type WaveApply struct {
	Name     string     `json:"name"`
	Contexts []string   `json:"contexts"`
	Status   WaveStatus `json:"status"`
	// Error says why the wave halted, paused or was skipped: the contexts
	// that failed and why, or the gate that was inconclusive.
	Error string `json:"error,omitempty"`
	// Gates are the wave's gates in each of its contexts, as this run left
	// them (with --dry-run: one measurement each); absent without gates or
	// when the wave did not bake.
	Gates []GateResult `json:"gates,omitempty"`
}

// GatePhase is a gate's or a measurement's verdict.
type GatePhase string

const (
	// GateRunning: the gate was still measuring (the bake was cut short).
	GateRunning GatePhase = "Running"
	// GateSuccessful: a measurement met the success condition (or not the
	// failure one); a gate: it ended within its limits.
	GateSuccessful GatePhase = "Successful"
	// GateFailed: a measurement met the failure condition (or not the
	// success one); a gate: more than failureLimit did. It fails its
	// context.
	GateFailed GatePhase = "Failed"
	// GateInconclusive: a measurement met neither condition; a gate: more
	// than inconclusiveLimit did. It pauses the rollout.
	GateInconclusive GatePhase = "Inconclusive"
	// GateError: a measurement could not be taken (unreachable, timeout,
	// empty result, a condition that could not be evaluated); a gate: more
	// than consecutiveErrorLimit in a row, or its last one. It fails its
	// context: an error is never a pass.
	GateError GatePhase = "Error"
)

// GateResult is one gate in one context.
type GateResult struct {
	Gate     string    `json:"gate"`
	Context  string    `json:"context"`
	Provider string    `json:"provider"`
	Phase    GatePhase `json:"phase"`
	// Message says why the gate failed, errored or was inconclusive.
	Message string `json:"message,omitempty"`
	// Successful, Failed, Inconclusive and Errors count its measurements.
	Successful   int `json:"successful"`
	Failed       int `json:"failed"`
	Inconclusive int `json:"inconclusive"`
	Errors       int `json:"errors"`
	// Measurements are the last measurements, oldest first.
	Measurements []GateMeasurement `json:"measurements"`
}

// GateMeasurement is one measurement of a gate in a context.
type GateMeasurement struct {
	At    metav1.Time `json:"at"`
	Phase GatePhase   `json:"phase"`
	// Value is what the provider returned: a number, a list, an HTTP
	// status; empty on an error.
	Value string `json:"value,omitempty"`
	// Message says why it errored, or the failed status.
	Message string `json:"message,omitempty"`
}

// ApplyStatus is how one context's apply ended.
type ApplyStatus string

const (
	// ApplyApplied: the context received changes, they reconciled, and
	// OUT_DIR/<context> now holds its new package.
	ApplyApplied ApplyStatus = "Applied"
	// ApplyUnchanged: OUT_DIR, the cluster's inventory and its live objects
	// (all Current) already matched the new package: it got no write.
	ApplyUnchanged ApplyStatus = "Unchanged"
	// ApplyFailed: the context could not be read, applied, reconciled or
	// pruned; OUT_DIR/<context> is unchanged. In a rollout, a context whose
	// object left Current during its wave's bake fails too; OUT_DIR then
	// holds the new package its cluster received.
	ApplyFailed ApplyStatus = "Failed"
	// ApplySkipped: the context was not applied (the run was refused, or
	// it left the config), or its prune was held back because a context
	// that takes over some of its objects failed; OUT_DIR/<context> is
	// unchanged.
	ApplySkipped ApplyStatus = "Skipped"
	// ApplyPending: --until-wave paused the rollout before the context's
	// wave; it got no write, OUT_DIR/<context> is unchanged.
	ApplyPending ApplyStatus = "Pending"
	// ApplyRolledBack: the rollout failed, and the context, which this
	// run changed, got the package it held before the run again;
	// OUT_DIR/<context> holds that package.
	ApplyRolledBack ApplyStatus = "RolledBack"
)

// ContextApply is one context's apply.
type ContextApply struct {
	Name   string      `json:"name"`
	Status ApplyStatus `json:"status"`
	// Error says why the context failed or was skipped.
	Error string `json:"error,omitempty"`
	// Objects counts the objects of the context's new package.
	Objects int `json:"objects"`
	// Applied counts the objects of the new package that this run applied
	// (a server-side dry run with --dry-run), each once, however many
	// phases applied it (a context that hands objects off is applied
	// twice). The copies a context keeps of the objects it hands off are
	// not of its package: Handoffs names them. An Unchanged context
	// applied none.
	Applied int `json:"applied"`
	// Reconciled counts the objects of the new package that this run
	// waited for and saw Current (none with --dry-run), each once.
	Reconciled int `json:"reconciled"`
	// Pruned counts the objects the run pruned from the cluster (its
	// inventory held them, the new package does not): PrunedObjects.
	Pruned int `json:"pruned"`
	// Failed counts the objects that failed to apply, reconcile or prune,
	// each once.
	Failed int `json:"failed"`
	// PrunedObjects are the objects pruned: deleted from the cluster, or
	// dropped from its inventory and kept (cli-utils' on-remove: keep).
	PrunedObjects []ObjectRef `json:"prunedObjects"`
	// Failures name each failed object and why.
	Failures []string `json:"failures,omitempty"`
}

// Handoff is one object moving from one context to others.
type Handoff struct {
	Ref  ObjectRef `json:"ref"`
	From string    `json:"from"`
	To   []string  `json:"to"`
}

// Failed reports whether the run failed: an error, a failed or rolled
// back context, a halted wave, or a handoff left unfinished.
func (r *ApplyReport) Failed() bool {
	if len(r.Errors) > 0 || len(r.HeldInBoth) > 0 {
		return true
	}
	for _, c := range r.Contexts {
		if c.Status == ApplyFailed || c.Status == ApplyRolledBack {
			return true
		}
	}
	for _, w := range r.Waves {
		if w.Status == WaveHalted || w.Status == WaveRolledBack {
			return true
		}
	}
	return false
}
