package v1alpha1

// ApplyReportKind is the kind of `shard-router apply -o json`.
const ApplyReportKind = "ApplyReport"

// ApplyReport is `shard-router apply -o json`: what apply did in each
// context, and the objects a move left in two clusters.
type ApplyReport struct {
	TypeMeta `json:",inline"`
	// DryRun is true for --dry-run: every cluster was asked for a
	// server-side dry run, and nothing was changed.
	DryRun bool `json:"dryRun"`
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
	// pruned; OUT_DIR/<context> is unchanged.
	ApplyFailed ApplyStatus = "Failed"
	// ApplySkipped: the context was not applied (the run was refused, or
	// it left the config), or its prune was held back because a context
	// that takes over some of its objects failed; OUT_DIR/<context> is
	// unchanged.
	ApplySkipped ApplyStatus = "Skipped"
)

// ContextApply is one context's apply.
type ContextApply struct {
	Name   string      `json:"name"`
	Status ApplyStatus `json:"status"`
	// Error says why the context failed or was skipped.
	Error string `json:"error,omitempty"`
	// Objects counts the objects of the context's package.
	Objects int `json:"objects"`
	// Applied, Reconciled and Pruned count what the cluster confirmed;
	// Failed counts the objects that failed to apply, reconcile or prune.
	Applied    int `json:"applied"`
	Reconciled int `json:"reconciled"`
	Pruned     int `json:"pruned"`
	Failed     int `json:"failed"`
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

// Failed reports whether the run failed: an error, a failed context, or a
// handoff left unfinished.
func (r *ApplyReport) Failed() bool {
	if len(r.Errors) > 0 || len(r.HeldInBoth) > 0 {
		return true
	}
	for _, c := range r.Contexts {
		if c.Status == ApplyFailed {
			return true
		}
	}
	return false
}
