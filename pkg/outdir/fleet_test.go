package outdir

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/testenv"
)

// openNewFleet opens the record of a new, empty OUT_DIR.
func openNewFleet(t *testing.T) (*OutDir, *FleetRecord) {
	t.Helper()
	d, err := OpenOutDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenFleet(d)
	if err != nil {
		t.Fatal(err)
	}
	return d, f
}

func TestFleetRecord(t *testing.T) {
	d, f := openNewFleet(t)
	dir := d.Path
	if f.Owner != "" || f.Context("A") != nil {
		t.Fatalf("a new OUT_DIR's record: owner %q, A %v; want none", f.Owner, f.Context("A"))
	}
	if _, err := os.Stat(filepath.Join(dir, FleetFile)); !os.IsNotExist(err) {
		t.Fatalf("opening wrote %s (%v): nothing is written before Set", FleetFile, err)
	}
	owner := f.EnsureOwner("package demo")
	if len(owner) != 32 || f.EnsureOwner("another name") != owner {
		t.Fatalf("owner %q: want one 32-hex id, kept once made", owner)
	}
	if err := f.Set("A", FleetContext{Serial: 3, ClusterUID: "uid-a"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("B", FleetContext{Serial: 1}); err != nil {
		t.Fatal(err)
	}
	// Copies of one OUT_DIR are one owner: a second reader sees it all.
	g, err := OpenFleet(d)
	if err != nil {
		t.Fatal(err)
	}
	if g.Owner != owner || g.OwnerName != "package demo" || g.Context("A").Serial != 3 || g.Context("A").ClusterUID != "uid-a" || g.Context("B").Serial != 1 {
		t.Fatalf("read back owner %q (%q), A %+v, B %+v", g.Owner, g.OwnerName, g.Context("A"), g.Context("B"))
	}
	// Restore puts an entry back as it was, none included.
	if err := g.Restore("B", nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore("A", &FleetContext{Serial: 2}); err != nil {
		t.Fatal(err)
	}
	h, err := OpenFleet(d)
	if err != nil {
		t.Fatal(err)
	}
	if h.Context("B") != nil || h.Context("A").Serial != 2 {
		t.Fatalf("after Restore: A %+v, B %+v; want serial 2 and none", h.Context("A"), h.Context("B"))
	}
	// Context returns a copy: the record changes only through Set.
	h.Context("A").Serial = 99
	if h.Context("A").Serial != 2 {
		t.Fatal("Context returned the record's own entry")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("OUT_DIR holds %d entries, want only %s (no temporary file left)", len(entries), FleetFile)
	}
}

func TestFleetRecordRefusesAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenOutDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for data, want := range map[string]string{
		`{"format": "shard-router-fleet v9", "contexts": {}}`: `format "shard-router-fleet v9", want "shard-router-fleet v1"`,
		`{"format": `: FleetFile + ": unexpected end of JSON input",
	} {
		if err := os.WriteFile(filepath.Join(dir, FleetFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenFleet(d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", data, err, want)
		}
	}
}

// Contexts set at once are written together, and each Set returns only
// once the file holds its entry (what a run killed right after it finds).
func TestFleetRecordSetsAtOnce(t *testing.T) {
	d, f := openNewFleet(t)
	const n = 64
	errs := make(chan error, n)
	for i := range n {
		go func() {
			name := fmt.Sprintf("ctx-%02d", i)
			if err := f.Set(name, FleetContext{Serial: int64(i + 1)}); err != nil {
				errs <- err
				return
			}
			g, err := OpenFleet(d)
			switch {
			case err != nil:
				errs <- err
			case g.Context(name) == nil || g.Context(name).Serial != int64(i+1):
				errs <- fmt.Errorf("Set(%s) returned, but the file holds %v", name, g.Context(name))
			default:
				errs <- nil
			}
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	g, err := OpenFleet(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Contexts) != n {
		t.Errorf("the file holds %d contexts, want %d", len(g.Contexts), n)
	}
}

// The file holds json.MarshalIndent's bytes, whatever the entries, their
// names and the changes between writes: each write's encoding keeps the
// entries that did not change.
func TestFleetRecordEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 7))
	names := []string{"A", "ctx-000", "ctx-001", "eu/west<1>", `q"uote`, "prod & more", "ünï", "a\tb", ""}
	words := []string{"", "x", "alice@host run 1", "<script>", "sha256:00ff", "tenant \"a\""}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for round := range testenv.Iterations(200) {
		_, f := openNewFleet(t)
		if rng.IntN(2) == 0 {
			f.EnsureOwner(pick(words))
		}
		for range rng.IntN(12) {
			name := pick(names)
			if rng.IntN(5) == 0 {
				if err := f.Restore(name, nil); err != nil {
					t.Fatal(err)
				}
				continue
			}
			c := FleetContext{Serial: rng.Int64N(1 << 40), Digest: pick(words), AppliedBy: pick(words), AppliedAs: pick(words),
				Outcome: pick(words), SettledBy: pick(words), ClusterUID: pick(words), Server: pick(words)}
			if rng.IntN(2) == 0 {
				c.AppliedAt = time.Unix(rng.Int64N(1<<31), rng.Int64N(1e9)).UTC()
			}
			if rng.IntN(3) == 0 {
				c.SettledAt = time.Unix(rng.Int64N(1<<31), 0).In(time.FixedZone("X", 3600))
			}
			if err := f.Set(name, c); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			want, err := json.MarshalIndent(f, "", "  ")
			f.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want)+"\n" { // writeFile ends the file with a newline
				t.Fatalf("round %d: the file holds\n%s\nwant json.MarshalIndent's\n%s", round, got, want)
			}
		}
	}
}

// BenchmarkFleetRecordSet is a run recording 256 contexts one after
// another, as its locks are taken (each Set writes the file).
func BenchmarkFleetRecordSet(b *testing.B) {
	dir := b.TempDir()
	d, err := OpenOutDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f, err := OpenFleet(d)
		if err != nil {
			b.Fatal(err)
		}
		f.EnsureOwner("package bench")
		for i := range 256 {
			c := FleetContext{Serial: int64(i + 1), Digest: "sha256:" + strings.Repeat("0f", 32), AppliedBy: "ci@runner run 1",
				AppliedAt: time.Unix(1780000000, 0).UTC(), Outcome: "applying", ClusterUID: "5f0c7f0e-0000-4000-8000-000000000000", Server: "https://127.0.0.1:6443"}
			if err := f.Set(fmt.Sprintf("ctx-%03d", i), c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
