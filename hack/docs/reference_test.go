package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReferenceUpToDate regenerates the command reference and compares it
// with docs/reference, file by file: help text and reference are one source.
func TestReferenceUpToDate(t *testing.T) {
	want := filepath.Join("..", "..", filepath.FromSlash(referenceDir))
	got := t.TempDir()
	if err := writeReference(got); err != nil {
		t.Fatal(err)
	}
	gotFiles, _ := filepath.Glob(filepath.Join(got, "*.md"))
	wantFiles, _ := filepath.Glob(filepath.Join(want, "*.md"))
	if len(gotFiles) == 0 {
		t.Fatal("writeReference wrote no page")
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
			t.Errorf("%s/%s is stale or missing: run `make docs`", referenceDir, name)
		}
	}
	for name := range names {
		t.Errorf("%s/%s documents no command: run `make docs`", referenceDir, name)
	}
}
