package input_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testenv"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

// parseFile is readFile on data: the reference scanFile must agree with.
func parseFile(t *testing.T, data []byte, ctx string) []input.HeldResource {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := input.ReadFile(ctx, dir, "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func keysAndStores(hs []input.HeldResource) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%v %s %s", h.Key, h.DataStore, h.Desc))
	}
	return out
}

// checkScan requires scanFile to read data as readFile does, or to refuse.
func checkScan(t *testing.T, data []byte, ctx string) bool {
	t.Helper()
	got, ok := input.ScanFile(data, ctx)
	if !ok {
		return false
	}
	want := parseFile(t, data, ctx)
	// readFile names only a file's first resource; scanFile names each.
	for i := 1; i < len(got) && i < len(want); i++ {
		got[i].Desc = ""
	}
	if !reflect.DeepEqual(keysAndStores(got), keysAndStores(want)) {
		t.Errorf("scanFile read\n%s\nas   %q\nparse %q", data, keysAndStores(got), keysAndStores(want))
	}
	return true
}

func TestScanFileCases(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"plain", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n  annotations:\n    shardrouter.dev/context: 'x,y'\n    shardrouter.dev/datastore: 'x=events,y=default'\ndata:\n  k: v\n", true},
		{"comments, quotes and compact sequences", "# head\napiVersion: rbac.authorization.k8s.io/v1 # tail? no: refused below\nkind: ClusterRole\n", false},
		{"compact sequence at column 0", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: \"r\"\n  finalizers:\n  - a\n  labels:\n    a: b\nrules:\n- apiGroups: [\"\"]\n  verbs: [get]\n", true},
		{"several documents", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n", true},
		{"local config and kpt files are skipped", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'true'\n---\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: k\n---\napiVersion: v1\nkind: C\nmetadata:\n  name: c\n", true},
		{"local-config false is routed", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'false'\n", true},
		{"flow metadata", "apiVersion: v1\nkind: A\nmetadata: {name: a}\n", false},
		{"flow document", "{apiVersion: v1, kind: A, metadata: {name: a}}\n", false},
		{"anchor", "apiVersion: v1\nkind: A\nmetadata:\n  name: &n a\n", false},
		{"alias", "apiVersion: v1\nkind: A\nmetadata:\n  name: *n\n", false},
		{"tag", "apiVersion: v1\nkind: A\nmetadata:\n  name: !!str a\n", false},
		{"block scalar", "apiVersion: v1\nkind: A\nmetadata:\n  name: |\n    a\n", false},
		{"multi-line plain", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n    b\n", false},
		{"escape", "apiVersion: v1\nkind: A\nmetadata:\n  name: \"a\\tb\"\n", false},
		{"tab", "apiVersion: v1\nkind: A\nmetadata:\n\tname: a\n", false},
		{"duplicate key", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  name: b\n", false},
		{"duplicate annotation", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    x: a\n    x: b\n", false},
		{"quoted key", "apiVersion: v1\nkind: A\nmetadata:\n  \"name\": a\n", false},
		{"boolean name", "apiVersion: v1\nkind: A\nmetadata:\n  name: true\n", false},
		{"null name", "apiVersion: v1\nkind: A\nmetadata:\n  name:\n", false},
		{"bare sequence", "- a\n- b\n", false},
		{"document end marker", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n...\n", false},
		{"odd indent", "apiVersion: v1\nkind: A\nmetadata:\n name: a\n", false},
		{"no metadata", "apiVersion: v1\nkind: A\n", true},
		{"comment in a value", "apiVersion: v1\nkind: A\nmetadata:\n  name: a # b\n", false},
		{"single quotes", "apiVersion: v1\nkind: A\nmetadata:\n  name: 'it''s'\n", true},
		{"annotation with a nested value", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    shardrouter.dev/context:\n      x: y\n", false},
		{"other annotations may be anything", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    note: |\n      line\n      line\n    shardrouter.dev/context: x\n    shardrouter.dev/datastore: events\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkScan(t, []byte(tc.data), "x"); got != tc.ok {
				t.Errorf("scanned %v, want %v", got, tc.ok)
			}
		})
	}
}

// TestScanFileAgreesOnSplitOutput: on every file split writes for generated
// packages, scanFile reads what readFile reads, and takes most files.
func TestScanFileAgreesOnSplitOutput(t *testing.T) {
	scanned, files := 0, 0
	for seed := uint64(1); seed <= uint64(testenv.Iterations(25)); seed++ {
		rnd := rand.New(rand.NewPCG(seed, 15))
		o := gen.Options{Items: 1 + rnd.IntN(200), Contexts: 1 + rnd.IntN(5), Seed: seed, Routed: rnd.IntN(2) == 0}
		in, err := input.ReadStream(bytes.NewReader(gen.Bytes(o)), yamlio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		od, err := input.OpenOutDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := splitInto(in, od); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for ctx, data := range readTree(t, out) {
			c, f, _ := strings.Cut(ctx, "/")
			if !strings.HasSuffix(f, ".yaml") || f == input.RGFile {
				continue
			}
			files++
			if checkScan(t, []byte(data), c) {
				scanned++
			}
		}
	}
	if files == 0 || scanned*10 < files*9 {
		t.Errorf("scanFile took %d of %d files", scanned, files)
	}
}

// splitInto splits in with its own config into od.
func splitInto(in *input.Input, od *input.OutDir) error {
	node, err := in.Config()
	if err != nil {
		return err
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		return results
	}
	layout, err := plan.Build(in, cfg, plan.Options{Split: split.Options{Out: od, PackageName: "gen"}})
	if err != nil {
		return err
	}
	if layout.Results.ExitCode() != 0 {
		return layout.Results
	}
	return split.Write(od, layout)
}

// readTree reads every file under dir, by slash-separated relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
