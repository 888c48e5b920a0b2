package v1alpha1

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ApplyOptions (spec.apply) fix kpt live apply's flags for every run of
// shard-router apply, rollback and plan --live; a flag given on the
// command line wins over its field. Absent fields take kpt's defaults.
type ApplyOptions struct {
	// ServerSide applies with server-side apply (kpt's --server-side).
	ServerSide *bool `json:"serverSide,omitempty"`
	// ForceConflicts takes the fields another manager owns
	// (--force-conflicts); server-side only.
	ForceConflicts *bool `json:"forceConflicts,omitempty"`
	// FieldManager is the manager the writes are recorded under
	// (--field-manager); default kubectl, as kpt live apply.
	FieldManager string `json:"fieldManager,omitempty"`
	// InventoryPolicy is strict (an object must belong to this
	// inventory) or adopt (an object that belongs to no inventory is
	// taken over); default strict.
	InventoryPolicy string `json:"inventoryPolicy,omitempty"`
	// PrunePropagationPolicy is how a pruned object's dependents go:
	// Background (default), Foreground or Orphan.
	PrunePropagationPolicy string `json:"prunePropagationPolicy,omitempty"`
	// PruneTimeout bounds the wait for pruned objects to be gone;
	// default: --reconcile-timeout.
	PruneTimeout *metav1.Duration `json:"pruneTimeout,omitempty"`
	// StatusPolicy is all (the inventory records each object's status:
	// two more writes of it a context and apply) or none (only the
	// objects); default all.
	StatusPolicy string `json:"statusPolicy,omitempty"`
}

// Inventory policies, as kpt live apply names them.
const (
	InventoryPolicyStrict = "strict"
	InventoryPolicyAdopt  = "adopt"
)

// Status policies, as kpt live apply names them (--status-policy).
const (
	StatusPolicyAll  = "all"
	StatusPolicyNone = "none"
)

// DefaultFieldManager is kpt live apply's field manager (cli-utils'
// default): a following kpt live apply, and kubectl's server-side apply,
// write under the same name, so neither conflicts with shard-router.
const DefaultFieldManager = "kubectl"

// InventoryPolicies and PropagationPolicies are the accepted values.
var (
	InventoryPolicies   = []string{InventoryPolicyStrict, InventoryPolicyAdopt}
	PropagationPolicies = []string{string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationOrphan)}
	StatusPolicies      = []string{StatusPolicyAll, StatusPolicyNone}
)

// ApplyStrategy is how a run writes: kpt live apply's flags, resolved from
// the command line, spec.apply and kpt's defaults. Reports and plans say
// which were used.
type ApplyStrategy struct {
	ServerSide             bool   `json:"serverSide"`
	ForceConflicts         bool   `json:"forceConflicts"`
	FieldManager           string `json:"fieldManager"`
	InventoryPolicy        string `json:"inventoryPolicy"`
	PrunePropagationPolicy string `json:"prunePropagationPolicy"`
	// PruneTimeout is a duration such as 5m0s; empty in a plan without
	// one: apply's --reconcile-timeout.
	PruneTimeout string `json:"pruneTimeout,omitempty"`
	// StatusPolicy is empty in a record written before it was recorded:
	// all, the only policy those runs had.
	StatusPolicy string `json:"statusPolicy,omitempty"`
}

// Describe is the strategy in one line.
func (s ApplyStrategy) Describe() string {
	mode := "client-side apply"
	if s.ServerSide {
		mode = "server-side apply"
		if s.ForceConflicts {
			mode += " forcing conflicts"
		}
	}
	timeout := s.PruneTimeout
	if timeout == "" {
		timeout = "--reconcile-timeout's"
	}
	return fmt.Sprintf("%s, field manager %s, inventory policy %s, prune propagation %s, prune timeout %s, status policy %s",
		mode, s.FieldManager, s.InventoryPolicy, s.PrunePropagationPolicy, timeout, s.Status())
}

// Status is the status policy, all where a record predates it.
func (s ApplyStrategy) Status() string {
	if s.StatusPolicy == "" {
		return StatusPolicyAll
	}
	return s.StatusPolicy
}

// Options turns a resolved strategy back into options (every field set),
// so that flags can win over it (Over).
func (s ApplyStrategy) Options() *ApplyOptions {
	o := &ApplyOptions{ServerSide: &s.ServerSide, ForceConflicts: &s.ForceConflicts, FieldManager: s.FieldManager,
		InventoryPolicy: s.InventoryPolicy, PrunePropagationPolicy: s.PrunePropagationPolicy, StatusPolicy: s.StatusPolicy}
	if d, err := time.ParseDuration(s.PruneTimeout); err == nil && d > 0 {
		o.PruneTimeout = &metav1.Duration{Duration: d}
	}
	return o
}

// validateApply checks spec.apply.
func validateApply(a *ApplyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.ForceConflicts != nil && *a.ForceConflicts && (a.ServerSide == nil || !*a.ServerSide) {
		errs = append(errs, field.Invalid(p.Child("forceConflicts"), true, "only server-side apply has conflicts: set serverSide: true too"))
	}
	if a.FieldManager != "" && strings.TrimSpace(a.FieldManager) != a.FieldManager {
		errs = append(errs, field.Invalid(p.Child("fieldManager"), a.FieldManager, "must not start or end with spaces"))
	}
	if len(a.FieldManager) > 128 {
		errs = append(errs, field.TooLong(p.Child("fieldManager"), a.FieldManager, 128))
	}
	if v := a.InventoryPolicy; v != "" && !slices.Contains(InventoryPolicies, v) {
		errs = append(errs, field.NotSupported(p.Child("inventoryPolicy"), v, InventoryPolicies))
	}
	if v := a.PrunePropagationPolicy; v != "" && !slices.Contains(PropagationPolicies, v) {
		errs = append(errs, field.NotSupported(p.Child("prunePropagationPolicy"), v, PropagationPolicies))
	}
	if t := a.PruneTimeout; t != nil && t.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("pruneTimeout"), t.Duration.String(), "must be more than 0"))
	}
	if v := a.StatusPolicy; v != "" && !slices.Contains(StatusPolicies, v) {
		errs = append(errs, field.NotSupported(p.Child("statusPolicy"), v, StatusPolicies))
	}
	return errs
}

// Over returns o with every field that flags sets taken from flags: the
// command line's flags win over spec.apply. Either may be nil.
func (o *ApplyOptions) Over(flags *ApplyOptions) *ApplyOptions {
	out := ApplyOptions{}
	for _, a := range []*ApplyOptions{o, flags} {
		if a == nil {
			continue
		}
		if a.ServerSide != nil {
			out.ServerSide = a.ServerSide
		}
		if a.ForceConflicts != nil {
			out.ForceConflicts = a.ForceConflicts
		}
		if a.FieldManager != "" {
			out.FieldManager = a.FieldManager
		}
		if a.InventoryPolicy != "" {
			out.InventoryPolicy = a.InventoryPolicy
		}
		if a.PrunePropagationPolicy != "" {
			out.PrunePropagationPolicy = a.PrunePropagationPolicy
		}
		if a.PruneTimeout != nil {
			out.PruneTimeout = a.PruneTimeout
		}
		if a.StatusPolicy != "" {
			out.StatusPolicy = a.StatusPolicy
		}
	}
	return &out
}

// Check refuses what no run can honour in options merged from the flags
// and spec.apply (see Over); spec.apply alone was validated with the
// config.
func (o *ApplyOptions) Check() error {
	if o.ForceConflicts != nil && *o.ForceConflicts && (o.ServerSide == nil || !*o.ServerSide) {
		return fmt.Errorf("--force-conflicts (or spec.apply.forceConflicts) needs server-side apply: only server-side apply has conflicts; add --server-side (or spec.apply.serverSide: true)")
	}
	if v := o.InventoryPolicy; v != "" && !slices.Contains(InventoryPolicies, v) {
		return fmt.Errorf("--inventory-policy %q: want %s", v, strings.Join(InventoryPolicies, " or "))
	}
	if v := o.PrunePropagationPolicy; v != "" && !slices.Contains(PropagationPolicies, v) {
		return fmt.Errorf("--prune-propagation-policy %q: want %s", v, strings.Join(PropagationPolicies, ", "))
	}
	if t := o.PruneTimeout; t != nil && t.Duration <= 0 {
		return fmt.Errorf("--prune-timeout %s: must be more than 0", t.Duration)
	}
	if v := o.StatusPolicy; v != "" && !slices.Contains(StatusPolicies, v) {
		return fmt.Errorf("--status-policy %q: want %s", v, strings.Join(StatusPolicies, " or "))
	}
	return nil
}

// ResolveStrategy applies a (may be nil) over kpt's defaults;
// pruneTimeout falls back to reconcileTimeout, as shard-router bounds
// every wait (0: unknown, a plan's).
func ResolveStrategy(a *ApplyOptions, reconcileTimeout time.Duration) ApplyStrategy {
	s := ApplyStrategy{FieldManager: DefaultFieldManager, InventoryPolicy: InventoryPolicyStrict,
		PrunePropagationPolicy: string(metav1.DeletePropagationBackground), StatusPolicy: StatusPolicyAll}
	if reconcileTimeout > 0 {
		s.PruneTimeout = reconcileTimeout.String()
	}
	if a == nil {
		return s
	}
	if a.ServerSide != nil {
		s.ServerSide = *a.ServerSide
	}
	if a.ForceConflicts != nil {
		s.ForceConflicts = *a.ForceConflicts
	}
	if a.FieldManager != "" {
		s.FieldManager = a.FieldManager
	}
	if a.InventoryPolicy != "" {
		s.InventoryPolicy = a.InventoryPolicy
	}
	if a.PrunePropagationPolicy != "" {
		s.PrunePropagationPolicy = a.PrunePropagationPolicy
	}
	if a.PruneTimeout != nil {
		s.PruneTimeout = a.PruneTimeout.Duration.String()
	}
	if a.StatusPolicy != "" {
		s.StatusPolicy = a.StatusPolicy
	}
	return s
}
