//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The annotations shard-router writes, and cli-utils' prune guard.
const (
	clusterContextAnnotation   = "shardrouter.dev/context"
	clusterDataStoreAnnotation = "shardrouter.dev/datastore"
	clusterOnRemoveAnnotation  = "cli-utils.sigs.k8s.io/on-remove"
	// clusterMovedNamespace is relabelled from shard a (context A) to
	// shard b (context B) by the move scenario.
	clusterMovedNamespace = "bravo"
)

// clusterE2E is the state the scenarios of TestCluster share.
type clusterE2E struct {
	kpt, bin   string
	kubeconfig string
	// pkg is the rendered package, out the split output (OUT/A, OUT/B).
	pkg, out string
	clusters map[string]*clusterState
	names    []string // context names in config order
}

// TestCluster proves on two real clusters that what shard-router decides is
// what the clusters hold (issues 5 and 9). A: a main etcd plus an etcd for
// Events and Leases, named by `shard-router overrides --context A`; B: one
// etcd. The scenarios run in order on the same clusters.
func TestCluster(t *testing.T) {
	start := time.Now()
	e := &clusterE2E{kpt: toolPath(t, "kpt"), bin: shardRouter(t), names: []string{"A", "B"}}
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		toolPath(t, tool)
	}
	dir := t.TempDir()
	creds := clusterNewCreds(t, dir)

	aMain, aEvents, bMain := clusterStartEtcd(t, dir, "etcd-a-main"), clusterStartEtcd(t, dir, "etcd-a-events"), clusterStartEtcd(t, dir, "etcd-b-main")
	for _, s := range []*clusterEtcd{aMain, aEvents, bMain} {
		s.waitReady(t)
	}

	e.pkg = filepath.Join(dir, "pkg")
	e.out = filepath.Join(dir, "out")
	copyTree(t, filepath.Join(repoRoot(t), "test", "e2e", "testdata", "cluster"), e.pkg)
	cfg := clusterReadFile(t, filepath.Join(e.pkg, "shards.yaml"))
	writeFile(t, filepath.Join(e.pkg, "shards.yaml"), strings.ReplaceAll(cfg, "EVENTS_ETCD_URL", aEvents.ClientURL))

	flagA := e.overrides(t, "A")
	if want := "/events#" + aEvents.ClientURL + ",coordination.k8s.io/leases#" + aEvents.ClientURL; flagA != want {
		t.Fatalf("overrides --context A = %q, want %q", flagA, want)
	}
	if flagB := e.overrides(t, "B"); flagB != "" {
		t.Fatalf("overrides --context B = %q, want none", flagB)
	}

	apiA := clusterStartAPIServer(t, dir, "A", creds, aMain, flagA)
	apiB := clusterStartAPIServer(t, dir, "B", creds, bMain, "")
	apiA.waitReady(t)
	apiB.waitReady(t)
	clusterStartControllerManager(t, apiA, creds)
	clusterStartControllerManager(t, apiB, creds)
	e.kubeconfig = filepath.Join(dir, "kubeconfig")
	clusterWriteKubeconfig(t, e.kubeconfig, creds.Token, apiA, apiB)
	e.clusters = map[string]*clusterState{
		"A": {Name: "A", Main: aMain, Events: aEvents, API: apiA},
		"B": {Name: "B", Main: bMain, API: apiB},
	}
	t.Logf("clusters ready after %s", time.Since(start).Round(time.Second))

	steps := []clusterStep{
		{"Placement", e.placement},
		{"ReapplyNoChange", e.reapply},
		{"MoveSafety", e.move},
		{"ReapplyAfterMove", e.reapply},
		{"PlanPredictsApply", e.planPredictsApply},
		{"PlanNamespaceRemoved", e.planNamespaceRemoved},
		{"PlanMassPruneRefused", e.planMassPruneRefused},
		{"PlanRefusedMoveComment", e.planRefusedMoveComment},
		{"StatusInSync", e.statusInSync},
		{"StatusDrift", e.statusDrift},
		{"StatusInventory", e.statusInventory},
		{"StatusUnreachable", e.statusUnreachable},
		{"DataStoreChange", e.dataStoreChange},
	}
	steps = append(steps, e.applySteps()...)
	runSteps(t, steps)
}

// placement is scenario 1: render with the function through kpt, split,
// apply each context, and check every object against its annotations in
// both clusters and, for Events and Leases, in the etcds.
func (e *clusterE2E) placement(t *testing.T) {
	if res := e.render(t, ""); res.ExitCode != 0 {
		t.Fatalf("render:\n%s", res)
	}
	if res := e.split(t); res.ExitCode != 0 {
		t.Fatalf("split:\n%s", res)
	}
	for _, ctx := range e.names {
		s := e.apply(t, ctx)
		s.requireClean(t, ctx)
	}
	items := e.items(t, e.pkg)
	seen := map[string]int{}
	for _, it := range items {
		ctxs := it.contexts(t)
		for _, c := range ctxs {
			seen[c]++
		}
		if len(ctxs) == len(e.names) && it.Namespace == "" {
			seen["broadcast"]++
		}
	}
	// The package must exercise what the scenario claims to prove.
	if seen["A"] < 20 || seen["B"] < 20 || seen["broadcast"] < 2 {
		t.Fatalf("the package routes too little to prove anything: %v", seen)
	}
	e.checkPlacement(t, items)
}

// checkPlacement asserts that every item exists in exactly the clusters
// its context annotation names, each copy annotated with that cluster and
// its datastore there, and that Events and Leases are in the etcd
// its datastore annotation names and in no other.
func (e *clusterE2E) checkPlacement(t *testing.T, items []clusterItem) {
	t.Helper()
	for _, it := range items {
		ctxs := it.contexts(t)
		for _, name := range e.names {
			c := e.clusters[name]
			obj := c.API.Get(t, it.path(t))
			want := slices.Contains(ctxs, name)
			switch {
			case want && obj == nil:
				t.Errorf("%s: missing in cluster %s (annotated %q)", it, name, it.Context)
				continue
			case !want && obj != nil:
				t.Errorf("%s: in cluster %s, annotated %q", it, name, it.Context)
				continue
			case !want:
				continue
			}
			// A cluster's copy names that cluster alone: what it holds never
			// depends on the other clusters.
			if got := clusterAnnotation(obj, clusterContextAnnotation); got != name {
				t.Errorf("%s in cluster %s: live %s = %q, want %q (the package says %q)", it, name, clusterContextAnnotation, got, name, it.Context)
			}
			if got, want := clusterAnnotation(obj, clusterDataStoreAnnotation), it.dataStore(t, name); got != want {
				t.Errorf("%s in cluster %s: live %s = %q, want %q", it, name, clusterDataStoreAnnotation, got, want)
			}
			key := it.etcdKey()
			if key == "" {
				continue
			}
			ds := it.dataStore(t, name)
			inMain := c.Main.Has(t, key)
			inEvents := c.Events != nil && c.Events.Has(t, key)
			switch ds {
			case "default":
				if !inMain || inEvents {
					t.Errorf("%s (datastore default) in cluster %s: %s in main etcd %v, in events etcd %v", it, name, key, inMain, inEvents)
				}
			case "events":
				if c.Events == nil || !inEvents || inMain {
					t.Errorf("%s (datastore events) in cluster %s: %s in main etcd %v, in events etcd %v", it, name, key, inMain, inEvents)
				}
			default:
				t.Errorf("%s: unexpected datastore %q in cluster %s", it, ds, name)
			}
		}
	}
}

// reapply is scenario 3: re-render and re-split change nothing, and
// applying both contexts again succeeds for every object without changing
// any resourceVersion.
func (e *clusterE2E) reapply(t *testing.T) {
	pkgBefore, outBefore := snapshot(t, e.pkg), snapshot(t, e.out)
	if res := e.render(t, ""); res.ExitCode != 0 {
		t.Fatalf("render:\n%s", res)
	}
	if res := e.split(t); res.ExitCode != 0 {
		t.Fatalf("split:\n%s", res)
	}
	clusterSameFiles(t, "re-render", pkgBefore, snapshot(t, e.pkg))
	clusterSameFiles(t, "re-split", outBefore, snapshot(t, e.out))
	items := e.items(t, e.pkg)
	e.waitSettled(t, items)
	before := e.resourceVersions(t, items)
	for _, ctx := range e.names {
		s := e.apply(t, ctx)
		s.requireClean(t, ctx)
		if s.Apply.Attempted != len(e.items(t, filepath.Join(e.out, ctx))) {
			t.Errorf("kpt live apply --context %s attempted %d objects, its package has %d", ctx, s.Apply.Attempted, len(e.items(t, filepath.Join(e.out, ctx))))
		}
	}
	clusterSameVersions(t, before, e.resourceVersions(t, items))
}

// move is scenario 2: a relabelled Namespace is refused by the function
// and by split, which leave the package, the split output and the clusters
// as they were; then the move procedure moves it without deleting it.
func (e *clusterE2E) move(t *testing.T) {
	items := e.items(t, e.pkg)
	e.waitSettled(t, items)
	versions := e.resourceVersions(t, items)
	oldA := e.items(t, filepath.Join(e.out, "A"))

	nsFile := filepath.Join(e.pkg, clusterMovedNamespace+".yaml")
	text := clusterReadFile(t, nsFile)
	relabelled := strings.Replace(text, "e2e.shardrouter.dev/shard: a", "e2e.shardrouter.dev/shard: b", 1)
	if relabelled == text {
		t.Fatalf("%s: no shard label a to relabel", nsFile)
	}
	writeFile(t, nsFile, relabelled)
	pkgBefore, outBefore := snapshot(t, e.pkg), snapshot(t, e.out)

	res := e.render(t, "")
	if res.ExitCode == 0 {
		t.Errorf("render of a relabelled namespace succeeded:\n%s", res)
	}
	clusterMentions(t, "render", res.Stdout+res.Stderr, "Namespace "+clusterMovedNamespace, `"A"`, `"B"`, "allowMoves")
	res = e.split(t)
	if res.ExitCode == 0 {
		t.Errorf("split of a relabelled namespace succeeded:\n%s", res)
	}
	clusterMentions(t, "split", res.Stdout+res.Stderr, clusterMovedNamespace, "allowMoves")
	clusterSameFiles(t, "refused render", pkgBefore, snapshot(t, e.pkg))
	clusterSameFiles(t, "refused split", outBefore, snapshot(t, e.out))
	clusterSameVersions(t, versions, e.resourceVersions(t, items))
	if t.Failed() {
		return
	}

	// The move procedure. 1: in the old cluster, tell cli-utils to keep
	// (abandon, not delete) every object of the namespace when the old
	// context's package stops listing it.
	keep := map[string]any{"metadata": map[string]any{"annotations": map[string]any{clusterOnRemoveAnnotation: "keep"}}}
	var moved []clusterItem
	uids := map[string]any{} // in cluster A: the same uid later means never deleted
	for _, it := range oldA {
		if it.Namespace == clusterMovedNamespace || (it.Kind == "Namespace" && it.Name == clusterMovedNamespace) {
			e.clusters["A"].API.MergePatch(t, it.path(t), keep)
			moved = append(moved, it)
			uids[it.String()] = clusterUID(e.clusters["A"].API.Get(t, it.path(t)))
		}
	}
	if len(moved) < 9 {
		t.Fatalf("only %d objects of namespace %s in OUT/A", len(moved), clusterMovedNamespace)
	}
	// 2: allow the move, render and split again.
	cfgPath := filepath.Join(e.pkg, "shards.yaml")
	writeFile(t, cfgPath, clusterReadFile(t, cfgPath)+"  allowMoves: true\n")
	if res := e.render(t, ""); res.ExitCode != 0 {
		t.Fatalf("render with allowMoves:\n%s", res)
	}
	if res := e.split(t); res.ExitCode != 0 {
		t.Fatalf("split with allowMoves:\n%s", res)
	}
	// 3: apply the new context first (creates), then the old one (prunes,
	// which the annotation turns into abandoning).
	e.apply(t, "B").requireClean(t, "B")
	sA := e.apply(t, "A")
	// cli-utils reports an abandoned object as a skipped prune, and skips
	// waiting for it.
	if sA.Apply.Successful != sA.Apply.Attempted || sA.Prune != (clusterApplyCounts{Attempted: len(moved), Skipped: len(moved)}) ||
		sA.Reconcile != (clusterApplyCounts{Attempted: sA.Apply.Attempted + len(moved), Successful: sA.Apply.Attempted, Skipped: len(moved)}) {
		t.Errorf("kpt live apply --context A after the move: %+v, want every apply successful and %d prunes skipped\n%s", sA, len(moved), sA.Output)
	}
	for _, it := range moved {
		for _, name := range e.names {
			obj := e.clusters[name].API.Get(t, it.path(t))
			if obj == nil {
				t.Errorf("%s: missing in cluster %s after the move", it, name)
				continue
			}
			if name == "A" && clusterAnnotation(obj, clusterOnRemoveAnnotation) != "keep" {
				t.Errorf("%s in cluster A lost its %s annotation", it, clusterOnRemoveAnnotation)
			}
			if name == "A" && clusterUID(obj) != uids[it.String()] {
				t.Errorf("%s in cluster A was re-created: uid %v, was %v", it, clusterUID(obj), uids[it.String()])
			}
		}
		// Still in A's events etcd; now also in B's main.
		if key := it.etcdKey(); key != "" {
			if !e.clusters["A"].Events.Has(t, key) || !e.clusters["B"].Main.Has(t, key) {
				t.Errorf("%s: %s not in both A's events etcd and B's main etcd after the move", it, key)
			}
		}
	}
	// 4: turn the guard back on: the annotations now name the new context,
	// so the next render (ReapplyAfterMove) must accept the package as is.
	writeFile(t, cfgPath, strings.Replace(clusterReadFile(t, cfgPath), "  allowMoves: true\n", "", 1))
	// Everything else is where the new annotations say.
	var rest []clusterItem
	for _, it := range e.items(t, e.pkg) {
		if it.Namespace != clusterMovedNamespace && !(it.Kind == "Namespace" && it.Name == clusterMovedNamespace) {
			rest = append(rest, it)
		} else if it.Context != "B" {
			t.Errorf("%s: annotated %q after the move, want B", it, it.Context)
		}
	}
	e.checkPlacement(t, rest)
}

// dataStoreChange is issue 9's scenario: moving Leases back to A's main
// etcd is refused by `overrides --previous` and by the function; rolling
// the flag out anyway makes cluster A's Leases vanish from its API while
// their data stays in the events etcd.
func (e *clusterE2E) dataStoreChange(t *testing.T) {
	a := e.clusters["A"]
	cfgPath := filepath.Join(e.pkg, "shards.yaml")
	old := clusterReadFile(t, cfgPath)
	const leases = "  - resource: coordination.k8s.io/leases\n    dataStore: events\n"
	if !strings.Contains(old, leases) {
		t.Fatalf("%s has no leases override to remove", cfgPath)
	}
	next := filepath.Join(filepath.Dir(e.pkg), "shards-next.yaml")
	writeFile(t, next, strings.Replace(old, leases, "", 1))

	// Before anything is rolled out: CI's check and the function refuse.
	res := runCmd(t, cmdSpec{}, e.bin, "overrides", "--config", next, "--previous", cfgPath)
	if res.ExitCode == 0 {
		t.Errorf("overrides --previous accepted moving Leases out of the events datastore:\n%s", res)
	}
	clusterMentions(t, "overrides --previous", res.Stdout+res.Stderr, `context "A"`, "coordination.k8s.io/leases", "refused")
	// plan shows the change of A's overrides and refuses it, as split does.
	res = runCmd(t, cmdSpec{}, e.bin, "plan", e.pkg, "--previous", e.out, "--config", next, "-o", "json")
	var doc v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || res.ExitCode != 1 {
		t.Errorf("plan with the leases override removed: exit %d, %v\n%s", res.ExitCode, err, res)
	}
	if len(doc.OverrideChanges) != 1 || doc.OverrideChanges[0].Context != "A" || doc.OverrideChanges[0].Resource != "coordination.k8s.io/leases" || doc.OverrideChanges[0].Allowed {
		t.Errorf("plan's override changes: %+v", doc.OverrideChanges)
	}
	pkgBefore := snapshot(t, e.pkg)
	res = e.render(t, next)
	if res.ExitCode == 0 {
		t.Errorf("render with the leases override removed succeeded:\n%s", res)
	}
	clusterMentions(t, "render", res.Stdout+res.Stderr, "Lease", "web-operator", "allowDataStoreChanges")
	clusterSameFiles(t, "refused render", pkgBefore, snapshot(t, e.pkg))

	// The danger: roll the new flag out anyway.
	var leaseItems []clusterItem
	for _, it := range e.items(t, e.pkg) {
		if it.Kind == "Lease" && slices.Contains(it.contexts(t), "A") {
			leaseItems = append(leaseItems, it)
			if a.API.Get(t, it.path(t)) == nil {
				t.Fatalf("%s: not in cluster A before the restart", it)
			}
		}
	}
	if len(leaseItems) == 0 {
		t.Fatal("no Lease in cluster A to lose")
	}
	flag := strings.TrimSpace(runCmd(t, cmdSpec{}, e.bin, "overrides", "--config", next, "--context", "A").Stdout)
	if want := "/events#" + a.Events.ClientURL; flag != want {
		t.Fatalf("overrides --config next --context A = %q, want %q", flag, want)
	}
	a.API.Restart(t, flag)
	// The cluster works; only its Leases are gone.
	for _, it := range e.items(t, e.pkg) {
		if it.Kind != "Lease" && slices.Contains(it.contexts(t), "A") && a.API.Get(t, it.path(t)) == nil {
			t.Errorf("%s: not served by cluster A after the restart", it)
		}
	}
	for _, it := range leaseItems {
		if a.API.Get(t, it.path(t)) != nil {
			t.Errorf("%s: still served by cluster A after its Leases moved to the main etcd", it)
		}
		if key := it.etcdKey(); !a.Events.Has(t, key) || a.Main.Has(t, key) {
			t.Errorf("%s: want %s in A's events etcd only (the data is not lost, only unreachable)", it, key)
		}
	}
}

// overrides prints `shard-router overrides --context ctx` for the package's config.
func (e *clusterE2E) overrides(t testing.TB, ctx string) string {
	t.Helper()
	res := mustRun(t, cmdSpec{}, e.bin, "overrides", "--config", filepath.Join(e.pkg, "shards.yaml"), "--context", ctx)
	return strings.TrimSpace(res.Stdout)
}

// render runs the function on the package through kpt fn eval --exec, with
// fnConfig (default: the package's shards.yaml).
func (e *clusterE2E) render(t testing.TB, fnConfig string) result {
	t.Helper()
	if fnConfig == "" {
		fnConfig = filepath.Join(e.pkg, "shards.yaml")
	}
	return runCmd(t, cmdSpec{}, e.kpt, "fn", "eval", e.pkg, "--exec", e.bin, "--fn-config", fnConfig)
}

func (e *clusterE2E) split(t testing.TB) result {
	t.Helper()
	return runCmd(t, cmdSpec{}, e.bin, "split", e.pkg, "-o", e.out)
}

// apply runs kpt live apply on OUT/<ctx> and parses its result lines.
// kpt waits for every object to reconcile (a Deployment's controller must
// observe it); the timeout only stops a hang.
func (e *clusterE2E) apply(t testing.TB, ctx string) clusterApplySummary {
	t.Helper()
	kptApply := func() result {
		return runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.kpt, "live", "apply", filepath.Join(e.out, ctx),
			"--context", ctx, "--kubeconfig", e.kubeconfig, "--install-resource-group", "--reconcile-timeout", "3m")
	}
	res := kptApply()
	if res.ExitCode == 3 && onlyNewCRDTimeouts(res.Stdout) {
		// cli-utils v0.37's status watcher (kpt's) stops the informer of a
		// kind whose first list is NotFound, which a CRD created in the same
		// apply can answer before it serves; it then waits for the next
		// event of that CRD, which may never come. Everything applied; only
		// kpt's wait hung. Once more, with the CRD served from the start.
		t.Logf("kpt live apply --context %s: only custom resources of a CRD applied in the same run timed out (cli-utils' watcher race); applying again:\n%s", ctx, res.Stdout)
		res = kptApply()
	}
	if res.ExitCode != 0 {
		t.Fatalf("kpt live apply --context %s:\n%s", ctx, res)
	}
	s := clusterParseApply(t, res.Stdout)
	s.Output = res.Stdout
	t.Logf("kpt live apply --context %s: %s", ctx, strings.Join(clusterApplyLine.FindAllString(res.Stdout, -1), "; "))
	return s
}

var (
	clusterTimeoutLine = regexp.MustCompile(`(?m)^(\S+) reconcile timeout$`)
	clusterCRDApplied  = regexp.MustCompile(`(?m)^customresourcedefinition\.apiextensions\.k8s\.io/[^.\s]+\.(\S+) apply successful$`)
)

// onlyNewCRDTimeouts reports a kpt live apply whose every object applied
// and whose only reconcile timeouts are custom resources of a group whose
// CRD the same run applied.
func onlyNewCRDTimeouts(out string) bool {
	applied := clusterApplyLine.FindStringSubmatch(out)
	if applied == nil || applied[1] != "apply" || applied[2] != applied[3] || strings.Contains(out, "apply failed") {
		return false
	}
	groups := map[string]bool{}
	for _, m := range clusterCRDApplied.FindAllStringSubmatch(out, -1) {
		groups[m[1]] = true
	}
	timeouts := clusterTimeoutLine.FindAllStringSubmatch(out, -1)
	for _, m := range timeouts {
		kind, _, _ := strings.Cut(m[1], "/")
		_, group, ok := strings.Cut(kind, ".")
		if !ok || !groups[group] {
			return false
		}
	}
	return len(timeouts) > 0
}

// clusterApplyCounts is one "<phase> result:" line of kpt live apply.
type clusterApplyCounts struct {
	Attempted, Successful, Skipped, Failed, Timeout int
}

type clusterApplySummary struct {
	Apply, Prune, Reconcile clusterApplyCounts
	Output                  string
}

var clusterApplyLine = regexp.MustCompile(`(?m)^(apply|prune|reconcile) result: (\d+) attempted, (\d+) successful, (\d+) skipped, (\d+) failed(?:, (\d+) timed out)?$`)

// clusterParseApply reads the result lines cli-utils' events printer
// writes, e.g. "apply result: 21 attempted, 21 successful, 0 skipped, 0
// failed". kpt exits 0 even when it skips objects, so they are the truth.
func clusterParseApply(t testing.TB, out string) clusterApplySummary {
	t.Helper()
	var s clusterApplySummary
	matches := clusterApplyLine.FindAllStringSubmatch(out, -1)
	if len(matches) == 0 {
		t.Fatalf("no result line in kpt live apply's output:\n%s", out)
	}
	for _, m := range matches {
		n := make([]int, 5)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+2])
		}
		c := clusterApplyCounts{n[0], n[1], n[2], n[3], n[4]}
		switch m[1] {
		case "apply":
			s.Apply = c
		case "prune":
			s.Prune = c
		case "reconcile":
			s.Reconcile = c
		}
	}
	return s
}

// requireClean fails unless every object applied and reconciled, and
// nothing was pruned, skipped or failed.
func (s clusterApplySummary) requireClean(t testing.TB, ctx string) {
	t.Helper()
	ok := s.Apply.Attempted > 0 && s.Apply.Successful == s.Apply.Attempted &&
		s.Reconcile.Successful == s.Reconcile.Attempted && s.Prune == (clusterApplyCounts{})
	if !ok {
		t.Fatalf("kpt live apply --context %s did not apply every object cleanly: %+v\n%s", ctx, s, s.Output)
	}
}

// clusterItem is one resource of a package.
type clusterItem struct {
	APIVersion, Kind, Namespace, Name string
	Context, DataStore                string
	File                              string
}

func (it clusterItem) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", it.Kind, it.Namespace, it.Name, it.File)
}

func (it clusterItem) contexts(t testing.TB) []string {
	t.Helper()
	if it.Context == "" {
		t.Fatalf("%s: no %s annotation", it, clusterContextAnnotation)
	}
	return strings.Split(it.Context, ",")
}

// dataStore returns the item's datastore in one context: the annotation is
// one name, or ctx=ds pairs.
func (it clusterItem) dataStore(t testing.TB, ctx string) string {
	t.Helper()
	if !strings.Contains(it.DataStore, "=") {
		return it.DataStore
	}
	for _, pair := range strings.Split(it.DataStore, ",") {
		if c, ds, _ := strings.Cut(pair, "="); c == ctx {
			return ds
		}
	}
	t.Fatalf("%s: %s %q names no datastore for %s", it, clusterDataStoreAnnotation, it.DataStore, ctx)
	return ""
}

// clusterResources are the plural names of the kinds the package holds.
var clusterResources = map[string]string{
	"Namespace": "namespaces", "Deployment": "deployments", "Service": "services", "ConfigMap": "configmaps",
	"Secret": "secrets", "Event": "events", "Lease": "leases", "Widget": "widgets",
	"CustomResourceDefinition": "customresourcedefinitions", "ClusterRole": "clusterroles",
}

// path is the object's URL path in the API.
func (it clusterItem) path(t testing.TB) string {
	t.Helper()
	plural, ok := clusterResources[it.Kind]
	if !ok {
		t.Fatalf("%s: kind not in clusterResources", it)
	}
	p := "/apis/" + it.APIVersion
	if !strings.Contains(it.APIVersion, "/") {
		p = "/api/" + it.APIVersion
	}
	if it.Namespace != "" {
		p += "/namespaces/" + it.Namespace
	}
	return p + "/" + plural + "/" + it.Name
}

// etcdKey is where kube-apiserver stores the object, for the kinds whose
// datastore the test checks (both Event API groups share /registry/events).
func (it clusterItem) etcdKey() string {
	switch it.Kind {
	case "Event":
		return "/registry/events/" + it.Namespace + "/" + it.Name
	case "Lease":
		return "/registry/leases/" + it.Namespace + "/" + it.Name
	}
	return ""
}

// items reads a package's resources, without local config and inventory.
func (e *clusterE2E) items(t testing.TB, dir string) []clusterItem {
	t.Helper()
	nodes, err := (&kio.LocalPackageReader{PackagePath: dir, MatchFilesGlob: []string{"*.yaml"}}).Read()
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	var out []clusterItem
	for _, n := range nodes {
		ann := n.GetAnnotations()
		if ann["config.kubernetes.io/local-config"] == "true" || n.GetKind() == "ResourceGroup" {
			continue
		}
		file, _, _ := kioutil.GetFileAnnotations(n)
		out = append(out, clusterItem{APIVersion: n.GetApiVersion(), Kind: n.GetKind(), Namespace: n.GetNamespace(),
			Name: n.GetName(), Context: ann[clusterContextAnnotation], DataStore: ann[clusterDataStoreAnnotation], File: file})
	}
	if len(out) == 0 {
		t.Fatalf("no resources in %s", dir)
	}
	return out
}

// resourceVersions maps "cluster item" to the live resourceVersion of every
// item in every cluster that holds it.
func (e *clusterE2E) resourceVersions(t testing.TB, items []clusterItem) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, it := range items {
		for _, name := range e.names {
			if obj := e.clusters[name].API.Get(t, it.path(t)); obj != nil {
				meta, _ := obj["metadata"].(map[string]any)
				out[name+" "+it.String()], _ = meta["resourceVersion"].(string)
			}
		}
	}
	return out
}

// waitSettled waits until the controllers are done with the Deployments:
// the deployment controller writes their status after kpt already saw them
// reconciled, which would change resourceVersions under the test.
func (e *clusterE2E) waitSettled(t testing.TB, items []clusterItem) {
	t.Helper()
	for _, it := range items {
		if it.Kind != "Deployment" {
			continue
		}
		for _, name := range it.contexts(t) {
			api := e.clusters[name].API
			clusterWait(t, api.proc, "settled "+it.String(), func() error {
				obj := api.Get(t, it.path(t))
				if obj == nil {
					return fmt.Errorf("%s: not found", it)
				}
				meta, _ := obj["metadata"].(map[string]any)
				status, _ := obj["status"].(map[string]any)
				if meta["generation"] != status["observedGeneration"] {
					return fmt.Errorf("generation %v, observed %v", meta["generation"], status["observedGeneration"])
				}
				conds, _ := status["conditions"].([]any)
				for _, c := range conds {
					m, _ := c.(map[string]any)
					if m["type"] == "Progressing" && m["reason"] == "NewReplicaSetAvailable" {
						return nil
					}
				}
				return fmt.Errorf("conditions %v", conds)
			})
		}
	}
}

func clusterUID(obj map[string]any) any {
	meta, _ := obj["metadata"].(map[string]any)
	return meta["uid"]
}

func clusterAnnotation(obj map[string]any, key string) string {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	v, _ := ann[key].(string)
	return v
}

func clusterReadFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func clusterSameFiles(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	if added, removed, modified := changedFiles(before, after); len(added)+len(removed)+len(modified) > 0 {
		t.Errorf("%s changed files: added %v, removed %v, modified %v", what, added, removed, modified)
	}
}

func clusterSameVersions(t testing.TB, before, after map[string]string) {
	t.Helper()
	if maps.Equal(before, after) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			t.Errorf("%s: resourceVersion %q -> %q", k, before[k], after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: appeared", k)
		}
	}
}

func clusterMentions(t testing.TB, what, out string, words ...string) {
	t.Helper()
	for _, w := range words {
		if !strings.Contains(out, w) {
			t.Errorf("%s output does not mention %q:\n%s", what, w, out)
		}
	}
}
