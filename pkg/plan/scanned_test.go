package plan

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// TestSplitScanMatchesParse: split over a previous split it scanned writes
// what it writes over one it parsed; a scan that disagrees with the files
// (as a scanner bug would) is caught before anything is changed, and split
// starts over, parsing.
func TestSplitScanMatchesParse(t *testing.T) {
	pkg, base := splitBase(t)
	changeBase(t, pkg)
	previous := readTree(t, base)
	// run splits a copy of the previous split, read as mode says and
	// tampered with, and returns what it wrote.
	type setup struct {
		out string
		od  *outdir.OutDir
		in  *input.Input
		cfg *function.Engine
	}
	open := func(mode outdir.ReadMode, tamper func(*outdir.OutDir) int) setup {
		out := filepath.Join(t.TempDir(), "out")
		writeTree(t, out, previous)
		od, err := outdir.OpenOutDir(out)
		if err == nil && mode == outdir.ReadParse {
			od, err = od.Reparse()
		}
		if err != nil {
			t.Fatal(err)
		}
		if od.Mode() != mode {
			t.Fatalf("read as %v, want %v", od.Mode(), mode)
		}
		if tamper != nil && tamper(od) == 0 {
			t.Fatal("nothing was scanned")
		}
		in, cfg := pkgload.Load(t, pkg, od)
		return setup{out, od, in, cfg}
	}
	run := func(mode outdir.ReadMode, tamper func(*outdir.OutDir) int, writeOnly bool) (map[string]string, error) {
		s := open(mode, tamper)
		var layout *split.Layout
		var err error
		if writeOnly {
			if layout, err = Build(s.in, s.cfg, Options{Split: split.Options{Out: s.od}}); err == nil {
				err = split.Write(s.od, layout)
			}
		} else {
			layout, err = Split(s.in, s.cfg, Options{Split: split.Options{Out: s.od}})
		}
		if err == nil && layout.Results.ExitCode() != 0 {
			t.Fatalf("split refused: %v", layout.Results)
		}
		return readTree(t, s.out), err
	}
	want, err := run(outdir.ReadParse, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(want, previous) {
		t.Fatal("the change of the package changed nothing")
	}
	if got, err := run(outdir.ReadScanKeys, nil, false); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("scanned: %v; wrote %d files that differ from the parsed run's", err, len(diffKeys(got, want)))
	}

	// wrongNames gives a wrong name to every object of the scanned files
	// whose path (context/file) only says.
	wrongNames := func(only func(path string) bool) func(*outdir.OutDir) int {
		return func(od *outdir.OutDir) (n int) {
			for _, pc := range od.Previous {
				for f, s := range pc.Scanned {
					if !only(pc.Name + "/" + f) {
						continue
					}
					for k := range s.Held {
						s.Held[k].Key.Name += "-wrong"
						n++
					}
				}
			}
			return n
		}
	}

	// A wrong name in every scan: Write refuses before any change.
	wrongEverywhere := wrongNames(func(string) bool { return true })
	if got, err := run(outdir.ReadScanKeys, wrongEverywhere, true); !errors.Is(err, outdir.ErrScanMismatch) || !reflect.DeepEqual(got, previous) {
		t.Errorf("Write over wrong scans: %v, and %d files changed", err, len(diffKeys(got, previous)))
	}
	if got, err := run(outdir.ReadScanKeys, wrongEverywhere, false); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Split over wrong scans: %v; wrote %d files that differ", err, len(diffKeys(got, want)))
	}

	// A wrong name only in the scans of files written byte for byte as
	// before, which nothing parses: their objects are still checked.
	wrongUnchanged := wrongNames(func(p string) bool { return want[p] == previous[p] })
	if got, err := run(outdir.ReadScanKeys, wrongUnchanged, true); !errors.Is(err, outdir.ErrScanMismatch) || !reflect.DeepEqual(got, previous) {
		t.Errorf("Write over wrong scans of unchanged files: %v, and %d files changed", err, len(diffKeys(got, previous)))
	}
	// plan's check of the same scans (split.SettleScanned) catches it too.
	planOut := filepath.Join(t.TempDir(), "out")
	writeTree(t, planOut, previous)
	od, err := outdir.OpenPrevious(planOut)
	if err != nil || wrongUnchanged(od) == 0 {
		t.Fatalf("%v, or nothing was scanned", err)
	}
	in, cfg := pkgload.Load(t, pkg, od)
	l, err := Build(in, cfg, Options{Split: split.Options{Out: od}})
	if err != nil || l.Results.ExitCode() != 0 {
		t.Fatalf("build: %v %v", err, l.Results)
	}
	if err := split.SettleScanned(od, l, func(*split.Package, *outdir.ScannedFile) {}); !errors.Is(err, outdir.ErrScanMismatch) {
		t.Errorf("plan's check of wrong scans of unchanged files: %v", err)
	}

	// A scan that finds, in one context, an object another context holds:
	// a move, which build refuses, until the scans are checked.
	phantom := func(od *outdir.OutDir) int {
		for _, from := range od.Previous {
			for _, to := range od.Previous {
				for f, s := range from.Scanned {
					if to == from || len(s.Held) == 0 {
						continue
					}
					if _, ok := to.Held[s.Held[0].Key]; ok || s.Held[0].Key.Kind == "Lease" { // the Lease is gone
						continue
					}
					for g, ts := range to.Scanned {
						ts.Held = append(ts.Held, s.Held[0])
						to.Held[s.Held[0].Key] = ""
						t.Logf("%s/%s claims %v of %s/%s", to.Name, g, s.Held[0].Key, from.Name, f)
						return 1
					}
				}
			}
		}
		return 0
	}
	if s := open(outdir.ReadScanKeys, phantom); true {
		if l, err := build(s.in, s.cfg, Options{Split: split.Options{Out: s.od}}); err != nil || l.Results.ExitCode() == 0 {
			t.Fatalf("the phantom object does not make the split fail (%v): the test tests nothing", err)
		}
	}
	if got, err := run(outdir.ReadScanKeys, phantom, false); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Split over a phantom object: %v; wrote %d files that differ", err, len(diffKeys(got, want)))
	}
}

// diffKeys are the files that differ between two trees.
func diffKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
