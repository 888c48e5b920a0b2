package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// Staging is a staging directory: new/<context> holds the packages about
// to be swapped into OUT_DIR, old/<context> what they replaced (or, where
// the system cannot exchange two directories, the package renamed aside
// for a moment; RecoverStale puts it back after a kill).
type Staging struct {
	// Path is OUT_DIR/.shard-router-split-tmp-*, or a temporary directory
	// outside any OUT_DIR for a dry run.
	Path string
}

// NewStaging makes a staging directory inside d, marked as split's so
// that the next run finds and cleans it (d.Stale) should this one die.
func NewStaging(d *OutDir) (*Staging, error) {
	tmp, err := os.MkdirTemp(d.Path, TmpPrefix)
	if err != nil {
		return nil, err
	}
	s := &Staging{Path: tmp}
	if err := WriteMarker(tmp, nil, nil); err != nil {
		s.Remove()
		return nil, err
	}
	if err := s.makeSubdirs(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// NewDryStaging makes a staging directory outside any OUT_DIR, for a dry
// run: its packages can be read, never swapped in.
func NewDryStaging() (*Staging, error) {
	tmp, err := os.MkdirTemp("", "shard-router-dry-run-")
	if err != nil {
		return nil, err
	}
	s := &Staging{Path: tmp}
	if err := s.makeSubdirs(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

func (s *Staging) makeSubdirs() error {
	for _, dir := range []string{s.New(), s.Old()} {
		if err := os.Mkdir(dir, DirMode); err != nil {
			return err
		}
	}
	return nil
}

// New is the directory of the staged packages, one per context.
func (s *Staging) New() string { return filepath.Join(s.Path, "new") }

// Old is the directory of the packages they replaced.
func (s *Staging) Old() string { return filepath.Join(s.Path, "old") }

// Swap replaces d's directory name (a context's, or the engine's) with its
// staged one, in one rename where the system can (see ReplaceDir).
func (s *Staging) Swap(d *OutDir, name string) error {
	if err := ReplaceDir(filepath.Join(d.Path, name), filepath.Join(s.New(), name), filepath.Join(s.Old(), name)); err != nil {
		return fmt.Errorf("replacing %s: %w", filepath.Join(d.Given, name), err)
	}
	return nil
}

// Drop moves the directories of contexts that left the config out of d,
// into Old, to be deleted with the staging directory.
func (s *Staging) Drop(d *OutDir, contexts []string) error {
	for _, c := range contexts {
		target := filepath.Join(d.Path, c)
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(target, filepath.Join(s.Old(), c)); err != nil {
			return fmt.Errorf("removing %s: %w", filepath.Join(d.Given, c), err)
		}
	}
	return nil
}

// removers is how many context directories Remove deletes at once:
// removing thousands of files waits on the filesystem, not on the CPU.
const removers = 8

// Remove deletes the staging directory, the context directories it holds
// (the replaced packages) by several removers at once.
func (s *Staging) Remove() error {
	var dirs []string
	for _, sub := range []string{s.New(), s.Old()} {
		entries, _ := os.ReadDir(sub)
		for _, e := range entries {
			dirs = append(dirs, filepath.Join(sub, e.Name()))
		}
	}
	_ = yamlio.ForEach(removers, len(dirs), func(i int) error { return os.RemoveAll(dirs[i]) })
	return os.RemoveAll(s.Path)
}
