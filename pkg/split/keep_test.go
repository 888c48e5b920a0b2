package split

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// inodes maps every directory and file under dir (slash paths, "." for
// dir) to its inode.
func inodes(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = info.Sys().(*syscall.Stat_t).Ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// freshSplit splits pkg into a new directory and returns what it wrote.
func freshSplit(t *testing.T, pkg string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	mustSplit(t, pkg, out)
	return readTree(t, out)
}

// wantFresh fails unless out holds what a fresh split of pkg writes.
func wantFresh(t *testing.T, pkg, out string) {
	t.Helper()
	want, got := freshSplit(t, pkg), readTree(t, out)
	if !reflect.DeepEqual(got, want) {
		for _, k := range keys(want) {
			if got[k] != want[k] {
				t.Errorf("%s:\n%s\nwant:\n%s", k, got[k], want[k])
			}
		}
		for _, k := range keys(got) {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: not in a fresh split", k)
			}
		}
	}
}

// markerAfterFiles rewrites each context's marker (same bytes) until its
// ctime is past every file's, as when a split's last files were written
// a clock tick before its markers: the files' ids are then trusted.
func markerAfterFiles(t *testing.T, out string) {
	t.Helper()
	for _, ctx := range []string{"ctx-a", "ctx-b"} {
		dir := filepath.Join(out, ctx)
		marker := filepath.Join(dir, outdir.MarkerFile)
		data, err := os.ReadFile(marker)
		if err != nil {
			t.Fatal(err)
		}
		var newest syscall.Timespec
		for rel := range readTree(t, dir) {
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(dir, rel), &st); err != nil {
				t.Fatal(err)
			}
			if st.Ctim.Nano() > newest.Nano() {
				newest = st.Ctim
			}
		}
		for deadline := time.Now().Add(5 * time.Second); ; {
			if err := os.WriteFile(marker, data, 0o644); err != nil {
				t.Fatal(err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(marker, &st); err != nil {
				t.Fatal(err)
			}
			if st.Ctim.Nano() > newest.Nano() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the filesystem clock did not move past the files' ctime")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestUnchangedContextIsKept(t *testing.T) {
	pkg, out := splitBase(t)
	before := inodes(t, out)
	edit(t, filepath.Join(pkg, "apps", "web.yaml"), "key: value", "key: other") // ctx-b only
	mustSplit(t, pkg, out)
	wantFresh(t, pkg, out)
	after := inodes(t, out)
	kept, replaced := 0, 0
	for p, ino := range before {
		switch {
		case strings.HasPrefix(p, "ctx-a"):
			if after[p] != ino {
				t.Errorf("%s was replaced, though ctx-a did not change", p)
			}
			kept++
		case strings.HasPrefix(p, "ctx-b"):
			if after[p] == ino {
				t.Errorf("%s was kept, though ctx-b changed", p)
			}
			replaced++
		}
	}
	if kept < 4 || replaced < 4 {
		t.Fatalf("%d paths in ctx-a, %d in ctx-b: the fixture changed", kept, replaced)
	}
	// Nothing changed: nothing is written.
	before = inodes(t, out)
	mustSplit(t, pkg, out)
	for p, ino := range inodes(t, out) {
		if p != "." && p != outdir.MarkerFile && before[p] != ino {
			t.Errorf("%s was replaced, though nothing changed", p)
		}
	}
	wantFresh(t, pkg, out)
}

// An edit of a previous file is rewritten however it was made: in place
// with the same size and its mtime set back, before the re-split's scan or
// between the scan and the write.
func TestEditedFileIsRewritten(t *testing.T) {
	for _, when := range []string{"before the scan", "after the scan"} {
		t.Run(when, func(t *testing.T) {
			pkg, out := splitBase(t)
			markerAfterFiles(t, out)
			target := filepath.Join(out, "ctx-a", "apps", "web.yaml")
			editKeepingMtime := func() {
				edit(t, target, "image: nginx", "image: nginy")
			}
			if when == "before the scan" {
				editKeepingMtime()
			}
			od, err := outdir.OpenOutDir(out)
			if err != nil {
				t.Fatal(err)
			}
			if when == "after the scan" {
				editKeepingMtime()
			}
			in, err := input.ReadPackage(pkg, yamlio.Options{}, od.Path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := runRoute(t, in, od, nil); err != nil {
				t.Fatal(err)
			}
			wantFresh(t, pkg, out)
		})
	}
}

// edit replaces old by new in the file at p, in place (same inode), and
// sets its mtime back.
func edit(t *testing.T, p, old, new string) {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not hold %q", p, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// A context whose marker was edited, or that holds more than keepBudget
// allows, is written again whole.
func TestKeptOnlyWhenWhole(t *testing.T) {
	t.Run("marker edited", func(t *testing.T) {
		pkg, out := splitBase(t)
		edit(t, filepath.Join(out, "ctx-a", outdir.MarkerFile), "Edit the source", "edit the source")
		before := inodes(t, out)
		mustSplit(t, pkg, out)
		if inodes(t, out)["ctx-a"] == before["ctx-a"] {
			t.Error("ctx-a was kept with an edited marker")
		}
		wantFresh(t, pkg, out)
	})
	t.Run("over the budget", func(t *testing.T) {
		defer func(b int64) { keepBudget = b }(keepBudget)
		keepBudget = 1
		pkg, out := splitBase(t)
		before := inodes(t, out)
		mustSplit(t, pkg, out)
		if inodes(t, out)["ctx-a"] == before["ctx-a"] {
			t.Error("ctx-a was kept, though holding its files passed the budget")
		}
		wantFresh(t, pkg, out)
	})
}

// Files held while their context might be kept are written to the staged
// directory when a later file of the context differs.
func TestHeldFilesWrittenWhenALaterOneDiffers(t *testing.T) {
	pkg, out := splitBase(t)
	od, l := routeAgainst(t, pkg, out)
	p, _ := l.Package("ctx-a")
	keep, staged := newKept(od, l.Packages, splitMode(t, out)), t.TempDir()
	var made sync.Map
	last := len(p.files) - 1
	for k := range p.files {
		data, err := p.render(k)
		if err != nil {
			t.Fatal(err)
		}
		if k == last {
			data = append(data, "# changed\n"...)
		}
		held, err := keep.hold(p, k, filepath.Join(staged, p.files[k].path), data, false, &made)
		if err != nil {
			t.Fatal(err)
		}
		if held != (k != last) {
			t.Errorf("file %d (%s): held %v", k, p.files[k].path, held)
		}
	}
	if keep.keeps(p) {
		t.Error("ctx-a is kept, though its last file differs")
	}
	got := readTree(t, staged)
	for k, f := range p.files[:last] {
		if want, _ := p.render(k); got[f.path] != string(want) {
			t.Errorf("%s staged as %q, want %q", f.path, got[f.path], want)
		}
	}
	if len(got) != last {
		t.Errorf("staged %v, want the %d files before the last", keys(got), last)
	}
	if keep.heldBytes.Load() != 0 {
		t.Errorf("%d bytes still counted as held", keep.heldBytes.Load())
	}
}

// A scanned file left alone is known unchanged without being read again;
// one edited in place, with its size and mtime kept, is not.
func TestUnchangedByID(t *testing.T) {
	_, out := splitBase(t)
	markerAfterFiles(t, out)
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		t.Fatal(err)
	}
	pc := od.Context("ctx-a")
	if len(pc.Scanned) < 2 {
		t.Fatalf("%d files scanned: the fixture changed", len(pc.Scanned))
	}
	unchanged := func(f string) bool {
		info, err := os.Lstat(filepath.Join(out, "ctx-a", f))
		if err != nil {
			t.Fatal(err)
		}
		return pc.Unchanged(f, info)
	}
	for f := range pc.Scanned {
		if !unchanged(f) {
			t.Errorf("%s: not known unchanged", f)
		}
	}
	edit(t, filepath.Join(out, "ctx-a", "apps", "web.yaml"), "image: nginx", "image: nginy")
	if unchanged("apps/web.yaml") {
		t.Error("apps/web.yaml, edited, is known unchanged")
	}
}

// splitMode is the mode of the files split wrote in out.
func splitMode(t *testing.T, out string) os.FileMode {
	t.Helper()
	info, err := os.Lstat(filepath.Join(out, "ctx-a", outdir.MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode()
}

// A file edited while split runs, after split compared it and before the
// swap, is still rewritten: the context is checked again just before its
// swap would be.
func TestEditBeforeSwapIsRewritten(t *testing.T) {
	pkg, out := splitBase(t)
	markerAfterFiles(t, out)
	defer func() { beforeSwap = nil }()
	beforeSwap = func() { edit(t, filepath.Join(out, "ctx-a", "apps", "web.yaml"), "image: nginx", "image: nginy") }
	mustSplit(t, pkg, out)
	beforeSwap = nil
	wantFresh(t, pkg, out)
}

// A context is kept only as split would write it: a file of another mode,
// a file with another name (hard link), or a directory none of its files
// is in makes split write it again.
func TestKeptOnlyAsWritten(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, out string){
		"mode": func(t *testing.T, out string) {
			if err := os.Chmod(filepath.Join(out, "ctx-a", "apps", "web.yaml"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"hard link": func(t *testing.T, out string) {
			if err := os.Link(filepath.Join(out, "ctx-a", "apps", "web.yaml"), filepath.Join(t.TempDir(), "web.yaml")); err != nil {
				t.Fatal(err)
			}
		},
		"stray directory": func(t *testing.T, out string) {
			if err := os.MkdirAll(filepath.Join(out, "ctx-a", "stray", "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			pkg, out := splitBase(t)
			markerAfterFiles(t, out)
			mode := splitMode(t, out)
			change(t, out)
			mustSplit(t, pkg, out)
			wantFresh(t, pkg, out)
			p := filepath.Join(out, "ctx-a", "apps", "web.yaml")
			info, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode() != mode || !outdir.SingleLink(info) {
				t.Errorf("%s: mode %v, %d links; split writes %v, 1 link", p, info.Mode(), info.Sys().(*syscall.Stat_t).Nlink, mode)
			}
			if _, err := os.Lstat(filepath.Join(out, "ctx-a", "stray")); err == nil {
				t.Error("the stray directory is still there")
			}
		})
	}
}

// A file on another filesystem than its marker (a mount inside the
// context directory, whose times may be coarser) is never known unchanged
// by its id: it is read.
func TestUnchangedNotAcrossDevices(t *testing.T) {
	if testing.Short() || os.Getuid() != 0 {
		t.Skip("needs root to mount, and is in the slow tier")
	}
	_, out := splitBase(t)
	apps := filepath.Join(out, "ctx-a", "apps")
	files := readTree(t, apps)
	if err := exec.Command("mount", "-t", "tmpfs", "shard-router-test", apps).Run(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command("umount", apps).Run() })
	writeTree(t, apps, files)
	markerAfterFiles(t, out)
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		t.Fatal(err)
	}
	pc := od.Context("ctx-a")
	for f := range pc.Scanned {
		info, err := os.Lstat(filepath.Join(out, "ctx-a", f))
		if err != nil {
			t.Fatal(err)
		}
		if got, other := pc.Unchanged(f, info), strings.HasPrefix(f, "apps/"); got == other {
			t.Errorf("%s (on the mount: %v): known unchanged: %v", f, other, got)
		}
	}
}
