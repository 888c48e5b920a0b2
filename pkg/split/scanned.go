package split

import (
	"crypto/sha256"

	"github.com/shard-router/shard-router/pkg/input"
)

// writtenSums notes, for each file split writes where the previous split
// has a scanned file, whether the new bytes are the old ones.
type writtenSums struct {
	d *input.OutDir
	// same[pkg][k]: file k of pkg is written as the scanned file was.
	same map[*Package][]bool
}

// newWrittenSums is nil when the directory was not scanned.
func newWrittenSums(d *input.OutDir, pkgs []*Package) *writtenSums {
	if d == nil || d.Mode() != input.ReadScanKeys {
		return nil
	}
	w := &writtenSums{d: d, same: map[*Package][]bool{}}
	for _, pkg := range pkgs {
		w.same[pkg] = make([]bool, len(pkg.files))
	}
	return w
}

// note records file k of pkg as rendered (data), and reports whether
// those are the bytes the scan read; the writers call it concurrently,
// each for its own file.
func (w *writtenSums) note(pkg *Package, k int, data []byte) bool {
	if w == nil || pkg.files[k].items == nil {
		return false
	}
	pc := w.d.Context(pkg.Context)
	if pc == nil {
		return false
	}
	if s := pc.Scanned[pkg.files[k].path]; s != nil {
		w.same[pkg][k] = sha256.Sum256(data) == s.Sum
	}
	return w.same[pkg][k]
}

// check settles every scanned file: one written byte for byte as it was
// holds the objects split wrote there, which must be what the scan read;
// any other is parsed and compared with the scan (ParseScanned).
// input.ErrScanMismatch reports a difference.
func (w *writtenSums) check(l *Layout) error {
	if w == nil {
		return nil
	}
	for _, pc := range w.d.Previous {
		if len(pc.Scanned) == 0 {
			continue
		}
		settled := map[string]bool{}
		if pkg, ok := l.Package(pc.Name); ok {
			for k, same := range w.same[pkg] {
				f := &pkg.files[k]
				if !same {
					continue
				}
				if !pkg.HoldsScanned(k, pc.Scanned[f.path]) {
					return input.ErrScanMismatch
				}
				settled[f.path] = true
			}
		}
		if err := pc.ParseScanned(w.d, func(f string) bool { return settled[f] }); err != nil {
			return err
		}
	}
	return nil
}

// HoldsScanned reports whether what the scan read of a previous file is
// what file k of pkg holds: its objects, in order, with their datastores in
// pkg's context. split's Write and plan's comparison trust a scanned file
// written byte for byte as before only when it holds.
func (pkg *Package) HoldsScanned(k int, s *input.ScannedFile) bool {
	l, f := pkg.layout, &pkg.files[k]
	if len(f.items) != len(s.Held) {
		return false
	}
	for n, i := range f.items {
		ds, ok := l.storeIn(i, pkg.index)
		if h := s.Held[n]; !ok || h.Key != input.KeyOf(&l.items[i].Object) || h.DataStore != ds {
			return false
		}
	}
	return true
}
