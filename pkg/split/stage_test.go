package split

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/outdir"
)

// stageDir routes pkg against out, as apply does, and stages the result.
func stageDir(t *testing.T, pkg, out string) *Staged {
	t.Helper()
	od, plan := routeAgainst(t, pkg, out)
	s, err := Stage(od, plan)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStageCommitsOneContextAtATime: a staged context replaces its
// directory only when committed; the others keep what they held.
func TestStageCommitsOneContextAtATime(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	files := basePackage()
	writeTree(t, pkg, files)
	mustSplit(t, pkg, out)
	before := readTree(t, out)

	files["apps/web.yaml"] = strings.Replace(files["apps/web.yaml"], "name: web", "name: web2", 1)
	files["cm-b.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: b\n"
	writeTree(t, pkg, files)
	s := stageDir(t, pkg, out)
	if got := readTree(t, out); !sameFiles(before, got, "ctx-a/", "ctx-b/") {
		t.Fatal("staging changed a context directory")
	}
	if _, err := os.Stat(filepath.Join(s.Dir("ctx-b"), "cm-b.yaml")); err != nil {
		t.Fatalf("the staged package lacks the new file: %v", err)
	}
	if err := s.Commit("ctx-b"); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, out)
	if !sameFiles(before, after, "ctx-a/") {
		t.Error("committing ctx-b changed ctx-a")
	}
	if _, ok := after["ctx-b/cm-b.yaml"]; !ok {
		t.Error("ctx-b was not replaced by its staged package")
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := outdir.OpenOutDir(out); err != nil {
		t.Errorf("a half-committed output directory does not open: %v", err)
	}
}

// TestStageRestoresAnInterruptedSwap: a context directory renamed aside
// by a run that died before the new one was in place is put back.
func TestStageRestoresAnInterruptedSwap(t *testing.T) {
	pkg, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	writeTree(t, pkg, basePackage())
	mustSplit(t, pkg, out)
	before := readTree(t, out)

	// The state swap leaves between its two renames.
	tmp := filepath.Join(out, outdir.TmpPrefix+"killed")
	for _, dir := range []string{filepath.Join(tmp, "old"), filepath.Join(tmp, "new")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := outdir.WriteMarker(tmp, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(out, "ctx-a"), filepath.Join(tmp, "old", "ctx-a")); err != nil {
		t.Fatal(err)
	}
	stageDir(t, pkg, out)
	after := readTree(t, out)
	for name, data := range before {
		if after[name] != data {
			t.Errorf("%s was not restored", name)
		}
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the stale staging directory is still there: %v", err)
	}
}

// sameFiles compares the files of a and b under the prefixes.
func sameFiles(a, b map[string]string, prefixes ...string) bool {
	for _, m := range []map[string]string{a, b} {
		for name := range m {
			for _, p := range prefixes {
				if strings.HasPrefix(name, p) && a[name] != b[name] {
					return false
				}
			}
		}
	}
	return true
}
