package split

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
)

const (
	dirMode  = outdir.DirMode
	fileMode = outdir.FileMode
)

// WriteStream writes the package's resources and its inventory
// ResourceGroup as one YAML stream, for `kpt live apply -`.
func (pkg *Package) WriteStream(w io.Writer) error {
	rg, err := yaml.Parse(string(pkg.rg))
	if err != nil {
		return err
	}
	res, err := pkg.resources()
	if err != nil {
		return err
	}
	nodes := append([]*yaml.RNode{rg}, res...)
	var b bytes.Buffer
	if err := (kio.ByteWriter{Writer: &b}).Write(nodes); err != nil {
		return err
	}
	// As for the package files: comments the next read would move are
	// written where it leaves them.
	_, err = w.Write(yamlio.SettleStream(b.Bytes(), nodes))
	return err
}

// resources returns the package's resources in file order, cleaned for
// the stream form.
func (pkg *Package) resources() ([]*yaml.RNode, error) {
	var nodes []*yaml.RNode
	for k := range pkg.files {
		f := &pkg.files[k]
		if f.items == nil {
			continue
		}
		fn, err := pkg.nodes(f)
		if err != nil {
			return nil, err
		}
		if fn, err = streamNodes(fn); err != nil {
			return nil, err
		}
		nodes = append(nodes, fn...)
	}
	return nodes, nil
}

// Write writes every context package of the plan to the output directory:
// each context directory is staged inside the output directory, then
// swapped in by rename, so that a failure never leaves a half-written
// context. Previous context directories are replaced whole, or left as they
// are when every file already holds what split writes (see kept); those of
// contexts that left the config are deleted. Nothing that split did not
// write is deleted or overwritten: every check runs before the first write.
func Write(d *outdir.OutDir, plan *Layout) error {
	if plan.Results.ExitCode() != 0 {
		return errors.New("the split has errors; nothing written")
	}
	previous := d.Contexts()
	if err := d.CheckTargets(plan.contexts()); err != nil {
		return err
	}
	// A kpt split may have a context named like the engine directory: then
	// that directory is the context's, and no engine directory is written.
	engineDir := !slices.Contains(previous, gitops.Dir) && !slices.ContainsFunc(plan.Packages, func(p *Package) bool { return p.Context == gitops.Dir })
	if engineDir {
		if err := checkEngineDir(d); err != nil {
			return err
		}
	}
	if err := openForWrite(d); err != nil {
		return err
	}
	tmp, err := outdir.NewStaging(d)
	if err != nil {
		return err
	}
	defer tmp.Remove()
	written, err := os.Lstat(filepath.Join(tmp.Path, outdir.MarkerFile))
	if err != nil {
		return err
	}
	staged, old := tmp.New(), tmp.Old()
	sums, keep := newWrittenSums(d, plan.Packages), keptAfter(d, plan.Packages, written.Mode(), written)
	if err := stage(staged, plan.Packages, sums, keep); err != nil {
		return err
	}
	if err := sums.check(plan); err != nil {
		return err // before the first change to a context directory
	}
	if beforeSwap != nil {
		beforeSwap()
	}
	if err := swapAll(d, plan, previous, tmp, keep); err != nil {
		return err
	}
	if !engineDir {
		return nil
	}
	return writeEngineDir(d, plan.engineFiles, staged, old)
}

// beforeSwap, set by tests only, runs between staging and swapping.
var beforeSwap func()

// openForWrite creates and marks the output directory, and restores what
// an interrupted run left.
func openForWrite(d *outdir.OutDir) error {
	if err := os.MkdirAll(d.Path, dirMode); err != nil {
		return err
	}
	if !d.Marked {
		// Mark the directory before anything else, so that a failure
		// leaves a directory the next run may clean.
		if err := outdir.WriteMarker(d.Path, nil, nil); err != nil {
			return err
		}
		d.Marked = true
	}
	return outdir.RecoverStale(d)
}

// swapAll swaps the staged context directories in, moves those of dropped
// contexts to old, and lists the new contexts in the marker.
func swapAll(d *outdir.OutDir, plan *Layout, previous []string, tmp *outdir.Staging, keep *kept) error {
	// List old and new contexts while swapping, so an interrupted run
	// leaves every directory it touched listed as split's.
	var current []string
	for _, pkg := range plan.Packages {
		current = append(current, pkg.Context)
	}
	all := slices.Clone(current)
	for _, c := range previous {
		if !slices.Contains(all, c) {
			all = append(all, c)
		}
	}
	if err := outdir.WriteMarker(d.Path, all, nil); err != nil {
		return err
	}
	for _, pkg := range plan.Packages {
		if keep.keeps(pkg) {
			if keep.verify(pkg) {
				continue
			}
			// Changed since it was compared: write it after all.
			if err := restage(tmp.New(), pkg); err != nil {
				return err
			}
		}
		if err := tmp.Swap(d, pkg.Context); err != nil {
			return err
		}
	}
	if err := tmp.Drop(d, plan.dropped); err != nil {
		return err
	}
	return outdir.WriteMarker(d.Path, current, nil)
}

// restage writes pkg to its staged directory, left empty while it was to
// be kept.
func restage(staged string, pkg *Package) error {
	if err := os.Remove(filepath.Join(staged, pkg.Context)); err != nil {
		return err
	}
	return stage(staged, []*Package{pkg}, nil, nil)
}

// writers is how many files are rendered and written at once. Creating a
// file waits on the filesystem more than on the CPU, so more writers than
// cores keep both the cores and the disk busy.
const writers = 8

// stage writes the context packages to new directories under dir: every
// file of every context is rendered and written by the writers, and noted
// in sums; the contexts keep leaves as they are are not written (sums and
// keep may be nil).
func stage(dir string, pkgs []*Package, sums *writtenSums, keep *kept) error {
	type job struct {
		pkg *Package
		k   int
		p   string
	}
	var jobs []job
	for _, pkg := range pkgs {
		cdir := filepath.Join(dir, pkg.Context)
		if err := os.Mkdir(cdir, dirMode); err != nil {
			return err
		}
		for k, f := range pkg.files {
			p := filepath.Join(cdir, filepath.FromSlash(f.path))
			if rel, ok := input.Within(cdir, p); !ok || rel == "." {
				return fmt.Errorf("writing context %q: %s is outside the context directory", pkg.Context, f.path)
			}
			jobs = append(jobs, job{pkg, k, p})
		}
	}
	var made sync.Map // directories known to exist
	err := yamlio.ForEach(writers, len(jobs), func(i int) error {
		j := jobs[i]
		if err := writeFile(j.pkg, j.k, j.p, &made, sums, keep); err != nil {
			return fmt.Errorf("writing context %q: %w", j.pkg.Context, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, pkg := range pkgs {
		if keep.keeps(pkg) {
			continue
		}
		if err := outdir.WriteMarker(filepath.Join(dir, pkg.Context), []string{pkg.Context}, pkg.paths()); err != nil {
			return err
		}
	}
	return nil
}

// writeFile renders file k of pkg, notes it in sums, and writes it at p
// unless keep holds it.
func writeFile(pkg *Package, k int, p string, made *sync.Map, sums *writtenSums, keep *kept) error {
	data, err := pkg.render(k)
	if err != nil {
		return err
	}
	scanned := sums.note(pkg, k, data)
	if held, err := keep.hold(pkg, k, p, data, scanned, made); held || err != nil {
		return err
	}
	return writeAt(p, data, made)
}

// writeAt writes a staged file, making its directory once.
func writeAt(p string, data []byte, made *sync.Map) error {
	if d := filepath.Dir(p); !loaded(made, d) {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return err
		}
		made.Store(d, true)
	}
	return os.WriteFile(p, data, fileMode)
}

func loaded(m *sync.Map, k string) bool { _, ok := m.Load(k); return ok }
