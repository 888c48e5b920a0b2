//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/localfleet"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/split"
)

// The dense fleet of TestDenseFleet: denseContexts contexts (or
// $DENSE_FLEET_CONTEXTS) on denseClusters clusters, two Namespaces of
// denseConfigMaps ConfigMaps per context.
const (
	denseContexts   = 64
	denseClusters   = 4
	denseConfigMaps = 3
)

// TestDenseFleet proves issue 36's dense fleet at the largest size the e2e
// time allows: 64 contexts on 4 kube-apiservers (startDenseFleet: context i
// on cluster i % 4, each with two Namespaces and an inventory of its own),
// 512 objects. Every context converges in one apply, with its objects in
// its own cluster only and its own ResourceGroup listing them; a no-change
// apply sends no write to an object (the clusters' audit logs); status reads
// every context, in sync; and a two-wave rollout with onFailure: Rollback
// whose second wave fails (a context's Deployment can never become Current:
// the clusters run no controller manager) halts and rolls every context it
// changed back, the failed one included, in the clusters and in OUT_DIR. Run it alone with
//
//	go test -tags e2e -count=1 -run '^TestDenseFleet$' ./test/e2e/
//
// (about 80 s on this project's 2-core machine, once shard-router is built).
func TestDenseFleet(t *testing.T) {
	n := denseContexts
	if v := os.Getenv("DENSE_FLEET_CONTEXTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < denseClusters {
			t.Fatalf("DENSE_FLEET_CONTEXTS=%q: want a count of at least %d", v, denseClusters)
		}
	}
	e := &denseE2E{bin: shardRouter(t), dir: t.TempDir()}
	e.fleet = startDenseFleet(t, e.dir, localfleet.Dense{Contexts: n, Clusters: denseClusters})
	e.p = localfleet.DensePackage{Name: "dense", Prefix: "dense", Dense: e.fleet.Dense,
		Namespaces: 2 * n, ConfigMaps: denseConfigMaps, Value: "v1"}
	e.pkg, e.out = filepath.Join(e.dir, "pkg"), filepath.Join(e.dir, "out")
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		t.Fatal(err)
	}
	runSteps(t, []clusterStep{
		{"EveryContextConverges", e.converges},
		{"NoChangeApplyWritesNothing", e.noChange},
		{"StatusReadsEveryContext", e.status},
		{"FailedWaveHaltsAndRollsBack", e.rollback},
	})
}

type denseE2E struct {
	bin, dir, pkg, out string
	fleet              *denseFleet
	p                  localfleet.DensePackage
}

// apply writes the package and runs shard-router apply -o json on it.
func (e *denseE2E) apply(t testing.TB, args ...string) applyRun {
	t.Helper()
	if err := e.p.Write(e.pkg); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"apply", e.pkg, "--out", e.out, "--kubeconfig", e.fleet.kubeconfig, "-o", "json"}, args...)
	res := runCmd(t, cmdSpec{Timeout: 10 * time.Minute}, e.bin, args...)
	r := applyRun{result: res}
	if err := json.Unmarshal([]byte(res.Stdout), &r.report); err != nil {
		t.Fatalf("apply -o json printed no report: %v\n%s", err, res)
	}
	t.Logf("apply of %d contexts: exit %d in %s", e.fleet.Contexts, res.ExitCode, res.Wall.Round(time.Millisecond))
	return r
}

// requireAll checks that every context has status want.
func (e *denseE2E) requireAll(t testing.TB, r applyRun, want v1alpha1.ApplyStatus) {
	t.Helper()
	statuses := map[string]v1alpha1.ApplyStatus{}
	for _, name := range e.fleet.ContextNames() {
		statuses[name] = want
	}
	requireStatuses(t, r, statuses)
	if len(r.report.Contexts) != e.fleet.Contexts {
		t.Errorf("the report has %d contexts, want %d", len(r.report.Contexts), e.fleet.Contexts)
	}
}

// value is ConfigMap settings-0's value in Namespace j, in the cluster of
// its context ("" when it does not exist).
func (e *denseE2E) value(t testing.TB, j int) string {
	t.Helper()
	ns := e.p.NamespaceName(j)
	obj := e.fleet.api(e.p.ContextOf(j)).Get(t, "/api/v1/namespaces/"+ns+"/configmaps/settings-0")
	if obj == nil {
		return ""
	}
	data, _ := obj["data"].(map[string]any)
	v, _ := data["value"].(string)
	return v
}

// converges: the first apply creates every object of every context, in
// its context's cluster and nowhere else, each context's ResourceGroup
// listing exactly its own objects, read by kpt's engine twice.
func (e *denseE2E) converges(t *testing.T) {
	before := e.fleet.requestCounts(t)
	r := e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the first apply of %d contexts:\n%s", e.fleet.Contexts, r.result)
	}
	counts, c := e.fleet.countsSince(t, before), len(e.fleet.apis)
	// Before the run writes, the contexts of a cluster find their
	// inventories and Leases missing with a list of each; kpt's engine
	// reads each inventory once (as it replaces it after the apply: of its
	// seven reads, those with no write between are one, and those before
	// its create answer what the run's read did), and sends no update that
	// would change nothing but its status.
	if got, want := counts["GET resourcegroups"], e.fleet.Contexts; got > want {
		t.Errorf("the first apply of %d contexts read ResourceGroups with %d GETs, want at most %d: kpt's engine's one per context, as it replaces", e.fleet.Contexts, got, want)
	}
	if counts["GET leases"] != 0 || counts["LIST leases"] != c || counts["PUT resourcegroups"] != 0 || counts["POST resourcegroups"] != e.fleet.Contexts {
		t.Errorf("the first apply of %d contexts on %d clusters: %d GETs and %d lists of Leases, %d creates and %d updates of ResourceGroups; want no GET, a list per cluster, a create per context and no update",
			e.fleet.Contexts, c, counts["GET leases"], counts["LIST leases"], counts["POST resourcegroups"], counts["PUT resourcegroups"])
	}
	// The preflight asks RBAC once per Namespace the run creates (for
	// the objects in it) and four times per cluster: for the inventories,
	// their create and the status update of every ResourceGroup of their
	// namespace (not one question naming each), and for kpt's CRD, which
	// the run installs, its create and update.
	if got, want := counts["POST selfsubjectaccessreviews"], e.p.Namespaces+4*c; got > want {
		t.Errorf("the first apply of %d contexts (%d Namespaces, %d clusters) sent %d access reviews, want at most %d", e.fleet.Contexts, e.p.Namespaces, c, got, want)
	}
	e.requireAll(t, r, v1alpha1.ApplyApplied)
	for j := range e.p.Namespaces {
		ns, ctx := e.p.NamespaceName(j), e.p.ContextOf(j)
		for c, a := range e.fleet.apis {
			got := a.Get(t, "/api/v1/namespaces/"+ns) != nil
			if want := c == e.fleet.ClusterOf(ctx); got != want {
				t.Errorf("Namespace %s (context %s) in %s: %v, want %v", ns, e.p.ContextName(ctx), a.Name, got, want)
			}
		}
		list := e.fleet.api(ctx).Get(t, "/api/v1/namespaces/"+ns+"/configmaps")
		items, _ := list["items"].([]any)
		settings := 0
		for _, it := range items {
			if name, _ := it.(map[string]any)["metadata"].(map[string]any)["name"].(string); strings.HasPrefix(name, "settings-") {
				settings++
			}
		}
		if settings != e.p.ConfigMaps {
			t.Errorf("Namespace %s holds %d settings ConfigMaps, want %d", ns, settings, e.p.ConfigMaps)
		}
	}
	perContext := e.p.Objects() / e.fleet.Contexts
	owner := map[string]string{} // Namespace -> its context
	for j := range e.p.Namespaces {
		owner[e.p.NamespaceName(j)] = e.p.ContextName(e.p.ContextOf(j))
	}
	for i, name := range e.fleet.ContextNames() {
		inv := split.InventoryFor(e.p.Name, v1alpha1.Context{Name: name})
		rg := e.fleet.api(i).Get(t, "/apis/kpt.dev/v1alpha1/namespaces/"+inv.Namespace+"/resourcegroups/"+inv.Name)
		if rg == nil {
			t.Errorf("context %s: no ResourceGroup %s/%s", name, inv.Namespace, inv.Name)
			continue
		}
		spec, _ := rg["spec"].(map[string]any)
		resources, _ := spec["resources"].([]any)
		if len(resources) != perContext {
			t.Errorf("context %s: its ResourceGroup lists %d objects, want %d", name, len(resources), perContext)
		}
		for _, res := range resources {
			ns, _ := res.(map[string]any)["namespace"].(string)
			if ns == "" {
				ns, _ = res.(map[string]any)["name"].(string) // a Namespace
			}
			if owner[ns] != name {
				t.Errorf("context %s: its ResourceGroup lists %v, of another context", name, res)
			}
		}
	}
}

// noChange: an apply with nothing to change sends no write to an object
// (the locks' Leases aside) in any of the clusters, and reads the
// contexts' inventories and Leases with a list per cluster (its contexts
// share its user entry and inventory namespace), not a GET per context.
func (e *denseE2E) noChange(t *testing.T) {
	marks := e.fleet.auditMarks(t)
	before := e.fleet.requestCounts(t)
	r := e.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("a no-change apply:\n%s", r.result)
	}
	if w := e.fleet.objectWritesSince(t, marks); len(w) > 0 {
		t.Errorf("a no-change apply of %d contexts sent %d write(s) to objects:\n%s", e.fleet.Contexts, len(w), describeWrites(w))
	}
	e.requireReadTogether(t, "a no-change apply", e.fleet.countsSince(t, before))
}

// requireReadTogether checks that a command read the ResourceGroups and
// the Leases of the contexts with one list each per cluster: no GET of a
// ResourceGroup, and at most one GET of a Lease per cluster (the
// kube-apiservers' own Leases, in kube-system, are read too).
func (e *denseE2E) requireReadTogether(t *testing.T, what string, reads map[string]int) {
	t.Helper()
	c := e.fleet.Clusters
	if reads["LIST resourcegroups"] != c || reads["GET resourcegroups"] != 0 || reads["LIST leases"] != c || reads["GET leases"] > c {
		t.Errorf("%s of %d contexts on %d clusters read ResourceGroups with %d LIST and %d GET, Leases with %d LIST and %d GET; want a list of each per cluster, no GET per context",
			what, e.fleet.Contexts, c, reads["LIST resourcegroups"], reads["GET resourcegroups"], reads["LIST leases"], reads["GET leases"])
	}
}

// status: status reads every context, every object Current and in sync.
func (e *denseE2E) status(t *testing.T) {
	before := e.fleet.requestCounts(t)
	res := runCmd(t, cmdSpec{Timeout: 5 * time.Minute}, e.bin, "status", e.out, "--kubeconfig", e.fleet.kubeconfig, "-o", "json", "--detailed-exitcode")
	if res.ExitCode != 0 {
		t.Fatalf("status of %d contexts:\n%s", e.fleet.Contexts, res)
	}
	t.Logf("status of %d contexts: %s", e.fleet.Contexts, res.Wall.Round(time.Millisecond))
	e.requireReadTogether(t, "status", e.fleet.countsSince(t, before))
	var doc v1alpha1.FleetStatus
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, res)
	}
	if len(doc.Contexts) != e.fleet.Contexts {
		t.Errorf("status reports %d contexts, want %d", len(doc.Contexts), e.fleet.Contexts)
	}
	perContext := e.p.Objects() / e.fleet.Contexts
	for _, c := range doc.Contexts {
		if !c.Reachable || c.Error != "" || !c.InSync() || len(c.Objects) != perContext {
			t.Errorf("context %s: reachable %v, error %q, in sync %v, %d objects (want %d)", c.Name, c.Reachable, c.Error, c.InSync(), len(c.Objects), perContext)
		}
	}
}

// rollback: a rollout in two waves (the canary, one context on each
// cluster, then the rest) with onFailure: Rollback changes one ConfigMap
// per context, and gives the last context a Deployment that can never
// become Current: that context fails, wave rest halts, and every context
// the rollout changed, the failed one too, gets v1 back (and loses the
// Deployment), newest wave first, in the clusters and in OUT_DIR; the
// rollout's record is gone.
func (e *denseE2E) rollback(t *testing.T) {
	last := e.fleet.Contexts - 1
	e.p.FirstValue = "v2"
	e.p.Rollout = "  rollout:\n    waves:\n    - name: canary\n      contexts: {matchLabels: {stage: canary}}\n      bakeTime: 2s\n    - name: rest\n      contexts: {}\n    onFailure: Rollback\n"
	stuck := filepath.Join(e.pkg, "stuck.yaml")
	writeFile(t, stuck, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
  namespace: %s
spec:
  replicas: 1
  selector:
    matchLabels: {app: stuck}
  template:
    metadata:
      labels: {app: stuck}
    spec:
      containers:
      - name: stuck
        image: example.invalid/stuck:1
`, e.p.NamespaceName(last)))
	r := e.apply(t, "--reconcile-timeout", "15s")
	if r.ExitCode != 1 {
		t.Fatalf("a rollout whose last context never becomes Current: exit %d, want 1\n%s", r.ExitCode, r.result)
	}
	// onFailure Rollback took both waves back, the halted one included.
	requireWaves(t, r, v1alpha1.WaveRolledBack, v1alpha1.WaveRolledBack)
	// Every context it changed is rolled back, the failed one too, whose
	// error says that it had failed and why.
	e.requireAll(t, r, v1alpha1.ApplyRolledBack)
	for _, c := range r.report.Contexts {
		if c.Name == e.p.ContextName(last) && (!strings.Contains(c.Error, "it had failed") || !strings.Contains(c.Error, "Deployment.apps "+e.p.NamespaceName(last)+"/stuck")) {
			t.Errorf("context %s: error %q does not say that it failed, and on what", c.Name, c.Error)
		}
	}
	if !strings.Contains(r.Stderr, "wave rest: rolling back") || !strings.Contains(r.Stderr, "wave canary: rolling back") ||
		strings.Index(r.Stderr, "wave rest: rolling back") > strings.Index(r.Stderr, "wave canary: rolling back") {
		t.Errorf("the rollback did not go newest wave first:\n%s", r.Stderr)
	}
	if d := e.fleet.api(last).Get(t, "/apis/apps/v1/namespaces/"+e.p.NamespaceName(last)+"/deployments/stuck"); d != nil {
		t.Errorf("context %s still holds the Deployment its previous package did not have", e.p.ContextName(last))
	}
	for i := range e.fleet.Contexts {
		if v := e.value(t, i); v != "v1" {
			t.Errorf("context %s holds %q after the rollback, want v1", e.p.ContextName(i), v)
		}
		if v := e.outValue(t, i); v != "v1" {
			t.Errorf("OUT_DIR/%s holds %q after the rollback, want v1", e.p.ContextName(i), v)
		}
	}
	if _, err := os.Stat(filepath.Join(e.out, ".shard-router-rollout")); err == nil {
		t.Error("a finished rollback left the rollout's record in OUT_DIR")
	}
}

// outValue is ConfigMap settings-0's value in context i's first Namespace
// in OUT_DIR.
func (e *denseE2E) outValue(t testing.TB, i int) string {
	t.Helper()
	ns := e.p.NamespaceName(i)
	matches, _ := filepath.Glob(filepath.Join(e.out, e.p.ContextName(i), "*"))
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		text := string(data)
		if k := strings.Index(text, "name: settings-0\n  namespace: "+ns+"\n"); k >= 0 {
			rest := text[k:]
			if j := strings.Index(rest, "value: "); j >= 0 {
				return strings.Trim(strings.SplitN(rest[j+len("value: "):], "\n", 2)[0], `"'`)
			}
		}
	}
	return ""
}
