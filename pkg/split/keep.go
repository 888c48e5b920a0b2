package split

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shard-router/shard-router/pkg/input"
)

// kept decides which context directories of the previous split Write
// leaves as they are: those whose every file already holds, on disk when
// split renders it, byte for byte what split writes there, and whose
// marker lists the same files. Nothing of such a context is written,
// swapped or deleted, so an unchanged context costs no new directory of
// files and no removal of the old one. A file is compared with the disk:
// read again, or, when the scan read the same bytes, found unchanged since
// the scan by its inode and times (input.PrevContext.Unchanged). A file
// edited since the scan is rewritten like any other change.
type kept struct {
	ctx map[*Package]*keptContext
	// heldBytes is what every context holds in memory (see keptContext).
	heldBytes atomic.Int64
}

// keepBudget bounds the rendered bytes held while their contexts may
// still be kept; a context that would pass it is written instead.
var keepBudget int64 = 64 << 20

// keptContext tracks one context that may be kept. Until its last file is
// rendered, the files found unchanged are held in memory: should a later
// one differ, they are written to the staged directory after all.
type keptContext struct {
	prev  *input.PrevContext
	mu    sync.Mutex
	dirty bool // a file differs: the context is written and swapped
	left  int  // files not yet rendered
	held  []heldFile
}

type heldFile struct {
	p    string // where it is staged
	data []byte
}

// newKept lists the contexts of pkgs that may be kept: their previous
// directory exists and its marker is byte for byte the one split writes.
// It is nil when there is none.
func newKept(d *input.OutDir, pkgs []*Package) *kept {
	k := &kept{ctx: map[*Package]*keptContext{}}
	for _, pkg := range pkgs {
		pc := d.Context(pkg.Context)
		if pc == nil || !pc.Exists || !slices.Equal(pc.Files, pkg.paths()) {
			continue
		}
		marker := filepath.Join(d.Path, pkg.Context, input.MarkerFile)
		if !sameOnDisk(marker, markerText([]string{pkg.Context}, pkg.paths())) {
			continue
		}
		k.ctx[pkg] = &keptContext{prev: pc, left: len(pkg.files)}
	}
	if len(k.ctx) == 0 {
		return nil
	}
	return k
}

// hold takes file f of pkg, rendered as data and to be staged at p,
// instead of the caller writing it: true when the previous directory's
// file is data and the context may still be kept. scanned tells that data
// are the bytes the scan read. It writes the files it held itself when the
// context turns out to differ.
func (k *kept) hold(pkg *Package, f int, p string, data []byte, scanned bool, made *sync.Map) (bool, error) {
	if k == nil || k.ctx[pkg] == nil {
		return false, nil
	}
	kc := k.ctx[pkg]
	path := pkg.files[f].path
	same := (scanned && kc.prev.Unchanged(path)) ||
		sameOnDisk(filepath.Join(kc.prev.Dir(), filepath.FromSlash(path)), data)
	kc.mu.Lock()
	if kc.dirty {
		kc.mu.Unlock()
		return false, nil
	}
	kc.left--
	if same && kc.left == 0 {
		k.release(kc) // every file is as split writes it
		kc.mu.Unlock()
		return true, nil
	}
	if same {
		if k.heldBytes.Add(int64(len(data))) <= keepBudget {
			kc.held = append(kc.held, heldFile{p, data})
			kc.mu.Unlock()
			return true, nil
		}
		k.heldBytes.Add(-int64(len(data))) // over budget: write the context
	}
	held := kc.held
	kc.dirty = true
	k.release(kc)
	kc.mu.Unlock()
	for _, h := range held {
		if err := writeAt(h.p, h.data, made); err != nil {
			return false, err
		}
	}
	return false, nil
}

// release drops the files kc holds; kc.mu is held.
func (k *kept) release(kc *keptContext) {
	for _, h := range kc.held {
		k.heldBytes.Add(-int64(len(h.data)))
	}
	kc.held = nil
}

// keeps reports whether Write leaves pkg's previous directory as it is;
// it is known once every file was rendered.
func (k *kept) keeps(pkg *Package) bool {
	if k == nil || k.ctx[pkg] == nil {
		return false
	}
	kc := k.ctx[pkg]
	kc.mu.Lock()
	defer kc.mu.Unlock()
	return !kc.dirty && kc.left == 0
}

// sameOnDisk reports whether the regular file at p holds exactly data; a
// file that cannot be read is not the same.
func sameOnDisk(p string, data []byte) bool {
	info, err := os.Lstat(p)
	if err != nil || !info.Mode().IsRegular() || info.Size() != int64(len(data)) {
		return false
	}
	disk, err := os.ReadFile(p)
	return err == nil && bytes.Equal(disk, data)
}

// paths are the package's file paths, in the order its marker lists them.
func (pkg *Package) paths() []string {
	files := make([]string, len(pkg.files))
	for k, f := range pkg.files {
		files[k] = f.path
	}
	return files
}
