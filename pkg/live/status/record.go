package status

import (
	"fmt"
	"slices"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/live/cluster"
	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Each context's record costs two GETs, on the clients connect built: the
// kube-system Namespace (the cluster's identity, cluster.IdentityOf) and the Lease shard-router apply keeps beside the inventory.
// The identity is read before any object: a kube context that now reaches
// another cluster than OUT_DIR recorded is refused, its objects never
// compared with OUT_DIR's.

// checkIdentity refuses a context whose kube context reaches another
// cluster than OUT_DIR's fleet record says, or whose cluster cannot say
// who it is while OUT_DIR recorded who it was. Without a recorded
// identity (no apply of this release wrote the context) anything goes.
func checkIdentity(name string, rec *outdir.FleetContext, id cluster.Identity, idErr error) error {
	if rec == nil || rec.ClusterUID == "" {
		return nil
	}
	if idErr != nil {
		return fmt.Errorf("context %q: cannot tell which cluster it reaches (OUT_DIR recorded cluster UID %s, server %s), so its objects were not read: %w",
			name, rec.ClusterUID, rec.Server, idErr)
	}
	if id.UID == rec.ClusterUID {
		return nil
	}
	return fmt.Errorf("context %q reaches another cluster: OUT_DIR recorded cluster UID %s (server %s), the kube context now reaches cluster UID %s at %s; its objects were not read, never compared with another cluster's: check the kubeconfig; if the cluster was rebuilt or replaced on purpose, apply with --cluster-replaced %s",
		name, rec.ClusterUID, rec.Server, id.UID, id.Server, name)
}

// contextRecord is what status shows of a context's Lease and identity:
// nil when the cluster has no Lease, its identity was not read, and
// nothing failed. leaseErr and idErr are the reads' errors (either nil);
// st is nil when the Lease was not read.
func contextRecord(st *lease.State, leaseErr error, id cluster.Identity, idErr error, now time.Time) *v1alpha1.ContextRecord {
	found := st != nil && st.Found
	if !found && id.UID == "" && leaseErr == nil && idErr == nil {
		return nil
	}
	r := &v1alpha1.ContextRecord{ClusterUID: id.UID, Server: id.Server}
	if found {
		rec := st.Record
		r.Serial, r.Digest, r.AppliedBy, r.Outcome, r.OwnerName = rec.Serial, rec.Digest, rec.AppliedBy, rec.Outcome, rec.OwnerName
		r.AppliedAs = rec.AppliedAs
		r.AppliedAt = utcSeconds(rec.AppliedAt)
		r.SettledBy, r.SettledAt = rec.SettledBy, utcSeconds(rec.SettledAt)
		if r.ClusterUID == "" {
			// Not read now: the identity the last apply recorded.
			r.ClusterUID = rec.ClusterUID
		}
		if st.Held(now) {
			p := st.Progress
			r.Lock = &v1alpha1.LockState{Holder: st.Holder, Since: utcSeconds(st.Since), Renewed: utcSeconds(st.Renewed),
				Expires: utcSeconds(st.Expires()), Wave: p.Wave, Phase: p.Phase, BakeEnds: utcSeconds(p.BakeEnds), Gone: st.Gone(now)}
		}
	}
	switch {
	case idErr != nil && leaseErr != nil:
		r.Error = idErr.Error() + "; " + leaseErr.Error()
	case idErr != nil:
		r.Error = idErr.Error()
	case leaseErr != nil:
		r.Error = leaseErr.Error()
	}
	return r
}

// utcSeconds is t in UTC, to the second, as the record shows times.
func utcSeconds(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second)
}

// outDirMismatch compares OUT_DIR's record of a context with its
// cluster's, as apply does before it writes (lease.CompareSerials): nil
// when they agree, or when the cluster's record was not read.
func outDirMismatch(name, namespace, inventory string, rec *outdir.FleetContext, st *lease.State) *v1alpha1.OutDirMismatch {
	if st == nil {
		return nil
	}
	var mine int64
	if rec != nil {
		mine = rec.Serial
	}
	m := lease.CompareSerials(name, namespace, inventory, st.Record, mine)
	switch {
	case m == nil:
		return nil
	case m.Stale:
		return &v1alpha1.OutDirMismatch{OutDirSerial: mine, State: v1alpha1.OutDirStale,
			Message: m.What + ": its objects are shown as that run left them, with their health; they are not compared with OUT_DIR. Fetch the current OUT_DIR (the one that run left)"}
	default:
		return &v1alpha1.OutDirMismatch{OutDirSerial: mine, State: v1alpha1.OutDirOlder, Message: m.What}
	}
}

// describeRuns finishes the document once every context was read: the
// runs that hold locks on them, from their Leases, and how the unfinished
// rollout stands: in progress while a live run holds a lock, killed while
// a context's record says a dead run was applying it.
func describeRuns(doc *v1alpha1.FleetStatus, outDir, kubeconfig string, now time.Time) {
	doc.ReadAt = utcSeconds(now)
	byHolder := map[string]int{}
	killed := false
	for _, c := range doc.Contexts {
		r := c.Record
		if r.Killed() {
			killed = true
		}
		if r == nil || r.Lock == nil {
			continue
		}
		l := r.Lock
		i, ok := byHolder[l.Holder]
		if !ok {
			i = len(doc.Runs)
			byHolder[l.Holder] = i
			doc.Runs = append(doc.Runs, v1alpha1.FleetRun{Holder: l.Holder, Since: l.Since, Unlock: lease.UnlockCommand(l.Holder, outDir, kubeconfig)})
		}
		run := &doc.Runs[i]
		run.Contexts = append(run.Contexts, c.Name)
		if l.Since.Before(run.Since) {
			run.Since = l.Since
		}
		if l.Expires.After(run.Expires) {
			run.Expires = l.Expires
		}
		if l.Renewed.After(run.Renewed) || run.Wave == "" {
			if l.Renewed.After(run.Renewed) {
				run.Renewed = l.Renewed
			}
			if l.Wave != "" {
				run.Wave, run.Phase, run.BakeEnds = l.Wave, l.Phase, l.BakeEnds
			}
		}
		if run.Gone == "" {
			run.Gone = l.Gone
		}
	}
	ro := doc.Rollout
	if ro == nil {
		return
	}
	for _, run := range doc.Runs {
		if run.Gone == "" {
			ro.State = v1alpha1.RolloutInProgress
			if i := slices.Index(ro.Waves, run.Wave); i >= 0 {
				ro.StoppedAt, ro.Left = run.Wave, append([]string{}, ro.Waves[i:]...)
			}
			return
		}
		killed = true
	}
	if killed && ro.State != "" {
		ro.State = v1alpha1.RolloutKilled
	}
}

// rolloutSummary is OUT_DIR's unfinished rollout for the document; nil
// when none is recorded.
func rolloutSummary(r *outdir.RolloutRecord, outDir string) *v1alpha1.RolloutSummary {
	if r == nil || !r.Exists() {
		return nil
	}
	s := &v1alpha1.RolloutSummary{Waves: append([]string{}, r.Waves...), Baked: append([]string{}, r.Baked...),
		Contexts: []v1alpha1.RolloutContext{},
		Resume:   fmt.Sprintf("shard-router apply PKG --out %s", outDir),
		Rollback: fmt.Sprintf("shard-router apply --rollback --out %s", outDir)}
	started := map[string]bool{}
	for _, c := range r.Contexts {
		s.Contexts = append(s.Contexts, v1alpha1.RolloutContext{Name: c.Name, Wave: c.Wave, Previous: c.Previous})
		started[c.Wave] = true
	}
	s.Left = []string{}
	for i, w := range r.Waves {
		if r.HasBaked(w) {
			continue
		}
		s.StoppedAt, s.State, s.Left = w, v1alpha1.RolloutPaused, append(s.Left, r.Waves[i:]...)
		if started[w] {
			s.State = v1alpha1.RolloutHalted
		}
		break
	}
	return s
}

// gatesOf keeps, of OUT_DIR's record of the gates, the measurements in
// the contexts status reads, and the waves that have some.
func gatesOf(waves []v1alpha1.WaveGates, names []string) []v1alpha1.WaveGates {
	var out []v1alpha1.WaveGates
	for _, w := range waves {
		w.Gates = slices.DeleteFunc(slices.Clone(w.Gates), func(g v1alpha1.GateResult) bool { return !slices.Contains(names, g.Context) })
		if len(w.Gates) > 0 {
			out = append(out, w)
		}
	}
	return out
}
