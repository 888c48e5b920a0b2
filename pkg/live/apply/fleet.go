package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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
	now := time.Now()
	var held []*lease.HeldError
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
		heldByOther := t.lease.Held(now) && t.lease.Holder != r.fleet.me.String()
		if heldByOther && (r.opts.LockTimeout == 0 || r.opts.AdoptClusterState) {
			// Another run is writing it: what was read may be half of it.
			held = r.addHeld(held, lease.NewHeldError(t.name, t.pkg.Inventory.Namespace(), t.pkg.Inventory.Name(), t.lease, now))
			refused = true
			continue
		}
		if heldByOther {
			continue // --lock-timeout: checked once its lock is free (lock)
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
	for _, e := range held {
		e.Adopting = r.opts.AdoptClusterState
		r.report.Errors = append(r.report.Errors, e.Error())
	}
	return refused
}

// addHeld adds a refusal of a held lock to held: one error per holder,
// naming every context it holds, with the command that breaks its locks.
func (r *run) addHeld(held []*lease.HeldError, e *lease.HeldError) []*lease.HeldError {
	for _, h := range held {
		if h.Holder == e.Holder {
			h.Add(e)
			return held
		}
	}
	out := "OUT_DIR"
	if r.outDir() != nil {
		out = r.outDir().Given
	}
	e.Unlock = lease.UnlockCommand(e.Holder, out, r.opts.Kubeconfig)
	return append(held, e)
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
	if live.Serial == 0 && mine == 0 {
		// Neither side has a record: a first apply, or the first with
		// this release (then OUT_DIR holds what the inventory does).
		if len(t.live.Objects) > 0 && t.old == nil {
			return &finding{fmt.Sprintf("context %q: inventory %s/%s already holds %d object(s) (such as %s) that this OUT_DIR never applied: another package or another OUT_DIR applied them",
				t.name, inv.Namespace(), inv.Name(), len(t.live.Objects), describe(t.live.Objects[0])),
				"Apply from the OUT_DIR that did, give this package its own inventory, or pass --adopt-cluster-state to take the cluster's inventory as the previous state (every guard then compares with it)"}
		}
		return nil
	}
	m := lease.CompareSerials(t.name, inv.Namespace(), inv.Name(), live, mine)
	switch {
	case m == nil:
		return nil
	case m.Stale:
		return &finding{m.What, "Fetch the current OUT_DIR (the one that run left) and apply again, or pass --adopt-cluster-state to take the cluster's inventory as the previous state (every guard then compares with it)"}
	default:
		return &finding{m.What, "Check the cluster; pass --adopt-cluster-state to take its inventory as the previous state"}
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
	g := groupOf(r.opts.Parallel)
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
				waited := ""
				if w := l.Waited(); w > 0 {
					waited = fmt.Sprintf(" after waiting %s", w.Round(time.Second))
				}
				if t.recordOnly {
					r.log.printf(t.name, "recording the cluster's identity and this OUT_DIR's ownership of its inventory (Lease %s/%s, serial %d)%s: no object changes",
						t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name()), rec.Serial, waited)
				} else {
					r.log.printf(t.name, "locked%s (Lease %s/%s, serial %d)", waited, t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name()), rec.Serial)
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
		oneByOne, g := r.opts.LockTimeout > 0, r.leaseGroup()
		if oneByOne {
			g.SetLimit(1)
		}
		for i := 1; i < len(writers); i++ {
			g.Go(func() error {
				if oneByOne && slices.ContainsFunc(errs[:i], func(err error) bool { return err != nil }) {
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
			// The first refusal in context order: the others are alike,
			// but a holder is named once with every lock it holds.
			var first *lease.HeldError
			if errors.As(err, &first) {
				held := r.addHeld(nil, first)
				for _, other := range errs {
					var he *lease.HeldError
					if errors.As(other, &he) && he != first && he.Holder == first.Holder {
						held = r.addHeld(held, he)
					}
				}
				err = held[0]
			}
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
		AppliedAs: rec.AppliedAs, Outcome: rec.Outcome, SettledBy: rec.SettledBy, SettledAt: rec.SettledAt, ClusterUID: rec.ClusterUID, Server: t.identity.Server}
}

// lock takes t's lock, checking under it that nobody wrote the cluster
// since it was read.
func (r *run) lock(ctx context.Context, t *target, owner string) (*lease.Lock, error) {
	leases, err := t.leasesClient()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", t.name, err)
	}
	seen := t.lease.Record
	ns, name := t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name())
	var waitingSince time.Time
	l, err := lease.Acquire(ctx, leases, lease.Request{
		Context: t.name, Namespace: ns, Inventory: t.pkg.Inventory.Name(),
		Me: r.fleet.me, Timeout: r.opts.LockTimeout, OnLost: r.fleet.lost, Seen: t.lease,
		OnWait: func(cur *lease.State, until time.Time) {
			waitingSince = time.Now()
			r.log.printf(t.name, "waiting for its lock: %s", waitingFor(cur, ns, name, until, r.opts.LockTimeout, waitingSince))
		},
		Check: func(cur *lease.State) (lease.Record, error) {
			// Decided on the Lease as the load read it, the lock is
			// written only if nobody wrote it since (Seen); else on a
			// read just before the lock is taken: another run may have
			// written the cluster since it was read.
			found := "read again just before taking its lock"
			if !waitingSince.IsZero() {
				found = fmt.Sprintf("read again once its lock was free, after waiting %s for it", time.Since(waitingSince).Round(time.Second))
			}
			if t.adopted {
				if cur.Record != seen {
					return lease.Record{}, fmt.Errorf("context %q: another run wrote the cluster since this one read it (cluster serial %d, %d when read; written by %s at %s, %s; %s): the state --adopt-cluster-state took is gone; apply again",
						t.name, cur.Record.Serial, seen.Serial, orUnknown(cur.Record.AppliedBy), when(cur.Record.AppliedAt), orUnknown(cur.Record.Outcome), found)
				}
			} else if f := r.checkRecord(t, cur); f != nil {
				return lease.Record{}, fmt.Errorf("%s (%s). %s", f.what, found, f.wayOut)
			}
			return lease.Record{Serial: cur.Record.Serial + 1, Digest: digest(t), AppliedBy: r.fleet.me.Who(),
				AppliedAt: time.Now(), AppliedAs: t.kc.As(t.name).String(), Outcome: lease.OutcomeApplying, ClusterUID: t.identity.UID,
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

// waitingFor is the line of a run that starts waiting for a lock another
// run holds: who holds it, where its rollout is, when it frees itself, and
// until when this run waits.
func waitingFor(cur *lease.State, ns, name string, until time.Time, timeout time.Duration, now time.Time) string {
	s := fmt.Sprintf("%s holds Lease %s/%s", cur.Holder, ns, name)
	gone := cur.Gone(now)
	switch p := cur.Progress; {
	case p.Wave == "":
	case gone != "":
		s += "; it was in " + p.Where()
	default:
		s += "; its rollout is in " + p.Text(now)
	}
	if gone != "" {
		s += fmt.Sprintf("; that run is gone (%s): its lock frees itself at %s", gone, when(cur.Expires()))
	} else {
		s += fmt.Sprintf("; it frees itself at %s unless its holder renews it", when(cur.Expires()))
	}
	return s + fmt.Sprintf("; waiting until %s (--lock-timeout %s)", when(until), timeout)
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
	if msg := r.release(t, wrote); msg != "" {
		r.report.Errors = append(r.report.Errors, msg)
	}
}

// release is unlock, saying why the lock could not be released ("" when
// it was).
func (r *run) release(t *target, wrote bool) string {
	r.fleet.mu.Lock()
	l := r.fleet.locks[t.name]
	prev := r.fleet.previous[t.name]
	delete(r.fleet.locks, t.name)
	r.fleet.mu.Unlock()
	if l == nil {
		return ""
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
		return unreleased(t, l, err)
	}
	return ""
}

// unreleased says that t's lock could not be released (its credentials
// died, or its cluster went away), and until when it stays held: the
// next run waits for it (--lock-timeout) or breaks it (--force-unlock).
func unreleased(t *target, l *lease.Lock, err error) string {
	if cerr := t.credentials(); cerr != nil {
		err = cerr
	}
	msg := fmt.Sprintf("context %q: releasing its lock: %v", t.name, err)
	if exp := l.Expires(); !exp.IsZero() {
		msg += fmt.Sprintf("; Lease %s/%s stays held by this run until it expires at %s (%s after its last renewal): a rerun waits for it with --lock-timeout %s, or apply --force-unlock %s breaks it at once",
			t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name()), exp.UTC().Format(time.RFC3339), lease.Duration, lease.Duration, t.name)
	}
	return msg
}

// unlockAll releases every lock this run took (leaseGroup): a
// Lease write and an entry of OUT_DIR's record each (the record writes
// the entries that arrive together at once). One after another, 256
// locks kept the end of a run waiting about a second. The errors keep
// the locks' order.
func (r *run) unlockAll() {
	msgs := make([]string, len(r.held))
	g := r.leaseGroup()
	for i, t := range r.held {
		r.fleet.mu.Lock()
		wrote := r.fleet.wrote[t.name]
		r.fleet.mu.Unlock()
		g.Go(func() error {
			msgs[i] = r.release(t, wrote)
			return nil
		})
	}
	_ = g.Wait()
	for _, msg := range msgs {
		if msg != "" {
			r.report.Errors = append(r.report.Errors, msg)
		}
	}
	r.held = nil
}

// A run that dies while it holds a context's lock leaves the record it
// took there as `applying`, in the cluster and in OUT_DIR. A later run
// that writes the context replaces it; one that finds the context in sync
// writes nothing there, so it settles the record instead, once the run is
// over and the context ended in sync (its wave's bake included): one
// Lease update, refused as a lock is (another live run holds it, or the
// record changed since it was read), that writes the record with outcome
// applied and who settled it, and no holder. The serial is kept: nothing
// changed in the cluster, and a copy of OUT_DIR at that serial stays
// current. Where only OUT_DIR lags behind the cluster (same serial, the
// cluster's record settled), OUT_DIR takes the cluster's record, with no
// cluster write.

// settleAll settles the record of every context this run found in sync
// and left in sync (settle).
func (r *run) settleAll(ctx context.Context) {
	if r.opts.DryRun || r.rollingBack {
		return
	}
	g := r.leaseGroup()
	for _, t := range r.targets {
		if !t.upToDate || !t.done || t.failed || t.adopted || t.recordOnly || t.lease == nil || !t.lease.Found {
			continue
		}
		g.Go(func() error {
			r.settle(ctx, t)
			return nil
		})
	}
	_ = g.Wait()
}

// settle sets right the record of one context the run found in sync.
func (r *run) settle(ctx context.Context, t *target) {
	seen := t.lease.Record
	out := r.recorded(t)
	if seen.Outcome != lease.OutcomeApplying {
		if out != nil && out.Serial == seen.Serial && (out.Outcome != seen.Outcome || out.SettledBy != seen.SettledBy) {
			// OUT_DIR lags behind the cluster's record of the same write.
			if err := r.fleet.record.Set(t.name, entryOf(seen, t)); err != nil {
				r.report.Warnings = append(r.report.Warnings, err.Error())
			}
		}
		return
	}
	leases, err := t.leasesClient()
	if err != nil {
		return
	}
	ns, name := t.pkg.Inventory.Namespace(), lease.Name(t.pkg.Inventory.Name())
	rec, err := lease.Settle(ctx, leases, lease.Request{Context: t.name, Namespace: ns, Inventory: t.pkg.Inventory.Name(), Me: r.fleet.me,
		Check: func(cur *lease.State) (lease.Record, error) {
			if cur.Record != seen {
				return lease.Record{}, fmt.Errorf("another run wrote its record since this one read it (serial %d, %s by %s)", cur.Record.Serial, orUnknown(cur.Record.Outcome), orUnknown(cur.Record.AppliedBy))
			}
			if f := r.checkRecord(t, cur); f != nil {
				return lease.Record{}, errors.New(f.what)
			}
			rec := cur.Record
			rec.Outcome, rec.SettledBy, rec.SettledAt = lease.OutcomeApplied, r.fleet.me.Who(), time.Now()
			return rec, nil
		}})
	if err != nil {
		r.log.printf(t.name, "its record still says %s applying it (serial %d): not settled: %v", orUnknown(seen.AppliedBy), seen.Serial, err)
		return
	}
	r.log.printf(t.name, "settled its record (Lease %s/%s, serial %d kept): the run that took that serial, %s, died before it finished; this run found the context in sync: applied",
		ns, name, rec.Serial, orUnknown(seen.AppliedBy))
	if err := r.fleet.record.Set(t.name, entryOf(rec, t)); err != nil {
		r.report.Warnings = append(r.report.Warnings, err.Error())
	}
}

// noteProgress records where the rollout is on every lock the run holds,
// so that status tells a live rollout from the clusters alone: which wave,
// applying or baking, and when its bake ends. A failed note is said, and
// changes nothing else.
func (r *run) noteProgress(ctx context.Context, p lease.Progress) {
	if r.opts.DryRun || !r.waved {
		return
	}
	r.fleet.mu.Lock()
	locks := make(map[string]*lease.Lock, len(r.fleet.locks))
	for name, l := range r.fleet.locks {
		locks[name] = l
	}
	r.fleet.mu.Unlock()
	g := r.leaseGroup()
	for name, l := range locks {
		g.Go(func() error {
			nctx, cancel := context.WithTimeout(ctx, lease.Duration/3)
			defer cancel()
			if err := l.Note(nctx, p); err != nil && ctx.Err() == nil {
				r.log.printf(name, "could not record on its Lease that wave %s is %s: %v", p.Wave, p.Phase, err)
			}
			return nil
		})
	}
	_ = g.Wait()
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
