package cli

import (
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// strategyFlags are kpt live apply's flags, with kpt's names and
// meanings, as apply and plan --live take them; each wins over its
// spec.apply field.
type strategyFlags struct {
	serverSide, forceConflicts bool
	fieldManager               string
	inventoryPolicy            string
	propagation                string
	pruneTimeout               time.Duration
	statusPolicy               string
}

// addStrategyFlags binds the flags; prune adds the two that only an apply
// uses (--prune-propagation-policy, --prune-timeout).
func addStrategyFlags(fs *pflag.FlagSet, f *strategyFlags, prune bool) {
	fs.BoolVar(&f.serverSide, "server-side", false, "apply with server-side apply, as kpt live apply --server-side (default: spec.apply.serverSide, else client-side, kpt's default)")
	fs.BoolVar(&f.forceConflicts, "force-conflicts", false, "with --server-side: take the fields another field manager owns (default: spec.apply.forceConflicts, else a conflict refuses the run before any write)")
	fs.StringVar(&f.fieldManager, "field-manager", "", "the field manager the writes are recorded under (default: spec.apply.fieldManager, else kubectl: kpt live apply's, so that kpt and shard-router write as one manager)")
	fs.StringVar(&f.inventoryPolicy, "inventory-policy", "", "strict: every object the cluster holds must belong to this inventory; adopt: also take over objects that belong to no inventory (default: spec.apply.inventoryPolicy, else strict)")
	fs.StringVar(&f.statusPolicy, "status-policy", "", "all: the inventory records each object's status as well (two more writes of it a context); none: only the objects (default: spec.apply.statusPolicy, else all)")
	if prune {
		fs.StringVar(&f.propagation, "prune-propagation-policy", "", "how a pruned object's dependents go: Background, Foreground or Orphan (default: spec.apply.prunePropagationPolicy, else Background)")
		fs.DurationVar(&f.pruneTimeout, "prune-timeout", 0, "how long each context waits for its pruned objects to be gone (default: spec.apply.pruneTimeout, else --reconcile-timeout)")
	}
}

// options are the flags that were given, as options that win over
// spec.apply; nil when none was.
func (f *strategyFlags) options(fs *pflag.FlagSet) *v1alpha1.ApplyOptions {
	var o v1alpha1.ApplyOptions
	given := false
	if fs.Changed("server-side") {
		o.ServerSide, given = &f.serverSide, true
	}
	if fs.Changed("force-conflicts") {
		o.ForceConflicts, given = &f.forceConflicts, true
	}
	if fs.Changed("field-manager") {
		o.FieldManager, given = f.fieldManager, true
	}
	if fs.Changed("inventory-policy") {
		o.InventoryPolicy, given = f.inventoryPolicy, true
	}
	if fs.Changed("status-policy") {
		o.StatusPolicy, given = f.statusPolicy, true
	}
	if fs.Lookup("prune-propagation-policy") != nil && fs.Changed("prune-propagation-policy") {
		o.PrunePropagationPolicy, given = f.propagation, true
	}
	if fs.Lookup("prune-timeout") != nil && fs.Changed("prune-timeout") {
		o.PruneTimeout, given = &metav1.Duration{Duration: f.pruneTimeout}, true
	}
	if !given {
		return nil
	}
	return &o
}
