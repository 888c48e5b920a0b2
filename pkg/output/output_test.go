package output

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ref(group, kind, ns, name string) v1alpha1.ObjectRef {
	return v1alpha1.ObjectRef{Group: group, Kind: kind, Namespace: ns, Name: name}
}

// samplePlan has every part of a plan: each context state, every category,
// a mass deletion, moves and datastore changes refused and allowed, errors
// and warnings (one with characters markdown must escape), and a diff.
func samplePlan() *v1alpha1.SplitPlan {
	return &v1alpha1.SplitPlan{
		TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.SplitPlanKind),
		Contexts: []v1alpha1.ContextPlan{
			{Name: "eu-shard-00", State: v1alpha1.ContextKept,
				Create:    []v1alpha1.ObjectRef{ref("", "ConfigMap", "payments", "new-settings")},
				Update:    []v1alpha1.ObjectRef{ref("apps", "Deployment", "payments", "api")},
				Prune:     []v1alpha1.ObjectRef{ref("", "Service", "payments", "old")},
				Unchanged: 40, Previous: 42,
				Diffs: []v1alpha1.ObjectDiff{{Ref: ref("apps", "Deployment", "payments", "api"),
					Diff: "--- previous/eu-shard-00/payments.yaml\n+++ new/eu-shard-00/payments.yaml\n@@ -1,3 +1,3 @@\n spec:\n-  replicas: 2\n+  replicas: 3\n   template:\n"}}},
			{Name: "eu-shard-01", State: v1alpha1.ContextKept,
				Prune:     []v1alpha1.ObjectRef{ref("", "Namespace", "", "search"), ref("apps", "StatefulSet", "search", "index"), ref("rbac.authorization.k8s.io", "RoleBinding", "search", "oncall")},
				Unchanged: 2, Previous: 5, MassPrune: true},
			{Name: "eu-shard-02", State: v1alpha1.ContextAdded,
				Create: []v1alpha1.ObjectRef{ref("rbac.authorization.k8s.io", "ClusterRole", "", "reader")}},
			{Name: "eu-shard-03", State: v1alpha1.ContextKept, Unchanged: 7, Previous: 7},
			{Name: "old-shard", State: v1alpha1.ContextDropped,
				Prune: []v1alpha1.ObjectRef{ref("rbac.authorization.k8s.io", "ClusterRole", "", "reader")}, Previous: 1},
		},
		Moves: []v1alpha1.Move{
			{Ref: ref("", "Namespace", "", "search"), From: []string{"eu-shard-01"}, To: []string{"eu-shard-02"}, Refused: true},
			{Ref: ref("rbac.authorization.k8s.io", "ClusterRole", "", "reader"), From: []string{"eu-shard-00", "old-shard"}, To: []string{"eu-shard-00", "eu-shard-02"}},
		},
		DataStoreChanges: []v1alpha1.DataStoreChange{
			{Ref: ref("coordination.k8s.io", "Lease", "payments", "leader"), Context: "eu-shard-00", From: "events", To: "default", Refused: true},
			{Ref: ref("", "Event", "payments", "e1"), Context: "eu-shard-00", From: "events", To: "default"},
		},
		OverrideChanges: []v1alpha1.OverrideChange{{Context: "eu-shard-00", Resource: "coordination.k8s.io/leases",
			From: v1alpha1.OverrideLocation{DataStore: "events", Servers: []string{"https://etcd-events:2379"}}, To: v1alpha1.OverrideLocation{DataStore: "default"},
			Severity: "error", Message: `context "eu-shard-00": coordination.k8s.io/leases moves from datastore "events" (https://etcd-events:2379) to the main etcd (--etcd-servers): refused`}},
		Errors:   []string{`namespaces.yaml[1]: Namespace search would move from "eu-shard-01" to "eu-shard-02": <set spec.allowMoves>`},
		Warnings: []string{"shards.yaml[0]: a warning & more"},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test ./pkg/output -update rewrites it):\n%s", p, got)
	}
}

func TestPlanTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderPlanTable(&b, samplePlan()); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.table", b.Bytes())
	// Deletions never hide in a count: every pruned object is named.
	for _, c := range samplePlan().Contexts {
		for _, r := range c.Prune {
			if !strings.Contains(b.String(), "  "+r.String()+"\n") {
				t.Errorf("the table does not name %s", r)
			}
		}
	}
}

func TestPlanMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := RenderPlanMarkdown(&b, samplePlan()); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.md", b.Bytes())
	md := b.String()
	if strings.Contains(md, "<set") || !strings.Contains(md, "&lt;set spec.allowMoves&gt;") {
		t.Error("a message's < > is not escaped")
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
}

func TestPlanMarkdownNoChanges(t *testing.T) {
	p := &v1alpha1.SplitPlan{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.SplitPlanKind),
		Contexts: []v1alpha1.ContextPlan{{Name: "a|b", State: v1alpha1.ContextKept, Unchanged: 3, Previous: 3}}}
	var b bytes.Buffer
	if err := RenderPlanMarkdown(&b, p); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); !strings.Contains(md, "**No changes.**") || strings.Contains(md, ":warning:") || strings.Contains(md, "<details>") ||
		!strings.Contains(md, "| `a\\|b` | kept | 0 | 0 | 0 | 3 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

// bigPlan has 64 contexts, each with 150 creates, 10 prunes, 300 updates
// with distinct diffs of 2 kB, and 2,000 errors.
func bigPlan() *v1alpha1.SplitPlan {
	p := &v1alpha1.SplitPlan{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.SplitPlanKind)}
	for c := range 64 {
		name := "shard-" + string(rune('a'+c/26)) + string(rune('a'+c%26))
		cp := v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextKept}
		for i := range 150 {
			cp.Create = append(cp.Create, ref("", "ConfigMap", "ns", fmt.Sprintf("c%03d", i)))
		}
		for i := range 10 {
			cp.Prune = append(cp.Prune, ref("", "Secret", "ns", fmt.Sprintf("p%d", i)))
		}
		for i := range 300 {
			r := ref("apps", "Deployment", "ns", fmt.Sprintf("d%03d", i))
			cp.Update = append(cp.Update, r)
			cp.Diffs = append(cp.Diffs, v1alpha1.ObjectDiff{Ref: r, Diff: fmt.Sprintf("--- previous/%s/d.yaml\n+++ new/%s/d.yaml\n@@ -1 +1 @@\n-x: %s\n+x: %s %d\n", name, name, strings.Repeat("a", 1000), strings.Repeat("b", 1000), c)})
		}
		p.Contexts = append(p.Contexts, cp)
	}
	for i := range 2000 {
		p.Errors = append(p.Errors, fmt.Sprintf("x.yaml[%d]: Namespace n%d would move from \"a\" to \"b\"", i, i))
	}
	return p
}

// A huge plan fits in one comment: refusals first, then the summary
// table; what is left out is counted, with how to get the full plan.
func TestPlanMarkdownHugeFits(t *testing.T) {
	var b bytes.Buffer
	if err := RenderPlanMarkdown(&b, bigPlan()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if len(md) > MarkdownLimit {
		t.Errorf("%d characters, more than %d", len(md), MarkdownLimit)
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
	refused, first := strings.Index(md, "**Refused**: 2000 error(s)"), strings.Index(md, "- x.yaml[0]: Namespace n0")
	if refused < 0 || first < refused || !strings.HasPrefix(md, "### shard-router plan\n\n**") {
		t.Errorf("the refusal does not come first:\n%.600s", md)
	}
	for _, want := range []string{"**Abridged**", "errors", "diffs", "-o json --diff"} {
		if !strings.Contains(md[:strings.Index(md, "\n\n> :no_entry:")+1000], want) {
			t.Errorf("the note under the headline lacks %q:\n%.1200s", want, md)
		}
	}
}

// 40 clusters with one changed CRD: its diff appears once, naming the CRD
// and every context, with the context annotation that names each context
// written as <context>.
func TestPlanMarkdownSharedDiff(t *testing.T) {
	crd := ref("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com")
	var body strings.Builder
	for i := range 400 {
		fmt.Fprintf(&body, "           description: field %d of the widget, a long description line\n", i)
	}
	p := &v1alpha1.SplitPlan{TypeMeta: v1alpha1.NewTypeMeta(v1alpha1.SplitPlanKind)}
	for c := range 40 {
		name := fmt.Sprintf("cluster-%02d", c)
		diff := fmt.Sprintf("--- previous/%s/crds/widgets.yaml\n+++ new/%s/crds/widgets.yaml\n@@ -1,405 +1,405 @@\n metadata:\n   annotations:\n     shardrouter.dev/context: '%s'\n-    version: 1\n+    version: 2\n%s", name, name, name, body.String())
		p.Contexts = append(p.Contexts, v1alpha1.ContextPlan{Name: name, State: v1alpha1.ContextKept, Update: []v1alpha1.ObjectRef{crd}, Unchanged: 9,
			Diffs: []v1alpha1.ObjectDiff{{Ref: crd, Diff: diff}}})
	}
	var b bytes.Buffer
	if err := RenderPlanMarkdown(&b, p); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if len(md) > MarkdownLimit || len(md) > len(p.Contexts[0].Diffs[0].Diff)+12000 {
		t.Errorf("%d characters for one diff of %d", len(md), len(p.Contexts[0].Diffs[0].Diff))
	}
	for _, want := range []string{"Diffs (1 distinct, of 40 updates)", "**`CustomResourceDefinition.apiextensions.k8s.io widgets.example.com`** (`crds/widgets.yaml`) in all 40 contexts",
		"--- previous/crds/widgets.yaml\n+++ new/crds/widgets.yaml\n", "     shardrouter.dev/context: <context>\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Contains(md, "Abridged") || strings.Count(md, "```diff") != 1 {
		t.Errorf("%d diffs shown, or abridged:\n%.2000s", strings.Count(md, "```diff"), md)
	}
}

// The table names what each context creates, updates and prunes; long
// lists of creates and updates end with a count, prunes never do.
func TestPlanTableNamesObjects(t *testing.T) {
	p := bigPlan()
	p.Errors = nil
	var b bytes.Buffer
	if err := RenderPlanTable(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"\nCreated in shard-aa (150):\n  ConfigMap ns/c000\n", "  ConfigMap ns/c049\n  ... and 100 more (-o json lists them all)\n",
		"\nUpdated in shard-aa (300):\n  Deployment.apps ns/d000\n", "\nPruned from shard-cl (10):\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	if n := strings.Count(out, "  Secret ns/p"); n != 640 {
		t.Errorf("%d prunes named, want all 640", n)
	}
}

// The JSON and YAML forms round-trip through the Go type, and carry the
// issue's field names.
func TestPlanJSONRoundTrip(t *testing.T) {
	p := samplePlan()
	for _, format := range []string{JSON, YAML} {
		var b bytes.Buffer
		if err := (Printer{Formats: []string{JSON, YAML}}).Print(&b, format, p); err != nil {
			t.Fatal(err)
		}
		var back v1alpha1.SplitPlan
		var err error
		if format == JSON {
			err = json.Unmarshal(b.Bytes(), &back)
		} else {
			err = sigsyaml.UnmarshalStrict(b.Bytes(), &back)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, p) {
			t.Errorf("%s round trip:\n%+v\n%+v", format, back, *p)
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, p); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b.Bytes(), &generic); err != nil {
		t.Fatal(err)
	}
	if generic["apiVersion"] != "shardrouter.dev/v1alpha1" || generic["kind"] != "SplitPlan" {
		t.Errorf("apiVersion/kind: %v %v", generic["apiVersion"], generic["kind"])
	}
	ctx := generic["contexts"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "state", "create", "update", "prune", "unchanged"} {
		if _, ok := ctx[k]; !ok {
			t.Errorf("context has no %q", k)
		}
	}
	r := ctx["create"].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(r, map[string]any{"group": "", "kind": "ConfigMap", "namespace": "payments", "name": "new-settings"}) {
		t.Errorf("ref: %v", r)
	}
	m := generic["moves"].([]any)[0].(map[string]any)
	for _, k := range []string{"ref", "from", "to", "refused"} {
		if _, ok := m[k]; !ok {
			t.Errorf("move has no %q", k)
		}
	}
	d := generic["dataStoreChanges"].([]any)[0].(map[string]any)
	for _, k := range []string{"ref", "context", "from", "to", "refused"} {
		if _, ok := d[k]; !ok {
			t.Errorf("datastore change has no %q", k)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("xml", "table", JSON, YAML); err == nil || err.Error() != `unknown output format "xml": use table, json or yaml` {
		t.Errorf("error %v", err)
	}
	if err := Check("json", "table", JSON); err != nil {
		t.Error(err)
	}
}
