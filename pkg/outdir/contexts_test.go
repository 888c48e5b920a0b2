package outdir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestContexts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte(MarkerFormat+"\ncontext b\ncontext a\nfile x.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Contexts(dir); err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("Contexts = %v, %v; want [b a] (the marker's order)", got, err)
	}
	if _, err := Contexts(t.TempDir()); !errors.Is(err, ErrNotSplitDir) {
		t.Errorf("a directory without a marker: %v", err)
	}
}
