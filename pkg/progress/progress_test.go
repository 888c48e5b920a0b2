package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSilentWhenNotATerminal(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, false)
	m.Objects(2 * Threshold)
	m.Phase("routing %d objects", 2*Threshold)
	m.Done()
	if b.Len() != 0 {
		t.Errorf("wrote %q to a writer that is not a terminal", b.String())
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&b) {
		t.Error("a file or a buffer is taken for a terminal")
	}
}

func TestSilentBelowThreshold(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, true)
	m.Objects(Threshold - 1)
	m.Phase("routing %d objects", Threshold-1)
	m.Done()
	if b.Len() != 0 {
		t.Errorf("wrote %q for a run of fewer than %d objects", b.String(), Threshold)
	}
}

// On a terminal, each phase rewrites the line, and Done clears it.
func TestShownOnATerminal(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, true)
	m.Objects(Threshold)
	m.Phase("routing %d objects", Threshold)
	m.Phase("writing %d context packages", 40)
	m.Done()
	m.Done()
	out := b.String()
	for _, want := range []string{"\r\x1b[Kshard-router: routing 10000 objects (", "\r\x1b[Kshard-router: writing 40 context packages ("} {
		if !strings.Contains(out, want) {
			t.Errorf("%q lacks %q", out, want)
		}
	}
	if !strings.HasSuffix(out, "s)\r\x1b[K") || strings.Count(out, "\r\x1b[K") != strings.Count(out, "shard-router:")+1 {
		t.Errorf("the line is not cleared once at the end: %q", out)
	}
}

// While the input is read, its size unknown, a phase is shown once it has
// lasted slowPhase; a run that turns out small clears it.
func TestSlowReadShown(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, true)
	now := time.Unix(0, 0)
	m.now = func() time.Time { return now }
	m.Phase("reading %s", "pkg")
	if b.Len() != 0 {
		t.Fatalf("shown before %s: %q", slowPhase, b.String())
	}
	now = now.Add(slowPhase)
	m.mu.Lock()
	m.drawLocked()
	m.mu.Unlock()
	if want := "\r\x1b[Kshard-router: reading pkg (1.0s)"; b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
	m.Objects(Threshold - 1)
	m.Phase("routing")
	m.Done()
	if want := "\r\x1b[Kshard-router: reading pkg (1.0s)\r\x1b[K"; b.String() != want {
		t.Errorf("%q, want the line cleared once the input is read, and nothing more for a small run: %q", b.String(), want)
	}
}

func TestNilMeter(t *testing.T) {
	var m *Meter
	m.Objects(Threshold)
	m.Phase("x")
	m.Done()
}
