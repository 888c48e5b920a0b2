package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned when another writer holds OUT_DIR's lock.
var ErrLocked = errors.New("is being written by another shard-router")

// Lock is an advisory lock on an output directory, held by the commands
// that write it (split -o, apply), so that two writers never interleave
// their swaps and OUT_DIR keeps holding what each cluster last received.
// It is a flock(2) on LockFile at OUT_DIR's top level: the kernel
// releases it when its holder exits, even when killed.
type Lock struct {
	f       *os.File
	path    string
	created string // OUT_DIR, when Lock created it
}

// LockOutDir takes OUT_DIR's lock without waiting: when another process
// holds it, it fails at once naming OUT_DIR and the holder's pid. With
// create, a missing OUT_DIR is created (and removed again by Unlock when
// still empty); without, a missing OUT_DIR is left for the caller to
// refuse, and the lock is a no-op, as for a path that is no directory.
func LockOutDir(dir string, create bool) (*Lock, error) {
	l := &Lock{path: filepath.Join(dir, LockFile)}
	// Unlock removes the lock file (and an OUT_DIR it created), so a file
	// opened just before that may be locked once unlinked: retry on the
	// file now at the path.
	for range 100 {
		ok, err := l.makeDir(dir, create)
		if err != nil {
			return nil, err
		}
		if !ok {
			return &Lock{}, nil
		}
		f, err := l.try(dir)
		if err != nil {
			l.removeCreated()
			return nil, err
		}
		if f != nil {
			l.f = f
			if err := l.writePid(); err != nil {
				return nil, err
			}
			return l, nil
		}
	}
	l.removeCreated()
	return nil, fmt.Errorf("%s: could not take the lock %s: it kept being replaced", dir, l.path)
}

// makeDir checks OUT_DIR, creating it when create is set and it is missing
// (remembered for removeCreated); false when there is no directory to lock.
func (l *Lock) makeDir(dir string, create bool) (bool, error) {
	st, err := os.Stat(dir)
	switch {
	case err == nil:
		return st.IsDir(), nil // OpenOutDir refuses a file
	case !errors.Is(err, fs.ErrNotExist) || !create:
		return false, nil // left for the caller to refuse
	}
	switch err := os.MkdirAll(dir, DirMode); {
	case errors.Is(err, fs.ErrExist):
		return true, nil // made and removed again by another run: retry
	case err != nil:
		return false, err
	}
	l.created = dir
	return true, nil
}

// try opens and locks the lock file; nil when the file (or the OUT_DIR
// this run created) was removed meanwhile.
func (l *Lock) try(dir string) (*os.File, error) {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, FileMode)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // another run removed the OUT_DIR it created
	}
	if err != nil {
		return nil, fmt.Errorf("cannot lock the output directory %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid := holder(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("the output directory %s %w (pid %s holds %s): wait for it to finish, then run again", dir, ErrLocked, pid, l.path)
		}
		return nil, fmt.Errorf("cannot lock the output directory %s: %w", dir, err)
	}
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(l.path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// holder is the pid the lock file names, "unknown" before its holder
// wrote it.
func holder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n]))); err == nil && pid > 0 {
		return strconv.Itoa(pid)
	}
	return "unknown"
}

func (l *Lock) writePid() error {
	if err := l.f.Truncate(0); err != nil {
		l.Unlock()
		return err
	}
	if _, err := l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		l.Unlock()
		return err
	}
	return nil
}

// Unlock removes the lock file and releases the lock; OUT_DIR is left as
// the run wrote it, without the lock file.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	// Remove while still holding the lock: see LockOutDir's retry.
	_ = os.Remove(l.path)
	_ = l.f.Close()
	l.f = nil
	l.removeCreated()
}

// removeCreated removes OUT_DIR when this lock created it and the run
// left it empty, as a failed run left no OUT_DIR before the lock.
func (l *Lock) removeCreated() {
	if l.created != "" {
		_ = os.Remove(l.created) // fails, as it should, unless empty
		l.created = ""
	}
}
