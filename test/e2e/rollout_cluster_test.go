//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestRollout proves issue 28's waves on three real clusters: R1 is the
// canary wave (bakeTime 10s), R2 and R3 the wave "rest". Each cluster's
// kube-apiserver writes an audit log of every write request, so that "no
// write request" is read from the clusters themselves. The scenarios run in order on the same clusters.
func TestRollout(t *testing.T) {
	e := &rolloutE2E{bin: shardRouter(t), kpt: toolPath(t, "kpt"), names: []string{"R1", "R2", "R3"}}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	e.dir = t.TempDir()
	creds := clusterNewCreds(t, e.dir)
	// The harness's kube-apiserver writes an audit log of every write
	// request (audit_test.go).
	e.api = clusterStartFleet(t, e.dir, creds, e.names...)
	var servers []*clusterAPIServer
	for _, name := range e.names {
		servers = append(servers, e.api[name])
	}
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	clusterWriteKubeconfig(t, e.kubeconfig, creds.Token, servers...)
	e.pkg, e.out = filepath.Join(e.dir, "pkg"), filepath.Join(e.dir, "out")
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
	steps := []clusterStep{
		{"CanaryBakesBeforeTheRest", e.canaryFirst},
		{"NeverReadyHalts", e.neverReadyHalts},
		{"HealthLostDuringBakeHalts", e.healthLost},
		{"UntilWaveThenResume", e.untilWave},
		{"MoveAcrossWaves", e.moveAcrossWaves},
		{"MoveBackAcrossWaves", e.moveBack},
		{"RollbackWithLastWaveDown", e.rollbackDown},
		{"RollbackByHandAfterKill", e.rollbackAfterKill},
		{"KilledThenRerun", e.killedThenRerun},
	}
	runSteps(t, steps)
}

type rolloutE2E struct {
	bin, kpt, kubeconfig string
	dir, pkg, out        string
	names                []string
	api                  map[string]*clusterAPIServer
}

// rolloutVersion is one version of the package: the ConfigMap's value and
// the Deployments' replicas (without a node, 0 is the only count that
// becomes Current), and which context each namespace goes to.
type rolloutVersion struct {
	value    string
	replicas int
	// place maps namespace to context; default roll-rN to RN.
	place map[string]string
	// onFailure is spec.rollout.onFailure ("" for none).
	onFailure string
	// stuck names a namespace whose Deployment gets 1 replica: it never
	// becomes Current.
	stuck string
}

var rolloutNamespaces = []string{"roll-r1", "roll-r2", "roll-r3", "roll-moving"}

func (e *rolloutE2E) write(t testing.TB, v rolloutVersion) {
	t.Helper()
	if err := os.RemoveAll(e.pkg); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.pkg, "Kptfile"), testfixture.Kptfile("rollout"))
	cfg := `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  allowMoves: true
  contexts:
  - name: R1
    labels: {stage: canary}
    namespaceSelector: {matchLabels: {rollout.e2e.shardrouter.dev/shard: r1}}
  - name: R2
    labels: {stage: main}
    namespaceSelector: {matchLabels: {rollout.e2e.shardrouter.dev/shard: r2}}
  - name: R3
    labels: {stage: main}
    namespaceSelector: {matchLabels: {rollout.e2e.shardrouter.dev/shard: r3}}
  rollout:
    waves:
    - name: canary
      contexts: {matchLabels: {stage: canary}}
      bakeTime: 10s
    - name: rest
      contexts: {}
`
	if v.onFailure != "" {
		cfg += "    onFailure: " + v.onFailure + "\n"
	}
	writeFile(t, filepath.Join(e.pkg, "shards.yaml"), cfg)
	for _, ns := range rolloutNamespaces {
		replicas := v.replicas
		if ns == v.stuck {
			replicas = 1
		}
		ctx := v.place[ns]
		if ctx == "" {
			ctx = strings.ToUpper(strings.TrimPrefix(ns, "roll-"))
			if ns == "roll-moving" {
				ctx = "R1"
			}
		}
		writeFile(t, filepath.Join(e.pkg, ns+".yaml"), fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels:
    rollout.e2e.shardrouter.dev/shard: %[2]s
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: %[1]s
data:
  value: %[3]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
spec:
  replicas: %[4]d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: example.invalid/web:1
`, ns, strings.ToLower(ctx), v.value, replicas))
	}
}

// apply runs shard-router apply -o json.
func (e *rolloutE2E) apply(t testing.TB, args ...string) applyRun {
	t.Helper()
	args = append([]string{"apply", e.pkg, "--out", e.out, "--kubeconfig", e.kubeconfig, "-o", "json"}, args...)
	if !slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, "--reconcile-timeout") }) {
		args = append(args, "--reconcile-timeout", "1m")
	}
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.bin, args...)
	r := applyRun{result: res}
	if err := json.Unmarshal([]byte(res.Stdout), &r.report); err != nil && res.Stdout != "" {
		t.Fatalf("apply -o json printed no report: %v\n%s", err, res)
	}
	t.Logf("%s: exit %d", res.Cmd, res.ExitCode)
	return r
}

func requireWaves(t testing.TB, r applyRun, want ...v1alpha1.WaveStatus) {
	t.Helper()
	var got []v1alpha1.WaveStatus
	for _, w := range r.report.Waves {
		got = append(got, w.Status)
	}
	if !slices.Equal(got, want) {
		t.Errorf("wave statuses %v, want %v\n%s", got, want, r.result)
	}
}

// requests are the write requests shard-router (not the controller
// manager, not this test's own requests, not a dry run) sent to the
// cluster since, its locks' Leases included.
func (e *rolloutE2E) requests(t testing.TB, name string, since time.Time) []auditEvent {
	t.Helper()
	var out []auditEvent
	for _, ev := range e.api[name].writesSince(t, 0) {
		if ev.Received.Before(since) || strings.Contains(ev.RequestURI, "dryRun=") || strings.HasPrefix(ev.UserAgent, "Go-http-client") {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// writes are the requests that wrote the package's objects (and its
// inventory): all but those to the Leases of apply's locks, which a run
// takes for every context it will write before its first write.
func (e *rolloutE2E) writes(t testing.TB, name string, since time.Time) []auditEvent {
	t.Helper()
	objects, _ := splitLeaseWrites(e.requests(t, name, since))
	return objects
}

// namespaceWrite is the last write of verb to the Namespace name among
// evs, nil when there is none.
func namespaceWrite(evs []auditEvent, verb, name string) *auditEvent {
	var last *auditEvent
	for i, ev := range evs {
		if ev.Verb == verb && ev.ObjectRef.Resource == "namespaces" && ev.ObjectRef.Name == name {
			last = &evs[i]
		}
	}
	return last
}

func describeWrites(evs []auditEvent) string {
	var b strings.Builder
	for i, ev := range evs {
		if i == 5 {
			fmt.Fprintf(&b, "  ... %d more\n", len(evs)-5)
			break
		}
		fmt.Fprintf(&b, "  %s %s %s/%s (%s) at %s\n", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.UserAgent, ev.Received.Format(time.StampMicro))
	}
	return b.String()
}

// versions are the resourceVersions of the package's objects in a
// cluster, and the record and holder of apply's Leases there (not their
// resourceVersions: a run that locks a context and writes nothing there
// gives its Lease back as it was, with a write).
func (e *rolloutE2E) versions(t testing.TB, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for lease, st := range shardRouterLeases(t, e.api[name]) {
		out["Lease "+lease] = st.String()
	}
	for _, ns := range rolloutNamespaces {
		for _, p := range []string{"/api/v1/namespaces/" + ns, "/api/v1/namespaces/" + ns + "/configmaps/settings", "/apis/apps/v1/namespaces/" + ns + "/deployments/web"} {
			if obj := e.api[name].Get(t, p); obj != nil {
				meta, _ := obj["metadata"].(map[string]any)
				out[p], _ = meta["resourceVersion"].(string)
			}
		}
	}
	return out
}

// value is the ConfigMap's value in namespace ns of a cluster ("" when
// absent).
func (e *rolloutE2E) value(t testing.TB, name, ns string) string {
	t.Helper()
	obj := e.api[name].Get(t, "/api/v1/namespaces/"+ns+"/configmaps/settings")
	if obj == nil {
		return ""
	}
	data, _ := obj["data"].(map[string]any)
	s, _ := data["value"].(string)
	return s
}

// outValue is the ConfigMap's value OUT_DIR/<ctx> records for namespace ns.
func (e *rolloutE2E) outValue(t testing.TB, ctx, ns string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.out, ctx, "*"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil || !strings.Contains(string(data), "namespace: "+ns+"\n") {
			continue
		}
		text := string(data)
		if i := strings.Index(text, "name: settings\n  namespace: "+ns+"\n"); i >= 0 {
			rest := text[i:]
			if j := strings.Index(rest, "value: "); j >= 0 {
				line := rest[j+len("value: "):]
				return strings.Trim(strings.SplitN(line, "\n", 2)[0], `"'`)
			}
		}
	}
	return ""
}

func (e *rolloutE2E) requireValues(t testing.TB, want map[string]string) {
	t.Helper()
	for ctx, v := range want {
		ns := "roll-" + strings.ToLower(ctx)
		if got := e.value(t, ctx, ns); got != v {
			t.Errorf("%s: ConfigMap %s/settings holds %q, want %q", ctx, ns, got, v)
		}
		if got := e.outValue(t, ctx, ns); got != v {
			t.Errorf("OUT_DIR/%s records %q for %s/settings, want %q", ctx, got, ns, v)
		}
	}
}

// canaryFirst: the first rollout. The first write to R2 or R3 comes at
// least the bake time after shard-router's last write to the canary (its
// inventory, written once its objects were Current), read from the
// clusters' audit logs.
func (e *rolloutE2E) canaryFirst(t *testing.T) {
	e.write(t, rolloutVersion{value: "v1"})
	plan := runCmd(t, cmdSpec{}, e.bin, "plan", e.pkg, "--previous", e.out)
	if plan.ExitCode != 0 || !strings.Contains(plan.Stdout, " contexts.\n\nWAVE    CONTEXT") || !strings.Contains(plan.Stdout, "canary  R1") || !strings.Contains(plan.Stdout, "rest    R3") {
		t.Errorf("plan does not show the waves:\n%s", plan)
	}
	start := time.Now()
	r := e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the first rollout:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyApplied, "R2": v1alpha1.ApplyApplied, "R3": v1alpha1.ApplyApplied})
	requireWaves(t, r, v1alpha1.WaveApplied, v1alpha1.WaveApplied)
	canary := e.writes(t, "R1", start)
	if len(canary) == 0 {
		t.Fatal("no write to the canary")
	}
	lastCanary := canary[len(canary)-1].Stage
	for _, name := range []string{"R2", "R3"} {
		w := e.writes(t, name, start)
		if len(w) == 0 {
			t.Fatalf("no write to %s", name)
		}
		gap := w[0].Received.Sub(lastCanary)
		t.Logf("%s: first write %s after the canary's last", name, gap.Round(time.Millisecond))
		if gap < 10*time.Second {
			t.Errorf("%s: first write %s after the canary's last write, before the 10s bake ended:\ncanary:\n%s%s:\n%s", name, gap, describeWrites(canary[len(canary)-1:]), name, describeWrites(w))
		}
	}
	e.requireValues(t, map[string]string{"R1": "v1", "R2": "v1", "R3": "v1"})
	if _, err := os.Stat(filepath.Join(e.out, ".shard-router-rollout")); err == nil {
		t.Error("a completed rollout left its record in OUT_DIR")
	}

	// A dry run of the next change goes through the waves in order, says
	// it would bake, and writes nothing.
	e.write(t, rolloutVersion{value: "v1-dry"})
	before := e.allVersions(t)
	dryStart := time.Now()
	dry := e.apply(t, "--dry-run")
	if dry.ExitCode != 0 || !dry.report.DryRun {
		t.Fatalf("the dry run:\n%s", dry.result)
	}
	requireWaves(t, dry, v1alpha1.WaveApplied, v1alpha1.WaveApplied)
	canaryAt, bakeAt, restAt := strings.Index(dry.Stderr, "wave canary: dry-run of 1 context(s): R1"), strings.Index(dry.Stderr, "wave canary: would bake 10s"), strings.Index(dry.Stderr, "wave rest: dry-run of 2 context(s): R2, R3")
	if canaryAt < 0 || bakeAt < canaryAt || restAt < bakeAt {
		t.Errorf("the dry run does not list the waves in order:\n%s", dry.Stderr)
	}
	e.untouched(t, dryStart, before, e.names...)
	e.requireValues(t, map[string]string{"R1": "v1", "R2": "v1", "R3": "v1"})
}

// untouched asserts that the clusters got no write request to an object
// since start, and that no resourceVersion changed. The only writes there
// may be to the Lease of the run's lock (taken before the first write of
// the run, for every context it would write), which a context that got no
// write gets back as it was (versions holds its record).
func (e *rolloutE2E) untouched(t testing.TB, since time.Time, before map[string]map[string]string, names ...string) {
	t.Helper()
	for _, name := range names {
		objects, leases := splitLeaseWrites(e.requests(t, name, since))
		if len(objects) > 0 {
			t.Errorf("%s got %d write request(s) to objects other than shard-router's Leases:\n%s", name, len(objects), describeWrites(objects))
		}
		t.Logf("%s: %d write request(s) to shard-router's Leases only", name, len(leases))
		if now := e.versions(t, name); !maps.Equal(now, before[name]) {
			t.Errorf("%s: resourceVersions changed: %v -> %v", name, before[name], now)
		}
	}
}

func (e *rolloutE2E) allVersions(t testing.TB) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, n := range e.names {
		out[n] = e.versions(t, n)
	}
	return out
}

// neverReadyHalts: a change the canary can never make ready (replicas 1,
// no node): the canary fails within --reconcile-timeout, wave canary
// halts, R2 and R3 get no write request to an object (only their locks'
// Leases, given back as they were) and keep every resourceVersion.
// The fixed change then rolls through every wave.
func (e *rolloutE2E) neverReadyHalts(t *testing.T) {
	e.write(t, rolloutVersion{value: "v2", replicas: 1})
	before := e.allVersions(t)
	start := time.Now()
	r := e.apply(t, "--reconcile-timeout", "10s")
	if r.ExitCode != 1 {
		t.Fatalf("a never-ready canary: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	requireWaves(t, r, v1alpha1.WaveHalted, v1alpha1.WaveSkipped)
	if len(r.report.Waves) == 2 && (!strings.Contains(r.report.Waves[0].Error, "R1") || !strings.Contains(r.report.Waves[0].Error, "Deployment")) {
		t.Errorf("the halted wave does not name the context and the reason: %q", r.report.Waves[0].Error)
	}
	e.untouched(t, start, before, "R2", "R3")
	e.requireHalted(t, "canary")

	e.write(t, rolloutVersion{value: "v2"})
	r = e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the fixed change:\n%s", r.result)
	}
	requireWaves(t, r, v1alpha1.WaveApplied, v1alpha1.WaveApplied)
	e.requireValues(t, map[string]string{"R1": "v2", "R2": "v2", "R3": "v2"})
}

// requireHalted: status after a halted rollout says it halted in wave
// (its run ended: no run holds a lock, no record says applying), and how
// to resume it or roll it back; --detailed-exitcode exits 2.
func (e *rolloutE2E) requireHalted(t *testing.T, wave string) {
	t.Helper()
	res := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig, "-o", "json", "--detailed-exitcode")
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, res)
	}
	if res.ExitCode != 2 || len(doc.Runs) > 0 || doc.Rollout == nil || doc.Rollout.State != v1alpha1.RolloutHalted || doc.Rollout.StoppedAt != wave {
		t.Errorf("status after a halt: exit %d, runs %+v, rollout %+v; want 2, none, halted in %s\n%s", res.ExitCode, doc.Runs, doc.Rollout, wave, res)
	}
	table := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, e.bin, "status", e.out, "--kubeconfig", e.kubeconfig)
	clusterMentions(t, "status after a halt", table.Stdout, "Unfinished rollout: halted in wave "+wave+" (the run ended before its bake finished); no wave baked yet; waves left: ",
		"To resume it: shard-router apply PKG --out "+e.out, "To roll it back: ")
	if strings.Contains(table.Stdout, "In progress") || strings.Contains(table.Stdout, "killed") {
		t.Errorf("status calls a halted rollout in progress or killed:\n%s", table.Stdout)
	}
}

// applyAsync starts apply with its progress in a file.
func (e *rolloutE2E) applyAsync(t testing.TB, args ...string) (*exec.Cmd, string, *os.File) {
	t.Helper()
	progress := filepath.Join(t.TempDir(), "progress")
	stderr, err := os.Create(progress)
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := os.Create(progress + ".json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, append([]string{"apply", e.pkg, "--out", e.out, "--kubeconfig", e.kubeconfig, "-o", "json", "--reconcile-timeout", "1m"}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr.Close()
	return cmd, progress, stdout
}

// waitFor waits until the progress file holds line.
func waitFor(t testing.TB, cmd *exec.Cmd, progress, line string) {
	t.Helper()
	for i := 0; i < 1200; i++ {
		data, _ := os.ReadFile(progress)
		if strings.Contains(string(data), line) {
			return
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := os.ReadFile(progress)
	t.Fatalf("apply never printed %q:\n%s", line, data)
}

// healthLost: during the canary's bake its Deployment is scaled to 1 (no
// node runs the pod): it leaves Current, the canary fails, the rollout
// halts, R2 and R3 get no write to an object.
func (e *rolloutE2E) healthLost(t *testing.T) {
	e.write(t, rolloutVersion{value: "v3"})
	before := e.allVersions(t)
	start := time.Now()
	cmd, progress, stdout := e.applyAsync(t)
	waitFor(t, cmd, progress, "wave canary: baking 10s")
	e.api["R1"].MergePatch(t, "/apis/apps/v1/namespaces/roll-r1/deployments/web", map[string]any{"spec": map[string]any{"replicas": 2}})
	err := cmd.Wait()
	stdout.Close()
	data, _ := os.ReadFile(progress)
	out, _ := os.ReadFile(stdout.Name())
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("health lost during the bake: exit %d (%v), want 1\n%s\n%s", cmd.ProcessState.ExitCode(), err, out, data)
	}
	var r applyRun
	r.Stdout, r.Stderr = string(out), string(data)
	if err := json.Unmarshal(out, &r.report); err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyFailed, "R2": v1alpha1.ApplySkipped, "R3": v1alpha1.ApplySkipped})
	requireWaves(t, r, v1alpha1.WaveHalted, v1alpha1.WaveSkipped)
	if len(r.report.Waves) == 2 && !strings.Contains(r.report.Waves[0].Error, "bake") {
		t.Errorf("the halted wave does not say the health was lost during the bake: %q", r.report.Waves[0].Error)
	}
	if !strings.Contains(string(data), "halted") {
		t.Errorf("no halted progress line:\n%s", data)
	}
	e.untouched(t, start, before, "R2", "R3")

	// A rerun corrects the canary's drift, bakes the canary again (its
	// last bake failed, although OUT_DIR holds its package now) and rolls
	// on.
	r = e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the rerun:\n%s", r.result)
	}
	if !strings.Contains(r.Stderr, "wave canary: baking 10s") {
		t.Errorf("the rerun did not bake the canary again after its failed bake:\n%s", r.Stderr)
	}
	e.requireValues(t, map[string]string{"R1": "v3", "R2": "v3", "R3": "v3"})
}

// untilWave: --until-wave canary changes the canary only, exits 0,
// paused, wave rest Pending; the rerun changes the rest, the canary
// Unchanged with no write request.
func (e *rolloutE2E) untilWave(t *testing.T) {
	e.write(t, rolloutVersion{value: "v4"})
	before := e.allVersions(t)
	start := time.Now()
	r := e.apply(t, "--until-wave", "canary")
	if r.ExitCode != 0 {
		t.Fatalf("--until-wave canary:\n%s", r.result)
	}
	if !r.report.Paused {
		t.Errorf("the report is not paused\n%s", r.Stdout)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyApplied, "R2": v1alpha1.ApplyPending, "R3": v1alpha1.ApplyPending})
	requireWaves(t, r, v1alpha1.WaveApplied, v1alpha1.WavePending)
	e.untouched(t, start, before, "R2", "R3")
	e.requireValues(t, map[string]string{"R1": "v4", "R2": "v3", "R3": "v3"})

	resumed := time.Now()
	r = e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the resume:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyUnchanged, "R2": v1alpha1.ApplyApplied, "R3": v1alpha1.ApplyApplied})
	requireWaves(t, r, v1alpha1.WaveUnchanged, v1alpha1.WaveApplied)
	e.requireValues(t, map[string]string{"R1": "v4", "R2": "v4", "R3": "v4"})
	// The canary already holds the new package and its cluster matches
	// it: no write request at all.
	if w := e.requests(t, "R1", resumed); len(w) > 0 {
		t.Errorf("the resume sent the canary %d write request(s) (no Lease either: it needs no lock):\n%s", len(w), describeWrites(w))
	}
}

// moveAcrossWaves: namespace roll-moving moves from the canary R1 to R2
// (wave rest) while a poller samples both APIs every 50 ms: at every
// sample it is in at least one cluster, and R1's copy goes only after R2
// has it, which is after the canary's bake.
func (e *rolloutE2E) moveAcrossWaves(t *testing.T) {
	e.write(t, rolloutVersion{value: "v4", place: map[string]string{"roll-moving": "R2"}})
	paths := []string{"/api/v1/namespaces/roll-moving", "/api/v1/namespaces/roll-moving/configmaps/settings", "/apis/apps/v1/namespaces/roll-moving/deployments/web"}
	a := &applyE2E{e: &clusterE2E{clusters: map[string]*clusterState{"A": {Name: "R1", API: e.api["R1"]}, "B": {Name: "R2", API: e.api["R2"]}}}}
	p := a.startPoller(paths)
	start := time.Now()
	r := e.apply(t)
	samples := p.finish()
	if r.ExitCode != 0 {
		t.Fatalf("the move:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyApplied, "R2": v1alpha1.ApplyApplied, "R3": v1alpha1.ApplyUnchanged})
	if len(r.report.Handoffs) != len(paths) || len(r.report.HeldInBoth) != 0 {
		t.Errorf("%d handoffs, %d held in both; want %d and 0\n%s", len(r.report.Handoffs), len(r.report.HeldInBoth), len(paths), r.Stdout)
	}
	checkHandoff(t, samples, paths, [2]bool{true, false}, [2]bool{false, true})
	// R2 got its copy only after the canary's bake: the first write to R2
	// is at least 10 s after the canary's first.
	r1, r2 := e.writes(t, "R1", start), e.writes(t, "R2", start)
	if len(r1) == 0 || len(r2) == 0 {
		t.Fatalf("writes: R1 %d, R2 %d", len(r1), len(r2))
	}
	if gap := r2[0].Received.Sub(r1[0].Received); gap < 10*time.Second {
		t.Errorf("R2's first write came %s after R1's, within the canary's bake", gap)
	}
	// R1 pruned it only once R2 had it: R1's delete of the namespace comes
	// after R2's create.
	var created, deleted time.Time
	if ev := namespaceWrite(r2, "create", "roll-moving"); ev != nil {
		created = ev.Stage
	}
	if ev := namespaceWrite(r1, "delete", "roll-moving"); ev != nil {
		deleted = ev.Received
	}
	if created.IsZero() || deleted.IsZero() || !deleted.After(created) {
		t.Errorf("R2 created roll-moving at %s, R1 deleted it at %s: want the delete after the create", created, deleted)
	}
	t.Logf("%d samples over %s", len(samples), samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Millisecond))
}

// moveBack: roll-moving moves back from R2 (wave rest) to the canary R1:
// R1 creates it in the first wave, R2 prunes its copy only in its own
// wave, after the canary's bake; never in neither cluster.
func (e *rolloutE2E) moveBack(t *testing.T) {
	e.write(t, rolloutVersion{value: "v4"})
	paths := []string{"/api/v1/namespaces/roll-moving", "/api/v1/namespaces/roll-moving/configmaps/settings", "/apis/apps/v1/namespaces/roll-moving/deployments/web"}
	a := &applyE2E{e: &clusterE2E{clusters: map[string]*clusterState{"A": {Name: "R2", API: e.api["R2"]}, "B": {Name: "R1", API: e.api["R1"]}}}}
	// A namespace R1 pruned a moment ago may still be terminating there.
	for i := 0; i < 600 && e.api["R1"].Get(t, paths[0]) != nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	p := a.startPoller(paths)
	start := time.Now()
	r := e.apply(t)
	samples := p.finish()
	if r.ExitCode != 0 {
		t.Fatalf("the move back:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyApplied, "R2": v1alpha1.ApplyApplied, "R3": v1alpha1.ApplyUnchanged})
	checkHandoff(t, samples, paths, [2]bool{true, false}, [2]bool{false, true})
	var created, deleted time.Time
	if ev := namespaceWrite(e.writes(t, "R1", start), "create", "roll-moving"); ev != nil {
		created = ev.Stage
	}
	if ev := namespaceWrite(e.writes(t, "R2", start), "delete", "roll-moving"); ev != nil {
		deleted = ev.Received
	}
	if created.IsZero() || deleted.IsZero() || deleted.Sub(created) < 10*time.Second {
		t.Errorf("R1 created roll-moving at %s, R2 deleted it at %s: want the delete in wave rest, after the 10s bake", created, deleted)
	}
}

// killedThenRerun: a waved rollout killed (-9) at random moments, then
// one rerun: exit 0, every cluster holds the new value, OUT_DIR records
// it, and kpt live apply finds nothing to do.
func (e *rolloutE2E) killedThenRerun(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 28))
	for round := 1; round <= 3; round++ {
		value := fmt.Sprintf("kill-%d", round)
		e.write(t, rolloutVersion{value: value})
		cmd, _, stdout := e.applyAsync(t)
		delay := time.Duration(rng.Int64N(int64(15 * time.Second)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		stdout.Close()
		// The killed run's locks stay held for their lease duration: it is
		// gone, so break them (fleet_lock_test.go proves both ways).
		forceUnlock(t, e.bin, e.out, e.kubeconfig, e.names...)
		r := e.apply(t)
		t.Logf("round %d: killed after %s; the rerun: exit %d", round, delay.Round(time.Millisecond), r.ExitCode)
		if r.ExitCode != 0 {
			t.Fatalf("round %d: the rerun:\n%s", round, r.result)
		}
		e.requireValues(t, map[string]string{"R1": value, "R2": value, "R3": value})
	}
	e.kptChangesNothing(t)
}

// kptChangesNothing: a real kpt live apply per context prunes nothing and
// changes no resourceVersion.
func (e *rolloutE2E) kptChangesNothing(t *testing.T) {
	t.Helper()
	before := e.allVersions(t)
	ce := &clusterE2E{kpt: e.kpt, kubeconfig: e.kubeconfig, out: e.out}
	for _, name := range e.names {
		ce.apply(t, name).requireClean(t, name)
	}
	if after := e.allVersions(t); !maps.EqualFunc(before, after, maps.Equal) {
		t.Errorf("kpt live apply changed resourceVersions: %v -> %v", before, after)
	}
}

// rollbackDown: onFailure Rollback with R3's kube-apiserver down: R1 and
// R2 get v5, R3 fails, wave rest halts, and R2 then R1 get v4 back (the
// clusters' data and OUT_DIR): both waves RolledBack, R3 Failed, exit 1.
func (e *rolloutE2E) rollbackDown(t *testing.T) {
	e.write(t, rolloutVersion{value: "v5", onFailure: "Rollback"})
	e.api["R3"].proc.stop()
	defer func() {
		e.api["R3"].start(t, "")
		e.api["R3"].waitReady(t)
	}()
	r := e.apply(t, "--reconcile-timeout", "20s")
	if r.ExitCode != 1 {
		t.Fatalf("a rollout with R3 down: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyRolledBack, "R2": v1alpha1.ApplyRolledBack, "R3": v1alpha1.ApplyFailed})
	// Both waves are rolled back; their errors name the wave that halted.
	requireWaves(t, r, v1alpha1.WaveRolledBack, v1alpha1.WaveRolledBack)
	for _, w := range r.report.Waves {
		if !strings.HasPrefix(w.Error, "rolled back: wave rest halted the rollout: ") || !strings.Contains(w.Error, "R3") {
			t.Errorf("wave %s: %q does not say that wave rest halted the rollout, and why (R3)", w.Name, w.Error)
		}
	}
	e.requireValues(t, map[string]string{"R1": "v4", "R2": "v4"})
	if !strings.Contains(r.Stderr, "wave rest: rolling back") || !strings.Contains(r.Stderr, "wave canary: rolling back") ||
		strings.Index(r.Stderr, "wave rest: rolling back") > strings.Index(r.Stderr, "wave canary: rolling back") {
		t.Errorf("the rollback did not go newest wave first:\n%s", r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(e.out, ".shard-router-rollout")); err == nil {
		t.Error("a finished rollback left the rollout's record in OUT_DIR")
	}
}

// rollbackAfterKill: a rollout killed (-9) in wave rest, while R3 waits
// for a Deployment that never becomes ready, then apply --rollback: every
// context it changed holds v4 again.
func (e *rolloutE2E) rollbackAfterKill(t *testing.T) {
	e.write(t, rolloutVersion{value: "v6", stuck: "roll-r3"})
	cmd, progress, stdout := e.applyAsync(t)
	waitFor(t, cmd, progress, "R3: waiting for the objects to be Current")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	stdout.Close()
	forceUnlock(t, e.bin, e.out, e.kubeconfig, e.names...)
	if v := e.value(t, "R1", "roll-r1"); v != "v6" {
		t.Fatalf("the canary holds %q before the rollback, want v6", v)
	}
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.bin, "apply", "--rollback", "--out", e.out, "--kubeconfig", e.kubeconfig, "-o", "json", "--reconcile-timeout", "1m")
	if res.ExitCode != 0 {
		t.Fatalf("apply --rollback:\n%s", res)
	}
	var rep v1alpha1.ApplyReport
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	requireStatuses(t, applyRun{result: res, report: rep}, map[string]v1alpha1.ApplyStatus{"R1": v1alpha1.ApplyRolledBack})
	e.requireValues(t, map[string]string{"R1": "v4", "R2": "v4", "R3": "v4"})
	if res := runCmd(t, cmdSpec{}, e.bin, "apply", "--rollback", "--out", e.out, "--kubeconfig", e.kubeconfig); res.ExitCode == 0 || !strings.Contains(res.Stderr, "nothing to roll back") {
		t.Errorf("a second --rollback:\n%s", res)
	}
	e.kptChangesNothing(t)
}
