package v1alpha1

import "sigs.k8s.io/kustomize/kyaml/fn/framework"

// The documents shard-router prints for machines. Each carries apiVersion
// shardrouter.dev/v1alpha1 and its kind; field names are stable within the
// version. Package output prints them (json, yaml) and renders them for
// people (table, markdown).

// Kinds of the output documents.
const (
	CapacityReportKind        = "CapacityReport"
	OverridesChangeReportKind = "OverridesChangeReport"
	SplitPlanKind             = "SplitPlan"
	EtcdOverridesKind         = "EtcdOverrides"
)

// TypeMeta is the apiVersion and kind of an output document, as JSON
// writes them first.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// NewTypeMeta returns the TypeMeta of an output kind.
func NewTypeMeta(kind string) TypeMeta { return TypeMeta{APIVersion: APIVersion, Kind: kind} }

// CapacityReport is `shard-router report -o json`.
type CapacityReport struct {
	TypeMeta `json:",inline"`
	*Capacity
	// Placed lists the Namespaces spec.placement places in this run.
	Placed []PlacedNamespace `json:"placed"`
	// Results are the warnings and errors, as the function reports them.
	Results framework.Results `json:"results"`
}

// Count counts the results of one severity.
func (r *CapacityReport) Count(sev framework.Severity) int {
	n := 0
	for _, res := range r.Results {
		if res.Severity == sev {
			n++
		}
	}
	return n
}

// PlacedNamespace is one Namespace placed by spec.placement.
type PlacedNamespace struct {
	Namespace string `json:"namespace"`
	Context   string `json:"context"`
	// Label is "key=value" when spec.placement.label stamps one.
	Label string `json:"label,omitempty"`
}

// Capacity is what each context, and each datastore of each context, would
// hold once the package is applied. An object routed to several contexts
// counts once in each: every cluster stores its own copy. Bytes are
// SerializedSize, plus the placement label the function stamps.
type Capacity struct {
	Contexts []ContextCapacity `json:"contexts"`
	// Total sums every context.
	Total Usage `json:"total"`
	// NotRouted counts items that are never routed (local config, the
	// Kptfile, the function config, the inventory); Failed counts items an
	// error result explains. Neither is in any context.
	NotRouted int `json:"notRouted"`
	Failed    int `json:"failed"`
}

// Usage is a number of objects and their size. The shares are fractions of
// Capacity.Total, rounded to 4 decimals (0 when the total is 0).
type Usage struct {
	Objects     int64   `json:"objects"`
	Bytes       int64   `json:"bytes"`
	ObjectShare float64 `json:"objectShare"`
	ByteShare   float64 `json:"byteShare"`
}

// ContextCapacity is one context: its total and its datastores, "default"
// (the main etcd) first, then its dataStores in config order.
type ContextCapacity struct {
	Name string `json:"name"`
	Usage
	Budget     *BudgetStatus       `json:"budget,omitempty"`
	DataStores []DataStoreCapacity `json:"dataStores"`
}

// DataStoreCapacity is one datastore of one context.
type DataStoreCapacity struct {
	Name string `json:"name"`
	Usage
	Budget *BudgetStatus `json:"budget,omitempty"`
}

// BudgetStatus is a budget from the config and which of its limits the
// usage exceeds ("maxObjects", "maxBytes").
type BudgetStatus struct {
	MaxObjects *int64 `json:"maxObjects,omitempty"`
	MaxBytes   *int64 `json:"maxBytes,omitempty"`
	Enforce    bool   `json:"enforce"`
	// Field is the budget's path in the config.
	Field    string   `json:"field"`
	Exceeded []string `json:"exceeded,omitempty"`
}

// OverridesChangeReport is `shard-router overrides --previous FILE -o json`:
// every storage group/resource whose etcd servers change, per context.
type OverridesChangeReport struct {
	TypeMeta `json:",inline"`
	Changes  []OverrideChange `json:"changes"`
}

// OverrideChange is one resource of one context whose datastore changes.
type OverrideChange struct {
	Context   string             `json:"context"`
	Resource  string             `json:"resource"`
	From      OverrideLocation   `json:"from"`
	To        OverrideLocation   `json:"to"`
	Ephemeral bool               `json:"ephemeral,omitempty"`
	Allowed   bool               `json:"allowed"`
	Severity  framework.Severity `json:"severity"`
	Message   string             `json:"message"`
}

// OverrideLocation is where a resource is stored: a logical datastore and
// its etcd servers.
type OverrideLocation struct {
	DataStore string   `json:"dataStore,omitempty"`
	Servers   []string `json:"servers,omitempty"`
}

// EtcdOverrides is the record split writes into each context's package
// (file EtcdOverridesFile) of that context's kube-apiserver
// --etcd-servers-overrides, so that plan can show and judge a change of
// them against the previous split. It is local config
// (config.kubernetes.io/local-config: "true"): kpt live apply never sends
// it to the cluster.
type EtcdOverrides struct {
	TypeMeta `json:",inline"`
	Metadata RecordMeta `json:"metadata"`
	// Flag is the flag's value, as `overrides --context` prints it.
	Flag string `json:"flag"`
	// Overrides are the entries, in dataStoreOverrides order.
	Overrides []EtcdOverride `json:"overrides"`
}

// EtcdOverridesFile names the record in each context directory.
const EtcdOverridesFile = "shard-router-etcd-overrides.yaml"

// RecordMeta is the metadata of a local-config record.
type RecordMeta struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations"`
}

// EtcdOverride is one entry of the flag: a storage group/resource, the
// logical datastore and its etcd servers.
type EtcdOverride struct {
	Resource  string   `json:"resource"`
	DataStore string   `json:"dataStore"`
	Servers   []string `json:"servers"`
	Ephemeral bool     `json:"ephemeral,omitempty"`
}

// SplitPlan is `shard-router plan -o json`: what `kpt live apply` of each
// context package of a new split would do in that cluster, compared with the
// previous split. Every list is sorted (contexts in config order, then the
// dropped ones by name; objects by ref).
type SplitPlan struct {
	TypeMeta         `json:",inline"`
	Contexts         []ContextPlan     `json:"contexts"`
	Moves            []Move            `json:"moves"`
	DataStoreChanges []DataStoreChange `json:"dataStoreChanges"`
	// OverrideChanges are the changes of each context's
	// --etcd-servers-overrides since the previous split, as `overrides
	// --previous` reports them; a refused one is also an error.
	OverrideChanges []OverrideChange `json:"overrideChanges"`
	// Errors would make split refuse (and exit 1); Warnings would not.
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	// Waves are spec.rollout's waves, in the order apply applies them;
	// absent without spec.rollout.
	Waves []PlanWave `json:"waves,omitempty"`
	// Apply is how apply would write (kpt live apply's flags), when
	// spec.apply or plan's flags set any: absent, kpt's defaults.
	Apply *ApplyStrategy `json:"apply,omitempty"`
}

// PlanWave is one wave of a rollout and its contexts, in config order.
type PlanWave struct {
	Name     string   `json:"name"`
	Contexts []string `json:"contexts"`
	// Gates describe the wave's gates, one line each (Gate.Describe).
	Gates []string `json:"gates,omitempty"`
}

// WaveOf is the name of the wave a context belongs to, "" without one.
func (p *SplitPlan) WaveOf(context string) string {
	for _, w := range p.Waves {
		for _, c := range w.Contexts {
			if c == context {
				return w.Name
			}
		}
	}
	return ""
}

// NewSplitPlan returns an empty plan, every list empty (not null).
func NewSplitPlan() *SplitPlan {
	return &SplitPlan{TypeMeta: NewTypeMeta(SplitPlanKind), Contexts: []ContextPlan{}, Moves: []Move{},
		DataStoreChanges: []DataStoreChange{}, OverrideChanges: []OverrideChange{}, Errors: []string{}, Warnings: []string{}}
}

// ContextState says whether a context is new, kept or gone.
type ContextState string

const (
	// ContextAdded has no previous package.
	ContextAdded ContextState = "added"
	// ContextDropped has a previous package but is no longer in the config.
	ContextDropped ContextState = "dropped"
	// ContextKept is in the config and has a previous package.
	ContextKept ContextState = "kept"
)

// ContextPlan is what kpt live apply does in one context.
type ContextPlan struct {
	Name  string       `json:"name"`
	State ContextState `json:"state"`
	// Create, Update and Prune are the objects kpt creates, changes and
	// deletes there; Unchanged counts the others.
	Create    []ObjectRef `json:"create"`
	Update    []ObjectRef `json:"update"`
	Prune     []ObjectRef `json:"prune"`
	Unchanged int         `json:"unchanged"`
	// Previous counts the objects of the previous package.
	Previous int `json:"previous"`
	// MassPrune is set when the prunes trip the mass-deletion guard
	// (spec.pruneGuard): an error, or a warning when allowed.
	MassPrune bool `json:"massPrune,omitempty"`
	// Diffs are the unified diffs of the updates, with --diff.
	Diffs []ObjectDiff `json:"diffs,omitempty"`
}

// ObjectRef is an object's identity as kpt's inventory knows it: an
// apiVersion change within one group is the same object. Group is "" for
// the core group, Namespace "" for a cluster-scoped object.
type ObjectRef struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String renders the ref as "Kind[.group] [namespace/]name".
func (r ObjectRef) String() string {
	s := r.Kind
	if r.Group != "" {
		s += "." + r.Group
	}
	if r.Namespace != "" {
		return s + " " + r.Namespace + "/" + r.Name
	}
	return s + " " + r.Name
}

// Less orders refs by group, kind, namespace, name.
func (r ObjectRef) Less(o ObjectRef) bool {
	if r.Group != o.Group {
		return r.Group < o.Group
	}
	if r.Kind != o.Kind {
		return r.Kind < o.Kind
	}
	if r.Namespace != o.Namespace {
		return r.Namespace < o.Namespace
	}
	return r.Name < o.Name
}

// ObjectDiff is the unified diff of one updated object, as split writes it.
type ObjectDiff struct {
	Ref  ObjectRef `json:"ref"`
	Diff string    `json:"diff"`
}

// Move is an object whose contexts change: it leaves some and/or enters
// others. Refused moves (leaving a context without spec.allowMoves) make
// the split fail.
type Move struct {
	Ref     ObjectRef `json:"ref"`
	From    []string  `json:"from"`
	To      []string  `json:"to"`
	Refused bool      `json:"refused"`
}

// DataStoreChange is an object whose etcd datastore changes in one
// context; refused unless spec.allowDataStoreChanges or its override is
// ephemeral.
type DataStoreChange struct {
	Ref     ObjectRef `json:"ref"`
	Context string    `json:"context"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Refused bool      `json:"refused"`
}

// HasChanges reports whether applying the plan changes any cluster.
func (p *SplitPlan) HasChanges() bool {
	for _, c := range p.Contexts {
		if len(c.Create)+len(c.Update)+len(c.Prune) > 0 || c.State == ContextDropped {
			return true
		}
	}
	return len(p.Moves)+len(p.DataStoreChanges)+len(p.OverrideChanges) > 0
}
