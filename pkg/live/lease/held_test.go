package lease

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPID is a pid no process has (pid_max is at most 2^22).
const deadPID = 1 << 23

func TestGone(t *testing.T) {
	now := time.Date(2026, 12, 2, 19, 32, 13, 0, time.UTC)
	host, _ := os.Hostname()
	cases := []struct {
		name, holder string
		renewed      time.Duration
		want         string
	}{
		{"alive on this host", "ci@" + host + " pid " + strconv.Itoa(os.Getpid()) + " (job 7) run abc", 5 * time.Second, ""},
		{"its pid no longer runs here", "ci@" + host + " pid " + strconv.Itoa(deadPID) + " (job 7) run abc", time.Second, "pid 8388608 no longer runs on this host, " + host},
		{"another host, renewed lately", "ci@elsewhere pid " + strconv.Itoa(deadPID) + " run abc", 5 * time.Second, ""},
		{"another host, silent for two renewals", "ci@elsewhere pid 7 run abc", 25 * time.Second, "it has not renewed its lock for 25s, and a live run renews it every 10s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &State{Found: true, Holder: c.holder, Since: now.Add(-time.Minute), Renewed: now.Add(-c.renewed)}
			if got := st.Gone(now); got != c.want {
				t.Errorf("Gone = %q, want %q", got, c.want)
			}
		})
	}
	if (&State{Found: true}).Gone(now) != "" {
		t.Error("a free lock has a gone holder")
	}
}

// One error per holder names every context it holds, when they free
// themselves, and the way out: never "wait" for a run that is gone.
func TestHeldError(t *testing.T) {
	now := time.Date(2026, 12, 2, 19, 32, 13, 0, time.UTC)
	st := func(renewed time.Duration) *State {
		return &State{Found: true, Holder: "ci@elsewhere pid 42 (job 7) run x1y2z3", Since: now.Add(-time.Minute), Renewed: now.Add(-renewed),
			Progress: Progress{Wave: "canary", Phase: PhaseBaking, BakeEnds: now.Add(4 * time.Minute)}}
	}
	alive := NewHeldError("A", "default", "shop-a", st(7*time.Second), now)
	alive.Add(NewHeldError("B", "default", "shop-b", st(6*time.Second), now))
	alive.Unlock = UnlockCommand(alive.Holder, "out dir", "")
	got := alive.Error()
	for _, want := range []string{
		`contexts "A", "B" are locked by another run: ci@elsewhere pid 42 (job 7) run x1y2z3 holds their Leases default/shard-router.shop-a, default/shard-router.shop-b since 2026-12-02T19:31:13Z, last renewed 2026-12-02T19:32:07Z`,
		"; its rollout is in wave canary baking, 4m0s left (until 2026-12-02T19:36:13Z);",
		"they free themselves at 2026-12-02T19:32:37Z, in 24s, unless its holder renews them",
		"wait for that run to finish",
		"shard-router apply --force-unlock-held-by x1y2z3 --out 'out dir'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the error lacks %q:\n%s", want, got)
		}
	}
	if alive.Contexts()[1] != "B" || len(alive.Locks) != 2 {
		t.Errorf("contexts %v", alive.Contexts())
	}

	gone := NewHeldError("A", "default", "shop-a", st(25*time.Second), now)
	got = gone.Error()
	for _, want := range []string{`context "A" is locked by another run`, "; it was in wave canary (baking). That run is gone (it has not renewed its lock for 25s",
		"it frees itself at 2026-12-02T19:32:18Z, in 5s; apply again then (or now with --lock-timeout 10s",
		"--force-unlock-held-by x1y2z3 --out OUT_DIR"} {
		if !strings.Contains(got, want) {
			t.Errorf("the error lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "wait for that run to finish") {
		t.Errorf("the error asks to wait for a run it says is gone:\n%s", got)
	}
	if d := (&HeldError{At: now, Locks: []HeldLock{{Expires: now.Add(23 * time.Second)}}}).WaitFor(); d != 30*time.Second {
		t.Errorf("WaitFor 23s left = %s, want 30s", d)
	}
}

func TestHolderNames(t *testing.T) {
	h := Holder{User: "alice", Host: "runner-1", PID: 4242, Job: "GitLab CI job 7", Run: "x1y2z3"}
	s := h.String()
	if RunID(s) != "x1y2z3" || !IsHolder(s, "x1y2z3") || !IsHolder(s, s) || IsHolder(s, "x1y2z") || IsHolder(s, "") {
		t.Errorf("run id of %q: %q", s, RunID(s))
	}
	if host, pid, ok := hostAndPID(s); !ok || host != "runner-1" || pid != 4242 {
		t.Errorf("host and pid of %q: %q %d %v", s, host, pid, ok)
	}
	if got := UnlockCommand(s, "/tmp/out", "/home/a b/kc"); got != "shard-router apply --force-unlock-held-by x1y2z3 --out /tmp/out --kubeconfig '/home/a b/kc'" {
		t.Errorf("UnlockCommand = %q", got)
	}
}

func TestCompareSerials(t *testing.T) {
	rec := Record{Serial: 5, AppliedBy: "bob@runner-2 pid 7", AppliedAt: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Outcome: OutcomeApplied}
	if CompareSerials("A", "default", "shop-a", rec, 5) != nil {
		t.Error("equal serials disagree")
	}
	m := CompareSerials("A", "default", "shop-a", rec, 2)
	if m == nil || !m.Stale || m.What != `context "A": OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it (cluster serial 5, OUT_DIR serial 2; last written by bob@runner-2 pid 7 at 2026-12-01T10:00:00Z, applied)` {
		t.Errorf("stale: %+v", m)
	}
	m = CompareSerials("A", "default", "shop-a", rec, 7)
	if m == nil || m.Stale || !strings.Contains(m.What, "its Lease default/shard-router.shop-a was deleted") {
		t.Errorf("older: %+v", m)
	}
}
