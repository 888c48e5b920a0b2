package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/refdocs"
)

// TestReferenceUpToDate regenerates the command reference and compares it
// with docs/reference, file by file: help text and reference are one source.
// It is a test of this package, whose help text the reference is, rather
// than of hack/docs: a test binary of its own would link every command
// again.
func TestReferenceUpToDate(t *testing.T) {
	want := filepath.Join("..", "..", filepath.FromSlash(refdocs.Dir))
	got := t.TempDir()
	if err := refdocs.Write(got); err != nil {
		t.Fatal(err)
	}
	gotFiles, _ := filepath.Glob(filepath.Join(got, "*.md"))
	wantFiles, _ := filepath.Glob(filepath.Join(want, "*.md"))
	if len(gotFiles) == 0 {
		t.Fatal("refdocs.Write wrote no page")
	}
	names := map[string]bool{}
	for _, f := range wantFiles {
		names[filepath.Base(f)] = true
	}
	for _, f := range gotFiles {
		name := filepath.Base(f)
		delete(names, name)
		g, _ := os.ReadFile(f)
		w, err := os.ReadFile(filepath.Join(want, name))
		if err != nil || string(g) != string(w) {
			t.Errorf("%s/%s is stale or missing: run `make docs`", refdocs.Dir, name)
		}
	}
	for name := range names {
		t.Errorf("%s/%s documents no command: run `make docs`", refdocs.Dir, name)
	}
}
