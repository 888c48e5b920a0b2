package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The modes of what split and apply write in OUT_DIR (less the umask).
const (
	DirMode  = 0o755
	FileMode = 0o644
)

// ReplaceDir puts staged at target. An existing target is exchanged with
// staged atomically where the system can, else moved to old first.
func ReplaceDir(target, staged, old string) error {
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(staged, target)
	}
	if err := exchange(staged, target); err == nil {
		return nil
	} else if !errors.Is(err, errNoExchange) {
		return err
	}
	return swap(target, staged, old)
}

// RecoverStale puts back a context directory that an interrupted swap
// left in a stale staging directory (renamed aside, the new one not yet in
// place), then deletes the stale staging directories.
func RecoverStale(d *OutDir) error {
	for _, stale := range d.Stale {
		aside := filepath.Join(stale, "old")
		entries, err := os.ReadDir(aside)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			target := filepath.Join(d.Path, e.Name())
			if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := os.Rename(filepath.Join(aside, e.Name()), target); err != nil {
				return fmt.Errorf("restoring %s from an interrupted run: %w", filepath.Join(d.Given, e.Name()), err)
			}
		}
		if err := os.RemoveAll(stale); err != nil {
			return err
		}
	}
	d.Stale = nil
	return nil
}

// swap moves target (if any) to old, then staged to target, restoring
// target if the second step fails.
func swap(target, staged, old string) error {
	moved := false
	if _, err := os.Lstat(target); err == nil {
		if err := os.Rename(target, old); err != nil {
			return err
		}
		moved = true
	}
	if err := os.Rename(staged, target); err != nil {
		if moved {
			_ = os.Rename(old, target)
		}
		return err
	}
	return nil
}

// WriteMarker writes a marker file atomically.
func WriteMarker(dir string, contexts, files []string) error {
	tmp := filepath.Join(dir, MarkerFile+".new")
	if err := os.WriteFile(tmp, MarkerText(contexts, files), FileMode); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, MarkerFile))
}

// MarkerText is a marker file's content.
func MarkerText(contexts, files []string) []byte {
	var b strings.Builder
	b.WriteString(MarkerFormat + "\n")
	b.WriteString("# Written by shard-router split, which deletes and rewrites what this file lists\n")
	b.WriteString("# on every run. Edit the source package, not these files.\n")
	for _, c := range contexts {
		b.WriteString("context " + c + "\n")
	}
	for _, f := range files {
		b.WriteString("file " + f + "\n")
	}
	return []byte(b.String())
}

// errNoExchange: the system cannot exchange two directories atomically.
var errNoExchange = errors.New("atomic directory exchange not supported")
