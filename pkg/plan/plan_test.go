package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// previewDir runs what `shard-router plan PKG --previous OUT` runs.
func previewDir(t *testing.T, pkg, out string, opts Options) (*v1alpha1.SplitPlan, framework.Results) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil { // a first apply: an empty directory
		t.Fatal(err)
	}
	od, err := outdir.OpenPrevious(out)
	if err != nil {
		t.Fatal(err)
	}
	in, cfg := pkgload.Load(t, pkg, od)
	opts.Split.Out = od
	doc, layout, err := Preview(in, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return doc, layout.Results
}

// summary renders a plan's contexts as "ctx state c=[..] u=[..] p=[..] n=N".
func summary(doc *v1alpha1.SplitPlan) []string {
	var out []string
	names := func(refs []v1alpha1.ObjectRef) string {
		s := make([]string, len(refs))
		for i, r := range refs {
			s[i] = r.String()
		}
		return strings.Join(s, "; ")
	}
	for _, c := range doc.Contexts {
		out = append(out, fmt.Sprintf("%s %s c=[%s] u=[%s] p=[%s] n=%d", c.Name, c.State, names(c.Create), names(c.Update), names(c.Prune), c.Unchanged))
	}
	return out
}

func wantSummary(t *testing.T, doc *v1alpha1.SplitPlan, want ...string) {
	t.Helper()
	if got := summary(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestPreviewCreateThenNoChange(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	doc, _ := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc,
		"ctx-a added c=[Namespace a; Deployment.apps a/web; Lease.coordination.k8s.io a/leader; ClusterRole.rbac.authorization.k8s.io reader] u=[] p=[] n=0",
		"ctx-b added c=[ConfigMap b/settings; Namespace b; ClusterRole.rbac.authorization.k8s.io reader] u=[] p=[] n=0")
	if !doc.HasChanges() {
		t.Error("a first plan has no changes")
	}
	if _, err := input.ReadPackage(pkg, yamlio.Options{}); err != nil {
		t.Fatal(err)
	}
	if tree := readTree(t, out); len(tree) != 0 {
		t.Errorf("plan wrote %v", keys(tree))
	}
	mustSplit(t, pkg, out)
	doc, results := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc, "ctx-a kept c=[] u=[] p=[] n=4", "ctx-b kept c=[] u=[] p=[] n=3")
	if doc.HasChanges() || len(doc.Moves)+len(doc.DataStoreChanges) > 0 {
		t.Errorf("a second plan has changes: %+v", doc)
	}
	if hasResult(results, framework.Error, "") {
		t.Errorf("errors: %v", errorResults(results))
	}
}

// splitBase writes the base package and splits it to a fresh output.
func splitBase(t *testing.T) (pkg, out string) {
	t.Helper()
	pkg, out = t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	return pkg, out
}

func TestPreviewFormattingIsNoChange(t *testing.T) {
	pkg, out := splitBase(t)
	// Comments, key order, flow style, sequence indentation, quoting and
	// kpt's bookkeeping annotations never reach the cluster.
	writeTree(t, pkg, map[string]string{"apps/web.yaml": `kind: Deployment # comment
metadata:
  namespace: "a"
  name: web
  annotations:
    internal.config.kubernetes.io/note: "x"
apiVersion: apps/v1
spec: {template: {spec: {containers: [{image: nginx, name: web}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: b}
data:
    key: "value"
`})
	doc, _ := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc, "ctx-a kept c=[] u=[] p=[] n=4", "ctx-b kept c=[] u=[] p=[] n=3")
}

// TestPreviewKptAnnotationIsChange: kpt live apply sends every annotation
// but its bookkeeping ones, config.kubernetes.io/* included: adding one is
// an update of the object in its cluster.
func TestPreviewKptAnnotationIsChange(t *testing.T) {
	for _, key := range []string{"config.kubernetes.io/origin", "config.kubernetes.io/local-config", "config.kubernetes.io/depends-on"} {
		pkg, out := splitBase(t)
		web := strings.Replace(basePackage()["apps/web.yaml"], "  name: web\n", "  name: web\n  annotations:\n    "+key+": \"false\"\n", 1)
		if web == basePackage()["apps/web.yaml"] {
			t.Fatal("the annotation was not added: the test tests nothing")
		}
		writeTree(t, pkg, map[string]string{"apps/web.yaml": web})
		doc, _ := previewDir(t, pkg, out, Options{})
		wantSummary(t, doc, "ctx-a kept c=[] u=[Deployment.apps a/web] p=[] n=3", "ctx-b kept c=[] u=[] p=[] n=3")
	}
}

func TestPreviewCategories(t *testing.T) {
	pkg, out := splitBase(t)
	files := basePackage()
	writeTree(t, pkg, map[string]string{
		// An update of data; the ConfigMap b/settings is pruned.
		"apps/web.yaml": strings.Replace(files["apps/web.yaml"][:strings.Index(files["apps/web.yaml"], "---")], "image: nginx", "image: nginx:2", 1),
		// A new object, in both contexts (cluster-scoped, broadcast).
		"rbac/writer.yaml": strings.Replace(files["rbac/reader.yaml"], "name: reader", "name: writer", 1),
		// A label of shard-router's own annotations reaches the cluster.
		"apps/lease.yaml": strings.Replace(files["apps/lease.yaml"], "namespace: a\n", "namespace: a\n  annotations:\n    team: x\n", 1),
	})
	doc, results := previewDir(t, pkg, out, Options{Diff: true})
	wantSummary(t, doc,
		"ctx-a kept c=[ClusterRole.rbac.authorization.k8s.io writer] u=[Deployment.apps a/web; Lease.coordination.k8s.io a/leader] p=[] n=2",
		"ctx-b kept c=[ClusterRole.rbac.authorization.k8s.io writer] u=[] p=[ConfigMap b/settings] n=2")
	if hasResult(results, framework.Error, "") {
		t.Errorf("errors: %v", errorResults(results))
	}
	diffs := doc.Contexts[0].Diffs
	if len(diffs) != 2 || diffs[0].Ref.Kind != "Deployment" ||
		!strings.Contains(diffs[0].Diff, "--- previous/ctx-a/apps/web.yaml\n+++ new/ctx-a/apps/web.yaml\n") ||
		!strings.Contains(diffs[0].Diff, "\n-        - name: web # wide sequence style, kept\n-          image: nginx\n") && !strings.Contains(diffs[0].Diff, "\n-          image: nginx\n+          image: nginx:2\n") {
		t.Errorf("diffs: %+v", diffs)
	}
	if len(doc.Contexts[1].Diffs) != 0 {
		t.Errorf("ctx-b has diffs: %+v", doc.Contexts[1].Diffs)
	}

	// An annotation of shard-router's is a change: the datastore annotation
	// of the Lease changes when its override goes (allowed here).
	pkg, out = splitBase(t)
	noOverride := shardConfig[:strings.Index(shardConfig, "  dataStoreOverrides:")]
	writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(noOverride, "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1)})
	doc, _ = previewDir(t, pkg, out, Options{})
	wantSummary(t, doc, "ctx-a kept c=[] u=[Lease.coordination.k8s.io a/leader] p=[] n=3", "ctx-b kept c=[] u=[] p=[] n=3")
}

func TestPreviewIdentityIsGroupKind(t *testing.T) {
	files := basePackage()
	files["apps/hpa.yaml"] = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  namespace: a\nspec:\n  maxReplicas: 3\n"
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, files)
	mustSplit(t, pkg, out)
	writeTree(t, pkg, map[string]string{"apps/hpa.yaml": strings.Replace(files["apps/hpa.yaml"], "autoscaling/v1", "autoscaling/v2", 1)})
	doc, _ := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc,
		"ctx-a kept c=[] u=[HorizontalPodAutoscaler.autoscaling a/web] p=[] n=4",
		"ctx-b kept c=[] u=[] p=[] n=3")
}

func TestPreviewMoves(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowMoves=%v", allow), func(t *testing.T) {
			pkg, out := splitBase(t)
			relabel(t, pkg)
			if allow {
				writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(shardConfig, "spec:\n", "spec:\n  allowMoves: true\n", 1)})
			}
			doc, results := previewDir(t, pkg, out, Options{})
			// Namespace a and its objects leave ctx-a for ctx-b.
			wantSummary(t, doc,
				"ctx-a kept c=[] u=[] p=[Namespace a; Deployment.apps a/web; Lease.coordination.k8s.io a/leader] n=1",
				"ctx-b kept c=[Namespace a; Deployment.apps a/web; Lease.coordination.k8s.io a/leader] u=[] p=[] n=3")
			if len(doc.Moves) != 3 {
				t.Fatalf("moves: %+v", doc.Moves)
			}
			for _, m := range doc.Moves {
				if !reflect.DeepEqual(m.From, []string{"ctx-a"}) || !reflect.DeepEqual(m.To, []string{"ctx-b"}) || m.Refused == allow {
					t.Errorf("move %+v", m)
				}
			}
			if got := hasResult(results, framework.Error, "would move"); got == allow {
				t.Errorf("error for the move: %v", got)
			}
			// The Lease changes datastore too (ctx-b has no leases
			// datastore), which has no previous annotation here: the
			// previous split's datastore counts only through moves.
		})
	}
}

func TestPreviewDataStoreChanges(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(string) string
		refused bool
	}{
		{"refused", func(c string) string { return c }, true},
		{"allowDataStoreChanges", func(c string) string {
			return strings.Replace(c, "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkg, out := splitBase(t)
			noOverride := shardConfig[:strings.Index(shardConfig, "  dataStoreOverrides:")]
			writeTree(t, pkg, map[string]string{"shards.yaml": tc.edit(noOverride)})
			doc, results := previewDir(t, pkg, out, Options{})
			want := []v1alpha1.DataStoreChange{{Ref: v1alpha1.ObjectRef{Group: "coordination.k8s.io", Kind: "Lease", Namespace: "a", Name: "leader"},
				Context: "ctx-a", From: "leases", To: "default", Refused: tc.refused}}
			if !reflect.DeepEqual(doc.DataStoreChanges, want) {
				t.Errorf("changes %+v", doc.DataStoreChanges)
			}
			if got := hasResult(results, framework.Error, "would change datastore"); got != tc.refused {
				t.Errorf("error result: %v", got)
			}
		})
	}
	// An ephemeral override allows it.
	pkg, out := splitBase(t)
	writeTree(t, pkg, map[string]string{"shards.yaml": shardConfig + "    ephemeral: true\n"})
	doc, _ := previewDir(t, pkg, out, Options{})
	if len(doc.DataStoreChanges) != 0 {
		t.Errorf("no datastore changes expected: %+v", doc.DataStoreChanges)
	}
}

func TestPreviewAddedAndDroppedContexts(t *testing.T) {
	pkg, out := splitBase(t)
	cfg := strings.Replace(shardConfig, "  - name: ctx-b\n", "  - name: ctx-c\n    namespaceSelector: {matchLabels: {shard: c}}\n  - name: ctx-b\n", 1)
	cfg = strings.Replace(cfg, "name: ctx-b\n    namespaceSelector: {matchLabels: {shard: b}}\n", "name: ctx-d\n    namespaceSelector: {matchLabels: {shard: b}}\n", 1)
	writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(cfg, "spec:\n", "spec:\n  allowMoves: true\n", 1)})
	doc, results := previewDir(t, pkg, out, Options{})
	wantSummary(t, doc,
		"ctx-a kept c=[] u=[] p=[] n=4",
		"ctx-c added c=[ClusterRole.rbac.authorization.k8s.io reader] u=[] p=[] n=0",
		"ctx-d added c=[ConfigMap b/settings; Namespace b; ClusterRole.rbac.authorization.k8s.io reader] u=[] p=[] n=0",
		"ctx-b dropped c=[] u=[] p=[ConfigMap b/settings; Namespace b; ClusterRole.rbac.authorization.k8s.io reader] n=0")
	if !hasResult(results, framework.Warning, `context "ctx-b" is no longer in the config`) {
		t.Error("no warning for the dropped context")
	}
	// The broadcast ClusterRole now goes to ctx-a, ctx-c and ctx-d: no
	// move, and ctx-a's copy is unchanged; the Namespace's move from
	// ctx-b to ctx-d is one.
	var moved []string
	for _, m := range doc.Moves {
		moved = append(moved, fmt.Sprintf("%s %v->%v %v", m.Ref, m.From, m.To, m.Refused))
	}
	want := []string{
		"ConfigMap b/settings [ctx-b]->[ctx-d] false",
		"Namespace b [ctx-b]->[ctx-d] false",
	}
	if !reflect.DeepEqual(moved, want) {
		t.Errorf("moves:\n%s", strings.Join(moved, "\n"))
	}
}

func TestPreviewLeavesOutputAlone(t *testing.T) {
	pkg, out := splitBase(t)
	before := readTree(t, out)
	relabel(t, pkg)
	previewDir(t, pkg, out, Options{Diff: true})
	if after := readTree(t, out); !reflect.DeepEqual(before, after) {
		t.Error("plan changed the output directory")
	}
}

func TestDigestIsData(t *testing.T) {
	base := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    shardrouter.dev/context: x\ndata:\n  n: \"1\"\n  s: text\n  list: [a, b]\n"
	same := []string{
		"# a comment\nkind: ConfigMap\napiVersion: v1\nmetadata:\n  annotations:\n    shardrouter.dev/context: 'x'\n    config.kubernetes.io/path: a.yaml\n    internal.config.kubernetes.io/index: '3'\n  name: a\ndata:\n  list:\n  - a\n  - b\n  s: |-\n    text\n  n: '1'\n",
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {shardrouter.dev/context: x, config.k8s.io/id: '1'}}, data: {n: \"1\", s: \"text\", list: [\"a\", \"b\"]}}\n",
	}
	different := []string{
		strings.Replace(base, `n: "1"`, "n: 1", 1),                                                            // a number, not a string
		strings.Replace(base, "s: text", "s: other", 1),                                                       // data
		strings.Replace(base, "shardrouter.dev/context: x", "shardrouter.dev/context: y", 1),                  // shard-router's annotation
		strings.Replace(base, "list: [a, b]", "list: [b, a]", 1),                                              // sequence order
		strings.Replace(base, "shardrouter.dev/context: x\n", "shardrouter.dev/context: x\n    team: a\n", 1), // a user annotation
		// kpt's annotations that change what kpt live apply does.
		strings.Replace(base, "shardrouter.dev/context: x\n", "shardrouter.dev/context: x\n    config.kubernetes.io/depends-on: /namespaces/a/ConfigMap/b\n", 1),
		strings.Replace(base, "shardrouter.dev/context: x\n", "shardrouter.dev/context: x\n    config.kubernetes.io/apply-time-mutation: '[]'\n", 1),
	}
	want := input.DigestOf(mustParse(t, base))
	for _, s := range same {
		if input.DigestOf(mustParse(t, s)) != want {
			t.Errorf("formatting changed the digest:\n%s", s)
		}
	}
	for _, s := range different {
		if input.DigestOf(mustParse(t, s)) == want {
			t.Errorf("a change kept the digest:\n%s", s)
		}
	}
	// Annotations that all never reach the cluster are no annotations.
	noAnnos := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"
	if input.DigestOf(mustParse(t, noAnnos)) != input.DigestOf(mustParse(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/index: '0'\n")) {
		t.Error("an annotations mapping of kpt's annotations only is a change")
	}
	// Integers as YAML writes them in several ways are one number.
	if input.DigestOf(mustParse(t, "a: 0x10\nb: true\n")) != input.DigestOf(mustParse(t, "a: 16\nb: true\n")) {
		t.Error("0x10 and 16 differ")
	}
}

// TestPreviewOverridesChanges: plan shows each context's change of its
// etcd overrides against what the previous split recorded, even when no
// object changes, and refuses what `overrides --previous` refuses
// (datastore.Report, one policy); split refuses it too.
func TestPreviewOverridesChanges(t *testing.T) {
	moved := strings.Replace(shardConfig, "https://etcd-leases:2379", "https://etcd-leases-2:2379", 1)
	added := strings.Replace(shardConfig, "    namespaceSelector: {matchLabels: {shard: b}}\n",
		"    namespaceSelector: {matchLabels: {shard: b}}\n    dataStores:\n    - name: leases\n      endpoints: [\"https://b-leases:2379\"]\n", 1)
	removed := strings.Replace(shardConfig, "  dataStoreOverrides:\n  - resource: coordination.k8s.io/leases\n    dataStore: leases\n", "", 1)
	for _, tc := range []struct {
		name, config string
		want         string // context resource from -> to
		refused      bool
	}{
		{"servers changed", moved, `ctx-a coordination.k8s.io/leases leases[https://etcd-leases:2379] -> leases[https://etcd-leases-2:2379]`, true},
		{"override added", added, `ctx-b coordination.k8s.io/leases default[] -> leases[https://b-leases:2379]`, true},
		{"override removed", removed, `ctx-a coordination.k8s.io/leases leases[https://etcd-leases:2379] -> default[]`, true},
		{"allowed", strings.Replace(moved, "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1), `ctx-a coordination.k8s.io/leases leases[https://etcd-leases:2379] -> leases[https://etcd-leases-2:2379]`, false},
		{"ephemeral", strings.Replace(moved, "    dataStore: leases\n", "    dataStore: leases\n    ephemeral: true\n", 1), `ctx-a coordination.k8s.io/leases leases[https://etcd-leases:2379] -> leases[https://etcd-leases-2:2379]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg, out := splitBase(t)
			if tc.name == "override removed" {
				// The Lease's own datastore change is function mode's
				// refusal; leave the Lease out to see the override's.
				writeTree(t, pkg, map[string]string{"apps/lease.yaml": ""})
				writeTree(t, pkg, map[string]string{"shards.yaml": strings.Replace(tc.config, "spec:\n", "spec:\n  allowMassPrune: true\n", 1)})
			} else {
				writeTree(t, pkg, map[string]string{"shards.yaml": tc.config})
			}
			doc, results := previewDir(t, pkg, out, Options{})
			var got []string
			for _, c := range doc.OverrideChanges {
				got = append(got, fmt.Sprintf("%s %s %s%v -> %s%v", c.Context, c.Resource, c.From.DataStore, c.From.Servers, c.To.DataStore, c.To.Servers))
				if c.Allowed == tc.refused {
					t.Errorf("%s: allowed %v, want %v", c.Message, c.Allowed, !tc.refused)
				}
			}
			if !reflect.DeepEqual(got, []string{tc.want}) {
				t.Errorf("override changes %q, want %q", got, tc.want)
			}
			if !doc.HasChanges() {
				t.Error("a change of the overrides is no change")
			}
			if refused := hasResult(results, framework.Error, "coordination.k8s.io/leases moves from"); refused != tc.refused {
				t.Errorf("refused %v, want %v: %v", refused, tc.refused, results)
			}
			if _, err := splitDir(t, pkg, out); (err != nil) != tc.refused {
				t.Errorf("split: %v, want refused %v", err, tc.refused)
			}
		})
	}
	// An output of an older release, without the record: nothing to compare.
	pkg, out := splitBase(t)
	for _, ctx := range []string{"ctx-a", "ctx-b"} {
		if err := os.Remove(filepath.Join(out, ctx, v1alpha1.EtcdOverridesFile)); err != nil {
			t.Fatal(err)
		}
		marker := readTree(t, filepath.Join(out, ctx))[outdir.MarkerFile]
		writeTree(t, filepath.Join(out, ctx), map[string]string{outdir.MarkerFile: strings.Replace(marker, "file "+v1alpha1.EtcdOverridesFile+"\n", "", 1)})
	}
	writeTree(t, pkg, map[string]string{"shards.yaml": moved})
	if doc, _ := previewDir(t, pkg, out, Options{}); len(doc.OverrideChanges) > 0 {
		t.Errorf("changes without a record: %+v", doc.OverrideChanges)
	}
}

// TestPreviewScanMatchesParse: plan reads the previous split by scanning;
// parsing every file (the reference) gives the same plan, and so does
// Preview when what it scanned turns out wrong (it starts over parsing).
func TestPreviewScanMatchesParse(t *testing.T) {
	pkg, out := splitBase(t)
	changeBase(t, pkg)
	plan := func(mode outdir.ReadMode, tamper bool) string {
		od, err := outdir.OpenPrevious(out)
		if err == nil && mode == outdir.ReadDigests {
			od, err = od.Reparse()
		}
		if err != nil {
			t.Fatal(err)
		}
		if tamper {
			n := 0
			for _, pc := range od.Previous {
				for _, s := range pc.Scanned {
					for k := range s.Held {
						s.Held[k].Key.Name += "-wrong"
						n++
					}
				}
			}
			if n == 0 {
				t.Fatal("nothing was scanned")
			}
		}
		in, cfg := pkgload.Load(t, pkg, od)
		doc, _, err := Preview(in, cfg, Options{Split: split.Options{Out: od}, Diff: true})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v", *doc)
	}
	want := plan(outdir.ReadDigests, false)
	if got := plan(outdir.ReadScan, false); got != want {
		t.Errorf("scanned:\n%s\nparsed:\n%s", got, want)
	}
	if got := plan(outdir.ReadScan, true); got != want {
		t.Errorf("scanned wrong, then parsed:\n%s\nparsed:\n%s", got, want)
	}
	if !strings.Contains(want, "Lease") || !strings.Contains(want, "writer") {
		t.Errorf("the plan shows too little to compare: %s", want)
	}
}
