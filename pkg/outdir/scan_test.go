package outdir_test

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
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/plan"
	"github.com/shard-router/shard-router/pkg/split"
)

// parseFile is readFile on data: the reference scanFile must agree with.
func parseFile(t *testing.T, data []byte, ctx string) []outdir.HeldResource {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := outdir.ReadFile(ctx, dir, "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func keysAndStores(hs []outdir.HeldResource) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%v %s %s", h.Key, h.DataStore, h.Desc))
	}
	return out
}

// checkScan requires scanFile to read data as readFile does, or to refuse.
func checkScan(t *testing.T, data []byte, ctx string) bool {
	t.Helper()
	got, ok := outdir.ScanFile(data, ctx)
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

// TestScanFileCases: what scanFile adds to yamlio.ScanObjects (which
// resources readFile skips, the datastore in the context) is readFile's.
func TestScanFileCases(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"datastore in each context", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n  annotations:\n    shardrouter.dev/context: 'x,y'\n    shardrouter.dev/datastore: 'x=events,y=default'\n", true},
		{"a datastore without contexts", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    shardrouter.dev/datastore: events\n", true},
		{"an invalid datastore", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    shardrouter.dev/context: x\n    shardrouter.dev/datastore: 'y=events'\n", true},
		{"local config and kpt files are skipped", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'true'\n---\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: k\n---\napiVersion: kpt.dev/v1alpha1\nkind: ResourceGroup\nmetadata:\n  name: rg\n---\napiVersion: v1\nkind: C\nmetadata:\n  name: c\n", true},
		{"local-config false is routed", "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/local-config: 'false'\n", true},
		{"unnamed is skipped", "apiVersion: v1\nkind: A\nmetadata:\n  namespace: a\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n", true},
		{"refused by ScanObjects", "apiVersion: v1\nkind: A\nmetadata: {name: a}\n", false},
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
		o := gen.Options{Items: 1 + rnd.IntN(testenv.Iterations(200)), Contexts: 1 + rnd.IntN(5), Seed: seed, Routed: rnd.IntN(2) == 0}
		in, err := input.ReadStream(bytes.NewReader(gen.Bytes(o)), yamlio.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		od, err := outdir.OpenOutDir(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := splitInto(in, od); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		for ctx, data := range readTree(t, out) {
			c, f, _ := strings.Cut(ctx, "/")
			if !strings.HasSuffix(f, ".yaml") || f == outdir.RGFile {
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
func splitInto(in *input.Input, od *outdir.OutDir) error {
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
