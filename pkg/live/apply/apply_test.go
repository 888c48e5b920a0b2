package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/object"

	"github.com/shard-router/shard-router/internal/testfixture"
	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

var pkgFiles = map[string]string{
	"Kptfile": testfixture.Kptfile("demo"),
	"shards.yaml": `apiVersion: shardrouter.dev/v1alpha1
kind: ShardConfig
metadata:
  name: shards
  annotations:
    config.kubernetes.io/local-config: "true"
spec:
  contexts:
  - name: A
    namespaceSelector: {matchLabels: {shard: a}}
  - name: B
    namespaceSelector: {matchLabels: {shard: b}}
`,
	"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels:\n    shard: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n  labels:\n    shard: b\n",
	"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team\n",
}

// setup writes the package and splits it into out, as a previous apply
// would have left it.
func setup(t *testing.T) (pkg, out string) {
	t.Helper()
	pkg, out = t.TempDir(), filepath.Join(t.TempDir(), "out")
	for name, data := range pkgFiles {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		t.Fatal(err)
	}
	in, cfg := pkgload.Load(t, pkg, od)
	layout, err := plan.Build(in, cfg, plan.Options{Split: split.Options{Out: od}})
	if err != nil {
		t.Fatal(err)
	}
	if err := split.Write(od, layout); err != nil {
		t.Fatal(err)
	}
	return pkg, out
}

func runApply(t *testing.T, pkg, out, kubeconfig string) (*v1alpha1.ApplyReport, error) {
	t.Helper()
	od, err := outdir.OpenPrevious(out)
	if err != nil {
		t.Fatal(err)
	}
	in, cfg := pkgload.Load(t, pkg, od)
	return Run(context.Background(), in, cfg, Options{Plan: plan.Options{Split: split.Options{Out: od}}, Kubeconfig: kubeconfig})
}

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRefusedBeforeAnyCluster: a move the config does not allow is
// refused before the kubeconfig is even read, and OUT_DIR is unchanged.
func TestRefusedBeforeAnyCluster(t *testing.T) {
	pkg, out := setup(t)
	before := tree(t, out)
	ns := strings.Replace(pkgFiles["ns.yaml"], "shard: a", "shard: b", 1)
	if err := os.WriteFile(filepath.Join(pkg, "ns.yaml"), []byte(ns), 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := runApply(t, pkg, out, filepath.Join(t.TempDir(), "no-kubeconfig"))
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("error %v, want ErrRefused", err)
	}
	if len(report.Errors) == 0 || !strings.Contains(strings.Join(report.Errors, "\n"), "allowMoves") {
		t.Errorf("errors %q do not explain the refused move", report.Errors)
	}
	for _, c := range report.Contexts {
		if c.Status != v1alpha1.ApplySkipped {
			t.Errorf("context %s: %s, want Skipped", c.Name, c.Status)
		}
	}
	if !report.Failed() {
		t.Error("a refused run does not count as failed")
	}
	if after := tree(t, out); len(after) != len(before) {
		t.Errorf("OUT_DIR changed: %d files, was %d", len(after), len(before))
	}
}

// TestMissingContextNamedBeforeAnyWrite: a context the kubeconfig lacks is
// an error naming it, and nothing is staged or written.
func TestMissingContextNamedBeforeAnyWrite(t *testing.T) {
	pkg, out := setup(t)
	before := tree(t, out)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	data := "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: {server: \"https://127.0.0.1:1\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: A\n  context: {cluster: a, user: u}\n"
	if err := os.WriteFile(kubeconfig, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := runApply(t, pkg, out, kubeconfig)
	if err == nil || !strings.Contains(err.Error(), `"B"`) || !strings.Contains(err.Error(), kubeconfig) {
		t.Fatalf("error %v, want one naming context B and %s", err, kubeconfig)
	}
	after := tree(t, out)
	for p, data := range before {
		if after[p] != data {
			t.Errorf("%s changed", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("OUT_DIR has %d files, had %d", len(after), len(before))
	}
}

// TestPlacementWithoutNamespace: an object split wrote without a
// namespace matches its kpt identity in any namespace (kpt defaults it),
// so that a handoff is never missed.
func TestPlacementWithoutNamespace(t *testing.T) {
	p := placement{
		{Kind: "ConfigMap", Name: "c"}:                   {"B"},
		{Kind: "ConfigMap", Namespace: "x", Name: "c"}:   {"A"},
		{Kind: "Namespace", Name: "x"}:                   {"A", "B"},
		{Group: "apps", Kind: "Deployment", Name: "web"}: {"C"},
	}
	id := func(group, kind, ns, name string) object.ObjMetadata {
		return object.ObjMetadata{GroupKind: schema.GroupKind{Group: group, Kind: kind}, Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		id   object.ObjMetadata
		want []string
	}{
		{id("", "ConfigMap", "x", "c"), []string{"A", "B"}},
		{id("", "ConfigMap", "default", "c"), []string{"B"}},
		{id("", "Namespace", "", "x"), []string{"A", "B"}},
		{id("apps", "Deployment", "default", "web"), []string{"C"}},
		{id("", "Deployment", "default", "web"), nil},
	} {
		got := p.contexts(tc.id)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", describe(tc.id), got, tc.want)
		}
	}
}
