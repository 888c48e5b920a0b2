package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/shard-router/shard-router/pkg/live/lease"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Many runners share one fleet. Before its first write a run checks each
// context against its cluster (read only, so a refusal writes nothing):
// the kube context still reaches the cluster OUT_DIR recorded, the
// inventory belongs to this OUT_DIR's package, and no other run wrote the
// cluster since OUT_DIR recorded it (the serials agree). It then takes
// every lock it needs, in context order so that two runs never deadlock,
// checking the serial again under each, and only then writes. The cluster
// (its Lease) and OUT_DIR (outdir.FleetRecord) record the new serial
// before the first write, and the outcome when the run ends.

// fleet is the state of the run's checks and locks, shared with the
// rollback a halt starts.
type fleet struct {
	record *outdir.FleetRecord
	me     lease.Holder
	mu     sync.Mutex
	locks  map[string]*lease.Lock
	// previous are the OUT_DIR entries the locks replaced, restored when
	// a locked context got no write.
	previous map[string]*outdir.FleetContext
	// wrote are the contexts that got a write under their lock.
	wrote map[string]bool
	// lost cancels the run when a lock is taken away.
	lost context.CancelCauseFunc
}

// newFleet reads OUT_DIR's record of the fleet.
func newFleet(out *outdir.OutDir) (*fleet, error) {
	rec, err := outdir.OpenFleet(out)
	if err != nil {
		return nil, err
	}
	return &fleet{record: rec, me: lease.Me(), locks: map[string]*lease.Lock{},
		previous: map[string]*outdir.FleetContext{}, wrote: map[string]bool{}}, nil
}

// writing records that t is about to get a write.
func (r *run) writing(t *target) {
	r.fleet.mu.Lock()
	r.fleet.wrote[t.name] = true
	r.fleet.mu.Unlock()
}

// checkFleet refuses, per context and before any write, a kube context
// that reaches another cluster, an inventory another package owns, and a
// cluster written by another run since OUT_DIR recorded it. With
// AdoptClusterState the last two are warnings: the cluster's inventory is
// taken as the previous state, and the guards compare with it. It reports
// whether anything was refused.
func (r *run) checkFleet() bool {
	refused := false
	for _, t := range r.targets {
		if t.pkg == nil || t.lease == nil {
			continue
		}
		if err := r.checkIdentity(t); err != nil {
			r.report.Errors = append(r.report.Errors, err.Error())
			refused = true
			continue
		}
		// A lock of this run's own is the one a rollback after a halt
		// reads: the run that holds it.
		heldByOther := t.lease.Held(time.Now()) && t.lease.Holder != r.fleet.me.String()
		if heldByOther && (r.opts.LockTimeout == 0 || r.opts.AdoptClusterState) {
			// Another run is writing it: what was read may be half of it.
			err := &lease.HeldError{Context: t.name, Namespace: t.pkg.Inventory.Namespace(), Lease: lease.Name(t.pkg.Inventory.Name()),
				Holder: t.lease.Holder, Since: t.lease.Since, Expires: t.lease.Expires(), Adopting: r.opts.AdoptClusterState}
			r.report.Errors = append(r.report.Errors, err.Error())
			refused = true
			continue
		}
		if heldByOther {
			continue // --lock-timeout: checked once its lock is taken (lock)
		}
		f := r.checkRecord(t, t.lease)
		switch {
		case f == nil:
		case r.opts.AdoptClusterState:
			r.report.Warnings = append(r.report.Warnings, f.what+"; --adopt-cluster-state takes the cluster's inventory as the previous state")
			t.adopted = true
		default:
			r.report.Errors = append(r.report.Errors, f.what+". "+f.wayOut)
			refused = true
		}
	}
	return refused
}

// recorded is what OUT_DIR last recorded for t; nil when nothing, or when
// --cluster-replaced names it (its cluster is new).
func (r *run) recorded(t *target) *outdir.FleetContext {
	if r.fleet.record == nil || slices.Contains(r.opts.ClusterReplaced, t.name) {
		return nil
	}
	return r.fleet.record.Context(t.name)
}

func (r *run) checkIdentity(t *target) error {
	rec := r.fleet.record.Context(t.name)
	if rec == nil || rec.ClusterUID == "" || rec.ClusterUID == t.identity.UID {
		return nil
	}
	if slices.Contains(r.opts.ClusterReplaced, t.name) {
		r.report.Warnings = append(r.report.Warnings, fmt.Sprintf("context %q: its cluster was replaced (--cluster-replaced): OUT_DIR recorded cluster UID %s (server %s), it now reaches cluster UID %s at %s; applied as a first apply",
			t.name, rec.ClusterUID, rec.Server, t.identity.UID, t.identity.Server))
		return nil
	}
	return fmt.Errorf("context %q reaches another cluster: OUT_DIR recorded cluster UID %s (kube-system Namespace, server %s), the kube context now reaches cluster UID %s at %s: check the kubeconfig; if the cluster was rebuilt or replaced on purpose, pass --cluster-replaced %s",
		t.name, rec.ClusterUID, rec.Server, t.identity.UID, t.identity.Server, t.name)
}

// finding is what a check found, and the way out of its refusal.
type finding struct{ what, wayOut string }

// checkRecord checks the cluster's record st of t: its owner, then its
// serial.
func (r *run) checkRecord(t *target, st *lease.State) *finding {
	if f := r.checkOwner(t, st); f != nil {
		return f
	}
	return r.checkSerial(t, st)
}

// checkOwner refuses an inventory that holds objects and that another
// OUT_DIR's package owns.
func (r *run) checkOwner(t *target, st *lease.State) *finding {
	owner := st.Record.Owner
	if owner == "" || owner == r.fleet.record.Owner || len(t.live.Objects) == 0 {
		return nil
	}
	inv := t.pkg.Inventory
	return &finding{fmt.Sprintf("context %q: inventory %s/%s belongs to another package: %s (owner id %s; serial %d, last applied by %s at %s) owns its %d object(s), and this OUT_DIR's package does not: applying would prune that package's objects",
		t.name, inv.Namespace(), inv.Name(), orUnknown(st.Record.OwnerName), owner, st.Record.Serial,
		orUnknown(st.Record.AppliedBy), when(st.Record.AppliedAt), len(t.live.Objects)),
		"Give this package its own inventory (spec.contexts[].inventory.name, or --name), or apply from the owner's OUT_DIR; if this package is meant to take the inventory over, pass --adopt-cluster-state"}
}

// checkSerial refuses a cluster written by another run since OUT_DIR
// recorded it, and a first apply into an inventory that holds objects.
func (r *run) checkSerial(t *target, st *lease.State) *finding {
	rec := r.recorded(t)
	var mine int64
	if rec != nil {
		mine = rec.Serial
	}
	live := st.Record
	inv := t.pkg.Inventory
	switch {
	case live.Serial == mine && mine > 0:
		return nil
	case live.Serial == 0 && mine == 0:
		// Neither side has a record: a first apply, or the first with
		// this release (then OUT_DIR holds what the inventory does).
		if len(t.live.Objects) > 0 && t.old == nil {
			return &finding{fmt.Sprintf("context %q: inventory %s/%s already holds %d object(s) (such as %s) that this OUT_DIR never applied: another package or another OUT_DIR applied them",
				t.name, inv.Namespace(), inv.Name(), len(t.live.Objects), describe(t.live.Objects[0])),
				"Apply from the OUT_DIR that did, give this package its own inventory, or pass --adopt-cluster-state to take the cluster's inventory as the previous state (every guard then compares with it)"}
		}
		return nil
	case live.Serial > mine:
		return &finding{fmt.Sprintf("context %q: OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial %d, OUT_DIR serial %d; last written by %s at %s, %s)",
			t.name, live.Serial, mine, orUnknown(live.AppliedBy), when(live.AppliedAt), orUnknown(live.Outcome)),
			"Fetch the current OUT_DIR (the one that run left) and apply again, or pass --adopt-cluster-state to take the cluster's inventory as the previous state (every guard then compares with it)"}
	default:
		return &finding{fmt.Sprintf("context %q: the cluster's record is older than OUT_DIR's (cluster serial %d, OUT_DIR serial %d): its Lease %s/%s was deleted or the cluster restored from a backup, so what it holds may not be what OUT_DIR says",
			t.name, live.Serial, mine, inv.Namespace(), lease.Name(inv.Name())),
			"Check the cluster; pass --adopt-cluster-state to take its inventory as the previous state"}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func when(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// digest is the digest of what a context applies: its objects, in order.
func digest(t *target) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, o := range t.pkg.Objects {
		_ = enc.Encode(o.Object)
	}
	for _, o := range t.kept {
		_ = enc.Encode(o.Object)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// findUpToDate tells, for every context at once, whether it needs a write
// at all (inSync), so that only the contexts that do are locked.
func (r *run) findUpToDate(ctx context.Context) {
	var g errgroup.Group
	if r.opts.Parallel > 0 {
		g.SetLimit(r.opts.Parallel)
	}
	for _, t := range r.targets {
		if t.failed || t.hold != "" {
			continue
		}
		g.Go(func() error {
			t.upToDate = r.inSync(ctx, t)
			return nil
		})
	}
	_ = g.Wait()
}

// lockAll takes the lock of every context of targets that will be
// written and does not hold one yet, in context order, each after the
// serial was checked again under it; on any failure it releases what it
// took (restoring their records) and reports the error.
func (r *run) lockAll(ctx context.Context, targets []*target) bool {
	var writers []*target
	r.fleet.mu.Lock()
	for _, t := range targets {
		if t.failed || t.hold != "" || r.fleet.locks[t.name] != nil {
			continue
		}
		if t.upToDate && !r.rollingBack {
			// Nothing to write; but where neither the cluster nor OUT_DIR
			// has a record yet (the first apply with this release), the
			// record is written, once, without changing an object.
			if t.lease.Record.Serial != 0 || r.recorded(t) != nil {
				continue
			}
			t.recordOnly = true
		}
		writers = append(writers, t)
	}
	r.fleet.mu.Unlock()
	sort.Slice(writers, func(a, b int) bool { return writers[a].name < writers[b].name })
	owner := r.fleet.record.EnsureOwner(r.ownerName())
	var (
		mu    sync.Mutex
		taken []*target
		errs  = make([]error, len(writers))
	)
	take := func(i int) {
		t := writers[i]
		l, err := r.lock(ctx, t, owner)
		if err == nil {
			mu.Lock()
			taken = append(taken, t)
			mu.Unlock()
			// OUT_DIR records the serial at once, before the next lock is
			// waited for: a run killed from here on leaves both sides agreeing.
			rec := l.Record()
			if err = r.fleet.record.Set(t.name, entryOf(rec, t)); err == nil {
				if t.recordOnly {
					r.log.printf(t.name, "recording the cluster's identity and this OUT_DIR's ownership of its inventory (Lease %s/%s, serial %d): no object changes",
						t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name()), rec.Serial)
				} else {
					r.log.printf(t.name, "locked (Lease %s/%s, serial %d)", t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name()), rec.Serial)
				}
			}
		} else {
			r.log.printf(t.name, "not locked: %v", err)
		}
		errs[i] = err
	}
	// The first lock, in context order, is taken alone: two runs over the
	// same contexts both want it first, so one of them holds it before
	// the other takes any, and the other is refused holding nothing. The
	// rest are taken at once (each is refused at once when held), or, when
	// a lock may be waited for (--lock-timeout), one by one in context
	// order, so that two waiting runs never wait for each other.
	if len(writers) == 0 {
		return true
	}
	take(0)
	if errs[0] == nil && len(writers) > 1 {
		limit := 1
		if r.opts.LockTimeout <= 0 {
			limit = r.opts.Parallel
		}
		var g errgroup.Group
		if limit > 0 {
			g.SetLimit(limit)
		}
		for i := 1; i < len(writers); i++ {
			g.Go(func() error {
				if limit == 1 && slices.ContainsFunc(errs[:i], func(err error) bool { return err != nil }) {
					return nil // one by one: stop at the first refusal
				}
				take(i)
				return nil
			})
		}
		_ = g.Wait()
	}
	for _, err := range errs {
		if err != nil {
			// The first refusal in context order: the others are alike.
			r.report.Errors = append(r.report.Errors, err.Error())
			for _, u := range taken {
				r.unlock(u, false)
			}
			return false
		}
	}
	r.held = append(r.held, taken...)
	return true
}

// entryOf is OUT_DIR's entry for the record rec a lock of t wrote.
func entryOf(rec lease.Record, t *target) outdir.FleetContext {
	return outdir.FleetContext{Serial: rec.Serial, Digest: rec.Digest, AppliedBy: rec.AppliedBy, AppliedAt: rec.AppliedAt,
		Outcome: rec.Outcome, ClusterUID: rec.ClusterUID, Server: t.identity.Server}
}

// lock takes t's lock, checking under it that nobody wrote the cluster
// since it was read.
func (r *run) lock(ctx context.Context, t *target, owner string) (*lease.Lock, error) {
	cs, err := t.factory.KubernetesClientSet()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", t.name, err)
	}
	seen := t.lease.Record
	l, err := lease.Acquire(ctx, cs.CoordinationV1(), lease.Request{
		Context: t.name, Namespace: t.pkg.Inventory.Namespace(), Inventory: t.pkg.Inventory.Name(),
		Me: r.fleet.me, Timeout: r.opts.LockTimeout, OnLost: r.fleet.lost,
		Check: func(cur *lease.State) (lease.Record, error) {
			// Checked again under the lock: another run may have written
			// the cluster since it was read.
			if t.adopted {
				if cur.Record != seen {
					return lease.Record{}, fmt.Errorf("context %q: another run wrote the cluster since this one read it (cluster serial %d, %d when read; written by %s at %s, %s): the state --adopt-cluster-state took is gone; apply again",
						t.name, cur.Record.Serial, seen.Serial, orUnknown(cur.Record.AppliedBy), when(cur.Record.AppliedAt), orUnknown(cur.Record.Outcome))
				}
			} else if f := r.checkRecord(t, cur); f != nil {
				return lease.Record{}, fmt.Errorf("%s (found once its lock was taken). %s", f.what, f.wayOut)
			}
			return lease.Record{Serial: cur.Record.Serial + 1, Digest: digest(t), AppliedBy: r.fleet.me.Who(),
				AppliedAt: time.Now(), Outcome: lease.OutcomeApplying, ClusterUID: t.identity.UID,
				Owner: owner, OwnerName: r.fleet.record.OwnerName}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	r.fleet.mu.Lock()
	r.fleet.locks[t.name] = l
	r.fleet.previous[t.name] = r.fleet.record.Context(t.name)
	r.fleet.mu.Unlock()
	return l, nil
}

// ownerName describes this OUT_DIR's package in other runs' messages.
func (r *run) ownerName() string {
	name := ""
	if r.layout != nil {
		name = "package " + r.layout.Name() + ", "
	}
	return fmt.Sprintf("%sOUT_DIR first applied by %s at %s", name, r.fleet.me.Who(), time.Now().UTC().Format(time.RFC3339))
}

// unlock releases t's lock. A context that was written records its
// outcome on both sides; one that got no write gets its previous record
// back, on both sides, as if it had never been locked.
func (r *run) unlock(t *target, wrote bool) {
	r.fleet.mu.Lock()
	l := r.fleet.locks[t.name]
	prev := r.fleet.previous[t.name]
	delete(r.fleet.locks, t.name)
	r.fleet.mu.Unlock()
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := l.Record()
	var err error
	if wrote || t.recordOnly {
		rec.Outcome = lease.OutcomeApplied
		if t.failed || !t.done {
			rec.Outcome = lease.OutcomeFailed
		}
		if t.rolledBack || r.rollingBack {
			rec.Outcome = lease.OutcomeRolledBack
		}
		err = l.Release(ctx, rec.Outcome)
		if err == nil {
			err = r.fleet.record.Set(t.name, entryOf(rec, t))
		}
	} else {
		err = l.Abandon(ctx)
		if err == nil {
			err = r.fleet.record.Restore(t.name, prev)
		}
	}
	if err != nil {
		r.report.Errors = append(r.report.Errors, fmt.Sprintf("context %q: releasing its lock: %v", t.name, err))
	}
}

// unlockAll releases every lock this run took.
func (r *run) unlockAll() {
	for _, t := range r.held {
		r.fleet.mu.Lock()
		wrote := r.fleet.wrote[t.name]
		r.fleet.mu.Unlock()
		r.unlock(t, wrote)
	}
	r.held = nil
}

// guardLiveMoves is the move guard on what the clusters hold: an object
// a cluster's inventory lists that the new split places in another
// context is a move, whatever OUT_DIR says; the plan judged only those
// OUT_DIR shows.
func (r *run) guardLiveMoves(placed placement) {
	if r.cfg == nil || r.cfg.Config.Policy.AllowMoves {
		return
	}
	for _, t := range r.targets {
		if t.pkg == nil {
			continue
		}
		old := t.oldObjects()
		for _, id := range t.live.Objects.Diff(t.objects) {
			if old.Contains(id) {
				continue // the plan judged it
			}
			to := slices.DeleteFunc(placed.contexts(id), func(c string) bool { return c == t.name })
			if len(to) == 0 {
				continue
			}
			r.report.Errors = append(r.report.Errors, fmt.Sprintf("context %q: its cluster's inventory holds %s, which this package places in context(s) %s: a move that OUT_DIR/%s does not show, and kpt live apply would prune it there; set spec.allowMoves: true to move it on purpose",
				t.name, describe(id), strings.Join(to, ", "), t.name))
		}
	}
}
