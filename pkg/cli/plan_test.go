package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
)

// stream is the package's resources as one YAML stream, without paths.
func stream(t *testing.T, pkg string) string {
	t.Helper()
	var parts []string
	for _, f := range []string{"Kptfile", "shards.yaml", "namespaces.yaml", "apps/web.yaml"} {
		parts = append(parts, readTestFile(t, filepath.Join(pkg, f)))
	}
	return strings.Join(parts, "---\n")
}

func TestPlanCommand(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")

	// A --previous that does not exist is an error naming it, not a plan
	// where everything is a create (a typo would hide every prune).
	code, stdout, stderr := execCLI(t, "", "plan", pkg, "--previous", out)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "the previous split "+out+" does not exist") {
		t.Fatalf("missing --previous: exit %d:\n%s%s", code, stdout, stderr)
	}

	// Nothing applied yet (an empty directory): everything is a create;
	// exit 0, or 2 with --detailed-exitcode. Nothing is written.
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = execCLI(t, "", "plan", pkg, "--previous", out)
	if code != 0 || !strings.Contains(stdout, "4 to create, 0 to update, 0 to prune, in 2 of 2 contexts.") {
		t.Fatalf("first plan: exit %d:\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := execCLI(t, "", "plan", pkg, "--previous", out, "--detailed-exitcode"); code != 2 {
		t.Errorf("first plan --detailed-exitcode: exit %d, want 2", code)
	}
	if entries, err := os.ReadDir(out); err != nil || len(entries) > 0 {
		t.Errorf("plan wrote into the output directory: %v %v", entries, err)
	}

	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	code, stdout, stderr = execCLI(t, "", "plan", pkg, "--previous", out, "--detailed-exitcode")
	if code != 0 || !strings.HasPrefix(stdout, "No changes.\n") {
		t.Errorf("plan after split: exit %d:\n%s%s", code, stdout, stderr)
	}

	// "-" reads a stream, and plans the same (identity and data, not paths).
	code, stdout, stderr = execCLI(t, stream(t, pkg), "plan", "-", "--previous", out, "--detailed-exitcode", "-o", "json")
	var doc v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdin: exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	if code != 0 || doc.HasChanges() || doc.Kind != "SplitPlan" || len(doc.Contexts) != 2 || doc.Contexts[0].Unchanged != 2 {
		t.Errorf("stdin: exit %d: %+v", code, doc)
	}

	// A change: exit 0, or 2 with --detailed-exitcode; markdown and --diff.
	writeTestFile(t, filepath.Join(pkg, "apps", "web.yaml"), strings.Replace(readTestFile(t, filepath.Join(pkg, "apps", "web.yaml")), "color: blue", "color: red", 1))
	if code, _, _ := execCLI(t, "", "plan", pkg, "--previous", out); code != 0 {
		t.Errorf("changes without --detailed-exitcode: exit %d", code)
	}
	code, stdout, _ = execCLI(t, "", "plan", pkg, "--previous", out, "--detailed-exitcode", "-o", "markdown", "--diff")
	if code != 2 || !strings.Contains(stdout, "| `ctx-01` | kept | 0 | 1 | 0 | 1 |") || !strings.Contains(stdout, "-  color: blue\n+  color: red\n") {
		t.Errorf("markdown: exit %d:\n%s", code, stdout)
	}

	// A refused split: the plan is printed, errors go to stderr, exit 1
	// (with or without --detailed-exitcode).
	writeTestFile(t, filepath.Join(pkg, "namespaces.yaml"), strings.Replace(readTestFile(t, filepath.Join(pkg, "namespaces.yaml")), `shard: "00"`, `shard: "01"`, 1))
	for _, args := range [][]string{{}, {"--detailed-exitcode"}} {
		code, stdout, stderr = execCLI(t, "", append([]string{"plan", pkg, "--previous", out}, args...)...)
		if code != 1 || !strings.Contains(stdout, "Namespace team-a: ctx-00 -> ctx-01  REFUSED") || !strings.Contains(stdout, "Pruned from ctx-00 (2):") ||
			!strings.Contains(stderr, "would move from") {
			t.Errorf("refused %v: exit %d:\n%s%s", args, code, stdout, stderr)
		}
	}
	// The pull request still gets its comment, the refusal first.
	code, stdout, _ = execCLI(t, "", "plan", pkg, "--previous", out, "-o", "markdown")
	refusal, table := strings.Index(stdout, "**Refused**: 2 error(s)"), strings.Index(stdout, "| context |")
	if code != 1 || refusal < 0 || table < refusal || !strings.Contains(stdout[refusal:table], "Namespace team-a would move from") {
		t.Errorf("refused markdown: exit %d:\n%s", code, stdout)
	}
	// So does an invalid config.
	writeTestFile(t, filepath.Join(pkg, "shards.yaml"), strings.Replace(readTestFile(t, filepath.Join(pkg, "shards.yaml")), "  - name: ctx-01\n", "  - name: ctx-01\n    nope: 1\n", 1))
	code, stdout, stderr = execCLI(t, "", "plan", pkg, "--previous", out, "-o", "markdown")
	if code != 1 || !strings.Contains(stdout, "**Refused**: 1 error(s)") || !strings.Contains(stdout, "spec.contexts[1].nope") || !strings.Contains(stderr, "spec.contexts[1].nope") {
		t.Errorf("invalid config: exit %d:\n%s%s", code, stdout, stderr)
	}
}

func TestPlanCommandErrors(t *testing.T) {
	pkg := copySplitPackage(t)
	if code, _, stderr := execCLI(t, "", "plan", pkg); code != 1 || !strings.Contains(stderr, "plan needs --previous OUT_DIR") {
		t.Errorf("no --previous: exit %d: %s", code, stderr)
	}
	if code, _, stderr := execCLI(t, "", "plan", pkg, "--previous", t.TempDir(), "-o", "xml"); code != 1 || !strings.Contains(stderr, `unknown output format "xml": use table, markdown, html, json or yaml`) {
		t.Errorf("bad format: exit %d: %s", code, stderr)
	}
	// A directory split did not write is refused, as split refuses it.
	notSplit := t.TempDir()
	writeTestFile(t, filepath.Join(notSplit, "x.yaml"), "a: b\n")
	if code, _, stderr := execCLI(t, "", "plan", pkg, "--previous", notSplit); code != 1 || !strings.Contains(stderr, "not written by shard-router split") {
		t.Errorf("foreign directory: exit %d: %s", code, stderr)
	}
}

// plan shows a change of a context's etcd overrides in every format, even
// when no object changes; --detailed-exitcode counts it; it refuses what
// `overrides --previous` refuses, with the same report.
func TestPlanOverridesChanges(t *testing.T) {
	pkg := copySplitPackage(t)
	cfgPath := filepath.Join(pkg, "shards.yaml")
	withStore := readTestFile(t, cfgPath) + "    dataStores:\n    - name: events\n      endpoints: [\"https://etcd-events:2379\"]\n  dataStoreOverrides:\n  - resource: /events\n    dataStore: events\n"
	writeTestFile(t, cfgPath, withStore)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	prevCfg := filepath.Join(t.TempDir(), "prev.yaml")
	writeTestFile(t, prevCfg, withStore)
	writeTestFile(t, cfgPath, strings.Replace(withStore, "etcd-events:2379", "etcd-events-2:2379", 1))

	code, stdout, _ := execCLI(t, "", "plan", pkg, "--previous", out, "-o", "json")
	var doc v1alpha1.SplitPlan
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 1 {
		t.Fatalf("json: exit %d, %v:\n%s", code, err, stdout)
	}
	_, ovOut, _ := execCLI(t, "", "overrides", "--config", cfgPath, "--previous", prevCfg, "-o", "json")
	var ov v1alpha1.OverridesChangeReport
	if err := json.Unmarshal([]byte(ovOut), &ov); err != nil {
		t.Fatal(err)
	}
	if len(doc.OverrideChanges) != 1 || !reflect.DeepEqual(doc.OverrideChanges, ov.Changes) || doc.OverrideChanges[0].Allowed {
		t.Errorf("plan's override changes:\n%+v\noverrides --previous:\n%+v", doc.OverrideChanges, ov.Changes)
	}
	for _, c := range doc.Contexts {
		if len(c.Create)+len(c.Update)+len(c.Prune) > 0 {
			t.Errorf("%s: object changes %+v", c.Name, c)
		}
	}
	msg := doc.OverrideChanges[0].Message
	for _, format := range []string{"table", "markdown", "yaml"} {
		code, stdout, _ := execCLI(t, "", "plan", pkg, "--previous", out, "-o", format)
		if code != 1 || !strings.Contains(stdout, "etcd-events-2:2379") {
			t.Errorf("%s: exit %d:\n%s", format, code, stdout)
		}
	}
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 1 || !strings.Contains(stderr, msg) {
		t.Errorf("split accepted the change: exit %d:\n%s", code, stderr)
	}
	// Allowed: a change all the same, exit 2 with --detailed-exitcode.
	writeTestFile(t, cfgPath, strings.Replace(readTestFile(t, cfgPath), "spec:\n", "spec:\n  allowDataStoreChanges: true\n", 1))
	if code, stdout, _ := execCLI(t, "", "plan", pkg, "--previous", out, "--detailed-exitcode"); code != 2 || !strings.Contains(stdout, "1 etcd override change(s)") {
		t.Errorf("allowed: exit %d, want 2:\n%s", code, stdout)
	}
}

// 40 clusters and one changed CRD (a big one, changed in its labels and its
// schema): the markdown plan shows its diff once, naming the CRD and the
// contexts, far within a pull-request comment.
func TestPlanMarkdownOneCRDForty(t *testing.T) {
	if testing.Short() {
		t.Skip("a split and a plan of 40 contexts; in test-slow")
	}
	pkg := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("apiVersion: shardrouter.dev/v1alpha1\nkind: ShardConfig\nmetadata:\n  name: shards\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  contexts:\n")
	for c := range 40 {
		fmt.Fprintf(&cfg, "  - name: cluster-%02d\n    namespaceSelector: {matchLabels: {shard: \"%02d\"}}\n", c, c)
	}
	writeTestFile(t, filepath.Join(pkg, "Kptfile"), testfixture.Kptfile("crds"))
	writeTestFile(t, filepath.Join(pkg, "shards.yaml"), cfg.String())
	var props strings.Builder
	for i := range 300 {
		fmt.Fprintf(&props, "              field%03d:\n                type: string\n                description: field %d of a widget, with a description long enough to matter\n", i, i)
	}
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n  labels:\n    version: \"1\"\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n" + props.String()
	writeTestFile(t, filepath.Join(pkg, "crd.yaml"), crd)
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split: %s", stderr)
	}
	changed := strings.Replace(crd, `version: "1"`, `version: "2"`, 1)
	writeTestFile(t, filepath.Join(pkg, "crd.yaml"), strings.Replace(changed, "field 150 of a widget", "field 150 of a gadget", 1))
	code, md, stderr := execCLI(t, "", "plan", pkg, "--previous", out, "-o", "markdown", "--diff", "--detailed-exitcode")
	if code != 2 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(md) > 16000 || strings.Count(md, "```diff") != 1 || strings.Contains(md, "Abridged") {
		t.Errorf("%d characters, %d diffs:\n%.3000s", len(md), strings.Count(md, "```diff"), md)
	}
	for _, want := range []string{"Diffs (1 distinct, of 40 updates)", "**`CustomResourceDefinition.apiextensions.k8s.io widgets.example.com`** (`crd.yaml`) in all 40 contexts",
		"shardrouter.dev/context: <context>", "-    version: \"1\"\n+    version: \"2\"\n", "of a gadget"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%.3000s", want, md)
		}
	}
	_, js, _ := execCLI(t, "", "plan", pkg, "--previous", out, "-o", "json", "--diff")
	t.Logf("markdown %d characters; the JSON plan, every diff, %d", len(md), len(js))
}
