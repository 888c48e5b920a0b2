//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The apply scenarios (issue 21) run on TestCluster's two clusters, after
// its own scenarios, with a package of their own (testdata/apply: its own
// namespaces, CRD and inventories), so that they share no object with them.

func init() {
	for kind, plural := range map[string]string{"Gadget": "gadgets", "ServiceAccount": "serviceaccounts", "Role": "roles",
		"RoleBinding": "rolebindings", "PriorityClass": "priorityclasses"} {
		clusterResources[kind] = plural
	}
}

// applySteps are appended to TestCluster's scenarios.
func (e *clusterE2E) applySteps() []clusterStep {
	a := &applyE2E{e: e}
	return []clusterStep{
		{"ApplyPlacement", a.placement},
		{"ApplyAgainUnchanged", a.unchanged},
		{"ApplyDriftCorrected", a.driftCorrected},
		{"ApplyOneClusterDown", a.oneDown},
		{"ApplyMoveHandsOff", a.moveHandsOff},
		{"ApplyNeverReadyHoldsTheHandoff", a.neverReady},
		{"ApplyMassPruneRefusedAndDryRun", a.refusedAndDryRun},
		{"ApplyBadInput", a.badInput},
		{"ApplyKilled", a.killed},
		{"ApplyKilledDuringHandoff", a.killedHandoff},
	}
}

type clusterStep struct {
	name string
	run  func(*testing.T)
}

// runSteps runs the steps in order, each a subtest whose time is logged,
// and stops at the first that fails: the steps build on each other.
func runSteps(t *testing.T, steps []clusterStep) {
	t.Helper()
	for _, s := range steps {
		start := time.Now()
		ok := t.Run(s.name, s.run)
		t.Logf("%s: %s", s.name, time.Since(start).Round(time.Second))
		if !ok {
			return
		}
	}
}

type applyE2E struct {
	e        *clusterE2E
	pkg, out string
}

// applyRun is one `shard-router apply` and its JSON report.
type applyRun struct {
	result
	report v1alpha1.ApplyReport
}

func (a *applyE2E) apply(t testing.TB, args ...string) applyRun {
	t.Helper()
	args = append([]string{"apply", a.pkg, "--out", a.out, "--kubeconfig", a.e.kubeconfig, "-o", "json"}, args...)
	if !slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, "--reconcile-timeout") }) {
		args = append(args, "--reconcile-timeout", "2m")
	}
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, a.e.bin, args...)
	r := applyRun{result: res}
	if err := json.Unmarshal([]byte(res.Stdout), &r.report); err != nil && res.Stdout != "" {
		t.Fatalf("apply -o json printed no report: %v\n%s", err, res)
	}
	t.Logf("%s: exit %d", res.Cmd, res.ExitCode)
	return r
}

// mustApply runs apply, which must exit 0 with every context status want.
func (a *applyE2E) mustApply(t testing.TB, want v1alpha1.ApplyStatus, args ...string) applyRun {
	t.Helper()
	r := a.apply(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("apply failed:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": want, "B": want})
	return r
}

// requireStatuses fails for each named context whose report status is not
// the one wanted.
func requireStatuses(t testing.TB, r applyRun, want map[string]v1alpha1.ApplyStatus) {
	t.Helper()
	got := map[string]v1alpha1.ApplyStatus{}
	for _, c := range r.report.Contexts {
		got[c.Name] = c.Status
	}
	for name, st := range want {
		if got[name] != st {
			t.Errorf("context %s: status %q, want %q\n%s", name, got[name], st, r.result)
		}
	}
}

// placed is where the package's labels put each object: shard a's
// namespaces in A, shard b's in B, cluster-scoped objects in both.
func (a *applyE2E) placed(t testing.TB) map[string][]clusterItem {
	t.Helper()
	shard := map[string]string{}
	items := a.e.items(t, a.pkg)
	for _, it := range items {
		if it.Kind == "Namespace" {
			text := clusterReadFile(t, filepath.Join(a.pkg, it.File))
			switch {
			case strings.Contains(text, "name: "+it.Name+"\n  labels:\n    apply.e2e.shardrouter.dev/shard: a"):
				shard[it.Name] = "A"
			case strings.Contains(text, "name: "+it.Name+"\n  labels:\n    apply.e2e.shardrouter.dev/shard: b"):
				shard[it.Name] = "B"
			default:
				t.Fatalf("%s: no shard label", it)
			}
		}
	}
	out := map[string][]clusterItem{}
	for _, it := range items {
		if it.Namespace == "" && it.Kind != "Namespace" {
			out["A"], out["B"] = append(out["A"], it), append(out["B"], it)
			continue
		}
		ns := it.Namespace
		if it.Kind == "Namespace" {
			ns = it.Name
		}
		out[shard[ns]] = append(out[shard[ns]], it)
	}
	return out
}

// checkPlaced asserts that every object is in exactly the clusters the
// package's labels name, with the context annotation split wrote.
func (a *applyE2E) checkPlaced(t testing.TB) {
	t.Helper()
	placed := a.placed(t)
	for _, name := range a.e.names {
		for _, it := range a.e.items(t, a.pkg) {
			obj := a.e.clusters[name].API.Get(t, it.path(t))
			want := slices.ContainsFunc(placed[name], func(p clusterItem) bool { return p.String() == it.String() })
			switch {
			case want && obj == nil:
				t.Errorf("%s: missing in cluster %s", it, name)
			case !want && obj != nil && !terminating(obj):
				t.Errorf("%s: in cluster %s, where the package does not put it", it, name)
			case want && !strings.Contains(clusterAnnotation(obj, clusterContextAnnotation), name):
				t.Errorf("%s in cluster %s: annotated %q", it, name, clusterAnnotation(obj, clusterContextAnnotation))
			}
		}
	}
}

func terminating(obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	_, ok := meta["deletionTimestamp"]
	return ok
}

// versions are the resourceVersions of every object of the package, in
// every cluster.
func (a *applyE2E) versions(t testing.TB) map[string]string {
	t.Helper()
	return a.e.resourceVersions(t, a.e.items(t, a.pkg))
}

// kptChangesNothing runs the real kpt live apply on every OUT/<ctx>: it
// must apply every object successfully, prune nothing, and change no
// resourceVersion.
func (a *applyE2E) kptChangesNothing(t *testing.T) {
	t.Helper()
	before := a.versions(t)
	for _, ctx := range a.e.names {
		// split's record of the etcd overrides is in the package as local
		// config: kpt must skip it (an EtcdOverrides would fail: no such kind).
		if _, err := os.Stat(filepath.Join(a.out, ctx, v1alpha1.EtcdOverridesFile)); err != nil {
			t.Fatalf("%s: %v", ctx, err)
		}
		res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, a.e.kpt, "live", "apply", filepath.Join(a.out, ctx),
			"--context", ctx, "--kubeconfig", a.e.kubeconfig, "--reconcile-timeout", "2m")
		if res.ExitCode != 0 {
			t.Fatalf("kpt live apply --context %s:\n%s", ctx, res)
		}
		s := clusterParseApply(t, res.Stdout)
		s.Output = res.Stdout
		s.requireClean(t, ctx)
	}
	clusterSameVersions(t, before, a.versions(t))
}

// placement: apply the package (per-shard namespaces, a CRD with custom
// objects, broadcast cluster-scoped objects) to both clusters; every
// object is where its labels say, and the real kpt then changes nothing.
func (a *applyE2E) placement(t *testing.T) {
	a.pkg, a.out = filepath.Join(filepath.Dir(a.e.pkg), "apply-pkg"), filepath.Join(filepath.Dir(a.e.pkg), "apply-out")
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "apply"), a.pkg)
	if err := os.MkdirAll(a.out, 0o755); err != nil { // a first apply: OUT_DIR exists, empty
		t.Fatal(err)
	}
	// TestCluster's kpt runs installed kpt's ResourceGroup CRD; remove it
	// from B (its inventories are no longer used), so that apply must
	// install it as kpt does.
	apiB := a.e.clusters["B"].API
	const rgCRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/resourcegroups.kpt.dev"
	if code, body, err := apiB.do("DELETE", rgCRD, "", nil); err != nil || (code != 200 && code != 404) {
		t.Fatalf("deleting the ResourceGroup CRD from B: %d %v %s", code, err, body)
	}
	clusterWait(t, apiB.proc, "ResourceGroup CRD deleted", func() error {
		if apiB.Get(t, rgCRD) != nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	marks := a.auditMarks(t)
	r := a.mustApply(t, v1alpha1.ApplyApplied)
	// The package creates its Namespaces: the preflight judges what goes
	// in them by RBAC, and sends no dry run that could only answer that
	// its Namespace is not found.
	for _, name := range a.e.names {
		for _, e := range a.e.clusters[name].API.requestsSince(t, marks[name]) {
			if strings.Contains(e.RequestURI, "dryRun=All") && e.ResponseStatus.Code == http.StatusNotFound {
				t.Errorf("%s: a dry run of an object in a Namespace the apply creates: %s", name, e)
			}
		}
	}
	placed := a.placed(t)
	for _, c := range r.report.Contexts {
		if c.Objects != len(placed[c.Name]) || c.Applied != c.Objects || c.Reconciled != c.Objects {
			t.Errorf("context %s: %d objects, %d applied, %d reconciled; the package puts %d there", c.Name, c.Objects, c.Applied, c.Reconciled, len(placed[c.Name]))
		}
	}
	clusterMentions(t, "apply's progress", r.Stderr, "A: applying", "B: applying", "waiting for the objects to be Current", "B: installing kpt's ResourceGroup CRD")
	a.checkPlaced(t)
	a.kptChangesNothing(t)
}

// unchanged: a second apply sends no write request to any cluster (not
// even kpt's inventory update), changes no resourceVersion and says
// Unchanged.
func (a *applyE2E) unchanged(t *testing.T) {
	before, outBefore, marks := a.versions(t), snapshot(t, a.out), a.auditMarks(t)
	a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "a second apply with no change", a.writesSince(t, marks), a.e.names...)
	clusterSameVersions(t, before, a.versions(t))
	clusterSameFiles(t, "an unchanged apply", outBefore, snapshot(t, a.out))
}

// setValue changes the value of a ConfigMap of the package.
func (a *applyE2E) setValue(t testing.TB, file, name, value string) {
	t.Helper()
	p := filepath.Join(a.pkg, file)
	text := clusterReadFile(t, p)
	i := strings.Index(text, "name: "+name+"\n")
	if i < 0 {
		t.Fatalf("%s: no %s", file, name)
	}
	j := strings.Index(text[i:], "value: ")
	end := strings.Index(text[i+j:], "\n")
	writeFile(t, p, text[:i+j]+"value: \""+value+"\""+text[i+j+end:])
}

func (a *applyE2E) liveValue(t testing.TB, ctx, ns, name string) string {
	t.Helper()
	obj := a.e.clusters[ctx].API.Get(t, "/api/v1/namespaces/"+ns+"/configmaps/"+name)
	if obj == nil {
		return ""
	}
	data, _ := obj["data"].(map[string]any)
	v, _ := data["value"].(string)
	return v
}

// oneDown: with B's apiserver stopped, a change for both applies to A,
// fails B (named in the report), leaves OUT/B as it was and exits 1; once
// B is back, apply converges.
func (a *applyE2E) oneDown(t *testing.T) {
	a.setValue(t, "apply-a1.yaml", "settings-1", "down-1")
	a.setValue(t, "apply-b1.yaml", "settings-1", "down-1")
	outB := snapshot(t, filepath.Join(a.out, "B"))
	apiB := a.e.clusters["B"].API
	apiB.proc.stop()
	r := a.apply(t)
	apiB.start(t, "")
	apiB.waitReady(t)
	if r.ExitCode != 1 {
		t.Errorf("apply with B down: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyFailed})
	for _, c := range r.report.Contexts {
		if c.Name == "B" && !strings.Contains(c.Error, `context "B"`) {
			t.Errorf("B's error does not name it: %q", c.Error)
		}
	}
	clusterSameFiles(t, "OUT/B of a failed apply", outB, snapshot(t, filepath.Join(a.out, "B")))
	if got := a.liveValue(t, "A", "apply-a1", "settings-1"); got != "down-1" {
		t.Errorf("A was not applied: settings-1 = %q", got)
	}
	if !strings.Contains(clusterReadFile(t, filepath.Join(a.out, "A", "apply-a1.yaml")), "down-1") {
		t.Error("OUT/A does not hold what A received")
	}

	r = a.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("apply once B is back:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyUnchanged, "B": v1alpha1.ApplyApplied})
	if got := a.liveValue(t, "B", "apply-b1", "settings-1"); got != "down-1" {
		t.Errorf("B did not converge: settings-1 = %q", got)
	}
	a.checkPlaced(t)
}

// movingPaths are the API paths of namespace ns and its objects.
func movingPaths(ns string, configMaps int) []string {
	paths := []string{"/api/v1/namespaces/" + ns, "/api/v1/namespaces/" + ns + "/serviceaccounts/worker",
		"/apis/apply.e2e.shardrouter.dev/v1/namespaces/" + ns + "/gadgets/gadget-1"}
	for i := 1; i <= configMaps; i++ {
		paths = append(paths, fmt.Sprintf("/api/v1/namespaces/%s/configmaps/settings-%d", ns, i))
	}
	return paths
}

// sample is one poll of both clusters: which moving objects each holds.
type sample struct {
	at   time.Time
	in   map[string][2]bool // path -> held by A, by B
	errs []string
}

// poller samples both clusters every 50 ms until stopped.
type poller struct {
	stop    chan struct{}
	done    sync.WaitGroup
	samples []sample
}

func (a *applyE2E) startPoller(paths []string) *poller {
	p := &poller{stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s := sample{at: time.Now(), in: map[string][2]bool{}}
			for _, path := range paths {
				var held [2]bool
				for i, name := range []string{"A", "B"} {
					code, body, err := a.e.clusters[name].API.do("GET", path, "", nil)
					switch {
					case err != nil || (code != 200 && code != 404):
						s.errs = append(s.errs, fmt.Sprintf("%s GET %s: %d %v %s", name, path, code, err, body))
					case code == 200:
						held[i] = !strings.Contains(string(body), `"deletionTimestamp"`)
					}
				}
				s.in[path] = held
			}
			p.samples = append(p.samples, s)
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *poller) finish() []sample {
	close(p.stop)
	p.done.Wait()
	return p.samples
}

// checkHandoff asserts that at every sample every moving object is in at
// least one cluster, and that A's copy is gone (or terminating) only after
// B's exists; the first and the last samples must be wantFirst and
// wantFinal (held by A, by B).
func checkHandoff(t *testing.T, samples []sample, paths []string, wantFirst, wantFinal [2]bool) {
	t.Helper()
	if len(samples) < 10 {
		t.Fatalf("only %d samples", len(samples))
	}
	for _, s := range samples {
		for _, e := range s.errs {
			t.Errorf("sample at %s: %s", s.at.Format(time.StampMilli), e)
		}
	}
	for _, path := range paths {
		firstInB, goneFromA := -1, -1
		for i, s := range samples {
			held := s.in[path]
			if !held[0] && !held[1] {
				t.Errorf("%s: in neither cluster at %s (sample %d of %d)", path, s.at.Format(time.StampMilli), i, len(samples))
			}
			if held[1] && firstInB < 0 {
				firstInB = i
			}
			if !held[0] && goneFromA < 0 {
				goneFromA = i
			}
		}
		if goneFromA >= 0 && (firstInB < 0 || goneFromA < firstInB) {
			t.Errorf("%s: gone from A at sample %d, in B from sample %d", path, goneFromA, firstInB)
		}
		if first := samples[0].in[path]; first != wantFirst {
			t.Errorf("%s: at the start held by A, B = %v, want %v", path, first, wantFirst)
		}
		if last := samples[len(samples)-1].in[path]; last != wantFinal {
			t.Errorf("%s: at the end held by A, B = %v, want %v", path, last, wantFinal)
		}
	}
}

// relabel moves namespace ns to shard.
func (a *applyE2E) relabel(t testing.TB, ns, shard string) {
	t.Helper()
	p := filepath.Join(a.pkg, ns+".yaml")
	text := clusterReadFile(t, p)
	for _, from := range []string{"a", "b"} {
		text = strings.Replace(text, "apply.e2e.shardrouter.dev/shard: "+from+"\n", "apply.e2e.shardrouter.dev/shard: "+shard+"\n", 1)
	}
	writeFile(t, p, text)
}

func (a *applyE2E) setAllowMoves(t testing.TB, allow bool) {
	t.Helper()
	p := filepath.Join(a.pkg, "shards.yaml")
	text := strings.Replace(clusterReadFile(t, p), "  allowMoves: true\n", "", 1)
	if allow {
		text += "  allowMoves: true\n"
	}
	writeFile(t, p, text)
}

// moveHandsOff: namespace apply-a2 moves from A to B (allowMoves) while a
// poller samples both APIs: every moving object is in at least one
// cluster at every sample, and A's copy goes only after B's exists.
func (a *applyE2E) moveHandsOff(t *testing.T) {
	a.relabel(t, "apply-a2", "b")
	if r := a.apply(t); r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "allowMoves") {
		t.Fatalf("a move without allowMoves was not refused:\n%s", r.result)
	}
	a.setAllowMoves(t, true)
	paths := movingPaths("apply-a2", 2)
	p := a.startPoller(paths)
	r := a.apply(t)
	samples := p.finish()
	if r.ExitCode != 0 {
		t.Fatalf("the move:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyApplied})
	if len(r.report.Handoffs) != len(paths) || len(r.report.HeldInBoth) != 0 {
		t.Errorf("%d handoffs, %d held in both; want %d and 0\n%s", len(r.report.Handoffs), len(r.report.HeldInBoth), len(paths), r.Stdout)
	}
	checkHandoff(t, samples, paths, [2]bool{true, false}, [2]bool{false, true})
	t.Logf("%d samples over %s", len(samples), samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Millisecond))
	// Each count means one thing (issue 36): A, applied twice (with its
	// kept copies, then without them), counts each object of its package
	// once, and the objects it pruned as pruned only.
	for _, c := range r.report.Contexts {
		if c.Applied > c.Objects || c.Reconciled > c.Objects {
			t.Errorf("context %s: objects %d, applied %d, reconciled %d: more applied or reconciled than its package holds", c.Name, c.Objects, c.Applied, c.Reconciled)
		}
		if c.Name == "A" && (c.Applied != c.Objects || c.Reconciled != c.Objects || c.Pruned != len(paths) || len(c.PrunedObjects) != len(paths)) {
			t.Errorf("context A: objects %d, applied %d, reconciled %d, pruned %d; want %d applied and reconciled, %d pruned", c.Objects, c.Applied, c.Reconciled, c.Pruned, c.Objects, len(paths))
		}
	}
	// Progress says each step of a phase once: A applies twice, prunes once.
	if n, m := strings.Count(r.Stderr, "apply: A: waiting for the objects to be Current"), strings.Count(r.Stderr, "apply: A: pruning"); n != 2 || m != 1 {
		t.Errorf("A's progress: %d waiting lines and %d pruning lines, want 2 and 1:\n%s", n, m, r.Stderr)
	}
	// ...and says one thing (issue 40): the objects its first phase
	// applies, its package's and the copies it keeps, are the ones the
	// next line counts as applied.
	first := regexp.MustCompile(`A: applying (\d+) object\(s\): the (\d+) of its package and the (\d+) it hands off, kept until their new copies are Current`).FindStringSubmatch(r.Stderr)
	if first == nil || first[3] != fmt.Sprint(len(paths)) || !strings.Contains(r.Stderr, fmt.Sprintf("A: waiting for the objects to be Current (at most 2m0s): %s of %s object(s) applied", first[1], first[1])) {
		t.Errorf("A's first phase: %q; want it to count what the next line says it applied, %d of them handed off:\n%s", first, len(paths), r.Stderr)
	}
	a.checkPlaced(t)
	a.kptChangesNothing(t)
}

// neverReady: a Deployment that can never become ready (no node runs its
// pods) in B, while namespace apply-a3 moves from A to B: B fails within
// the reconcile timeout, A keeps apply-a3 (held in both, named in the
// report), exit 1. Without the Deployment, a rerun finishes the handoff.
func (a *applyE2E) neverReady(t *testing.T) {
	deployment := filepath.Join(a.pkg, "never-ready.yaml")
	writeFile(t, deployment, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: never-ready
  namespace: apply-b2
spec:
  replicas: 1
  selector:
    matchLabels: {app: never-ready}
  template:
    metadata:
      labels: {app: never-ready}
    spec:
      containers:
      - name: app
        image: registry.invalid/never:1
`)
	a.relabel(t, "apply-a3", "b")
	paths := movingPaths("apply-a3", 2)
	p := a.startPoller(paths)
	start := time.Now()
	r := a.apply(t, "--reconcile-timeout", "15s")
	took := time.Since(start)
	samples := p.finish()
	t.Logf("apply with a never-ready Deployment took %s", took.Round(time.Second))
	// Not a timing assertion: the default timeout (5m) or kpt's (forever)
	// would not have ended by then.
	if took > 2*time.Minute {
		t.Errorf("apply with --reconcile-timeout 15s took %s", took)
	}
	if r.ExitCode != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplySkipped, "B": v1alpha1.ApplyFailed})
	clusterMentions(t, "the report", r.Stdout, "never-ready", "reconcile-timeout")
	clusterMentions(t, "the progress", r.Stderr, "B: still waiting for", "Deployment.apps apply-b2/never-ready (InProgress", "A: holding")
	if len(r.report.HeldInBoth) != len(paths) {
		t.Errorf("%d objects held in both, want %d\n%s", len(r.report.HeldInBoth), len(paths), r.Stdout)
	}
	checkHandoff(t, samples, paths, [2]bool{true, false}, [2]bool{true, true})

	if err := os.Remove(deployment); err != nil {
		t.Fatal(err)
	}
	p = a.startPoller(paths)
	r = a.apply(t)
	samples = p.finish()
	if r.ExitCode != 0 {
		t.Fatalf("the rerun:\n%s", r.result)
	}
	checkHandoff(t, samples, paths, [2]bool{true, true}, [2]bool{false, true})
	a.setAllowMoves(t, false)
	a.checkPlaced(t)
}

// refusedAndDryRun: a mass prune is refused before anything changes, also
// when only the cluster's inventory knows what would be pruned (OUT/B
// gone); --dry-run changes neither clusters nor files.
func (a *applyE2E) refusedAndDryRun(t *testing.T) {
	before, outBefore := a.versions(t), snapshot(t, a.out)
	saved := t.TempDir()
	var removed []string
	for _, f := range []string{"apply-b1.yaml", "apply-b2.yaml", "apply-a2.yaml", "apply-a3.yaml"} {
		removed = append(removed, f)
		if err := os.Rename(filepath.Join(a.pkg, f), filepath.Join(saved, f)); err != nil {
			t.Fatal(err)
		}
	}
	r := a.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("a mass prune: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout+r.Stderr, "mass-deletion guard", `"B"`)
	// Allowed, the mass deletion is one warning per context (issue 36):
	// the guard on OUT_DIR and the guard on the live inventory see one.
	r = a.apply(t, "--allow-mass-prune", "--dry-run")
	if r.ExitCode != 0 {
		t.Errorf("an allowed mass prune, dry run: exit %d\n%s", r.ExitCode, r.result)
	}
	for _, name := range []string{"A", "B"} {
		n := 0
		for _, w := range r.report.Warnings {
			if strings.Contains(w, "mass-deletion guard") && strings.Contains(w, fmt.Sprintf("context %q", name)) {
				n++
			}
		}
		if n > 1 || name == "B" && n != 1 {
			t.Errorf("%d mass-deletion warnings about %s, want at most one (B: one):\n%s", n, name, strings.Join(r.report.Warnings, "\n"))
		}
	}

	// OUT/B moved away: only B's live inventory says what it holds.
	if err := os.Rename(filepath.Join(a.out, "B"), filepath.Join(saved, "out-B")); err != nil {
		t.Fatal(err)
	}
	r = a.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("a mass prune of what only the inventory holds: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the refusal", r.Stdout, "mass-deletion guard", "ResourceGroup", `"B"`)
	if err := os.Rename(filepath.Join(saved, "out-B"), filepath.Join(a.out, "B")); err != nil {
		t.Fatal(err)
	}
	for _, f := range removed {
		if err := os.Rename(filepath.Join(saved, f), filepath.Join(a.pkg, f)); err != nil {
			t.Fatal(err)
		}
	}
	clusterSameVersions(t, before, a.versions(t))
	clusterSameFiles(t, "a refused apply", outBefore, snapshot(t, a.out))

	a.setValue(t, "apply-a1.yaml", "settings-2", "dry")
	a.setValue(t, "apply-b1.yaml", "settings-2", "dry")
	r = a.apply(t, "--dry-run")
	if r.ExitCode != 0 || !r.report.DryRun {
		t.Fatalf("--dry-run:\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyApplied})
	clusterSameVersions(t, before, a.versions(t))
	clusterSameFiles(t, "a dry run", outBefore, snapshot(t, a.out))
	a.mustApply(t, v1alpha1.ApplyApplied)
}

// badInput: a context missing from the kubeconfig, an unreadable
// kubeconfig, an object the apiserver rejects and a depends-on into the
// other context are errors naming the context and the object.
func (a *applyE2E) badInput(t *testing.T) {
	before, outBefore := a.versions(t), snapshot(t, a.out)
	onlyA := filepath.Join(t.TempDir(), "kubeconfig")
	clusterWriteKubeconfig(t, onlyA, a.e.clusters["A"].API.creds.Token, a.e.clusters["A"].API)
	res := runCmd(t, cmdSpec{}, a.e.bin, "apply", a.pkg, "--out", a.out, "--kubeconfig", onlyA)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, `"B"`) || !strings.Contains(res.Stderr, onlyA) {
		t.Errorf("a kubeconfig without B:\n%s", res)
	}
	res = runCmd(t, cmdSpec{}, a.e.bin, "apply", a.pkg, "--out", a.out, "--kubeconfig", filepath.Join(t.TempDir(), "absent"))
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "absent") {
		t.Errorf("an absent kubeconfig:\n%s", res)
	}
	clusterSameVersions(t, before, a.versions(t))
	clusterSameFiles(t, "apply with a bad kubeconfig", outBefore, snapshot(t, a.out))

	dependsOn := filepath.Join(a.pkg, "depends.yaml")
	writeFile(t, dependsOn, `apiVersion: v1
kind: ConfigMap
metadata:
  name: needs-b
  namespace: apply-a1
  annotations:
    config.kubernetes.io/depends-on: /namespaces/apply-b1/ConfigMap/settings-1
`)
	r := a.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("a depends-on into B: exit %d\n%s", r.ExitCode, r.result)
	}
	clusterMentions(t, "the depends-on refusal", r.Stdout, `context \"A\"`, "needs-b", "settings-1", "depends-on")
	clusterSameVersions(t, before, a.versions(t))

	writeFile(t, dependsOn, `apiVersion: v1
kind: ConfigMap
metadata:
  name: rejected
  namespace: apply-a1
data:
  "not a valid key!": x
`)
	// The apiserver's validation rejects it in the preflight's dry run:
	// the run is refused before any write, in either cluster.
	r = a.apply(t)
	if r.ExitCode != 1 {
		t.Errorf("a rejected object: exit %d\n%s", r.ExitCode, r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplySkipped, "B": v1alpha1.ApplySkipped})
	clusterMentions(t, "the rejection", r.Stdout, `context \"A\": create ConfigMap apply-a1/rejected refused`, "not a valid key!")
	clusterSameVersions(t, before, a.versions(t))
	if err := os.Remove(dependsOn); err != nil {
		t.Fatal(err)
	}
	a.mustApply(t, v1alpha1.ApplyUnchanged)
}

// killedBetweenLockAndRecord: r was refused only because a context's
// cluster holds the lock record of the killed run pid, one serial past
// OUT's, still applying: that run died between its lock's write and
// OUT's record of it.
func killedBetweenLockAndRecord(r applyRun, pid int) bool {
	if len(r.report.Errors) == 0 {
		return false
	}
	for _, e := range r.report.Errors {
		m := staleByKilled.FindStringSubmatch(e)
		if m == nil || m[3] != strconv.Itoa(pid) {
			return false
		}
		cluster, _ := strconv.Atoi(m[1])
		out, _ := strconv.Atoi(m[2])
		if cluster != out+1 {
			return false
		}
	}
	return true
}

var staleByKilled = regexp.MustCompile(`OUT_DIR is stale: another run wrote the cluster since OUT_DIR recorded it \(cluster serial (\d+), OUT_DIR serial (\d+); last written by \S+ pid (\d+) at \S+, applying\)`)

// killed: apply killed with SIGKILL at random moments, then rerun: every
// OUT/<ctx> is always a whole package (the old or the new one), and the
// rerun converges.
func (a *applyE2E) killed(t *testing.T) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 21))
	// Kill within what one apply of a change takes, so that every phase
	// (plan, staging, applying, committing) gets its chances.
	a.setValue(t, "apply-a1.yaml", "settings-3", "kill-0")
	a.setValue(t, "apply-b1.yaml", "settings-3", "kill-0")
	start := time.Now()
	a.mustApply(t, v1alpha1.ApplyApplied)
	span := time.Since(start)
	for round := 1; round <= 6; round++ {
		value := fmt.Sprintf("kill-%d", round)
		a.setValue(t, "apply-a1.yaml", "settings-3", value)
		a.setValue(t, "apply-b1.yaml", "settings-3", value)
		old := map[string]map[string]string{}
		for _, ctx := range a.e.names {
			old[ctx] = snapshot(t, filepath.Join(a.out, ctx))
		}
		cmd := exec.Command(a.e.bin, "apply", a.pkg, "--out", a.out, "--kubeconfig", a.e.kubeconfig)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(span)))
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		// A killed run's locks stay held for their lease duration; it is
		// gone, so break them (fleet_lock_test.go proves both ways).
		forceUnlock(t, a.e.bin, a.out, a.e.kubeconfig, a.e.names...)
		if res := runCmd(t, cmdSpec{}, a.e.bin, "plan", a.pkg, "--previous", a.out); res.ExitCode != 0 {
			t.Errorf("round %d (killed after %s): OUT does not read back:\n%s", round, delay, res)
		}
		for _, ctx := range a.e.names {
			now := snapshot(t, filepath.Join(a.out, ctx))
			applied := strings.Contains(now["apply-"+strings.ToLower(ctx)+"1.yaml"], value)
			if !applied {
				clusterSameFiles(t, fmt.Sprintf("round %d: OUT/%s, not applied", round, ctx), old[ctx], now)
			}
			t.Logf("round %d, killed after %s of %s: OUT/%s holds the new package: %v", round, delay.Round(time.Millisecond), span.Round(time.Millisecond), ctx, applied)
		}
		r := a.apply(t)
		if r.ExitCode != 0 && killedBetweenLockAndRecord(r, cmd.Process.Pid) {
			// Killed after a lock reached its cluster and before OUT
			// recorded it: the rerun cannot tell that run from another
			// copy of OUT that went on to write, and refuses (the apply
			// guide says so). The killed run wrote nothing but its lock,
			// so the way out the refusal names converges.
			t.Logf("round %d: the rerun refused the killed run's lock as stale; again with --adopt-cluster-state", round)
			r = a.apply(t, "--adopt-cluster-state")
		}
		if r.ExitCode != 0 {
			t.Fatalf("round %d: the rerun:\n%s", round, r.result)
		}
		for _, ctx := range a.e.names {
			if got := a.liveValue(t, ctx, "apply-"+strings.ToLower(ctx)+"1", "settings-3"); got != value {
				t.Errorf("round %d: %s did not converge: %q", round, ctx, got)
			}
		}
	}
	// OUT is exactly what split writes, plus apply's record of the fleet
	// (issue 35), and kpt finds nothing to do.
	fresh := filepath.Join(t.TempDir(), "out")
	mustRun(t, cmdSpec{}, a.e.bin, "split", a.pkg, "-o", fresh)
	out := snapshot(t, a.out)
	delete(out, ".shard-router-fleet.json")
	clusterSameFiles(t, "OUT against a fresh split", snapshot(t, fresh), out)
	a.checkPlaced(t)
	a.kptChangesNothing(t)
}
