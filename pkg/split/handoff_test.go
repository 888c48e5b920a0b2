package split

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// splitHandoff splits pkg to out for Flux with current as what is known
// to be Current.
func splitHandoff(t *testing.T, pkg, out string, current CurrentFunc) *Layout {
	t.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		t.Fatal(err)
	}
	in, cfg := pkgload.Load(t, pkg, od)
	plan, err := Route(in, cfg, Options{Out: od, Engine: gitops.Flux, Source: testSource, Current: current})
	if err == nil {
		err = plan.Lay()
	}
	if err == nil && plan.Results.ExitCode() != 0 {
		err = errorResults(plan.Results)
	}
	if err == nil {
		err = Write(od, plan)
	}
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// A move under a pulling engine: the first split keeps the moving objects
// in the old context as well as the new, annotated for the old one, and
// records the hand-off; a split that does not know the new copies Current
// keeps them again (and changes nothing); one that knows some Current
// drops only those; one that knows all drops the rest and the record.
func TestMoveHandsOffInTwoSplits(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(shardConfig, "spec:\n", "spec:\n  allowMoves: true\n", 1)})
	splitHandoff(t, pkg, out, nil)
	before := readTree(t, out)
	moving := before["ctx-a/apps/web.yaml"]
	if moving == "" {
		t.Fatal("the base package has no ctx-a/apps/web.yaml")
	}

	relabel(t, pkg) // Namespace a and what is in it move to ctx-b
	plan := splitHandoff(t, pkg, out, nil)
	tree := readTree(t, out)
	if tree["ctx-a/apps/web.yaml"] != moving {
		t.Errorf("the old copy changed or went during the hand-off:\n%s\nwas:\n%s", tree["ctx-a/apps/web.yaml"], moving)
	}
	if !strings.Contains(tree["ctx-b/apps/web.yaml"], "shardrouter.dev/context: 'ctx-b'") {
		t.Errorf("the new copy is not in ctx-b, annotated for it:\n%s", tree["ctx-b/apps/web.yaml"])
	}
	record := tree[gitops.Dir+"/"+HandoffFile]
	for _, want := range []string{"config.kubernetes.io/local-config: \"true\"", "from: ctx-a", "- ctx-b", "name: web", "kind: Namespace"} {
		if !strings.Contains(record, want) {
			t.Errorf("the hand-off record lacks %q:\n%s", want, record)
		}
	}
	if !hasResult(plan.Results, framework.Warning, "ctx-a keeps them until they are Current in ctx-b") {
		t.Errorf("no warning that says why the old copies stay: %v", plan.Results)
	}

	// Nothing known Current: the next split keeps them, changing no file.
	held := readTree(t, out)
	markerAfterFiles(t, out)
	ino := inodes(t, out)
	splitHandoff(t, pkg, out, nil)
	if after := readTree(t, out); !equalMaps(after, held) {
		t.Error("a split that knows nothing new changed the output")
	}
	if after := inodes(t, out); len(after) != len(ino) {
		t.Error("a split that knows nothing new rewrote directories")
	}

	// Only the Deployment Current in ctx-b: it alone leaves ctx-a.
	onlyWeb := func(tg gitops.Target, o v1alpha1.ObjectRef) bool {
		return tg.Context == "ctx-b" && o.Kind == "Deployment" && o.Name == "web"
	}
	splitHandoff(t, pkg, out, onlyWeb)
	tree = readTree(t, out)
	if _, ok := tree["ctx-a/apps/web.yaml"]; ok && strings.Contains(tree["ctx-a/apps/web.yaml"], "kind: Deployment") {
		t.Error("the Deployment, Current in ctx-b, is still in ctx-a")
	}
	if !strings.Contains(tree["ctx-a/namespaces.yaml"], "name: a\n") {
		t.Error("Namespace a, not known Current in ctx-b, left ctx-a")
	}
	if strings.Contains(tree[gitops.Dir+"/"+HandoffFile], "kind: Deployment") {
		t.Error("the record still lists the finished hand-off")
	}

	// Everything Current in ctx-b: the hand-off is done.
	all := func(tg gitops.Target, o v1alpha1.ObjectRef) bool { return tg.Context == "ctx-b" }
	plan = splitHandoff(t, pkg, out, all)
	tree = readTree(t, out)
	if strings.Contains(tree["ctx-a/namespaces.yaml"], "name: a\n") {
		t.Error("Namespace a is still in ctx-a after its hand-off")
	}
	if _, ok := tree[gitops.Dir+"/"+HandoffFile]; ok {
		t.Error("the record stays with nothing pending")
	}
	if !hasResult(plan.Results, framework.Info, "hand-off done") {
		t.Error("no result says the hand-off is done")
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	splitHandoff(t, pkg, fresh, nil)
	for p, data := range readTree(t, fresh) {
		if tree[p] != data {
			t.Errorf("after the hand-off, %s differs from a fresh split's", p)
		}
	}
}

// CurrentIn takes only objects Current without drift in contexts read in
// full.
func TestCurrentIn(t *testing.T) {
	ref := v1alpha1.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "web"}
	other := v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "c"}
	st := &v1alpha1.FleetStatus{Contexts: []v1alpha1.ContextStatus{
		{Name: "ok", Reachable: true, Objects: []v1alpha1.ObjectStatus{{ObjectRef: ref, Status: "Current", Inventory: "applied"}, {ObjectRef: other, Status: "InProgress"}}},
		{Name: "drift", Reachable: true, Objects: []v1alpha1.ObjectStatus{{ObjectRef: ref, Status: "Current", Drift: v1alpha1.Drift{"spec.replicas"}}}},
		{Name: "down", Reachable: false, Objects: []v1alpha1.ObjectStatus{{ObjectRef: ref, Status: "Current"}}},
	}}
	cur := CurrentIn(st)
	for _, c := range []struct {
		ctx  string
		ref  v1alpha1.ObjectRef
		want bool
	}{{"ok", ref, true}, {"ok", other, false}, {"drift", ref, false}, {"down", ref, false}, {"absent", ref, false}} {
		if got := cur(gitops.Target{Context: c.ctx}, c.ref); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.ctx, c.ref, got, c.want)
		}
	}
}

// CurrentInFlux takes an object Current only from a Ready Kustomization,
// at the revision it attempted, for its generation, that holds it.
func TestCurrentInFlux(t *testing.T) {
	parse := func(s string) Kustomization {
		var k Kustomization
		if err := json.Unmarshal([]byte(s), &k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	const inv = `"inventory":{"entries":[{"id":"a_web_apps_Deployment","v":"v1"}]}`
	ks := []Kustomization{
		parse(`{"kind":"Kustomization","metadata":{"name":"ok","generation":2},"status":{"observedGeneration":2,"lastAppliedRevision":"main@sha1:1","lastAttemptedRevision":"main@sha1:1","conditions":[{"type":"Ready","status":"True"}],` + inv + `}}`),
		parse(`{"kind":"Kustomization","metadata":{"name":"notready","generation":1},"status":{"observedGeneration":1,"lastAppliedRevision":"main@sha1:1","lastAttemptedRevision":"main@sha1:1","conditions":[{"type":"Ready","status":"False"}],` + inv + `}}`),
		parse(`{"kind":"Kustomization","metadata":{"name":"attempting","generation":1},"status":{"observedGeneration":1,"lastAppliedRevision":"main@sha1:1","lastAttemptedRevision":"main@sha1:2","conditions":[{"type":"Ready","status":"True"}],` + inv + `}}`),
		parse(`{"kind":"Kustomization","metadata":{"name":"stale","generation":3},"status":{"observedGeneration":2,"lastAppliedRevision":"main@sha1:1","lastAttemptedRevision":"main@sha1:1","conditions":[{"type":"Ready","status":"True"}],` + inv + `}}`),
	}
	cur := CurrentInFlux(ks)
	web := v1alpha1.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "web"}
	for name, want := range map[string]bool{"ok": true, "notready": false, "attempting": false, "stale": false, "absent": false} {
		if got := cur(gitops.Target{Name: name}, web); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if cur(gitops.Target{Name: "ok"}, v1alpha1.ObjectRef{Kind: "ConfigMap", Namespace: "a", Name: "web"}) {
		t.Error("an object the inventory does not hold is Current")
	}
}
