package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shard-router/shard-router/pkg/outdir"
)

// A split -o while another writer holds OUT_DIR is refused at once and
// writes nothing; once released, split writes and leaves no lock file.
func TestSplitRefusesALockedOutDir(t *testing.T) {
	pkg := copySplitPackage(t)
	out := filepath.Join(t.TempDir(), "out")
	held, err := outdir.LockOutDir(out, true)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := execCLI(t, "", "split", pkg, "-o", out)
	if code != 1 || !strings.Contains(stderr, out) || !strings.Contains(stderr, "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("split into a locked OUT_DIR: exit %d, stderr %q; want 1 naming %s and the holder's pid", code, stderr, out)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 || entries[0].Name() != outdir.LockFile {
		t.Fatalf("the refused split wrote %v", entries)
	}
	held.Unlock()
	if code, _, stderr := execCLI(t, "", "split", pkg, "-o", out); code != 0 {
		t.Fatalf("split after the lock was released: exit %d: %s", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(out, outdir.LockFile)); !os.IsNotExist(err) {
		t.Errorf("split left its lock file in OUT_DIR: %v", err)
	}
}
