package outdir

import (
	"os"
	"path/filepath"
	"testing"
)

// The rollout record keeps the package a context held before the rollout
// (the first one, whatever the later runs change), survives a reopen (a
// kill), and puts that package back into OUT_DIR.
func TestRolloutRecord(t *testing.T) {
	out := t.TempDir()
	write := func(ctx, value string) {
		t.Helper()
		dir := filepath.Join(out, ctx)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range map[string]string{RGFile: "rg\n", "cm.yaml": value} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(dir string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "cm.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write("A", "v1")
	d := &OutDir{Path: out, Given: out}
	rec, err := OpenRollout(d)
	if err != nil || rec.Exists() {
		t.Fatalf("a new OUT_DIR: exists %v, %v", rec.Exists(), err)
	}
	waves := []string{"canary", "rest"}
	if err := rec.Save("A", "canary", waves); err != nil {
		t.Fatal(err)
	}
	if err := rec.Save("B", "rest", waves); err != nil { // no previous package
		t.Fatal(err)
	}
	if err := rec.MarkBaked("canary"); err != nil {
		t.Fatal(err)
	}
	write("A", "v2") // the rollout committed its new package
	if err := rec.Save("A", "canary", waves); err != nil {
		t.Fatal(err)
	}

	rec, err = OpenRollout(d) // as after a kill
	if err != nil || !rec.Exists() {
		t.Fatalf("reopened: exists %v, %v", rec.Exists(), err)
	}
	if a, b := rec.Recorded("A"), rec.Recorded("B"); a == nil || !a.Previous || a.Wave != "canary" || b == nil || b.Previous {
		t.Fatalf("recorded A %+v, B %+v", a, b)
	}
	if rec.HasBaked("canary") {
		t.Error("canary changed A again after its bake, and still counts as baked")
	}
	if got := read(rec.PreviousDir("A")); got != "v1" {
		t.Errorf("A's previous package holds %q, want v1", got)
	}
	if err := rec.Restore("A"); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(out, "A")); got != "v1" {
		t.Errorf("OUT_DIR/A holds %q after the restore, want v1", got)
	}
	if err := rec.Remove(); err != nil || rec.Exists() {
		t.Fatalf("removed: exists %v, %v", rec.Exists(), err)
	}
	if _, err := os.Stat(filepath.Join(out, RolloutDir)); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", RolloutDir, err)
	}
}
