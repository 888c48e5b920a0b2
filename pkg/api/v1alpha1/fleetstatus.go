package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FleetStatusKind is the kind of `shard-router status -o json`.
const FleetStatusKind = "FleetStatus"

// FleetStatus is `shard-router status -o json`: every context's objects as
// the cluster holds them, against the context's package in OUT_DIR and its
// live inventory. Contexts are in the order they were asked for (OUT_DIR's
// order by default), objects sorted by ref.
type FleetStatus struct {
	TypeMeta `json:",inline"`
	// ReadAt is when status read the clusters: the time a bake's time left
	// and a lock's expiry are counted from.
	ReadAt time.Time `json:"readAt,omitzero"`
	// Runs are the apply runs that hold locks on the contexts read, as
	// their clusters' Leases say: one in progress, or one that died and
	// whose locks have not expired yet; absent when none does.
	Runs []FleetRun `json:"runs,omitempty"`
	// Rollout is OUT_DIR's unfinished rollout (a halted or interrupted
	// apply with spec.rollout); nil when none is recorded.
	Rollout *RolloutSummary `json:"rollout,omitempty"`
	// Gates are the promotion gates the last apply that baked each wave
	// measured (OUT_DIR's record); absent when no apply measured one.
	Gates    []WaveGates     `json:"gates,omitempty"`
	Contexts []ContextStatus `json:"contexts"`
}

// FleetRun is a run that holds the locks of some of the contexts read,
// from their clusters' Leases.
type FleetRun struct {
	// Holder is the run as its locks name it: user@host pid N (CI job)
	// run ID.
	Holder string `json:"holder"`
	// Contexts are the contexts whose locks it holds, in the order read.
	Contexts []string `json:"contexts"`
	// Since is when it took its first lock, Renewed its last renewal, and
	// Expires when the last of its locks frees itself unless it renews
	// them.
	Since   time.Time `json:"since,omitzero"`
	Renewed time.Time `json:"renewed,omitzero"`
	Expires time.Time `json:"expires"`
	// Wave, Phase (applying, baking or "rolling back") and BakeEnds are
	// where its rollout is, as it last recorded on its locks (spec.rollout
	// only).
	Wave     string    `json:"wave,omitempty"`
	Phase    string    `json:"phase,omitempty"`
	BakeEnds time.Time `json:"bakeEnds,omitzero"`
	// Gone is the evidence that the run is dead (its pid no longer runs
	// on this host, or it stopped renewing its locks); "" while it looks
	// alive.
	Gone string `json:"gone,omitempty"`
	// Unlock is the command that breaks its locks, and no other.
	Unlock string `json:"unlock"`
}

// Rollout states (RolloutSummary.State).
const (
	RolloutInProgress = "inProgress"
	RolloutKilled     = "killed"
	RolloutHalted     = "halted"
	RolloutPaused     = "paused"
)

// WaveGates is what one wave's gates measured in each of its contexts in
// the last apply that baked the wave.
type WaveGates struct {
	Wave string `json:"wave"`
	// MeasuredAt is when that apply ended the wave's measurements; Status
	// is how the wave ended in it.
	MeasuredAt metav1.Time  `json:"measuredAt"`
	Status     WaveStatus   `json:"status"`
	Gates      []GateResult `json:"gates"`
}

// RolloutSummary is OUT_DIR's record of an unfinished rollout: what it
// changed, and how to finish or undo it.
type RolloutSummary struct {
	// Waves are the rollout's waves, in order; Baked those that finished
	// their bake since they last changed a context.
	Waves []string `json:"waves"`
	Baked []string `json:"baked"`
	// Contexts are the contexts the rollout changed (or began to), in the
	// order it got to them.
	Contexts []RolloutContext `json:"contexts"`
	// StoppedAt is the first wave that did not finish its bake (the wave
	// a run in progress is on, when it recorded one); State says how:
	// inProgress (a live run holds locks on the fleet: let it finish),
	// killed (a run died applying it: a context's record says applying,
	// and no live run holds its lock), halted (it changed a context and
	// the run ended before its bake finished: a failure, or an
	// inconclusive gate) or paused (it did not start: --until-wave stopped
	// the run before it). Left are the waves from it on.
	StoppedAt string   `json:"stoppedAt,omitempty"`
	State     string   `json:"state,omitempty"`
	Left      []string `json:"left"`
	// Resume and Rollback are the commands that finish the rollout and
	// that roll back every context it changed.
	Resume   string `json:"resume"`
	Rollback string `json:"rollback"`
}

// RolloutContext is one context an unfinished rollout changed.
type RolloutContext struct {
	Name string `json:"name"`
	Wave string `json:"wave"`
	// Previous is false when the context had no package before the
	// rollout: a rollback has nothing to give it back.
	Previous bool `json:"previous"`
}

// ContextStatus is one context (cluster).
type ContextStatus struct {
	Name string `json:"name"`
	// Reachable is false when the cluster could not be reached (no
	// kubeconfig context, connection refused, timed out before discovery);
	// then Objects is empty and Error says why.
	Reachable bool `json:"reachable"`
	// Error is why the context's status is missing or incomplete; "" when
	// every object was read.
	Error     string         `json:"error"`
	Inventory InventoryState `json:"inventory"`
	// Engine is the GitOps engine's own status of the context's sync, for a
	// split for an engine (split --engine flux); then Inventory is the
	// engine's (the Flux Kustomization's inventory).
	Engine *EngineStatus `json:"engine,omitempty"`
	// Record is what the cluster says about the last shard-router apply
	// that wrote the context (its Lease beside the inventory), with the
	// cluster's identity; nil when the cluster has no such Lease and its
	// identity was not read.
	Record *ContextRecord `json:"record,omitempty"`
	// OutDirMismatch is set when OUT_DIR's record of the context
	// (.shard-router-fleet.json) disagrees with its cluster's: OUT_DIR is
	// stale (then Objects are what the cluster's inventory lists, with
	// their health only: another run applied them, so they are not
	// compared with OUT_DIR), or the cluster's record is older.
	OutDirMismatch *OutDirMismatch `json:"outDirMismatch,omitempty"`
	Objects        []ObjectStatus  `json:"objects"`
}

// OutDirMismatch is how OUT_DIR's record of a context disagrees with its
// cluster's, in the words apply refuses it with.
type OutDirMismatch struct {
	// OutDirSerial is the serial OUT_DIR recorded (0: none); the
	// cluster's is Record.Serial.
	OutDirSerial int64 `json:"outDirSerial"`
	// State is stale (another run wrote the cluster since OUT_DIR
	// recorded it) or older (the cluster's record is older than OUT_DIR's:
	// its Lease was deleted, or the cluster restored from a backup).
	State   string `json:"state"`
	Message string `json:"message"`
}

// OUT_DIR mismatch states.
const (
	OutDirStale = "stale"
	OutDirOlder = "older"
)

// Stale reports whether OUT_DIR is stale for the context: its objects
// were not compared with OUT_DIR.
func (c ContextStatus) Stale() bool {
	return c.OutDirMismatch != nil && c.OutDirMismatch.State == OutDirStale
}

// ContextRecord is a cluster's record of the last shard-router apply that
// wrote a context, and which cluster the kube context reaches.
type ContextRecord struct {
	// Serial is incremented by every apply that writes the context; 0
	// when none recorded one (the cluster has no Lease).
	Serial int64 `json:"serial"`
	// Digest is the digest of the package that apply applied.
	Digest string `json:"digest,omitempty"`
	// AppliedBy and AppliedAt say who took the serial, and when.
	AppliedBy string    `json:"appliedBy,omitempty"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// AppliedAs is the identity that apply's requests impersonated (--as,
	// or the kubeconfig's as:); empty when none.
	AppliedAs string `json:"appliedAs,omitempty"`
	// Outcome is applying (the run has not finished, or was killed),
	// applied, failed or "rolled back". SettledBy and SettledAt name the
	// later run that found the context in sync after the run that wrote
	// it died applying it, and set the outcome to applied.
	Outcome   string    `json:"outcome,omitempty"`
	SettledBy string    `json:"settledBy,omitempty"`
	SettledAt time.Time `json:"settledAt,omitzero"`
	// OwnerName describes the OUT_DIR whose package owns the inventory.
	OwnerName string `json:"ownerName,omitempty"`
	// ClusterUID is the cluster's identity, the UID of its kube-system
	// Namespace, as read now; Server is the server URL of the kube
	// context.
	ClusterUID string `json:"clusterUID,omitempty"`
	Server     string `json:"server,omitempty"`
	// Lock is the lock a run holds on the context; nil when none does
	// (or its holder stopped renewing it and it expired).
	Lock *LockState `json:"lock,omitempty"`
	// Error is why the Lease or the identity could not be read; the
	// objects' status does not depend on them.
	Error string `json:"error,omitempty"`
}

// LockState is a held lock: who holds it, since when, when it last
// renewed it, and when it expires unless its holder renews it; where the
// holder's rollout is, as it recorded there; and the evidence that the
// holder is dead (Gone, "" while it looks alive).
type LockState struct {
	Holder   string    `json:"holder"`
	Since    time.Time `json:"since,omitzero"`
	Renewed  time.Time `json:"renewed,omitzero"`
	Expires  time.Time `json:"expires"`
	Wave     string    `json:"wave,omitempty"`
	Phase    string    `json:"phase,omitempty"`
	BakeEnds time.Time `json:"bakeEnds,omitzero"`
	Gone     string    `json:"gone,omitempty"`
}

// OutcomeApplying is the outcome of a run that took a context's lock and
// has not finished: it is applying it, or it died doing so.
const OutcomeApplying = "applying"

// Applying reports whether a live run is applying the context: the record
// says applying, and its holder holds the lock with no sign of death.
func (r *ContextRecord) Applying() bool {
	return r != nil && r.Outcome == OutcomeApplying && r.Lock != nil && r.Lock.Gone == ""
}

// Killed reports whether the run the record names died applying the
// context: the record says applying, and no live run holds its lock (it
// expired, or its holder is gone).
func (r *ContextRecord) Killed() bool {
	return r != nil && r.Outcome == OutcomeApplying && (r.Lock == nil || r.Lock.Gone != "")
}

// EngineStatus is a GitOps engine's status of one context's sync.
type EngineStatus struct {
	// Engine is flux.
	Engine string `json:"engine"`
	// Kind, Namespace and Name name the engine's object (a Kustomization).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is its Ready condition: True, False or Unknown ("" when it has
	// none or the object is missing).
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Revision is the source revision it last applied.
	Revision string `json:"revision,omitempty"`
}

// InventoryState is the context's live ResourceGroup: the one its package
// names, and whether the cluster holds it.
type InventoryState struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// State is found, missing (never applied, or deleted) or unknown (not
	// read: the context is unreachable or failed first, or Engine keeps
	// it).
	State string `json:"state"`
	// Engine is the GitOps engine that keeps the context's inventory where
	// shard-router cannot read it without the engine (argocd, configsync):
	// then State is unknown, every object's inventory is unknown, extras
	// are not known, and Note says why.
	Engine string `json:"engine,omitempty"`
	Note   string `json:"note,omitempty"`
}

// EngineKeeps reports whether the inventory is a GitOps engine's that was
// not read: what the cluster holds beyond the package is not known.
func (s InventoryState) EngineKeeps() bool { return s.Engine != "" && s.State == InventoryUnknown }

// Inventory states.
const (
	InventoryFound   = "found"
	InventoryMissing = "missing"
	InventoryUnknown = "unknown"
)

// ObjectStatus is one object of a context: in its package, in its live
// inventory, or both.
type ObjectStatus struct {
	ObjectRef `json:",inline"`
	// Status is kstatus' verdict on the live object: Current, InProgress,
	// Failed, Terminating, NotFound or Unknown.
	Status string `json:"status"`
	// Message is kstatus' explanation, when it gives one.
	Message string `json:"message,omitempty"`
	// Drift lists the fields of the package that an apply would change in
	// the live object; false when none (also for an object that is not
	// found or not in the package).
	Drift Drift `json:"drift"`
	// Inventory is applied (in the package and the live inventory), extra
	// (in the live inventory only: the next apply prunes it), notApplied
	// (in the package only) or unknown (the engine's inventory was not
	// read: InventoryState.Engine).
	Inventory string `json:"inventory"`
	// Error is why the object's status or drift is unknown.
	Error string `json:"error,omitempty"`
}

// Object inventory states.
const (
	ObjectApplied    = "applied"
	ObjectExtra      = "extra"
	ObjectNotApplied = "notApplied"
	// ObjectInventoryUnknown: the context's inventory is a GitOps engine's
	// that shard-router cannot read.
	ObjectInventoryUnknown = "unknown"
)

// Status values, as kstatus names them.
const (
	StatusCurrent  = "Current"
	StatusNotFound = "NotFound"
	StatusUnknown  = "Unknown"
)

// Drift is the list of differing field paths ("data.color",
// "spec.template.spec.containers[0].image"). It is written as false when
// empty, as the list otherwise.
type Drift []string

// MarshalJSON writes false for no drift.
func (d Drift) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("false"), nil
	}
	return json.Marshal([]string(d))
}

// UnmarshalJSON reads false (or null) as no drift, or a list of fields.
func (d *Drift) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "false", "null":
		*d = nil
		return nil
	case "true":
		return fmt.Errorf("drift: want false or a list of fields, got true")
	}
	var fields []string
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("drift: want false or a list of fields: %w", err)
	}
	*d = fields
	return nil
}

// NeedsAttention reports whether the object is anything but applied,
// Current and in sync. An unknown inventory (an engine's, not read) is
// said once for the context, not for each object: the object needs
// attention for its status, drift or error alone.
func (o ObjectStatus) NeedsAttention() bool {
	inventoryOK := o.Inventory == ObjectApplied || o.Inventory == ObjectInventoryUnknown
	return o.Status != StatusCurrent || len(o.Drift) > 0 || !inventoryOK || o.Error != ""
}

// Failed reports whether the context could not be read in full: it is
// unreachable, or an error left some of its status unknown.
func (c ContextStatus) Failed() bool {
	if !c.Reachable || c.Error != "" {
		return true
	}
	for _, o := range c.Objects {
		if o.Error != "" {
			return true
		}
	}
	return false
}

// InSync reports whether the context is reachable, its inventory found,
// and every object applied, Current and without drift. A context whose
// inventory an engine keeps (not read) is never in sync: its extras were
// not checked; nor is one whose OUT_DIR record disagrees with its
// cluster's, or whose record says a run is applying it (in progress, or
// killed before it finished).
func (c ContextStatus) InSync() bool {
	if c.Failed() || c.Inventory.State != InventoryFound || (c.Engine != nil && c.Engine.Ready != "True") {
		return false
	}
	if c.OutDirMismatch != nil || (c.Record != nil && c.Record.Outcome == OutcomeApplying) {
		return false
	}
	for _, o := range c.Objects {
		if o.NeedsAttention() {
			return false
		}
	}
	return true
}

// Failed reports whether any context could not be read in full.
func (s *FleetStatus) Failed() bool {
	for _, c := range s.Contexts {
		if c.Failed() {
			return true
		}
	}
	return false
}

// InSync reports whether every context is in sync.
func (s *FleetStatus) InSync() bool {
	for _, c := range s.Contexts {
		if !c.InSync() {
			return false
		}
	}
	return true
}
