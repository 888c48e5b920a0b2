//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/split"
)

// TestFleetLock proves issue 35 on two real clusters, A and B, with the
// package of the apply scenarios (testdata/apply): runners racing on
// copies of one OUT_DIR, a run killed while it holds its locks, a stale
// OUT_DIR, two packages made from one blueprint, a kube context that
// reaches another cluster. Each runner is the real binary in its own
// process; what each cluster received is read from its audit log. The
// scenarios run in order on the same clusters, each from the OUT_DIR the
// last successful run left (as CI fetches it).
func TestFleetLock(t *testing.T) {
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	start := time.Now()
	f := &fleetLockE2E{dir: t.TempDir()}
	f.creds = clusterNewCreds(t, f.dir)
	// C is the cluster that replaces B in WrongClusterRefused.
	api := clusterStartFleet(t, f.dir, f.creds, "A", "B", "C")
	f.spare = api["C"]
	f.e = &clusterE2E{bin: shardRouter(t), kpt: toolPath(t, "kpt"), names: []string{"A", "B"},
		kubeconfig: filepath.Join(f.dir, "kubeconfig"),
		clusters:   map[string]*clusterState{"A": {Name: "A", API: api["A"]}, "B": {Name: "B", API: api["B"]}}}
	clusterWriteKubeconfig(t, f.e.kubeconfig, f.creds.Token, api["A"], api["B"])
	t.Logf("clusters ready after %s", time.Since(start).Round(time.Second))
	runSteps(t, []clusterStep{
		{"FirstApplyRecords", f.firstApply},
		{"TwoRunners", func(t *testing.T) { f.race(t, 2) }},
		{"FourRunners", func(t *testing.T) { f.race(t, 4) }},
		{"LockTimeoutThenStale", f.lockTimeoutStale},
		{"KilledLockExpires", f.killedExpires},
		{"KilledForceUnlock", f.killedForceUnlock},
		{"StaleOutDirRefused", f.staleOutDir},
		{"SameBlueprintRefused", f.sameBlueprint},
		{"WrongClusterRefused", f.wrongCluster},
		{"NoChangeNoWrite", f.noChange},
		{"KilledWaitingForALock", f.killedWaiting},
	})
}

type fleetLockE2E struct {
	e     *clusterE2E
	dir   string
	creds *clusterCreds
	// base is the package and OUT_DIR of the last run that succeeded.
	base *applyE2E
	// runners counts the copies made, to name their directories.
	runners int
	// spare is a cluster no context reaches until B is "rebuilt" as it.
	spare *clusterAPIServer
}

// leaseState is what a test reads of one of apply's Leases.
type leaseState struct {
	Holder  string
	Renewed time.Time
	// The record of the last write (the Lease's annotations).
	Serial, Outcome, AppliedBy, ClusterUID, Owner, OwnerName string
}

// String is the record and the holder, without times: a run that locked a
// context and wrote nothing there leaves it as it found it.
func (s leaseState) String() string {
	return fmt.Sprintf("serial %s, %s by %s, held by %q", s.Serial, s.Outcome, s.AppliedBy, s.Holder)
}

// Expires is when a held lock expires unless renewed (30 s, as documented).
func (s leaseState) Expires() time.Time { return s.Renewed.Add(30 * time.Second) }

func parseLease(obj map[string]any) leaseState {
	spec, _ := obj["spec"].(map[string]any)
	var s leaseState
	s.Holder, _ = spec["holderIdentity"].(string)
	if v, _ := spec["renewTime"].(string); v != "" {
		s.Renewed, _ = time.Parse(time.RFC3339Nano, v)
	}
	s.Serial = clusterAnnotation(obj, "shardrouter.dev/serial")
	s.Outcome = clusterAnnotation(obj, "shardrouter.dev/outcome")
	s.AppliedBy = clusterAnnotation(obj, "shardrouter.dev/applied-by")
	s.ClusterUID = clusterAnnotation(obj, "shardrouter.dev/cluster-uid")
	s.Owner = clusterAnnotation(obj, "shardrouter.dev/owner")
	s.OwnerName = clusterAnnotation(obj, "shardrouter.dev/owner-name")
	return s
}

// shardRouterLeases are apply's Leases in a cluster's default namespace
// (the inventories'), by name.
func shardRouterLeases(t testing.TB, api *clusterAPIServer) map[string]leaseState {
	t.Helper()
	list := api.Get(t, "/apis/coordination.k8s.io/v1/namespaces/default/leases")
	items, _ := list["items"].([]any)
	out := map[string]leaseState{}
	for _, it := range items {
		obj, _ := it.(map[string]any)
		meta, _ := obj["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); strings.HasPrefix(name, "shard-router.") {
			out[name] = parseLease(obj)
		}
	}
	return out
}

// forceUnlock breaks, with one apply --force-unlock, the locks a killed
// run left on the contexts of OUT_DIR out, and returns what it printed.
func forceUnlock(t testing.TB, bin, out, kubeconfig string, contexts ...string) string {
	t.Helper()
	return mustRun(t, cmdSpec{}, bin, "apply", "--force-unlock", strings.Join(contexts, ","), "--out", out, "--kubeconfig", kubeconfig).Stderr
}

// leaseName is the Lease of the testdata/apply package's inventory in ctx.
func leaseName(ctx string) string {
	return "shard-router." + split.InventoryFor("apply-e2e", v1alpha1.Context{Name: ctx}).Name
}

// lease reads the Lease of context ctx's inventory in the cluster ctx
// reaches now.
func (f *fleetLockE2E) lease(t testing.TB, ctx string) leaseState {
	t.Helper()
	obj := f.e.clusters[ctx].API.Get(t, "/apis/coordination.k8s.io/v1/namespaces/default/leases/"+leaseName(ctx))
	if obj == nil {
		t.Fatalf("no Lease %s in cluster %s", leaseName(ctx), ctx)
	}
	return parseLease(obj)
}

// clusterUIDOf is a cluster's identity: its kube-system Namespace's UID.
func clusterUIDOf(t testing.TB, api *clusterAPIServer) string {
	t.Helper()
	uid, _ := clusterUID(api.Get(t, "/api/v1/namespaces/kube-system")).(string)
	if uid == "" {
		t.Fatalf("%s: no kube-system Namespace UID", api.Name)
	}
	return uid
}

// outOwner is the owner id OUT_DIR records.
func outOwner(t testing.TB, out string) string {
	t.Helper()
	var rec struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(clusterReadFile(t, filepath.Join(out, ".shard-router-fleet.json"))), &rec); err != nil || rec.Owner == "" {
		t.Fatalf("%s: no owner id: %v", out, err)
	}
	return rec.Owner
}

// runner is another CI job's copy (cp -r) of base's package and OUT_DIR.
func (f *fleetLockE2E) runner(t testing.TB) *applyE2E {
	t.Helper()
	f.runners++
	d := filepath.Join(f.dir, fmt.Sprintf("runner-%d", f.runners))
	r := &applyE2E{e: f.e, pkg: filepath.Join(d, "pkg"), out: filepath.Join(d, "out")}
	copyTree(t, f.base.pkg, r.pkg)
	copyTree(t, f.base.out, r.out)
	return r
}

// runningApply is an apply started in the background.
type runningApply struct {
	cmd              *exec.Cmd
	job              string
	progress, report string // stderr's and stdout's files
}

// ciJobVars are the environment variables apply reads a CI job's id from;
// a runner's own (SHARD_ROUTER_JOB) must be the one it names.
var ciJobVars = []string{"GITHUB_RUN_ID", "CI_JOB_ID", "BUILDKITE_JOB_ID", "CIRCLE_WORKFLOW_JOB_ID", "BUILD_TAG", "BUILD_BUILDID", "TEKTON_PIPELINE_RUN"}

// start starts apply -o json as CI job job, without waiting for it.
func (a *applyE2E) start(t testing.TB, job string, args ...string) *runningApply {
	t.Helper()
	args = append([]string{"apply", a.pkg, "--out", a.out, "--kubeconfig", a.e.kubeconfig, "-o", "json", "--reconcile-timeout", "2m"}, args...)
	dir := t.TempDir()
	r := &runningApply{job: job, progress: filepath.Join(dir, "stderr"), report: filepath.Join(dir, "stdout")}
	stderr, err := os.Create(r.progress)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	stdout, err := os.Create(r.report)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	r.cmd = exec.Command(a.e.bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	r.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(ciJobVars, name)
	})
	r.cmd.Env = append(r.cmd.Env, "SHARD_ROUTER_JOB="+job)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// holder is how apply names this run's process in locks and records.
func (r *runningApply) holder() string {
	return fmt.Sprintf("pid %d (job %s)", r.cmd.Process.Pid, r.job)
}

// wait waits for the run and reads its report.
func (r *runningApply) wait(t testing.TB) applyRun {
	t.Helper()
	err := r.cmd.Wait()
	res := result{Cmd: strings.Join(r.cmd.Args, " ") + " (" + r.job + ")", ExitCode: r.cmd.ProcessState.ExitCode(),
		Stdout: clusterReadFile(t, r.report), Stderr: clusterReadFile(t, r.progress)}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s: %v", res.Cmd, err)
	}
	out := applyRun{result: res}
	if err := json.Unmarshal([]byte(res.Stdout), &out.report); err != nil && res.Stdout != "" {
		t.Fatalf("%s printed no report: %v\n%s", res.Cmd, err, res)
	}
	return out
}

// kill kills the run with SIGKILL and waits for it.
func (r *runningApply) kill(t testing.TB) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
}

// firstApply applies the package to both clusters: each gets a Lease
// beside its inventory, free, recording serial 1, the outcome, the
// cluster's identity and OUT_DIR's owner.
func (f *fleetLockE2E) firstApply(t *testing.T) {
	f.base = &applyE2E{e: f.e, pkg: filepath.Join(f.dir, "base", "pkg"), out: filepath.Join(f.dir, "base", "out")}
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "apply"), f.base.pkg)
	if err := os.MkdirAll(f.base.out, 0o755); err != nil {
		t.Fatal(err)
	}
	f.base.mustApply(t, v1alpha1.ApplyApplied)
	f.base.checkPlaced(t)
	owner := outOwner(t, f.base.out)
	for _, ctx := range f.e.names {
		l := f.lease(t, ctx)
		uid := clusterUIDOf(t, f.e.clusters[ctx].API)
		if l.Holder != "" || l.Serial != "1" || l.Outcome != "applied" || l.ClusterUID != uid || l.Owner != owner || l.AppliedBy == "" {
			t.Errorf("%s: Lease %s after the first apply: %+v; want free, serial 1, applied, cluster %s, owner %s", ctx, leaseName(ctx), l, uid, owner)
		}
	}
}

// raceChanges are the ConfigMaps of context A the racing runners change,
// one each.
var raceChanges = [][2]string{{"apply-a1.yaml", "settings-1"}, {"apply-a1.yaml", "settings-2"}, {"apply-a1.yaml", "settings-3"}, {"apply-a2.yaml", "settings-1"}}

// race starts n runners together, each on its own copy of OUT_DIR and
// with its own change to one ConfigMap of A. Exactly one applies (exit
// 0), and its change is in the cluster; every other exits 1 naming it (as
// the holder of the lock, or as the last writer of a cluster its OUT_DIR
// is now stale for; with --lock-timeout, always the latter), and its change
// is not in the cluster. From A's audit log: the only writes to objects are
// the winner's, all while it held A's Lease (between its two Lease
// writes); B, which no runner changes, gets no write request at all.
func (f *fleetLockE2E) race(t *testing.T, n int, extra ...string) (waited int) {
	before := f.lease(t, "A")
	runners := make([]*applyE2E, n)
	values := make([]string, n)
	for i := range runners {
		runners[i] = f.runner(t)
		values[i] = fmt.Sprintf("race-%d-%d", f.runners, i)
		runners[i].setValue(t, raceChanges[i][0], raceChanges[i][1], values[i])
	}
	marks := f.base.auditMarks(t)
	running := make([]*runningApply, n)
	for i, r := range runners {
		running[i] = r.start(t, fmt.Sprintf("runner-%d", i+1), extra...)
	}
	results := make([]applyRun, n)
	winner := -1
	for i, r := range running {
		results[i] = r.wait(t)
		t.Logf("%s: exit %d", r.job, results[i].ExitCode)
		if results[i].ExitCode == 0 {
			if winner >= 0 {
				t.Errorf("%s and %s both exited 0", running[winner].job, r.job)
			}
			winner = i
		}
	}
	writes := f.base.writesSince(t, marks)
	if winner < 0 {
		for _, r := range results {
			t.Log(r.result)
		}
		t.Fatalf("none of %d runners applied", n)
	}
	requireStatuses(t, results[winner], map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyUnchanged})
	file, name := raceChanges[winner][0], raceChanges[winner][1]
	ns := strings.TrimSuffix(file, ".yaml")
	if got := f.base.liveValue(t, "A", ns, name); got != values[winner] {
		t.Errorf("%s exited 0, but %s/%s holds %q, not its %q", running[winner].job, ns, name, got, values[winner])
	}
	for i, r := range results {
		if i == winner {
			continue
		}
		out := r.Stdout + r.Stderr
		if r.ExitCode != 1 {
			t.Errorf("%s, which did not get the lock: exit %d, want 1\n%s", running[i].job, r.ExitCode, r.result)
		}
		clusterMentions(t, running[i].job+"'s refusal", out, `context \"A\"`, running[winner].holder())
		how := "locked out"
		if strings.Contains(out, "stale") {
			how = "refused as stale"
		} else if !strings.Contains(out, "is locked by another run") {
			t.Errorf("%s was neither locked out nor refused as stale:\n%s", running[i].job, r.result)
		}
		if len(extra) > 0 && how != "refused as stale" {
			t.Errorf("%s (%v) was not refused as stale:\n%s", running[i].job, extra, r.result)
		}
		if strings.Contains(out, "found once its lock was taken") {
			t.Errorf("%s says its lock was taken, though it was refused before:\n%s", running[i].job, r.result)
		}
		if strings.Contains(out, "read again once its lock was free, after waiting") {
			how = "waited, then refused as stale"
			waited++
			// --lock-timeout says once that it waits, for whom, and until when.
			if n := countLines(r.Stderr, "A: waiting for its lock: ", running[winner].holder()+" run ", "waiting until "); n != 1 {
				t.Errorf("%s waited: %d line(s) saying it waits for %s, want 1 with its deadline:\n%s", running[i].job, n, running[winner].holder(), r.Stderr)
			}
		}
		t.Logf("%s: %s", running[i].job, how)
		ns, name := strings.TrimSuffix(raceChanges[i][0], ".yaml"), raceChanges[i][1]
		if got := f.base.liveValue(t, "A", ns, name); got == values[i] {
			t.Errorf("%s exited %d, but its change (%s/%s = %q) is in the cluster", running[i].job, r.ExitCode, ns, name, got)
		}
	}
	requireNoWrites(t, "runners that change only A", writes, "B")
	objects, all := splitLeaseWrites(writes["A"])
	// A runner that found the lock free as another took it gets a
	// conflict (409): it wrote nothing.
	leases := slices.DeleteFunc(slices.Clone(all), func(e auditEvent) bool { return e.ResponseStatus.Code >= 300 })
	if len(leases) < 2 || len(objects) == 0 {
		t.Fatalf("A got %d write(s) to objects and %d to apply's Leases; want the winner's, inside its lock:\n%s%s", len(objects), len(leases), describeWrites(objects), describeWrites(leases))
	}
	for _, l := range all {
		if l.ObjectRef.Name != leaseName("A") {
			t.Errorf("a write to another Lease than A's lock: %s", l)
		}
	}
	// Nobody but the winner writes A's Lease (the others are refused
	// before they write it), so its first and last successful writes there
	// are its lock's taking and release.
	taken, released := leases[0], leases[len(leases)-1]
	for _, w := range objects {
		if w.Received.Before(taken.Stage) || w.Stage.After(released.Received) {
			t.Errorf("a write outside the winner's lock (taken %s, released %s): %s at %s", taken.Stage.Format(time.StampMicro), released.Received.Format(time.StampMicro), w, w.Received.Format(time.StampMicro))
		}
		if w.ObjectRef.Resource == "configmaps" && (w.ObjectRef.Namespace != ns || w.ObjectRef.Name != name) {
			t.Errorf("a write to a ConfigMap the winner did not change: %s", w)
		}
	}
	after := f.lease(t, "A")
	if want := fmt.Sprint(atoi(t, before.Serial) + 1); after.Serial != want || after.Holder != "" || after.Outcome != "applied" || !strings.Contains(after.AppliedBy, running[winner].holder()) {
		t.Errorf("A's Lease after the race: %+v; want free, serial %s, applied by %s", after, want, running[winner].holder())
	}
	t.Logf("%s won: %d object write(s) to A between %s and %s; %d write(s) to A's Lease, %d of them refused", running[winner].job, len(objects),
		taken.Stage.Format(time.StampMilli), released.Received.Format(time.StampMilli), len(all), len(all)-len(leases))
	f.base = runners[winner]
	return waited
}

// lockTimeoutStale: runners with --lock-timeout 2m started together: a
// runner that read the cluster before the winner took its lock waits for
// it, and once it is free finds the serial moved: refused as stale, with
// no write. One that read it after is refused as stale at once. Races
// until one of them waited (at most three rounds).
func (f *fleetLockE2E) lockTimeoutStale(t *testing.T) {
	for round := 1; round <= 3; round++ {
		if f.race(t, 4, "--lock-timeout", "2m") > 0 || t.Failed() {
			return
		}
		t.Logf("round %d: every loser read the cluster after the winner took its lock; again", round)
	}
	t.Error("in three races of four runners, no runner waited for the lock")
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: not a serial: %v", s, err)
	}
	return n
}

// withRollout puts a's contexts in two waves, canary (A or B) first with
// a bake of five minutes, so that a run holds its locks long enough to be
// killed holding them; it returns the function that takes the rollout out
// again.
func withRollout(t testing.TB, a *applyE2E, canary string) (restore func()) {
	t.Helper()
	p := filepath.Join(a.pkg, "shards.yaml")
	old := clusterReadFile(t, p)
	text := old
	for _, ctx := range []string{"A", "B"} {
		stage := "main"
		if ctx == canary {
			stage = "canary"
		}
		text = strings.Replace(text, "  - name: "+ctx+"\n", "  - name: "+ctx+"\n    labels: {stage: "+stage+"}\n", 1)
	}
	text += "  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: 5m\n    - name: rest\n      contexts: {}\n"
	writeFile(t, p, text)
	return func() { writeFile(t, p, old) }
}

// killDuringBake changes a ConfigMap in each context to value and starts
// an apply that it kills (SIGKILL) while the canary A bakes: the run holds
// both contexts' locks then. baking, when set, runs before the kill. It
// returns the killed run.
func (f *fleetLockE2E) killDuringBake(t *testing.T, value string, baking func(*runningApply)) *runningApply {
	a := f.base
	restore := withRollout(t, a, "A")
	a.setValue(t, "apply-a1.yaml", "settings-1", value)
	a.setValue(t, "apply-b1.yaml", "settings-1", value)
	run := a.start(t, value)
	waitFor(t, run.cmd, run.progress, "wave canary: baking")
	if baking != nil {
		baking(run)
	}
	run.kill(t)
	restore()
	if got := a.liveValue(t, "A", "apply-a1", "settings-1"); got != value {
		t.Fatalf("the canary holds %q, want %q: killed before its bake", got, value)
	}
	for _, ctx := range f.e.names {
		if l := f.lease(t, ctx); !strings.Contains(l.Holder, run.holder()) {
			t.Fatalf("%s: Lease %s held by %q after the kill, want %s", ctx, leaseName(ctx), l.Holder, run.holder())
		}
	}
	return run
}

// killedExpires: a run killed while it holds its locks (status says it is
// in progress while it bakes, then killed): the next run from the same
// OUT_DIR is refused at once, in one error naming both contexts, saying
// the run is gone (its pid no longer runs on this host), when its locks
// free themselves and how to break them, never to wait for it, with no
// write to any object; with --lock-timeout it says once that it waits for
// B's lock (the holder, until when) and once that it has it, its first
// write to B after the lock expired, and it settles A's record, which the
// killed run applied and left `applying`, with one write to A (its Lease).
// The cluster's record, OUT_DIR's, status and --detailed-exitcode then
// agree; a no-change apply writes nothing, and they still agree.
func (f *fleetLockE2E) killedExpires(t *testing.T) {
	a := f.base
	killed := f.killDuringBake(t, "killed-1", func(run *runningApply) { f.requireInProgress(t, run) })
	expires := f.lease(t, "B").Expires()
	serialA := f.lease(t, "A").Serial
	holder := f.lease(t, "A").Holder
	f.requireKilled(t, killed)
	marks := a.auditMarks(t)
	r := a.apply(t)
	if time.Now().After(expires) {
		t.Fatalf("the run after the kill ended at %s, after the lock expired (%s): too slow to prove anything", time.Now().Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	if r.ExitCode != 1 {
		t.Errorf("a run while the killed run's lock is held: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stderr, `contexts "A", "B" are locked by another run: `+holder, "That run is gone (pid", "no longer runs on this host",
		"they free themselves at", "apply again then (or now with --lock-timeout", "break them at once: shard-router apply --force-unlock-held-by "+runID(holder)+" --out "+a.out+" --kubeconfig "+a.e.kubeconfig)
	t.Logf("the refusal:\n%s", strings.Join(r.report.Errors, "\n"))
	if n := len(r.report.Errors); n != 1 || strings.Contains(r.Stderr, "wait for that run to finish") {
		t.Errorf("the refusal: %d error(s), want 1 naming both contexts, and none asking to wait for the dead run:\n%s", n, r.Stderr)
	}
	for ctx, ws := range a.writesSince(t, marks) {
		if objects, _ := splitLeaseWrites(ws); len(objects) > 0 {
			t.Errorf("the refused run wrote objects of %s:\n%s", ctx, describeWrites(objects))
		}
	}

	start := time.Now()
	marks = a.auditMarks(t)
	r = a.apply(t, "--lock-timeout", "1m")
	if r.ExitCode != 0 {
		t.Fatalf("--lock-timeout 1m after the kill:\n%s", r.result)
	}
	t.Logf("--lock-timeout: waited and applied in %s (the lock expired %s after it started)", time.Since(start).Round(time.Millisecond), expires.Sub(start).Round(time.Millisecond))
	if n, m := countLines(r.Stderr, "B: waiting for its lock: ", killed.holder()+" run ", "that run is gone (pid", "waiting until "), countLines(r.Stderr, "B: locked after waiting "); n != 1 || m != 1 {
		t.Errorf("--lock-timeout: %d line(s) saying it waits for B's lock and %d saying it has it, want 1 and 1, naming the holder, that it is gone, and the deadline:\n%s", n, m, r.Stderr)
	}
	clusterMentions(t, "the rerun's progress", r.Stderr, "A: settled its record (Lease default/"+leaseName("A")+", serial "+serialA+" kept)")
	t.Logf("the rerun's progress:\n%s", r.Stderr)
	writes := a.writesSince(t, marks)
	objects, _ := splitLeaseWrites(writes["B"])
	if len(objects) == 0 {
		t.Fatal("the run that waited wrote nothing to B")
	}
	if objects[0].Received.Before(expires) {
		t.Errorf("B's first write at %s, before the killed run's lock expired at %s", objects[0].Received.Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	// A, which the killed run had applied, needs no write to an object:
	// one write to its Lease settles its record.
	objectsA, leasesA := splitLeaseWrites(writes["A"])
	if len(objectsA) > 0 || len(leasesA) != 1 || leasesA[0].Verb != "update" || leasesA[0].ResponseStatus.Code != 200 {
		t.Errorf("A during the rerun: %d write(s) to objects, %d to its Lease; want 0 and 1 (the settle):\n%s%s", len(objectsA), len(leasesA), describeWrites(objectsA), describeWrites(leasesA))
	}
	for _, ctx := range f.e.names {
		if got := a.liveValue(t, ctx, "apply-"+strings.ToLower(ctx)+"1", "settings-1"); got != "killed-1" {
			t.Errorf("%s: settings-1 = %q after the rerun, want killed-1", ctx, got)
		}
	}
	if l := f.lease(t, "B"); l.Holder != "" || l.Outcome != "applied" {
		t.Errorf("B: Lease after the rerun: %+v, want free and applied", l)
	}
	f.requireSettled(t, "A", serialA)

	// A no-change apply: no write at all, the record as it was.
	marks = a.auditMarks(t)
	a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "a no-change apply after the settled rerun", a.writesSince(t, marks), f.e.names...)
	f.requireSettled(t, "A", serialA)
}

// killedForceUnlock: a run killed while it holds its locks; the command
// the refusal offers (apply --force-unlock-held-by, copied from it) breaks
// both and says whose they were; again, it finds none, and --force-unlock
// A,B finds both free. status then says the contexts were last written by
// a run that died (no lock held: it shows no run). The next run applies
// at once, long before the locks would have expired, and settles A.
func (f *fleetLockE2E) killedForceUnlock(t *testing.T) {
	a := f.base
	killed := f.killDuringBake(t, "killed-2", nil)
	expires := f.lease(t, "B").Expires()
	serialA := f.lease(t, "A").Serial
	r := a.apply(t)
	m := unlockCommand.FindStringSubmatch(r.Stderr)
	if r.ExitCode != 1 || m == nil {
		t.Fatalf("the refusal offers no command that breaks the locks:\n%s", r.result)
	}
	res := runCmd(t, cmdSpec{}, a.e.bin, "apply", "--force-unlock-held-by", m[1], "--out", m[2], "--kubeconfig", m[3])
	if res.ExitCode != 0 {
		t.Fatalf("the offered command:\n%s", res)
	}
	for _, ctx := range f.e.names {
		if countLines(res.Stderr, fmt.Sprintf(`context %q: broke the lock of `, ctx), killed.holder()+" run ", "on Lease default/"+leaseName(ctx), "that run is gone: pid") != 1 {
			t.Errorf("--force-unlock-held-by does not say it broke %s's lock, whose, and that its holder is gone:\n%s", ctx, res.Stderr)
		}
	}
	if again := runCmd(t, cmdSpec{}, a.e.bin, "apply", "--force-unlock-held-by", m[1], "--out", m[2], "--kubeconfig", m[3]); again.ExitCode != 1 ||
		!strings.Contains(again.Stderr, "holds no lock on A, B: nothing was broken") {
		t.Errorf("--force-unlock-held-by once its locks are broken:\n%s", again)
	}
	free := forceUnlock(t, a.e.bin, a.out, a.e.kubeconfig, "A", "B")
	for _, ctx := range f.e.names {
		clusterMentions(t, "--force-unlock A,B of free locks", free, fmt.Sprintf(`context %q: Lease default/%s was not locked: nothing to break`, ctx, leaseName(ctx)))
	}
	s := f.status(t, a.out)
	if s.exit != 2 || len(s.doc.Runs) != 0 || s.doc.Rollout == nil || s.doc.Rollout.State != v1alpha1.RolloutKilled {
		t.Errorf("status once the killed run's locks are broken: exit %d, runs %+v, rollout %+v; want 2, none, killed\n%s", s.exit, s.doc.Runs, s.doc.Rollout, s.table)
	}
	clusterMentions(t, "status once the killed run's locks are broken", s.table, "Killed: the run that last wrote A, B, ", "died applying them, and no live run holds their locks: apply again")
	r = a.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the run after --force-unlock:\n%s", r.result)
	}
	if now := time.Now(); now.After(expires) {
		t.Errorf("the run after --force-unlock ended at %s, after the lock would have expired anyway (%s)", now.Format(time.StampMilli), expires.Format(time.StampMilli))
	}
	for _, ctx := range f.e.names {
		if got := a.liveValue(t, ctx, "apply-"+strings.ToLower(ctx)+"1", "settings-1"); got != "killed-2" {
			t.Errorf("%s: settings-1 = %q after the rerun, want killed-2", ctx, got)
		}
	}
	f.requireSettled(t, "A", serialA)
}

// staleOutDir: runner 1 moves Namespace apply-b2 from B to A (allowMoves)
// and applies. Runner 2, with the OUT_DIR and the package from before
// (its own change to B, no allowMoves), is refused in both contexts before
// any write request, naming the serials and runner 1's run; nothing moves.
// With --adopt-cluster-state it compares with the clusters' inventories:
// A's holds apply-b2, which its package puts in B, a move without
// allowMoves, refused, again without a write.
func (f *fleetLockE2E) staleOutDir(t *testing.T) {
	r2 := f.runner(t)
	r2.setValue(t, "apply-b1.yaml", "settings-2", "runner-2")
	r1 := f.runner(t)
	r1.relabel(t, "apply-b2", "a")
	r1.setAllowMoves(t, true)
	r := r1.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("runner 1's move:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyApplied})
	r1.setAllowMoves(t, false)
	f.base = r1
	moved := movingPaths("apply-b2", 1)
	apiB := f.e.clusters["B"].API
	clusterWait(t, apiB.proc, "apply-b2 gone from B", func() error {
		if apiB.Get(t, moved[0]) != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	r1.checkPlaced(t)
	lastWriter := f.lease(t, "A").AppliedBy

	before, marks := r1.versions(t), r1.auditMarks(t)
	r = r2.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("runner 2's stale apply: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	out := r.Stdout + r.Stderr
	clusterMentions(t, "the stale refusal", out, `context \"A\": OUT_DIR is stale`, `context \"B\": OUT_DIR is stale`, "cluster serial", lastWriter, "--adopt-cluster-state")
	requireNoWrites(t, "a stale OUT_DIR's apply", r1.writesSince(t, marks), f.e.names...)

	// plan --live gives the same refusal, offline plan none: it compares
	// with the stale OUT_DIR alone. Neither writes.
	offline := runCmd(t, cmdSpec{}, f.e.bin, "plan", r2.pkg, "--previous", r2.out)
	if offline.ExitCode != 0 {
		t.Errorf("runner 2's offline plan: exit %d, want 0 (OUT_DIR alone shows nothing wrong)\n%s", offline.ExitCode, offline)
	}
	live := runCmd(t, cmdSpec{}, f.e.bin, "plan", r2.pkg, "--previous", r2.out, "--live", "--kubeconfig", f.e.kubeconfig, "-o", "markdown")
	if live.ExitCode != 1 {
		t.Errorf("runner 2's plan --live: exit %d, want 1\n%s", live.ExitCode, live)
	}
	clusterMentions(t, "plan --live's refusal", live.Stdout, `context "A": OUT_DIR is stale`, `context "B": OUT_DIR is stale`, lastWriter)
	requireNoWrites(t, "plan --live", r1.writesSince(t, marks), f.e.names...)

	// status says the same of runner 2's OUT_DIR, without calling runner
	// 1's move runner 2's drift.
	f.requireStaleStatus(t, r2.out, r1.out, lastWriter, moved)
	requireNoWrites(t, "status", r1.writesSince(t, marks), f.e.names...)

	r = r2.apply(t, "--adopt-cluster-state")
	if r.ExitCode != 1 {
		t.Errorf("runner 2 with --adopt-cluster-state: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal of the move", r.Stdout+r.Stderr, "apply-b2", "a move that OUT_DIR/A does not show", "allowMoves")
	requireNoWrites(t, "a stale OUT_DIR's apply with --adopt-cluster-state", r1.writesSince(t, marks), f.e.names...)
	clusterSameVersions(t, before, r1.versions(t))
	for _, p := range moved {
		if f.e.clusters["A"].API.Get(t, p) == nil {
			t.Errorf("%s: no longer in A", p)
		}
		if obj := f.e.clusters["B"].API.Get(t, p); obj != nil && !terminating(obj) {
			t.Errorf("%s: back in B", p)
		}
	}
}

// sameBlueprint: a second team's package made from the same blueprint
// (the same Kptfile name, so the same inventory names) with an OUT_DIR of
// its own is refused in both contexts before any write request, naming
// the package that owns the inventories; with --adopt-cluster-state the
// mass-deletion guard refuses it. Not one object of the first package is
// deleted. Given its own inventories (--name), it applies beside it.
func (f *fleetLockE2E) sameBlueprint(t *testing.T) {
	d := filepath.Join(f.dir, "team-2")
	team2 := &applyE2E{e: f.e, pkg: filepath.Join(d, "pkg"), out: filepath.Join(d, "out")}
	copyFiles(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "apply"), team2.pkg, []string{"Kptfile", "shards.yaml"})
	var b strings.Builder
	for _, shard := range []string{"a", "b"} {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-2-%[1]s\n  labels:\n    apply.e2e.shardrouter.dev/shard: %[1]s\n---\n"+
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-1\n  namespace: team-2-%[1]s\ndata:\n  value: \"team-2\"\n---\n", shard)
	}
	writeFile(t, filepath.Join(team2.pkg, "team-2.yaml"), b.String())
	if err := os.MkdirAll(team2.out, 0o755); err != nil {
		t.Fatal(err)
	}
	owner, ownerName := outOwner(t, f.base.out), f.lease(t, "A").OwnerName
	before, marks := f.base.versions(t), f.base.auditMarks(t)

	r := team2.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("the second package: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout+r.Stderr, `context \"A\": inventory default/`, `context \"B\": inventory default/`, "belongs to another package", owner, ownerName)
	requireNoWrites(t, "the second package's apply", f.base.writesSince(t, marks), f.e.names...)

	r = team2.apply(t, "--adopt-cluster-state")
	if r.ExitCode != 1 {
		t.Errorf("the second package with --adopt-cluster-state: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout+r.Stderr, "mass-deletion guard")
	requireNoWrites(t, "the second package's apply with --adopt-cluster-state", f.base.writesSince(t, marks), f.e.names...)

	r = team2.apply(t, "--name", "team-2")
	if r.ExitCode != 0 {
		t.Fatalf("the second package with its own inventories:\n%s", r.result)
	}
	for ctx, ws := range f.base.writesSince(t, marks) {
		for _, w := range ws {
			if w.Verb == "delete" || w.Verb == "deletecollection" || strings.HasPrefix(w.ObjectRef.Namespace, "apply-") {
				t.Errorf("%s: the second package wrote the first's: %s", ctx, w)
			}
		}
	}
	clusterSameVersions(t, before, f.base.versions(t))
	f.base.checkPlaced(t)
}

// kubeconfigAs writes a kubeconfig whose contexts reach the given
// clusters: context name -> the kube-apiserver it reaches.
func (f *fleetLockE2E) kubeconfigAs(t testing.TB, name string, reach map[string]*clusterAPIServer) string {
	t.Helper()
	var servers []*clusterAPIServer
	for _, ctx := range f.e.names {
		srv := *reach[ctx].srv
		srv.Name = ctx
		servers = append(servers, &clusterAPIServer{Name: ctx, srv: &srv})
	}
	p := filepath.Join(f.dir, name)
	clusterWriteKubeconfig(t, p, f.creds.Token, servers...)
	return p
}

// wrongCluster: the kubeconfig's context B rewritten to reach cluster A's
// server is refused before any write request, naming B's recorded and A's
// identity and A's server. Then B is rebuilt (a new cluster, C, behind
// context B): refused the same way, and applied with --cluster-replaced B,
// every object of B's package in the new cluster. From then on context B
// reaches C.
func (f *fleetLockE2E) wrongCluster(t *testing.T) {
	a := f.base
	apiA, apiB := f.e.clusters["A"].API, f.e.clusters["B"].API
	uidA, uidB := clusterUIDOf(t, apiA), clusterUIDOf(t, apiB)
	a.setValue(t, "apply-b1.yaml", "settings-3", "replaced")
	wrong := *a
	wrongE := *f.e
	wrongE.kubeconfig = f.kubeconfigAs(t, "kubeconfig-b-reaches-a", map[string]*clusterAPIServer{"A": apiA, "B": apiA})
	wrong.e = &wrongE
	before, marks := a.versions(t), a.auditMarks(t)
	r := wrong.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("context B reaching cluster A: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout+r.Stderr, `context \"B\" reaches another cluster`, uidA, uidB, apiA.URL, "--cluster-replaced B")
	requireNoWrites(t, "an apply whose context B reaches cluster A", a.writesSince(t, marks), f.e.names...)
	clusterSameVersions(t, before, a.versions(t))

	apiC := f.spare
	uidC := clusterUIDOf(t, apiC)
	rebuilt := f.kubeconfigAs(t, "kubeconfig-b-rebuilt", map[string]*clusterAPIServer{"A": apiA, "B": apiC})
	wrongE.kubeconfig = rebuilt
	marks = a.auditMarks(t)
	markC := apiC.auditMark(t)
	r = wrong.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("context B reaching a rebuilt cluster: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout+r.Stderr, `context \"B\" reaches another cluster`, uidB, uidC, apiC.URL)
	requireNoWrites(t, "an apply whose context B reaches a rebuilt cluster", a.writesSince(t, marks), f.e.names...)
	if ws := apiC.writesSince(t, markC); len(ws) > 0 {
		t.Errorf("the refused apply wrote the rebuilt cluster:\n%s", describeWrites(ws))
	}

	r = wrong.apply(t, "--cluster-replaced", "B")
	if r.ExitCode != 0 {
		t.Fatalf("--cluster-replaced B:\n%s", r.result)
	}
	clusterMentions(t, "the warning", r.Stdout+r.Stderr, "--cluster-replaced", uidB, uidC)
	f.e.kubeconfig = rebuilt
	f.e.clusters["B"] = &clusterState{Name: "B", API: apiC}
	a.checkPlaced(t)
	if l := f.lease(t, "B"); l.ClusterUID != uidC || l.Holder != "" {
		t.Errorf("the rebuilt cluster's Lease: %+v, want cluster %s, free", l, uidC)
	}
}

// noChange: after all this, an apply with no change sends no write
// request to either cluster, not even to a Lease.
func (f *fleetLockE2E) noChange(t *testing.T) {
	marks := f.base.auditMarks(t)
	f.base.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "an apply with no change", f.base.writesSince(t, marks), f.e.names...)
}

// killedWaitingForALock: a run killed (-9) while it waits (--lock-timeout)
// for its second lock, having taken its first: it wrote nothing but that
// Lease, so once its locks are broken the next run from the same OUT_DIR
// must apply. B's lock is held by a run killed during its canary bake (B
// the canary); the second run changes A and B, locks A and waits for B.
func (f *fleetLockE2E) killedWaiting(t *testing.T) {
	a := f.base
	restore := withRollout(t, a, "B")
	a.setValue(t, "apply-b1.yaml", "settings-1", "waiting-1")
	holder := a.start(t, "holder")
	waitFor(t, holder.cmd, holder.progress, "wave canary: baking")
	holder.kill(t)
	restore()
	a.setValue(t, "apply-a1.yaml", "settings-1", "waiting-2")
	a.setValue(t, "apply-b1.yaml", "settings-1", "waiting-2")
	waiter := a.start(t, "waiter", "--lock-timeout", "1m")
	waitFor(t, waiter.cmd, waiter.progress, "A: locked (Lease")
	waiter.kill(t)
	t.Logf("killed the waiter; A's Lease: %+v", f.lease(t, "A"))
	forceUnlock(t, a.e.bin, a.out, a.e.kubeconfig, a.e.names...)
	r := a.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the run after a run killed while waiting for its lock (its locks broken):\n%s", r.result)
	}
	for _, ctx := range f.e.names {
		if got := a.liveValue(t, ctx, "apply-"+strings.ToLower(ctx)+"1", "settings-1"); got != "waiting-2" {
			t.Errorf("%s: settings-1 = %q, want waiting-2", ctx, got)
		}
	}
}
