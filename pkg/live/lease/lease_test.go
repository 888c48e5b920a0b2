package lease

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shard-router/shard-router/internal/localfleet"
)

// apiserver starts a real etcd and kube-apiserver for the test (the slow
// tier) and returns a client of it.
func apiserver(t *testing.T) kubernetes.Interface {
	t.Helper()
	kubeconfig := localfleet.StartForTest(t, filepath.Join("..", "..", "..", ".tools", "bin"))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, -1 // as kpt's clients, against a server with flow control
	return kubernetes.NewForConfigOrDie(cfg)
}

func holder(run string) Holder { return Holder{User: "ci", Host: "runner", PID: 1, Run: run} }

// next is the Check of a run that may write: the serial incremented.
func next(who string) Check {
	return func(cur *State) (Record, error) {
		return Record{Serial: cur.Record.Serial + 1, AppliedBy: who, AppliedAt: time.Now(), Outcome: OutcomeApplying, Owner: "owner-1"}, nil
	}
}

func req(run string, timeout time.Duration) Request {
	return Request{Context: "A", Namespace: "default", Inventory: "demo-a", Me: holder(run), Timeout: timeout, Check: next(run)}
}

// TestLease runs the lock on one real kube-apiserver, started once.
func TestLease(t *testing.T) {
	cs := apiserver(t)
	t.Run("one holder", func(t *testing.T) { testOneHolder(t, cs) })
	t.Run("expiry", func(t *testing.T) { testExpiry(t, cs) })
	t.Run("lost", func(t *testing.T) { testLost(t, cs) })
	t.Run("settle", func(t *testing.T) { testSettle(t, cs) })
	t.Run("progress", func(t *testing.T) { testProgress(t, cs) })
	t.Run("wait and break by holder", func(t *testing.T) { testWaitAndBreakByHolder(t, cs) })
	t.Run("seen", func(t *testing.T) { testSeen(t, cs) })
}

// countedGets counts the Lease GETs sent through it.
type countedGets struct {
	coordclient.LeasesGetter
	n *atomic.Int32
}

func (c countedGets) Leases(ns string) coordclient.LeaseInterface {
	return countedLeaseGets{LeaseInterface: c.LeasesGetter.Leases(ns), n: c.n}
}

type countedLeaseGets struct {
	coordclient.LeaseInterface
	n *atomic.Int32
}

func (c countedLeaseGets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	c.n.Add(1)
	return c.LeaseInterface.Get(ctx, name, opts)
}

// unchangedSince is the Check of a run that read serial seen: it refuses a
// cluster another run wrote since, as apply's checkSerial does.
func unchangedSince(who string, seen int64) Check {
	return func(cur *State) (Record, error) {
		if cur.Record.Serial != seen {
			return Record{}, fmt.Errorf("written since: serial %d, %d when read", cur.Record.Serial, seen)
		}
		return next(who)(cur)
	}
}

// testSeen: a lock taken from the Lease as the run read it before (Seen)
// is written with no read when nothing changed since (created, or updated
// under the read's resourceVersion); when another run wrote it since, the
// write is refused by the cluster and the lock is decided on a fresh
// read, as without Seen: a Check that refuses what changed refuses, a
// lock seen held but freed since is taken.
func testSeen(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	gets := &atomic.Int32{}
	c := countedGets{LeasesGetter: cs.CoordinationV1(), n: gets}
	reset := func() {
		t.Helper()
		if err := cs.CoordinationV1().Leases("default").Delete(ctx, Name("demo-a"), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		gets.Store(0)
	}
	read := func() *State {
		t.Helper()
		st, err := Read(ctx, cs.CoordinationV1(), "default", "demo-a")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	take := func(run string, seen *State, check Check) (*Lock, error) {
		r := req(run, 0)
		r.Seen, r.Check = seen, check
		return Acquire(ctx, c, r)
	}
	release := func(l *Lock) {
		t.Helper()
		if err := l.Release(ctx, OutcomeApplied); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing changed since the read: no GET, absent or present.
	reset()
	l, err := take("first", read(), unchangedSince("first", 0))
	if err != nil || gets.Load() != 0 || l.Record().Serial != 1 {
		t.Fatalf("taken from a read that found no Lease: %v, %d GETs, serial %d; want no GET, serial 1", err, gets.Load(), l.Record().Serial)
	}
	release(l)
	l, err = take("second", read(), unchangedSince("second", 1))
	if err != nil || gets.Load() != 0 || l.Record().Serial != 2 {
		t.Fatalf("taken from a read of the free Lease: %v, %d GETs, serial %d; want no GET, serial 2", err, gets.Load(), l.Record().Serial)
	}
	release(l)

	// Another run wrote the Lease since the read: the cluster refuses the
	// write (a conflict), and the fresh read decides.
	seen := read()
	other, err := Acquire(ctx, cs.CoordinationV1(), req("other", 0))
	if err != nil {
		t.Fatal(err)
	}
	release(other)
	if _, err := take("stale", seen, unchangedSince("stale", seen.Record.Serial)); err == nil || !strings.Contains(err.Error(), "written since: serial 3, 2 when read") || gets.Load() != 1 {
		t.Fatalf("taken from a read another run's lock came after: %v, %d GETs; want the refusal of the fresh read (serial 3), one GET", err, gets.Load())
	}
	gets.Store(0)
	l, err = take("stale", seen, next("stale"))
	if err != nil || gets.Load() != 1 || l.Record().Serial != 4 {
		t.Fatalf("taken from a stale read, with a Check that accepts: %v, %d GETs, serial %d; want one GET, serial 4 (the fresh read's 3, plus one)", err, gets.Load(), l.Record().Serial)
	}
	release(l)

	// Seen absent, created since by another run: "already exists", then
	// the fresh read.
	reset()
	seen = read()
	other, err = Acquire(ctx, cs.CoordinationV1(), req("other", 0))
	if err != nil {
		t.Fatal(err)
	}
	release(other)
	if _, err := take("stale", seen, unchangedSince("stale", 0)); err == nil || !strings.Contains(err.Error(), "written since: serial 1, 0 when read") || gets.Load() != 1 {
		t.Fatalf("taken from a read that found no Lease, created since: %v, %d GETs; want the fresh read's refusal, one GET", err, gets.Load())
	}

	// Seen held by another run, freed since: taken, not refused.
	reset()
	other, err = Acquire(ctx, cs.CoordinationV1(), req("other", 0))
	if err != nil {
		t.Fatal(err)
	}
	seen = read()
	release(other)
	l, err = take("after", seen, next("after"))
	if err != nil || gets.Load() != 1 {
		t.Fatalf("taken from a read that found the lock held, freed since: %v, %d GETs; want the lock, one GET", err, gets.Load())
	}
	release(l)
}

// testOneHolder takes, holds, records, releases, abandons, breaks and
// waits for the lock of one inventory.
func testOneHolder(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()

	// Eight runs at once: one takes the lock, the others are refused at
	// once naming it, and nothing but the winner's serial is written.
	var (
		mu     sync.Mutex
		won    []*Lock
		held   []*HeldError
		others []error
		wg     sync.WaitGroup
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Acquire(ctx, c, req(string(rune('a'+i)), 0))
			mu.Lock()
			defer mu.Unlock()
			var he *HeldError
			switch {
			case err == nil:
				won = append(won, l)
			case errors.As(err, &he):
				held = append(held, he)
			default:
				others = append(others, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || len(held) != 7 || len(others) != 0 {
		t.Fatalf("8 runs at once: %d took the lock, %d were refused as held, other errors %v; want 1, 7, none", len(won), len(held), others)
	}
	winner := won[0]
	for _, he := range held {
		if he.Holder != winner.me || !strings.Contains(he.Error(), `context "A" is locked by another run: `+winner.me+" holds Lease default/shard-router.demo-a since") {
			t.Fatalf("refusal %q does not name the holder %q", he.Error(), winner.me)
		}
	}
	st, err := Read(ctx, c, "default", "demo-a")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held(time.Now()) || st.Holder != winner.me || st.Record.Serial != 1 || st.Record.Outcome != OutcomeApplying {
		t.Fatalf("while held: %+v", st)
	}

	// Released: the record stays, with the outcome; the lock is free.
	if err := winner.Release(ctx, OutcomeApplied); err != nil {
		t.Fatal(err)
	}
	st, _ = Read(ctx, c, "default", "demo-a")
	if st.Held(time.Now()) || st.Holder != "" || st.Record.Serial != 1 || st.Record.Outcome != OutcomeApplied || st.Record.Owner != "owner-1" {
		t.Fatalf("after Release: %+v", st)
	}

	// A refusal by the check writes nothing.
	refuse := req("r", 0)
	refuse.Check = func(*State) (Record, error) { return Record{}, errors.New("stale") }
	rv := leaseRV(t, cs)
	if _, err := Acquire(ctx, c, refuse); err == nil || err.Error() != "stale" {
		t.Fatalf("a refusing check: %v", err)
	}
	if leaseRV(t, cs) != rv {
		t.Fatal("a refusing check wrote the Lease")
	}

	// Abandoned (the run wrote nothing): the record before it is back.
	l, err := Acquire(ctx, c, req("b", 0))
	if err != nil {
		t.Fatal(err)
	}
	if l.Record().Serial != 2 {
		t.Fatalf("second run's serial %d, want 2", l.Record().Serial)
	}
	if err := l.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = Read(ctx, c, "default", "demo-a")
	if st.Holder != "" || st.Record.Serial != 1 || st.Record.Outcome != OutcomeApplied || st.Record.AppliedBy != winner.rec.AppliedBy {
		t.Fatalf("after Abandon: %+v, want the record of serial 1 back", st)
	}

	// --lock-timeout: a run that waits gets the lock once its holder
	// releases it, and sees the holder's serial.
	first, err := Acquire(ctx, c, req("c", 0))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(2 * time.Second)
		_ = first.Release(ctx, OutcomeApplied)
	}()
	waiter, err := Acquire(ctx, c, req("d", time.Minute))
	if err != nil {
		t.Fatalf("waiting for a released lock: %v", err)
	}
	if waiter.Record().Serial != 3 {
		t.Fatalf("the waiter's serial %d, want 3 (after the holder's 2)", waiter.Record().Serial)
	}
	// ...and one whose timeout runs out is refused, saying it waited.
	start := time.Now()
	_, err = Acquire(ctx, c, req("e", 2*time.Second))
	var he *HeldError
	if !errors.As(err, &he) || he.Waited != 2*time.Second || time.Since(start) < 2*time.Second || !strings.Contains(err.Error(), "still held after --lock-timeout 2s") {
		t.Fatalf("a timeout that runs out: %v", err)
	}

	// --force-unlock breaks it, naming the holder; the holder's release
	// then says its lock was taken away.
	broken, err := ForceUnlock(ctx, c, "default", "demo-a", "")
	if err != nil || broken.Holder != waiter.me {
		t.Fatalf("ForceUnlock: %v, holder %q, want %q", err, broken.Holder, waiter.me)
	}
	thief, err := Acquire(ctx, c, req("f", 0))
	if err != nil {
		t.Fatalf("after --force-unlock: %v", err)
	}
	if err := waiter.Release(ctx, OutcomeApplied); err == nil || !strings.Contains(err.Error(), "was taken away (now held by "+thief.me) {
		t.Fatalf("the broken holder's Release: %v", err)
	}
	_ = thief.Release(ctx, OutcomeApplied)
}

// testExpiry: a killed run stops renewing: its lock is free once
// Duration has passed since its last renewal, and not before.
func testExpiry(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()
	killed := "ci@runner pid 1 run killed"
	secs := int32(Duration / time.Second)
	for _, tc := range []struct {
		renewed time.Duration
		free    bool
	}{{-Duration / 2, false}, {-Duration - time.Second, true}} {
		renew := metav1.NewMicroTime(time.Now().Add(tc.renewed))
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: Name("demo-a"), Namespace: "default"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &killed, LeaseDurationSeconds: &secs, AcquireTime: &renew, RenewTime: &renew}}
		_ = cs.CoordinationV1().Leases("default").Delete(ctx, l.Name, metav1.DeleteOptions{})
		if _, err := cs.CoordinationV1().Leases("default").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := Acquire(ctx, c, req("next", 0))
		if tc.free != (err == nil) {
			t.Fatalf("renewed %s ago: err %v, want free %v", -tc.renewed, err, tc.free)
		}
		if got != nil {
			_ = got.Abandon(ctx)
		}
	}
	// Abandoning a lock that created the Lease deletes it.
	if _, err := cs.CoordinationV1().Leases("default").Get(ctx, Name("demo-a"), metav1.GetOptions{}); err == nil {
		// The expired one above was updated, not created: make a new one.
		_ = cs.CoordinationV1().Leases("default").Delete(ctx, Name("demo-a"), metav1.DeleteOptions{})
	}
	l, err := Acquire(ctx, c, req("new", 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases("default").Get(ctx, Name("demo-a"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a created Lease abandoned: %v, want it deleted", err)
	}
}

// testLost: a holder whose lock was broken and taken learns it at its
// next renewal (OnLost), so that the run stops writing.
func testLost(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()
	defer func(d time.Duration) { RenewEvery = d }(RenewEvery)
	RenewEvery = 200 * time.Millisecond
	lost := make(chan error, 1)
	r := req("victim", 0)
	r.OnLost = func(err error) { lost <- err }
	victim, err := Acquire(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ForceUnlock(ctx, c, "default", "demo-a", ""); err != nil {
		t.Fatal(err)
	}
	thief, err := Acquire(ctx, c, req("thief", 0))
	if err != nil {
		t.Fatal(err)
	}
	// Its renewals stop before RenewEvery is put back.
	defer func() { _ = thief.Release(ctx, OutcomeApplied) }()
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), `context "A": the lock on Lease default/shard-router.demo-a was taken away`) {
			t.Fatalf("OnLost: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OnLost was not called")
	}
	if err := victim.Release(ctx, OutcomeApplied); err == nil {
		t.Fatal("the victim released a lock it lost")
	}
}

func leaseRV(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), Name("demo-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.ResourceVersion
}

// killedLease writes the Lease of a run that died applying: its record
// says applying, and its lock was renewed renewed ago.
func killedLease(t *testing.T, cs kubernetes.Interface, renewed time.Duration) {
	t.Helper()
	ctx := context.Background()
	_ = cs.CoordinationV1().Leases("default").Delete(ctx, Name("demo-a"), metav1.DeleteOptions{})
	killed := "ci@runner pid 1 run killed"
	secs := int32(Duration / time.Second)
	at := metav1.NewMicroTime(time.Now().Add(-renewed))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: Name("demo-a"), Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &killed, LeaseDurationSeconds: &secs, AcquireTime: &at, RenewTime: &at}}
	setRecord(l, Record{Serial: 5, AppliedBy: "ci@runner pid 1", AppliedAt: at.Time, Outcome: OutcomeApplying, Owner: "owner-1"})
	setProgress(l, Progress{Wave: "canary", Phase: PhaseBaking, BakeEnds: time.Now().Add(time.Minute)})
	if _, err := cs.CoordinationV1().Leases("default").Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// settled is the Check of a run that found the context in sync: the
// record it read, applied.
func settled(who string) Check {
	return func(cur *State) (Record, error) {
		if cur.Record.Outcome != OutcomeApplying {
			return Record{}, errors.New("nothing to settle")
		}
		rec := cur.Record
		rec.Outcome, rec.SettledBy, rec.SettledAt = OutcomeApplied, who, time.Now()
		return rec, nil
	}
}

// testSettle: a dead run's record is settled in one update, its serial
// kept and no holder left; a live holder's lock refuses it, without a
// write, as it refuses a lock.
func testSettle(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()

	// A live holder (renewed a moment ago): refused, nothing written.
	killedLease(t, cs, time.Second)
	rv := leaseRV(t, cs)
	r := req("settler", 0)
	r.Check = settled("settler")
	var he *HeldError
	if _, err := Settle(ctx, c, r); !errors.As(err, &he) || he.Holder != "ci@runner pid 1 run killed" {
		t.Fatalf("settling a held lock: %v, want a HeldError naming its holder", err)
	}
	if leaseRV(t, cs) != rv {
		t.Fatal("a refused settle wrote the Lease")
	}

	// Expired: settled, one write, the serial kept, no holder, no progress.
	killedLease(t, cs, Duration+time.Second)
	rv = leaseRV(t, cs)
	rec, err := Settle(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoordinationV1().Leases("default").Get(ctx, Name("demo-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := strconv.Atoi(l.ResourceVersion); got == 0 || l.ResourceVersion == rv {
		t.Fatalf("resourceVersion %s after the settle (was %s)", l.ResourceVersion, rv)
	}
	st, _ := stateOf(l)
	if st.Holder != "" || l.Spec.RenewTime != nil || st.Record.Serial != 5 || st.Record.Outcome != OutcomeApplied ||
		st.Record.SettledBy != "settler" || st.Record.SettledAt.IsZero() || st.Record.AppliedBy != "ci@runner pid 1" || rec.Serial != 5 {
		t.Fatalf("after the settle: %+v (returned %+v)", st, rec)
	}
	for _, a := range []string{WaveAnnotation, PhaseAnnotation, BakeEndsAnnotation} {
		if _, ok := l.Annotations[a]; ok {
			t.Errorf("the settled Lease keeps the dead run's progress %s", a)
		}
	}
	// Settled: a second settle's Check refuses, with no write.
	rv = leaseRV(t, cs)
	if _, err := Settle(ctx, c, r); err == nil || err.Error() != "nothing to settle" {
		t.Fatalf("a second settle: %v", err)
	}
	if leaseRV(t, cs) != rv {
		t.Fatal("a refused settle wrote the Lease")
	}
}

// testProgress: a holder's progress is read back while it holds the lock,
// kept by its renewals, and cleared by its release.
func testProgress(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()
	defer func(d time.Duration) { RenewEvery = d }(RenewEvery)
	RenewEvery = 200 * time.Millisecond
	_ = cs.CoordinationV1().Leases("default").Delete(ctx, Name("demo-a"), metav1.DeleteOptions{})
	l, err := Acquire(ctx, c, req("baker", 0))
	if err != nil {
		t.Fatal(err)
	}
	ends := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	if err := l.Note(ctx, Progress{Wave: "canary", Phase: PhaseBaking, BakeEnds: ends}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * RenewEvery) // renewals meanwhile, concurrent with nothing
	st, err := Read(ctx, c, "default", "demo-a")
	if err != nil {
		t.Fatal(err)
	}
	if st.Progress.Wave != "canary" || st.Progress.Phase != PhaseBaking || !st.Progress.BakeEnds.Equal(ends) || !st.Renewed.After(st.Since) {
		t.Fatalf("while baking: %+v (renewed %s, since %s)", st.Progress, st.Renewed, st.Since)
	}
	if got := st.Progress.Text(ends.Add(-4 * time.Minute)); got != "wave canary baking, 4m0s left (until "+ends.UTC().Format(time.RFC3339)+")" {
		t.Errorf("progress text %q", got)
	}
	if err := l.Release(ctx, OutcomeApplied); err != nil {
		t.Fatal(err)
	}
	le, _ := cs.CoordinationV1().Leases("default").Get(ctx, Name("demo-a"), metav1.GetOptions{})
	if _, ok := le.Annotations[WaveAnnotation]; ok {
		t.Error("the released Lease keeps the run's progress")
	}
}

// testWaitAndBreakByHolder: --lock-timeout says once that it waits, and
// its lock says how long it waited; --force-unlock-held-by breaks only the
// lock of the holder it names.
func testWaitAndBreakByHolder(t *testing.T, cs kubernetes.Interface) {
	c := cs.CoordinationV1()
	ctx := context.Background()
	_ = cs.CoordinationV1().Leases("default").Delete(ctx, Name("demo-a"), metav1.DeleteOptions{})
	first, err := Acquire(ctx, c, req("first", 0))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ForceUnlock(ctx, c, "default", "demo-a", "someone-else"); err != nil || st.Holder != first.me {
		t.Fatalf("breaking another holder's lock: %v, %+v", err, st)
	}
	if st, _ := Read(ctx, c, "default", "demo-a"); st.Holder != first.me {
		t.Fatalf("--force-unlock-held-by someone-else broke %s's lock", first.me)
	}
	go func() {
		time.Sleep(2 * time.Second)
		_ = first.Release(ctx, OutcomeApplied)
	}()
	var waits []string
	r := req("second", time.Minute)
	r.OnWait = func(cur *State, until time.Time) { waits = append(waits, cur.Holder) }
	second, err := Acquire(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != first.me || second.Waited() < time.Second {
		t.Fatalf("waiting: OnWait %q, waited %s; want one call naming %s, and a second or more", waits, second.Waited(), first.me)
	}
	if st, err := ForceUnlock(ctx, c, "default", "demo-a", RunID(second.me)); err != nil || st.Holder != second.me {
		t.Fatalf("breaking the lock by its run id: %v, %+v", err, st)
	}
	if st, _ := Read(ctx, c, "default", "demo-a"); st.Holder != "" {
		t.Fatalf("after --force-unlock-held-by its run id: held by %q", st.Holder)
	}
}
