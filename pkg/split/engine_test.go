package split

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

var testSource = gitops.Source{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "fleet/out", Interval: time.Minute}

// splitEngine splits pkg to out for engine, as `split --engine` does.
func splitEngine(t *testing.T, pkg, out string, engine gitops.Engine) (*Layout, error) {
	t.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		return nil, err
	}
	in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
	if err != nil {
		return nil, err
	}
	return runRoute(t, in, od, &Options{Engine: engine, Source: testSource})
}

// An engine's context directories are kpt's less the Kptfile and the
// ResourceGroup, byte for byte; the engine's own objects are in
// gitops.Dir; a second split changes nothing; going back to kpt removes
// gitops.Dir and gives kpt's split again.
func TestEngineSplitIsKptsWithoutInventory(t *testing.T) {
	pkg := t.TempDir()
	writeTree(t, pkg, basePackage())
	kptOut := filepath.Join(t.TempDir(), "out")
	mustSplit(t, pkg, kptOut)
	kpt := readTree(t, kptOut)
	for _, engine := range []gitops.Engine{gitops.Flux, gitops.ArgoCD, gitops.ConfigSync} {
		t.Run(string(engine), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if _, err := splitEngine(t, pkg, out, engine); err != nil {
				t.Fatal(err)
			}
			got := readTree(t, out)
			engineFiles := 0
			for p, data := range got {
				if strings.HasPrefix(p, gitops.Dir+"/") {
					engineFiles++
					continue
				}
				if filepath.Base(p) == outdir.MarkerFile && p != outdir.MarkerFile {
					continue // it lists the files, Kptfile and ResourceGroup aside
				}
				if kpt[p] != data {
					t.Errorf("%s differs from kpt's split:\n%s\nkpt:\n%s", p, data, kpt[p])
				}
			}
			for p := range kpt {
				base := filepath.Base(p)
				_, held := got[p]
				switch {
				case base == yamlio.KptfileName || base == outdir.RGFile:
					if held {
						t.Errorf("%s: %s is kpt's and must not be in an %s split", p, base, engine)
					}
				case !held:
					t.Errorf("%s is missing from the %s split", p, engine)
				}
			}
			if engineFiles < 2 { // the marker and at least one object file
				t.Fatalf("%s holds %d files", gitops.Dir, engineFiles)
			}
			markerAfterFiles(t, out) // as a later split finds them, the scan trusts the files
			before := inodes(t, out)
			delete(before, outdir.MarkerFile) // OUT_DIR's own marker is rewritten by every split
			if _, err := splitEngine(t, pkg, out, engine); err != nil {
				t.Fatal(err)
			}
			after := inodes(t, out)
			delete(after, outdir.MarkerFile)
			if !maps.Equal(before, after) {
				var changed []string
				for k, v := range after {
					if before[k] != v {
						changed = append(changed, k)
					}
				}
				t.Errorf("a second split rewrote %v", changed)
			}
			mustSplit(t, pkg, out)
			if back := readTree(t, out); !equalMaps(back, kpt) {
				t.Errorf("a kpt split after an %s split is not kpt's split: %d files, want %d", engine, len(back), len(kpt))
			}
		})
	}
}

// A file that split did not write in gitops.Dir stops the split before it
// writes anything.
func TestEngineDirNotWrittenBySplitIsRefused(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	if _, err := splitEngine(t, pkg, out, gitops.Flux); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(out, gitops.Dir, "mine.yaml")
	if err := os.WriteFile(stray, []byte("kind: Mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, out)
	_, err := splitEngine(t, pkg, out, gitops.ArgoCD)
	if err == nil || !strings.Contains(err.Error(), "mine.yaml") {
		t.Fatalf("split over a stray file in %s: %v, want an error naming it", gitops.Dir, err)
	}
	if after := readTree(t, out); !maps.Equal(before, after) {
		t.Error("the refused split changed the output")
	}
}

// A context named like the engine directory is refused with an engine.
func TestContextNamedLikeEngineDir(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := basePackage()
	files["shards.yaml"] = strings.ReplaceAll(files["shards.yaml"], "ctx-b", gitops.Dir)
	writeTree(t, pkg, files)
	if _, err := splitEngine(t, pkg, out, gitops.Flux); err == nil || !strings.Contains(err.Error(), gitops.Dir) {
		t.Fatalf("split with a context named %s: %v, want a refusal", gitops.Dir, err)
	}
}

// The engine's objects parse, and name each context's directory.
func TestEngineObjectsNameEachContextDir(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	plan, err := splitEngine(t, pkg, out, gitops.Flux)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, gitops.Dir, filepath.FromSlash(gitops.FluxManagementFile)))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, n := range nodes {
		if n.GetKind() != "Kustomization" {
			continue
		}
		p, err := n.GetString("spec.path")
		if err != nil {
			t.Fatal(err)
		}
		paths[p] = true
	}
	for _, pkg := range plan.Packages {
		if want := "./fleet/out/" + pkg.Context; !paths[want] {
			t.Errorf("no Kustomization with path %s among %v", want, paths)
		}
	}
	if len(paths) != len(plan.Packages) {
		t.Errorf("%d Kustomizations for %d contexts", len(paths), len(plan.Packages))
	}
}

// With kpt, a context may be named like the engine directory: it is that
// context's package, written and kept like any other.
func TestKptContextNamedLikeEngineDir(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := basePackage()
	files["shards.yaml"] = strings.ReplaceAll(files["shards.yaml"], "ctx-b", gitops.Dir)
	writeTree(t, pkg, files)
	for range 2 {
		mustSplit(t, pkg, out)
		if _, err := os.Stat(filepath.Join(out, gitops.Dir, "apps", "web.yaml")); err != nil {
			t.Fatalf("the package of context %s: %v", gitops.Dir, err)
		}
	}
}
