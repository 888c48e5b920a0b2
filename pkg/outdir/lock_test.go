package outdir_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shard-router/shard-router/pkg/outdir"
)

func TestLockRefusesASecondWriter(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	first, err := outdir.LockOutDir(out, true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = outdir.LockOutDir(out, true)
	if !errors.Is(err, outdir.ErrLocked) || !strings.Contains(err.Error(), out) ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock: %v; want ErrLocked naming %s and pid %d", err, out, os.Getpid())
	}
	// A directory holding only a writer's lock is still empty to split.
	d, err := outdir.OpenOutDir(out)
	if err != nil || d.Marked || len(d.Previous) > 0 {
		t.Fatalf("OpenOutDir with only the lock: %+v, %v", d, err)
	}
	first.Unlock()
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lock created %s and the run left it empty: want it removed, stat says %v", out, err)
	}
}

func TestLockReleasedAfterARun(t *testing.T) {
	out := t.TempDir()
	for i := range 2 {
		l, err := outdir.LockOutDir(out, false)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		l.Unlock()
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 0 {
		t.Errorf("OUT_DIR holds %v after the runs; want the lock file gone", entries)
	}
	// Without create, a missing OUT_DIR is left for the caller to refuse.
	missing := filepath.Join(out, "missing")
	if l, err := outdir.LockOutDir(missing, false); err != nil {
		t.Fatal(err)
	} else {
		l.Unlock()
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LockOutDir(create=false) made %s: %v", missing, err)
	}
}

// TestLockHolderProcess is the child of TestLockKilledHolder: it takes the
// lock, says so, and waits to be killed.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv("SHARD_ROUTER_LOCK_HOLDER")
	if dir == "" {
		t.Skip("helper process for TestLockKilledHolder")
	}
	if _, err := outdir.LockOutDir(dir, false); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	select {}
}

func TestLockKilledHolder(t *testing.T) {
	out := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	child.Env = append(os.Environ(), "SHARD_ROUTER_LOCK_HOLDER="+out)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	_, err = outdir.LockOutDir(out, false)
	if !errors.Is(err, outdir.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(child.Process.Pid)) {
		t.Fatalf("lock held by the child: %v; want ErrLocked naming pid %d", err, child.Process.Pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	// The killed holder left its lock file; the kernel released its lock.
	if _, err := os.Stat(filepath.Join(out, outdir.LockFile)); err != nil {
		t.Fatalf("want the killed holder's lock file left: %v", err)
	}
	l, err := outdir.LockOutDir(out, false)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Unlock()
}

// Writers racing for a new OUT_DIR, each removing the lock file (and the
// empty OUT_DIR) when done: never two hold it at once, and a refusal is
// always ErrLocked.
func TestLockRace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var holders atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				l, err := outdir.LockOutDir(out, true)
				if err != nil {
					if !errors.Is(err, outdir.ErrLocked) {
						t.Errorf("refused otherwise than ErrLocked: %v", err)
					}
					continue
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d writers hold the lock at once", n)
				}
				holders.Add(-1)
				l.Unlock()
			}
		}()
	}
	wg.Wait()
}
