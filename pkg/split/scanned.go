package split

import (
	"crypto/sha256"

	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/outdir"
)

// writtenSums notes, for each file split writes where the previous split
// has a scanned file, whether the new bytes are the old ones.
type writtenSums struct {
	d *outdir.OutDir
	// same[pkg][k]: file k of pkg is written as the scanned file was.
	same map[*Package][]bool
}

// newWrittenSums is nil when the directory was not scanned.
func newWrittenSums(d *outdir.OutDir, pkgs []*Package) *writtenSums {
	if d == nil || d.Mode() != outdir.ReadScanKeys {
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

// check settles every scanned file with what the writers noted (settle).
func (w *writtenSums) check(l *Layout) error {
	if w == nil {
		return nil
	}
	return settle(w.d, l, w.same, nil)
}

// SettleScanned settles every scanned file of d, as Write does before it
// changes anything, for a layout that is not written (plan): each file of
// l with a scanned previous file is rendered and compared with it (see
// settle). onSame is called with each previous file that l writes byte for
// byte as it was, once its objects are known to be what the scan read.
func SettleScanned(d *outdir.OutDir, l *Layout, onSame func(pkg *Package, s *outdir.ScannedFile)) error {
	type job struct {
		pkg *Package
		k   int
		s   *outdir.ScannedFile
	}
	var jobs []job
	same := map[*Package][]bool{}
	for _, pkg := range l.Packages { // none when the split has errors
		pc := d.Context(pkg.Context)
		if pc == nil || len(pc.Scanned) == 0 {
			continue
		}
		same[pkg] = make([]bool, len(pkg.files))
		for k, f := range pkg.files {
			if s := pc.Scanned[f.path]; s != nil && f.items != nil {
				jobs = append(jobs, job{pkg, k, s})
			}
		}
	}
	err := yamlio.Parallel(len(jobs), func(j int) error {
		data, err := jobs[j].pkg.render(jobs[j].k)
		same[jobs[j].pkg][jobs[j].k] = err == nil && sha256.Sum256(data) == jobs[j].s.Sum
		return err
	})
	if err != nil {
		return err
	}
	return settle(d, l, same, onSame)
}

// settle settles every scanned file of d: one that file k of a package of
// l writes byte for byte as it was (same[pkg][k]) holds the objects split
// writes there, which must be what the scan read (holdsScanned); any other
// is parsed and compared with the scan (ParseScanned).
// outdir.ErrScanMismatch reports a difference.
func settle(d *outdir.OutDir, l *Layout, same map[*Package][]bool, onSame func(*Package, *outdir.ScannedFile)) error {
	for _, pc := range d.Previous {
		if len(pc.Scanned) == 0 {
			continue
		}
		settled := map[string]bool{}
		if pkg, ok := l.Package(pc.Name); ok {
			for k, same := range same[pkg] {
				f := &pkg.files[k]
				if !same {
					continue
				}
				s := pc.Scanned[f.path]
				if !pkg.holdsScanned(k, s) {
					return outdir.ErrScanMismatch
				}
				if onSame != nil {
					onSame(pkg, s)
				}
				settled[f.path] = true
			}
		}
		if err := pc.ParseScanned(d, func(f string) bool { return settled[f] }); err != nil {
			return err
		}
	}
	return nil
}

// holdsScanned reports whether what the scan read of a previous file is
// what file k of pkg holds: its objects, in order, with their datastores in
// pkg's context. A scanned file written byte for byte as before is trusted
// only when it holds.
func (pkg *Package) holdsScanned(k int, s *outdir.ScannedFile) bool {
	l, f := pkg.layout, &pkg.files[k]
	if len(f.items) != len(s.Held) {
		return false
	}
	for n, i := range f.items {
		ds, ok := l.storeIn(i, pkg.index)
		if h := s.Held[n]; !ok || h.Key != outdir.KeyOf(&l.items[i].Object) || h.DataStore != ds {
			return false
		}
	}
	return true
}
