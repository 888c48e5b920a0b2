package split

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/shard-router/shard-router/pkg/api/v1alpha1"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// Staged holds the new context packages of a layout in a staging
// directory, so that each context can be applied from it and then swapped
// into OUT_DIR on its own (Commit): OUT_DIR/<context> always holds what
// that context last received, whole. A context whose OUT_DIR directory
// already holds its package byte for byte, as Write would leave it (see
// kept), is not staged: its package is that directory (Dir, Kept), and
// its Commit swaps nothing.
type Staged struct {
	d      *outdir.OutDir
	layout *Layout
	tmp    *outdir.Staging
	// dry is set for a staging directory outside OUT_DIR (StageTemp),
	// which is never committed.
	dry       bool
	mu        sync.Mutex
	committed map[string]bool
	// listed are the contexts the root marker lists.
	listed []string
	// keep compared the packages with OUT_DIR's; kept are those, by
	// context, that OUT_DIR holds as they are and that were not staged.
	keep *kept
	kept map[string]*Package
}

// Stage writes every context package of the layout to a staging directory
// inside the output directory, after the checks Write makes, but for the
// contexts whose OUT_DIR directory already holds it byte for byte (Kept):
// at 256 contexts, staging, swapping and deleting the unchanged packages'
// files was the largest share of a no-change apply's CPU. Nothing in
// OUT_DIR is changed until Commit, except that an interrupted run's
// staging directories are cleaned up (see outdir.RecoverStale).
func Stage(d *outdir.OutDir, layout *Layout) (*Staged, error) {
	if layout.Results.ExitCode() != 0 {
		return nil, errors.New("the split has errors; nothing staged")
	}
	previous := d.Contexts()
	if err := d.CheckTargets(layout.contexts()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.Path, dirMode); err != nil {
		return nil, err
	}
	if err := outdir.RecoverStale(d); err != nil {
		return nil, err
	}
	if !d.Marked {
		// Mark the directory before anything else, as Write does.
		if err := outdir.WriteMarker(d.Path, nil, nil); err != nil {
			return nil, err
		}
		d.Marked = true
	}
	tmp, err := outdir.NewStaging(d)
	if err != nil {
		return nil, err
	}
	s := &Staged{d: d, layout: layout, tmp: tmp, committed: map[string]bool{}, listed: previous, kept: map[string]*Package{}}
	written, err := os.Lstat(filepath.Join(tmp.Path, outdir.MarkerFile))
	if err != nil {
		s.Close()
		return nil, err
	}
	s.keep = keptAfter(d, layout.Packages, written.Mode(), written)
	if err := stage(tmp.New(), layout.Packages, nil, s.keep); err != nil {
		s.Close()
		return nil, err
	}
	for _, pkg := range layout.Packages {
		if s.keep.keeps(pkg) {
			s.kept[pkg.Context] = pkg
		}
	}
	return s, nil
}

// StageTemp writes every context package of the layout to a new
// temporary directory outside any output directory, for a dry run: it
// can be read, never committed.
func (l *Layout) StageTemp() (*Staged, error) {
	if l.Results.ExitCode() != 0 {
		return nil, errors.New("the split has errors; nothing staged")
	}
	tmp, err := outdir.NewDryStaging()
	if err != nil {
		return nil, err
	}
	s := &Staged{layout: l, tmp: tmp, dry: true, committed: map[string]bool{}}
	if err := stage(tmp.New(), l.Packages, nil, nil); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dir is the staged package of a context, ready for kpt live apply: for a
// kept context, OUT_DIR/<context> itself.
func (s *Staged) Dir(context string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept[context] != nil {
		return filepath.Join(s.d.Path, context)
	}
	return filepath.Join(s.tmp.New(), context)
}

// Kept reports whether the context was not staged: OUT_DIR/<context>
// holds its package byte for byte, and is its Dir.
func (s *Staged) Kept(context string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept[context] != nil
}

// Recheck tells whether a kept context's directory still holds its
// package as it was compared (kept.verify), once the caller read it: true
// when it does (or when the context was staged), and then what was read is
// the package. When it changed since, the package is staged after all and
// Recheck returns false: read Dir again.
func (s *Staged) Recheck(context string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recheck(context)
}

// recheck is Recheck with s.mu held.
func (s *Staged) recheck(context string) (bool, error) {
	pkg := s.kept[context]
	if pkg == nil || s.keep.verify(pkg) {
		return true, nil
	}
	delete(s.kept, context)
	return false, restage(s.tmp.New(), pkg)
}

// Commit replaces OUT_DIR/<context> with its staged package. On Linux the
// two directories are exchanged in one rename (RENAME_EXCHANGE), so that
// at every moment OUT_DIR/<context> is the old package or the new one;
// elsewhere the old one is first renamed aside into the staging
// directory, where the next Stage or Write finds it and puts it back
// should the process die between the two renames.
func (s *Staged) Commit(context string) error {
	if s.dry {
		return errors.New("internal error: a dry run's staged packages are never committed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed[context] {
		return nil
	}
	if s.kept[context] != nil {
		// As Write leaves it: nothing to swap, unless it changed since it
		// was compared, when the package is staged and swapped after all.
		same, err := s.recheck(context)
		if err != nil {
			return err
		}
		if same {
			s.committed[context] = true
			return nil
		}
	}
	if !slices.Contains(s.listed, context) {
		// List it first, so that the directory is known as split's.
		listed := append(slices.Clone(s.listed), context)
		if err := outdir.WriteMarker(s.d.Path, listed, nil); err != nil {
			return err
		}
		s.listed = listed
	}
	if err := s.tmp.Swap(s.d, context); err != nil {
		return err
	}
	s.committed[context] = true
	return nil
}

// Finish, once every context was committed, deletes the directories of
// the contexts that left the config and lists only the current contexts in
// the root marker, as Write does. Before that it changes nothing.
func (s *Staged) Finish() error {
	if s.dry {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var current []string
	for _, pkg := range s.layout.Packages {
		if !s.committed[pkg.Context] {
			return nil
		}
		current = append(current, pkg.Context)
	}
	if err := s.tmp.Drop(s.d, s.layout.dropped); err != nil {
		return err
	}
	return outdir.WriteMarker(s.d.Path, current, nil)
}

// Close removes the staging directory.
func (s *Staged) Close() error { return s.tmp.Remove() }

// Objects lists the package's resources (Kptfile and inventory aside) as
// they are in the input: a namespaced resource without a namespace has
// none here, while kpt gives it the kube context's namespace.
func (pkg *Package) Objects() []v1alpha1.ObjectRef {
	var refs []v1alpha1.ObjectRef
	for _, f := range pkg.files {
		for _, i := range f.items {
			refs = append(refs, outdir.KeyOf(&pkg.layout.items[i].Object).Ref())
		}
	}
	return refs
}

// contexts names the layout's contexts, in its order.
func (l *Layout) contexts() []string {
	names := make([]string, len(l.Packages))
	for i, pkg := range l.Packages {
		names[i] = pkg.Context
	}
	return names
}
