package outdir_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/shard-router/shard-router/pkg/outdir"
)

// A stamp tells a file unchanged since it was stamped, without reading
// it, only when the file was last changed before the reference file was
// written: an edit since, or a file changed after the reference, is never
// told unchanged.
func TestStamp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are stamped on Linux only; elsewhere they are read")
	}
	dir := t.TempDir()
	old, late, ref := filepath.Join(dir, "old"), filepath.Join(dir, "late"), filepath.Join(dir, "ref")
	lstat := func(p string) os.FileInfo {
		t.Helper()
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	write := func(p, data string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(old, "a")
	// Past the filesystem clock's tick: the reference is written later.
	time.Sleep(50 * time.Millisecond)
	write(ref, "")
	write(late, "b")
	s := outdir.StampOf(lstat(old), lstat(ref))
	if !s.Same(lstat(old)) {
		t.Fatal("an unchanged file is not told unchanged")
	}
	write(old, "c")
	if s.Same(lstat(old)) {
		t.Error("an edited file is told unchanged")
	}
	if l := outdir.StampOf(lstat(late), lstat(ref)); l.Same(lstat(late)) {
		t.Error("a file changed after the reference is told unchanged")
	}
	if (outdir.Stamp{}).Same(lstat(ref)) {
		t.Error("the zero stamp tells a file unchanged")
	}
}
