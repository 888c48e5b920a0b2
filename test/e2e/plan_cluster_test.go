//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// The scenarios of issue 15 on the clusters of TestCluster: shard-router
// plan predicts what kpt live apply does in each cluster, checked against
// the clusters themselves and the prunes apply reports, with the CI recipe
// (examples/ci/pipeline.sh) doing the apply.

// refKey is an object's identity as kpt's inventory knows it.
func refKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

func (it clusterItem) key() string {
	group, _, _ := strings.Cut(it.APIVersion, "/")
	if !strings.Contains(it.APIVersion, "/") {
		group = ""
	}
	return refKey(group, it.Kind, it.Namespace, it.Name)
}

func refKeys(refs []v1alpha1.ObjectRef) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, refKey(r.Group, r.Kind, r.Namespace, r.Name))
	}
	slices.Sort(out)
	return out
}

// plan runs shard-router plan -o json against the split output.
func (e *clusterE2E) plan(t *testing.T) (*v1alpha1.SplitPlan, result) {
	t.Helper()
	res := runCmd(t, cmdSpec{}, e.bin, "plan", e.pkg, "--previous", e.out, "-o", "json", "--detailed-exitcode")
	var doc v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, res)
	}
	return &doc, res
}

// pipeline runs the CI recipe on the (already rendered) package, apply
// printing its JSON report on stdout.
func (e *clusterE2E) pipeline(t *testing.T, logs string) result {
	t.Helper()
	return runCmd(t, cmdSpec{Timeout: 10 * time.Minute, Env: []string{
		"RENDER=0", "SHARD_ROUTER=" + e.bin, "KPT=" + e.kpt, "PARALLEL=2",
		"PLAN_MD=" + filepath.Join(filepath.Dir(logs), "plan.md"), "KUBECONFIG=" + e.kubeconfig,
		"APPLY_FLAGS=--kubeconfig " + e.kubeconfig + " --reconcile-timeout 3m -o json",
	}}, "bash", filepath.Join(repoRoot(t), "examples", "ci", "pipeline.sh"), e.pkg, e.out)
}

// liveState is, per context, the resourceVersion of every candidate object
// that exists there.
type liveState map[string]map[string]string

// live reads every object of the previous split and of the package from
// every cluster that either routes it to.
func (e *clusterE2E) live(t *testing.T, candidates map[string][]clusterItem) liveState {
	t.Helper()
	s := liveState{}
	for ctx, items := range candidates {
		s[ctx] = map[string]string{}
		for _, it := range items {
			if obj := e.clusters[ctx].API.Get(t, it.path(t)); obj != nil {
				meta, _ := obj["metadata"].(map[string]any)
				s[ctx][it.key()], _ = meta["resourceVersion"].(string)
			}
		}
	}
	return s
}

// candidates are, per context, the objects its previous package held and
// those the package now routes there.
func (e *clusterE2E) candidates(t *testing.T) map[string][]clusterItem {
	t.Helper()
	out := map[string][]clusterItem{}
	seen := map[string]bool{}
	add := func(ctx string, it clusterItem) {
		if !seen[ctx+" "+it.key()] {
			seen[ctx+" "+it.key()] = true
			out[ctx] = append(out[ctx], it)
		}
	}
	for _, ctx := range e.names {
		for _, it := range e.items(t, filepath.Join(e.out, ctx)) {
			add(ctx, it)
		}
	}
	for _, it := range e.items(t, e.pkg) {
		for _, ctx := range it.contexts(t) {
			add(ctx, it)
		}
	}
	return out
}

// checkPlanAgainstApply runs the pipeline and requires, per context, the
// plan's creates, updates and prunes to be what happened: objects that did
// not exist before and do now; objects whose resourceVersion changed; and
// kpt's successful prune events, which are also the objects now gone.
func (e *clusterE2E) checkPlanAgainstApply(t *testing.T, doc *v1alpha1.SplitPlan) {
	t.Helper()
	cands := e.candidates(t)
	e.waitSettled(t, e.items(t, e.pkg))
	before := e.live(t, cands)
	logs := filepath.Join(filepath.Dir(e.out), "apply-logs")
	res := e.pipeline(t, logs)
	if res.ExitCode != 0 {
		t.Fatalf("pipeline:\n%s", res)
	}
	var report v1alpha1.ApplyReport
	if err := json.Unmarshal([]byte(res.Stdout), &report); err != nil {
		t.Fatalf("the pipeline printed no apply report: %v\n%s", err, res)
	}
	applied := map[string]v1alpha1.ContextApply{}
	for _, c := range report.Contexts {
		applied[c.Name] = c
		if c.Status != v1alpha1.ApplyApplied && c.Status != v1alpha1.ApplyUnchanged {
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Error)
		}
	}
	after := e.live(t, cands)
	for _, cp := range doc.Contexts {
		ctx := cp.Name
		created, updated, gone := []string{}, []string{}, []string{}
		for k, rv := range after[ctx] {
			was, existed := before[ctx][k]
			switch {
			case !existed:
				created = append(created, k)
			case was != rv:
				updated = append(updated, k)
			}
		}
		for k := range before[ctx] {
			if _, ok := after[ctx][k]; !ok {
				gone = append(gone, k)
			}
		}
		slices.Sort(created)
		slices.Sort(updated)
		slices.Sort(gone)
		pruned := refKeys(applied[ctx].PrunedObjects)
		if f := applied[ctx].Failures; len(f) > 0 {
			t.Errorf("%s: apply reported %v", ctx, f)
		}
		for _, c := range []struct {
			what        string
			plan, truth []string
		}{
			{"create (did not exist before)", refKeys(cp.Create), created},
			{"update (resourceVersion changed)", refKeys(cp.Update), updated},
			{"prune (apply's prune report)", refKeys(cp.Prune), pruned},
			{"prune (gone from the cluster)", refKeys(cp.Prune), gone},
		} {
			if !slices.Equal(c.plan, c.truth) {
				t.Errorf("%s: plan's %s:\n  %v\nthe cluster:\n  %v", ctx, c.what, c.plan, c.truth)
			}
		}
	}
}

// editDocs rewrites the YAML documents of one package file.
func (e *clusterE2E) editDocs(t *testing.T, file string, edit func(docs []string) []string) {
	t.Helper()
	p := filepath.Join(e.pkg, file)
	docs := strings.Split(clusterReadFile(t, p), "\n---\n")
	writeFile(t, p, strings.Join(edit(docs), "\n---\n"))
}

// planPredictsApply: an update, a create and a prune in each cluster, and a
// formatting-only change; the plan must be exactly what kpt then does, and
// a second plan must show no change.
func (e *clusterE2E) planPredictsApply(t *testing.T) {
	if doc, res := e.plan(t); res.ExitCode != 0 || doc.HasChanges() {
		t.Fatalf("plan before any change: exit %d, changes %v\n%s", res.ExitCode, doc.HasChanges(), res)
	}
	newConfigMap := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plan-new\n  namespace: %s\ndata:\n  k: v\n"
	for _, f := range []struct{ file, ns string }{{"alpha.yaml", "alpha"}, {"charlie.yaml", "charlie"}} {
		e.editDocs(t, f.file, func(docs []string) []string {
			var out []string
			for _, d := range docs {
				switch {
				case strings.Contains(d, "kind: Widget"):
					d = strings.Replace(d, "size: 3", "size: 4", 1) // an update
				case strings.Contains(d, "kind: Secret") && f.ns == "charlie":
					continue // a prune
				}
				out = append(out, d)
			}
			return append(out, strings.Replace(newConfigMap, "%s", f.ns, 1)) // a create
		})
	}
	// Formatting only: a comment and another key order.
	e.editDocs(t, "delta.yaml", func(docs []string) []string {
		for i, d := range docs {
			if strings.Contains(d, "kind: ConfigMap") {
				docs[i] = "# only a comment and the key order change\n" + strings.Replace(d, "apiVersion: v1\nkind: ConfigMap\n", "kind: ConfigMap\napiVersion: v1\n", 1)
			}
		}
		return docs
	})
	if res := e.render(t, ""); res.ExitCode != 0 {
		t.Fatalf("render:\n%s", res)
	}
	doc, res := e.plan(t)
	if res.ExitCode != 2 {
		t.Fatalf("plan --detailed-exitcode with changes: exit %d, want 2\n%s", res.ExitCode, res)
	}
	want := map[string][3]int{"A": {1, 1, 0}, "B": {1, 1, 1}}
	for _, cp := range doc.Contexts {
		if got := [3]int{len(cp.Create), len(cp.Update), len(cp.Prune)}; got != want[cp.Name] || cp.State != v1alpha1.ContextKept {
			t.Errorf("plan for %s: %s, create/update/prune %v, want %v", cp.Name, cp.State, got, want[cp.Name])
		}
	}
	e.checkPlanAgainstApply(t, doc)
	if doc, res := e.plan(t); res.ExitCode != 0 || doc.HasChanges() {
		t.Errorf("second plan: exit %d, changes %v\n%s", res.ExitCode, doc.HasChanges(), res.Stdout)
	}
}

// planNamespaceRemoved: removing a Namespace from the package prunes its
// objects from exactly its context, as the plan says.
func (e *clusterE2E) planNamespaceRemoved(t *testing.T) {
	var deltaObjs []string
	for _, it := range e.items(t, filepath.Join(e.out, "B")) {
		if it.Namespace == "delta" || (it.Kind == "Namespace" && it.Name == "delta") {
			deltaObjs = append(deltaObjs, it.key())
		}
	}
	slices.Sort(deltaObjs)
	if len(deltaObjs) < 9 {
		t.Fatalf("only %d objects of namespace delta in OUT/B", len(deltaObjs))
	}
	if err := os.Remove(filepath.Join(e.pkg, "delta.yaml")); err != nil {
		t.Fatal(err)
	}
	doc, res := e.plan(t)
	if res.ExitCode != 2 {
		t.Fatalf("plan: exit %d, want 2\n%s", res.ExitCode, res)
	}
	for _, cp := range doc.Contexts {
		want := []string{}
		if cp.Name == "B" {
			want = deltaObjs
		}
		if got := refKeys(cp.Prune); !slices.Equal(got, want) || len(cp.Create)+len(cp.Update) > 0 {
			t.Errorf("plan for %s: prune %v (want %v), %d creates, %d updates", cp.Name, got, want, len(cp.Create), len(cp.Update))
		}
	}
	e.checkPlanAgainstApply(t, doc)
}

// planMassPruneRefused: a package that lost most of a cluster's objects is
// refused by plan (and so by the pipeline), and nothing is applied.
func (e *clusterE2E) planMassPruneRefused(t *testing.T) {
	items := e.items(t, e.pkg)
	e.waitSettled(t, items)
	versions := e.resourceVersions(t, items)
	saved := map[string]string{}
	for _, f := range []string{"bravo.yaml", "charlie.yaml"} {
		saved[f] = clusterReadFile(t, filepath.Join(e.pkg, f))
		if err := os.Remove(filepath.Join(e.pkg, f)); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for f, text := range saved {
			writeFile(t, filepath.Join(e.pkg, f), text)
		}
	}()
	outBefore := snapshot(t, e.out)
	doc, res := e.plan(t)
	if res.ExitCode != 1 || len(doc.Errors) == 0 {
		t.Fatalf("plan: exit %d, want 1 (refused)\n%s", res.ExitCode, res)
	}
	clusterMentions(t, "plan", strings.Join(doc.Errors, "\n"), `context "B": this split would prune`, "allowMassPrune", "--allow-mass-prune")
	if b := doc.Contexts[1]; b.Name != "B" || !b.MassPrune {
		t.Errorf("plan does not mark B's mass deletion: %+v", b)
	}
	logs := filepath.Join(filepath.Dir(e.out), "refused-logs")
	res = e.pipeline(t, logs)
	if res.ExitCode == 0 {
		t.Errorf("the pipeline applied a mass deletion:\n%s", res)
	}
	clusterMentions(t, "pipeline", res.Stderr, "plan refused the change", "nothing applied")
	if plan := clusterReadFile(t, filepath.Join(filepath.Dir(logs), "plan.md")); !strings.Contains(plan, "**Mass deletion** in `B`") {
		t.Errorf("the markdown plan does not warn of the mass deletion:\n%s", plan)
	}
	if strings.Contains(res.Stderr, "apply -> ") {
		t.Error("the pipeline ran apply")
	}
	clusterSameFiles(t, "refused pipeline", outBefore, snapshot(t, e.out))
	clusterSameVersions(t, versions, e.resourceVersions(t, items))
	// split refuses it as well.
	if res := e.split(t); res.ExitCode == 0 || !strings.Contains(res.Stderr, "mass-deletion guard") {
		t.Errorf("split accepted the mass deletion:\n%s", res)
	}
}
