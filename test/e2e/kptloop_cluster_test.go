//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// TestFromTheKptLoop proves issue 42 on two real clusters: a fleet applied
// by `kpt live apply --context X` per context moves to one shard-router
// package as docs/recipes/from-the-kpt-loop.md says (nothing deleted,
// every UID kept, kpt's inventories holding the same objects, kpt live
// status still working, then no write); kpt's apply flags work with their
// kpt meaning: the switch to server-side apply with a changed value and a
// removed key in the same run (where kpt's own switch conflicts with its
// past), a conflict with another manager refused before any write and then
// forced, --inventory-policy adopt, --prune-propagation-policy Orphan and
// --prune-timeout, --status-policy none; spec.apply fixes them for every
// run.
func TestFromTheKptLoop(t *testing.T) {
	for _, tool := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kpt"} {
		toolPath(t, tool)
	}
	l := &kptLoopE2E{strategyE2E: startStrategyFleet(t)}
	runSteps(t, []clusterStep{
		{"TheLoop", l.theLoop},
		{"MigrationRefusedThenAdopted", l.migrate},
		{"KptsOwnSwitchConflicts", l.kptsOwnSwitch},
		{"SwitchToServerSide", l.switchToServerSide},
		{"ServerSideNoChangeNoWrite", l.serverSideNoChange},
		{"ConflictRefusedThenForced", l.conflict},
		{"InventoryPolicyAdopt", l.inventoryPolicy},
		{"PruneOrphan", l.pruneOrphan},
		{"PruneTimeout", l.pruneTimeout},
		{"StatusPolicyNone", l.statusPolicyNone},
	})
}

// strategyE2E is two clusters, A and B, with an admin kubeconfig.
type strategyE2E struct {
	dir string
	e   *clusterE2E
}

func startStrategyFleet(t *testing.T) *strategyE2E {
	t.Helper()
	start := time.Now()
	p := &strategyE2E{dir: t.TempDir()}
	creds := clusterNewCreds(t, p.dir)
	api := clusterStartFleet(t, p.dir, creds, "A", "B")
	p.e = &clusterE2E{bin: shardRouter(t), kpt: toolPath(t, "kpt"), names: []string{"A", "B"},
		kubeconfig: filepath.Join(p.dir, "kubeconfig"),
		clusters:   map[string]*clusterState{"A": {Name: "A", API: api["A"]}, "B": {Name: "B", API: api["B"]}}}
	clusterWriteKubeconfig(t, p.e.kubeconfig, creds.Token, api["A"], api["B"])
	t.Logf("clusters ready after %s", time.Since(start).Round(time.Second))
	return p
}

type kptLoopE2E struct {
	*strategyE2E
	// loop are the kpt packages of the loop, by context.
	loop map[string]string
	a    *applyE2E
	// uids are the objects' UIDs before the migration, by API path.
	uids map[string]string
}

// loopObjects is one context's objects in the loop: a Namespace and three
// ConfigMaps with two keys each.
func loopObjects(ctx string) string {
	ns := "loop-" + strings.ToLower(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    loop.e2e.shardrouter.dev/shard: %s\n", ns, strings.ToLower(ctx))
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: %s\ndata:\n  value: \"v1\"\n  extra: \"e\"\n", i, ns)
	}
	return b.String()
}

// loopPaths are the API paths of one context's objects.
func loopPaths(ctx string) []string {
	ns := "loop-" + strings.ToLower(ctx)
	paths := []string{"/api/v1/namespaces/" + ns}
	for i := 1; i <= 3; i++ {
		paths = append(paths, fmt.Sprintf("/api/v1/namespaces/%s/configmaps/cm-%d", ns, i))
	}
	return paths
}

// theLoop is today's fleet: one kpt package per context, kpt live init,
// kpt live apply --context X.
func (l *kptLoopE2E) theLoop(t *testing.T) {
	l.loop = map[string]string{}
	for _, ctx := range l.e.names {
		dir := filepath.Join(l.dir, "loop-"+ctx)
		writeFile(t, filepath.Join(dir, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: loop-"+strings.ToLower(ctx)+"\n")
		writeFile(t, filepath.Join(dir, "objects.yaml"), loopObjects(ctx))
		mustRun(t, cmdSpec{}, l.e.kpt, "live", "init", dir, "--namespace", "default")
		mustRun(t, cmdSpec{Timeout: 3 * time.Minute}, l.e.kpt, "live", "apply", dir, "--context", ctx, "--kubeconfig", l.e.kubeconfig, "--reconcile-timeout", "2m")
		l.loop[ctx] = dir
	}
}

// applyOK runs apply, which must exit 0.
func (a *applyE2E) applyOK(t testing.TB, args ...string) applyRun {
	t.Helper()
	r := a.apply(t, args...)
	if r.ExitCode != 0 {
		t.Fatalf("apply failed:\n%s", r.result)
	}
	return r
}

// kptInventory reads the name, namespace and id kpt live init gave a
// package's inventory.
func kptInventory(t testing.TB, dir string) (name, namespace, id string) {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(clusterReadFile(t, filepath.Join(dir, "resourcegroup.yaml"))))
	if err != nil || len(nodes) != 1 {
		t.Fatalf("%s/resourcegroup.yaml: %v", dir, err)
	}
	return nodes[0].GetName(), nodes[0].GetNamespace(), nodes[0].GetLabels()["cli-utils.sigs.k8s.io/inventory-id"]
}

// fleetPackage writes the shard-router package of the same objects, whose
// ShardConfig names the loop's inventories; apply, if set, is its
// spec.apply.
func (l *kptLoopE2E) fleetPackage(t testing.TB, apply string) {
	t.Helper()
	dir := l.a.pkg
	writeFile(t, filepath.Join(dir, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: fleet\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n")
	var b strings.Builder
	b.WriteString("apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: shards\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  contexts:\n")
	for _, ctx := range l.e.names {
		name, ns, id := kptInventory(t, l.loop[ctx])
		fmt.Fprintf(&b, "  - name: %s\n    namespaceSelector: {matchLabels: {loop.e2e.shardrouter.dev/shard: %s}}\n    inventory: {name: %s, namespace: %s, id: %s}\n",
			ctx, strings.ToLower(ctx), name, ns, id)
	}
	if apply != "" {
		b.WriteString("  apply:\n" + apply)
	}
	writeFile(t, filepath.Join(dir, "shards.yaml"), b.String())
}

// uidsOf reads the UID of each object of paths in ctx.
func (l *kptLoopE2E) uidsOf(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ctx := range l.e.names {
		for _, p := range loopPaths(ctx) {
			obj := l.e.clusters[ctx].API.Get(t, p)
			if obj == nil {
				t.Fatalf("%s: %s is missing", ctx, p)
			}
			meta, _ := obj["metadata"].(map[string]any)
			out[ctx+p], _ = meta["uid"].(string)
		}
	}
	return out
}

// inventoryOf is what a context's ResourceGroup lists, in its order.
func (l *kptLoopE2E) inventoryOf(t testing.TB, ctx string) []string {
	t.Helper()
	return l.resourceGroupList(t, ctx, "spec", "resources")
}

// resourceGroupList is the list at section.field of a context's
// ResourceGroup (spec.resources, status.resourceStatuses), each entry as
// kind/namespace/name, in the ResourceGroup's order.
func (l *kptLoopE2E) resourceGroupList(t testing.TB, ctx, section, field string) []string {
	t.Helper()
	name, ns, _ := kptInventory(t, l.loop[ctx])
	rg := l.e.clusters[ctx].API.Get(t, "/apis/kpt.dev/v1alpha1/namespaces/"+ns+"/resourcegroups/"+name)
	sec, _ := rg[section].(map[string]any)
	res, _ := sec[field].([]any)
	var out []string
	for _, r := range res {
		m, _ := r.(map[string]any)
		out = append(out, fmt.Sprintf("%v/%v/%v", m["kind"], m["namespace"], m["name"]))
	}
	return out
}

func (l *kptLoopE2E) migrate(t *testing.T) {
	l.a = &applyE2E{e: l.e, pkg: filepath.Join(l.dir, "fleet-pkg"), out: filepath.Join(l.dir, "fleet-out")}
	l.fleetPackage(t, "")
	for _, ctx := range l.e.names {
		writeFile(t, filepath.Join(l.a.pkg, "objects-"+strings.ToLower(ctx)+".yaml"), loopObjects(ctx))
	}
	if err := os.MkdirAll(l.a.out, 0o755); err != nil {
		t.Fatal(err)
	}
	l.uids = l.uidsOf(t)
	invBefore := map[string][]string{}
	for _, ctx := range l.e.names {
		invBefore[ctx] = l.inventoryOf(t, ctx)
	}
	plan := runCmd(t, cmdSpec{Timeout: 3 * time.Minute}, l.e.bin, "plan", l.a.pkg, "--previous", l.a.out, "--live", "--kubeconfig", l.e.kubeconfig)
	clusterMentions(t, "plan --live before the migration", plan.Stdout, "already holds 4 object(s)", "--adopt-cluster-state")
	marks := l.a.auditMarks(t)
	r := l.a.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("the first apply over the loop's inventories: want a refusal\n%s", r.result)
	}
	clusterMentions(t, "the refusal", strings.Join(r.report.Errors, "\n"), "already holds 4 object(s)", "--adopt-cluster-state")
	requireNoWrites(t, "the refused first apply", l.a.writesSince(t, marks), l.e.names...)
	marks = l.a.auditMarks(t)
	l.a.mustApply(t, v1alpha1.ApplyApplied, "--adopt-cluster-state")
	for name, evs := range l.a.writesSince(t, marks) {
		for _, e := range evs {
			if e.Verb == "delete" || e.Verb == "create" && !e.shardRouterLease() {
				t.Errorf("cluster %s: the migration sent %s", name, e)
			}
		}
	}
	if after := l.uidsOf(t); fmt.Sprint(after) != fmt.Sprint(l.uids) {
		t.Errorf("UIDs changed:\nbefore %v\nafter  %v", l.uids, after)
	}
	for _, ctx := range l.e.names {
		if got := l.inventoryOf(t, ctx); fmt.Sprint(got) != fmt.Sprint(invBefore[ctx]) {
			t.Errorf("%s: kpt's inventory now lists %v, it listed %v", ctx, got, invBefore[ctx])
		}
		st := mustRun(t, cmdSpec{Timeout: 2 * time.Minute}, l.e.kpt, "live", "status", l.loop[ctx], "--context", ctx, "--kubeconfig", l.e.kubeconfig)
		clusterMentions(t, "kpt live status of the loop's package", st.Stdout, "Current")
	}
	marks = l.a.auditMarks(t)
	l.a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "the no-change apply after the migration", l.a.writesSince(t, marks), l.e.names...)
	mustRun(t, cmdSpec{Timeout: 2 * time.Minute}, l.e.bin, "status", l.a.out, "--kubeconfig", l.e.kubeconfig, "--detailed-exitcode")
}

// kptsOwnSwitch is kpt's own result beside shard-router's: a package kpt
// applied client-side, one value changed, then kpt live apply
// --server-side --field-manager platform conflicts with its own past.
func (l *kptLoopE2E) kptsOwnSwitch(t *testing.T) {
	dir := filepath.Join(l.dir, "kpt-own")
	writeFile(t, filepath.Join(dir, "Kptfile"), "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: kpt-own\n")
	obj := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kpt-own\n  namespace: default\ndata:\n  value: \"%s\"\n"
	writeFile(t, filepath.Join(dir, "cm.yaml"), fmt.Sprintf(obj, "v1"))
	mustRun(t, cmdSpec{}, l.e.kpt, "live", "init", dir)
	mustRun(t, cmdSpec{Timeout: 2 * time.Minute}, l.e.kpt, "live", "apply", dir, "--context", "A", "--kubeconfig", l.e.kubeconfig)
	writeFile(t, filepath.Join(dir, "cm.yaml"), fmt.Sprintf(obj, "v2"))
	res := runCmd(t, cmdSpec{Timeout: 2 * time.Minute}, l.e.kpt, "live", "apply", dir, "--context", "A", "--kubeconfig", l.e.kubeconfig,
		"--server-side", "--field-manager", "platform")
	t.Logf("kpt's own switch to server-side apply with a changed value: exit %d\n%s", res.ExitCode, res.Stdout+res.Stderr)
	if res.ExitCode == 0 || !strings.Contains(res.Stdout+res.Stderr, `conflict with "kubectl"`) {
		t.Errorf("kpt's switch did not conflict with its own client-side apply as the issue reports (kpt changed?): exit %d", res.ExitCode)
	}
}

// configMap reads one ConfigMap of ctx.
func (l *kptLoopE2E) configMap(t testing.TB, ctx, ns, name string) map[string]any {
	t.Helper()
	return l.e.clusters[ctx].API.Get(t, "/api/v1/namespaces/"+ns+"/configmaps/"+name)
}

func dataOf(obj map[string]any) map[string]any {
	d, _ := obj["data"].(map[string]any)
	return d
}

// managers are the managers and operations of obj's managed fields.
func managers(obj map[string]any) []string {
	meta, _ := obj["metadata"].(map[string]any)
	mf, _ := meta["managedFields"].([]any)
	var out []string
	for _, e := range mf {
		m, _ := e.(map[string]any)
		out = append(out, fmt.Sprintf("%v/%v", m["manager"], m["operation"]))
	}
	return out
}

// editFleet edits the fleet package's objects file of ctx.
func (l *kptLoopE2E) editFleet(t testing.TB, ctx string, edit func(string) string) {
	t.Helper()
	p := filepath.Join(l.a.pkg, "objects-"+strings.ToLower(ctx)+".yaml")
	text := clusterReadFile(t, p)
	next := edit(text)
	if next == text {
		t.Fatalf("%s: the edit changed nothing", p)
	}
	writeFile(t, p, next)
}

// switchToServerSide: the fleet's first server-side apply changes a value
// in A and drops a key in B, in one run: no conflict with its own
// client-side past, the value is set, the key gone, and the fields are
// the field manager's.
func (l *kptLoopE2E) switchToServerSide(t *testing.T) {
	l.editFleet(t, "A", func(s string) string {
		return strings.Replace(s, "name: cm-1\n  namespace: loop-a\ndata:\n  value: \"v1\"", "name: cm-1\n  namespace: loop-a\ndata:\n  value: \"v2\"", 1)
	})
	l.editFleet(t, "B", func(s string) string {
		return strings.Replace(s, "name: cm-1\n  namespace: loop-b\ndata:\n  value: \"v1\"\n  extra: \"e\"\n", "name: cm-1\n  namespace: loop-b\ndata:\n  value: \"v1\"\n", 1)
	})
	r := l.a.mustApply(t, v1alpha1.ApplyApplied, "--server-side", "--field-manager", "platform")
	if r.report.Apply == nil || !r.report.Apply.ServerSide || r.report.Apply.FieldManager != "platform" {
		t.Errorf("the report does not say how it wrote: %+v", r.report.Apply)
	}
	clusterMentions(t, "the switch's progress", r.Stderr, "A: moved the fields of 1 object(s) from the fleet's client-side apply to field manager platform")
	a := l.configMap(t, "A", "loop-a", "cm-1")
	if dataOf(a)["value"] != "v2" {
		t.Errorf("A: cm-1 value = %v, want v2", dataOf(a)["value"])
	}
	b := l.configMap(t, "B", "loop-b", "cm-1")
	if _, ok := dataOf(b)["extra"]; ok {
		t.Errorf("B: cm-1 keeps the key its first server-side apply dropped: %v", dataOf(b))
	}
	for _, obj := range []map[string]any{a, b} {
		ms := managers(obj)
		if !strings.Contains(strings.Join(ms, " "), "platform/Apply") {
			t.Errorf("managed fields %v lack platform's apply", ms)
		}
	}
}

// serverSideNoChange: with spec.apply fixing server-side apply and the
// field manager (no flag), a no-change apply writes nothing.
func (l *kptLoopE2E) serverSideNoChange(t *testing.T) {
	l.fleetPackage(t, "    serverSide: true\n    fieldManager: platform\n")
	marks := l.a.auditMarks(t)
	r := l.a.mustApply(t, v1alpha1.ApplyUnchanged)
	requireNoWrites(t, "a no-change server-side apply", l.a.writesSince(t, marks), l.e.names...)
	if r.report.Apply == nil || !r.report.Apply.ServerSide || r.report.Apply.FieldManager != "platform" {
		t.Errorf("spec.apply was not used: %+v", r.report.Apply)
	}
	plan := mustRun(t, cmdSpec{}, l.e.bin, "plan", l.a.pkg, "--previous", l.a.out)
	clusterMentions(t, "plan", plan.Stdout, "Apply writes with server-side apply, field manager platform")
}

// conflict: another manager takes a field; the next apply, which sets
// another value, is refused before any write, naming the manager and the
// field, and the other value stays; --force-conflicts takes it.
func (l *kptLoopE2E) conflict(t *testing.T) {
	apiA := l.e.clusters["A"].API
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-2","namespace":"loop-a"},"data":{"value":"theirs"}}`)
	if code, resp, err := apiA.do("PATCH", "/api/v1/namespaces/loop-a/configmaps/cm-2?fieldManager=other&force=true", "application/apply-patch+yaml", body); err != nil || code != http.StatusOK {
		t.Fatalf("another manager's apply: %d %v %s", code, err, resp)
	}
	l.editFleet(t, "A", func(s string) string {
		return strings.Replace(s, "name: cm-3\n  namespace: loop-a\ndata:\n  value: \"v1\"", "name: cm-3\n  namespace: loop-a\ndata:\n  value: \"v2\"", 1)
	})
	marks := l.a.auditMarks(t)
	r := l.a.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("a conflict: want a refusal\n%s", r.result)
	}
	clusterMentions(t, "the conflict", strings.Join(r.report.Errors, "\n"), `context "A": update ConfigMap loop-a/cm-2 refused`, `manager "other" owns .data.value`, "--force-conflicts")
	requireNoWrites(t, "the refused apply", l.a.writesSince(t, marks), l.e.names...)
	if v := dataOf(l.configMap(t, "A", "loop-a", "cm-2"))["value"]; v != "theirs" {
		t.Errorf("the other manager's value = %v, want theirs", v)
	}
	r = l.a.applyOK(t, "--force-conflicts")
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyUnchanged})
	if v := dataOf(l.configMap(t, "A", "loop-a", "cm-2"))["value"]; v != "v1" {
		t.Errorf("after --force-conflicts: value = %v, want v1", v)
	}
}

// inventoryPolicy: an object the cluster holds outside any inventory is
// refused by default, in shard-router's words, and adopted with
// --inventory-policy adopt; one of another inventory is refused even so,
// naming its owner.
func (l *kptLoopE2E) inventoryPolicy(t *testing.T) {
	apiA := l.e.clusters["A"].API
	orphan := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"loop-a"%s},"data":{"value":"v1"}}`
	for _, c := range []struct{ name, ann string }{{"orphan", ""}, {"theirs", `,"annotations":{"config.k8s.io/owning-inventory":"someone-else"}`}} {
		if code, resp, err := apiA.do("POST", "/api/v1/namespaces/loop-a/configmaps", "application/json", []byte(fmt.Sprintf(orphan, c.name, c.ann))); err != nil || code != http.StatusCreated {
			t.Fatalf("creating %s: %d %v %s", c.name, code, err, resp)
		}
	}
	extra := filepath.Join(l.a.pkg, "extra.yaml")
	writeFile(t, extra, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: loop-a\ndata:\n  value: \"v1\"\n")
	marks := l.a.auditMarks(t)
	r := l.a.apply(t)
	if r.ExitCode != 1 {
		t.Fatalf("an object outside any inventory: want a refusal\n%s", r.result)
	}
	clusterMentions(t, "the refusal", strings.Join(r.report.Errors, "\n"), "ConfigMap loop-a/orphan", "belongs to no inventory", "--inventory-policy adopt")
	requireNoWrites(t, "the refused apply", l.a.writesSince(t, marks), l.e.names...)
	l.a.applyOK(t, "--inventory-policy", "adopt")
	_, _, id := kptInventory(t, l.loop["A"])
	if got := clusterAnnotation(l.configMap(t, "A", "loop-a", "orphan"), "config.k8s.io/owning-inventory"); got != id {
		t.Errorf("the adopted object's owner = %q, want %q", got, id)
	}
	writeFile(t, extra, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: loop-a\ndata:\n  value: \"v1\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: theirs\n  namespace: loop-a\ndata:\n  value: \"v1\"\n")
	r = l.a.apply(t, "--inventory-policy", "adopt")
	if r.ExitCode != 1 {
		t.Fatalf("an object of another inventory: want a refusal\n%s", r.result)
	}
	clusterMentions(t, "the refusal", strings.Join(r.report.Errors, "\n"), "ConfigMap loop-a/theirs", "belongs to another inventory, id someone-else")
	writeFile(t, extra, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orphan\n  namespace: loop-a\ndata:\n  value: \"v1\"\n")
}

// pruneOrphan: a pruned Deployment with --prune-propagation-policy Orphan
// leaves its ReplicaSet.
func (l *kptLoopE2E) pruneOrphan(t *testing.T) {
	deploy := filepath.Join(l.a.pkg, "deploy.yaml")
	writeFile(t, deploy, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: loop-a
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.invalid/web:1}]
`)
	l.a.applyOK(t)
	apiA := l.e.clusters["A"].API
	var rs string
	clusterWait(t, apiA.proc, "the Deployment's ReplicaSet", func() error {
		list := apiA.Get(t, "/apis/apps/v1/namespaces/loop-a/replicasets")
		items, _ := list["items"].([]any)
		if len(items) == 0 {
			return fmt.Errorf("no ReplicaSet yet")
		}
		meta, _ := items[0].(map[string]any)["metadata"].(map[string]any)
		rs, _ = meta["name"].(string)
		return nil
	})
	if err := os.Remove(deploy); err != nil {
		t.Fatal(err)
	}
	r := l.a.applyOK(t, "--prune-propagation-policy", "Orphan")
	if r.report.Apply.PrunePropagationPolicy != "Orphan" {
		t.Errorf("the report's propagation policy = %q", r.report.Apply.PrunePropagationPolicy)
	}
	if apiA.Get(t, "/apis/apps/v1/namespaces/loop-a/deployments/web") != nil {
		t.Error("the Deployment was not pruned")
	}
	clusterWait(t, apiA.proc, "the orphaned ReplicaSet", func() error {
		obj := apiA.Get(t, "/apis/apps/v1/namespaces/loop-a/replicasets/"+rs)
		if obj == nil {
			return fmt.Errorf("the ReplicaSet %s was deleted with its Deployment", rs)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if refs, _ := meta["ownerReferences"].([]any); len(refs) > 0 {
			return fmt.Errorf("still owned: %v", refs)
		}
		return nil
	})
}

// pruneTimeout: a pruned object a finalizer holds fails its context once
// --prune-timeout is up; once the finalizer goes, a rerun converges.
func (l *kptLoopE2E) pruneTimeout(t *testing.T) {
	held := filepath.Join(l.a.pkg, "held.yaml")
	writeFile(t, held, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: loop-a\n  finalizers: [e2e.shardrouter.dev/hold]\ndata:\n  value: \"v1\"\n")
	l.a.applyOK(t)
	if err := os.Remove(held); err != nil {
		t.Fatal(err)
	}
	r := l.a.apply(t, "--prune-timeout", "5s")
	if r.ExitCode != 1 {
		t.Fatalf("a prune that cannot finish: want exit 1\n%s", r.result)
	}
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyFailed})
	clusterMentions(t, "the prune timeout", r.Stdout, "ConfigMap loop-a/held", "not gone within --prune-timeout 5s")
	l.e.clusters["A"].API.MergePatch(t, "/api/v1/namespaces/loop-a/configmaps/held", map[string]any{"metadata": map[string]any{"finalizers": nil}})
	r = l.a.apply(t)
	if r.ExitCode != 0 {
		t.Fatalf("the rerun once the finalizer is gone:\n%s", r.result)
	}
}

// statusPolicyNone: with --status-policy none, kpt's engine writes the
// ResourceGroup's object list and never its status (the status another
// apply wrote stays as it was, and no status is asked of RBAC); the next
// apply with kpt's default writes the status again, with the new object.
func (l *kptLoopE2E) statusPolicyNone(t *testing.T) {
	before := l.statusOf(t, "A")
	if len(before) == 0 {
		t.Fatal("the inventory of A holds no status before the step: the default policy (all) wrote none")
	}
	l.editFleet(t, "A", func(s string) string {
		return s + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: status-none\n  namespace: loop-a\ndata:\n  value: \"v1\"\n"
	})
	const added = "ConfigMap/loop-a/status-none"
	marks := l.a.auditMarks(t)
	r := l.a.applyOK(t, "--status-policy", "none")
	requireStatuses(t, r, map[string]v1alpha1.ApplyStatus{"A": v1alpha1.ApplyApplied, "B": v1alpha1.ApplyUnchanged})
	if r.report.Apply == nil || r.report.Apply.StatusPolicy != v1alpha1.StatusPolicyNone {
		t.Errorf("the report's status policy: %+v", r.report.Apply)
	}
	plan := mustRun(t, cmdSpec{}, l.e.bin, "plan", l.a.pkg, "--previous", l.a.out, "--status-policy", "none")
	clusterMentions(t, "plan", plan.Stdout, "status policy none")
	if inv := l.inventoryOf(t, "A"); !slices.Contains(inv, added) {
		t.Errorf("the inventory does not list the new object: %v", inv)
	}
	if got := l.statusOf(t, "A"); !slices.Equal(got, before) {
		t.Errorf("--status-policy none: the inventory's status changed from %v to %v", before, got)
	}
	rgWrites := func(writes map[string][]auditEvent) (spec, status int) {
		for _, w := range writes["A"] {
			if w.ObjectRef.Resource != "resourcegroups" {
				continue
			}
			if w.ObjectRef.Subresource == "status" {
				status++
			} else {
				spec++
			}
		}
		return spec, status
	}
	if spec, status := rgWrites(l.a.writesSince(t, marks)); spec != 1 || status != 0 {
		t.Errorf("--status-policy none: %d write(s) of the ResourceGroup and %d of its status, want 1 and 0", spec, status)
	}
	l.editFleet(t, "A", func(s string) string {
		return strings.Replace(s, "name: status-none\n  namespace: loop-a\ndata:\n  value: \"v1\"", "name: status-none\n  namespace: loop-a\ndata:\n  value: \"v2\"", 1)
	})
	marks = l.a.auditMarks(t)
	r = l.a.applyOK(t)
	if r.report.Apply == nil || r.report.Apply.StatusPolicy != v1alpha1.StatusPolicyAll {
		t.Errorf("the default status policy: %+v", r.report.Apply)
	}
	if got := l.statusOf(t, "A"); !slices.Contains(got, added) {
		t.Errorf("the default policy: the inventory's status does not list the new object: %v", got)
	}
	if _, status := rgWrites(l.a.writesSince(t, marks)); status != 2 {
		t.Errorf("the default policy: %d write(s) of the ResourceGroup's status, want 2 (as it merges and as it replaces)", status)
	}
}

// statusOf is what a context's ResourceGroup's status lists, sorted.
func (l *kptLoopE2E) statusOf(t testing.TB, ctx string) []string {
	t.Helper()
	out := l.resourceGroupList(t, ctx, "status", "resourceStatuses")
	slices.Sort(out)
	return out
}
