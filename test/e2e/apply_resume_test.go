//go:build e2e

package e2e

import (
	"bufio"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// killMoment says when a killed apply gets its SIGKILL.
type killMoment int

const (
	// killAnytime: at a random moment within what one apply takes.
	killAnytime killMoment = iota
	// killInPrune: a random moment of up to 2 s after the old context
	// starts pruning what it hands off.
	killInPrune
	// killTerminating: as soon as the old context's copy of the namespace
	// is being deleted.
	killTerminating
)

func (m killMoment) String() string {
	return [...]string{"at a random moment", "while pruning", "once the old Namespace is Terminating"}[m]
}

// killedHandoff: namespace apply-a2 moves between the clusters, and each
// move's apply is killed (SIGKILL) twice, at random moments of the
// handoff, of its prune, and once the old copy of the Namespace is
// Terminating (the rerun that used to re-apply it there and fail after the
// whole reconcile timeout). One rerun must then exit 0 with every object
// exactly where the split puts it, the old copies gone, and the real kpt
// finding nothing to do; a poller sampling both APIs never sees an
// object in neither cluster.
func (a *applyE2E) killedHandoff(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 28))
	t.Logf("seed %d", seed)
	a.setAllowMoves(t, true)
	defer a.setAllowMoves(t, false)
	const ns = "apply-a2"
	paths := movingPaths(ns, 2)
	var progress strings.Builder // of every apply
	rounds := [][2]killMoment{{killAnytime, killInPrune}, {killAnytime, killTerminating}, {killTerminating, killAnytime}}
	for i, kills := range rounds {
		from, to := "B", "A" // apply-a2 is in B since ApplyMoveHandsOff
		if i%2 == 1 {
			from, to = to, from
		}
		a.relabel(t, ns, strings.ToLower(to))
		// About what one apply of this move takes to reach the old
		// context's prune on these clusters.
		span := 3 * time.Second
		p := a.startPoller(paths)
		for _, m := range kills {
			progress.WriteString(a.killedApply(t, rng, m, span, a.e.clusters[from].API, ns))
		}
		start := time.Now()
		r := a.apply(t, "--reconcile-timeout", "1m")
		samples := p.finish()
		progress.WriteString(r.Stderr)
		if r.ExitCode != 0 {
			t.Fatalf("round %d (%s to %s, killed %v): the rerun:\n%s", i+1, from, to, kills, r.result)
		}
		t.Logf("round %d (%s to %s, killed %v): the rerun took %s", i+1, from, to, kills, time.Since(start).Round(time.Millisecond))
		neverInNeither(t, samples, paths)
		for _, path := range paths {
			if obj := a.e.clusters[from].API.Get(t, path); obj != nil {
				t.Errorf("round %d: %s still in %s after the rerun (terminating: %v)", i+1, path, from, terminating(obj))
			}
		}
		a.checkPlaced(t)
		a.kptChangesNothing(t)
		if t.Failed() {
			return
		}
	}
	// A kill once the old Namespace is Terminating leaves it so for the
	// next apply (its namespace controller takes seconds): the case the
	// fix is for was met.
	clusterMentions(t, "the progress of the applies", progress.String(), "an earlier run began to prune it")
	// And once converged, a rerun has nothing to write.
	marks := a.auditMarks(t)
	a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "an apply after the killed handoffs converged", a.writesSince(t, marks), a.e.names...)
}

// killedApply starts an apply and kills it at moment m (or lets it end,
// should it end before: then it must succeed); it returns its progress.
func (a *applyE2E) killedApply(t *testing.T, rng *rand.Rand, m killMoment, span time.Duration, old *clusterAPIServer, ns string) string {
	t.Helper()
	cmd := exec.Command(a.e.bin, "apply", a.pkg, "--out", a.out, "--kubeconfig", a.e.kubeconfig, "--reconcile-timeout", "1m")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pruning := make(chan struct{}, 1)
	var progress strings.Builder
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			progress.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "which prunes them") {
				select {
				case pruning <- struct{}{}:
				default:
				}
			}
		}
	}()
	trigger := make(chan struct{})
	go func() {
		defer close(trigger)
		switch m {
		case killAnytime:
			sleepOrExit(time.Duration(rng.Int64N(int64(span))), exited)
		case killInPrune:
			select {
			case <-pruning:
				sleepOrExit(time.Duration(rng.Int64N(int64(2*time.Second))), exited)
			case <-exited:
			}
		case killTerminating:
			for {
				code, body, err := old.do("GET", "/api/v1/namespaces/"+ns, "", nil)
				if err == nil && code == 200 && strings.Contains(string(body), `"deletionTimestamp"`) {
					return
				}
				if sleepOrExit(20*time.Millisecond, exited) {
					return
				}
			}
		}
	}()
	<-trigger
	killed := cmd.ProcessState == nil && cmd.Process.Signal(syscall.SIGKILL) == nil
	<-exited
	err = cmd.Wait()
	if killed {
		// Its locks stay held for their lease duration; it is gone, so
		// break them (fleet_lock_test.go proves both ways).
		forceUnlock(t, a.e.bin, a.out, a.e.kubeconfig, a.e.names...)
	}
	took := time.Since(start).Round(time.Millisecond)
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && !(killed && st.Signaled()) && err != nil {
		// It ended before its kill: it is a rerun, which must converge
		// (the one that re-applied a Terminating Namespace failed after
		// the whole reconcile timeout).
		t.Errorf("an apply (to be killed %s) ended by itself after %s: %v\n%s", m, took, err, progress.String())
	} else {
		t.Logf("apply to be killed %s, after %s (%v); its last progress lines:\n%s", m, took, err, lastLines(progress.String(), 4))
	}
	return progress.String()
}

// sleepOrExit sleeps d, or less should exited close first: then it
// reports true.
func sleepOrExit(d time.Duration, exited <-chan struct{}) bool {
	select {
	case <-time.After(d):
		return false
	case <-exited:
		return true
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// neverInNeither fails for any sample where a path is in neither cluster
// (a copy being deleted does not count).
func neverInNeither(t *testing.T, samples []sample, paths []string) {
	t.Helper()
	if len(samples) < 10 {
		t.Fatalf("only %d samples", len(samples))
	}
	for _, s := range samples {
		for _, e := range s.errs {
			t.Errorf("sample at %s: %s", s.at.Format(time.StampMilli), e)
		}
		for _, path := range paths {
			if held := s.in[path]; !held[0] && !held[1] {
				t.Errorf("%s: in neither cluster at %s", path, s.at.Format(time.StampMilli))
			}
		}
	}
}
