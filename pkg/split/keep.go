package split

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// kept decides which context directories of the previous split Write
// leaves as they are: those whose every file already holds byte for byte
// what split writes there, as a regular file of split's mode with no other
// name, whose marker lists the same files, and that hold nothing else.
// Nothing of such a context is written, swapped or deleted, so an
// unchanged context costs no new directory of files and no removal of the
// old one.
//
// While the files are rendered, a file counts as unchanged when the scan
// read these very bytes from it, or, for a file not scanned, when the disk
// holds them. Just before its swap would be, each such context is checked
// on disk again (verify): a file is read, or found unchanged by its inode
// and times since the scan (outdir.PrevContext.Unchanged) or since it was
// compared (outdir.Stamp). A context
// that changed in between is written and swapped after all, so that, as
// before, OUT_DIR holds what split computed at the moment of the swap.
type kept struct {
	ctx map[*Package]*keptContext
	// mode is the mode split's files have (fileMode less the umask); ref
	// is a file split just wrote, which stamps the files compared.
	mode fs.FileMode
	ref  fs.FileInfo
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
	prev  *outdir.PrevContext
	mu    sync.Mutex
	dirty bool // a file differs: the context is written and swapped
	left  int  // files not yet rendered
	held  []heldFile
	// sums are the hashes of the files split renders, and scanned tells
	// those the scan read as they are rendered, for verify; each writer
	// sets its own file's, and its stamp when it compared it on disk.
	sums    [][sha256.Size]byte
	scanned []bool
	stamps  []outdir.Stamp
	// marker is the stamp of the context's marker, as newKept compared it.
	marker outdir.Stamp
}

type heldFile struct {
	p    string // where it is staged
	data []byte
}

// newKept lists the contexts of pkgs that may be kept: their previous
// directory holds only what its marker lists, and that marker is byte for
// byte the one split writes. mode is the mode of a file split just wrote.
// It is nil when there is none.
func newKept(d *outdir.OutDir, pkgs []*Package, mode fs.FileMode) *kept {
	return keptAfter(d, pkgs, mode, nil)
}

// keptAfter is newKept, the files compared being stamped (outdir.StampOf)
// after written, the Lstat of a file split just wrote, so that verify need
// not read them again; nil stamps nothing.
func keptAfter(d *outdir.OutDir, pkgs []*Package, mode fs.FileMode, written fs.FileInfo) *kept {
	k := &kept{ctx: map[*Package]*keptContext{}, mode: mode, ref: written}
	for _, pkg := range pkgs {
		pc := d.Context(pkg.Context)
		if pc == nil || !pc.OnlyListed() || !slices.Equal(pc.Files, pkg.paths()) {
			continue
		}
		marker, ok := k.markerKept(pkg, pc, outdir.Stamp{})
		if !ok {
			continue
		}
		n := len(pkg.files)
		k.ctx[pkg] = &keptContext{prev: pc, left: n, sums: make([][sha256.Size]byte, n), scanned: make([]bool, n),
			stamps: make([]outdir.Stamp, n), marker: marker}
	}
	if len(k.ctx) == 0 {
		return nil
	}
	return k
}

// hold takes file f of pkg, rendered as data and to be staged at p,
// instead of the caller writing it: true when the previous directory's
// file is data (the scan read it, or it is on disk as split writes it) and
// the context may still be kept. scanned tells that data
// are the bytes the scan read. It writes the files it held itself when the
// context turns out to differ.
func (k *kept) hold(pkg *Package, f int, p string, data []byte, scanned bool, made *sync.Map) (bool, error) {
	if k == nil || k.ctx[pkg] == nil {
		return false, nil
	}
	kc := k.ctx[pkg]
	kc.mu.Lock()
	dirty := kc.dirty
	kc.mu.Unlock()
	if dirty {
		return false, nil // no need to look: the context is written
	}
	path := pkg.files[f].path
	kc.scanned[f] = scanned
	if scanned {
		kc.sums[f] = kc.prev.Scanned[path].Sum // data's, as note found
	} else {
		kc.sums[f] = sha256.Sum256(data)
	}
	same := scanned
	if !scanned {
		same, kc.stamps[f] = k.onDisk(filepath.Join(kc.prev.Dir(), filepath.FromSlash(path)), data)
	}
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

// keeps reports whether every file of pkg was found unchanged as it was
// rendered, so that nothing of it was staged; it is known once every file
// was rendered.
func (k *kept) keeps(pkg *Package) bool {
	if k == nil || k.ctx[pkg] == nil {
		return false
	}
	kc := k.ctx[pkg]
	kc.mu.Lock()
	defer kc.mu.Unlock()
	return !kc.dirty && kc.left == 0
}

// verify checks, just before Write would swap it, that pkg's previous
// directory still holds what split writes: its marker, and each file as a
// regular file of split's mode with no other name and the new bytes (read,
// or unchanged since the scan that read them or since it was compared).
func (k *kept) verify(pkg *Package) bool {
	kc := k.ctx[pkg]
	if _, ok := k.markerKept(pkg, kc.prev, kc.marker); !ok {
		return false
	}
	// Checking a file waits on the filesystem: check several at once.
	return yamlio.ForEach(writers, len(pkg.files), func(f int) error {
		path := pkg.files[f].path
		p := filepath.Join(kc.prev.Dir(), filepath.FromSlash(path))
		info, err := os.Lstat(p)
		switch {
		case err != nil || !k.fits(info):
			return errChanged
		case kc.scanned[f] && kc.prev.Unchanged(path, info), kc.stamps[f].Same(info):
			return nil
		}
		if data, err := os.ReadFile(p); err != nil || sha256.Sum256(data) != kc.sums[f] {
			return errChanged
		}
		return nil
	}) == nil
}

// errChanged stops verify at the first file that changed.
var errChanged = errors.New("changed since it was compared")

// markerKept reports whether the previous directory's marker is the one
// split writes for pkg, unchanged since it was stamped, or read; and its
// stamp.
func (k *kept) markerKept(pkg *Package, pc *outdir.PrevContext, stamped outdir.Stamp) (outdir.Stamp, bool) {
	p := filepath.Join(pc.Dir(), outdir.MarkerFile)
	if info, err := os.Lstat(p); err == nil && k.fits(info) && stamped.Same(info) {
		return stamped, true
	}
	same, stamp := k.onDisk(p, outdir.MarkerText([]string{pkg.Context}, pkg.paths()))
	return stamp, same
}

// fits reports whether a file is one split could have written as it is:
// regular, of split's mode, with no other name.
func (k *kept) fits(info fs.FileInfo) bool {
	return info.Mode() == k.mode && outdir.SingleLink(info)
}

// onDisk reports whether the file at p is one split could have written
// (fits) and holds exactly data; a file that cannot be read is not. The
// stamp is the file's as it was before it was read.
func (k *kept) onDisk(p string, data []byte) (bool, outdir.Stamp) {
	info, err := os.Lstat(p)
	if err != nil || !k.fits(info) || info.Size() != int64(len(data)) {
		return false, outdir.Stamp{}
	}
	disk, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(disk, data) {
		return false, outdir.Stamp{}
	}
	if k.ref == nil {
		return true, outdir.Stamp{}
	}
	return true, outdir.StampOf(info, k.ref)
}

// paths are the package's file paths, in the order its marker lists them.
func (pkg *Package) paths() []string {
	files := make([]string, len(pkg.files))
	for k, f := range pkg.files {
		files[k] = f.path
	}
	return files
}
