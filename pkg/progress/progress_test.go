package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestNilMeter(t *testing.T) {
	var m *Meter
	m.Objects(Threshold)
	m.Phase("x")
	m.Done()
}
