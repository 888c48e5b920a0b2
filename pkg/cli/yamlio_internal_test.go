package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestIOOptions(t *testing.T) {
	t.Setenv(ReferenceEnv, "")
	if ioOptions().Reference {
		t.Errorf("%s empty: Reference set", ReferenceEnv)
	}
	t.Setenv(ReferenceEnv, "1")
	if !ioOptions().Reference {
		t.Errorf("%s=1: Reference not set", ReferenceEnv)
	}
}

// TestLimitMemory: the streaming path's limit is set and restored, and a
// limit already set (GOMEMLIMIT) is left alone.
func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	restore := limitMemory(100<<20, 0)
	if got, want := debug.SetMemoryLimit(-1), int64(300<<20+64<<20); got != want {
		t.Errorf("limit for a mapped 100 MiB input = %d, want %d", got, want)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after restore = %d, want none", got)
	}
	debug.SetMemoryLimit(1 << 30)
	restore = limitMemory(100<<20, 100<<20)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("a limit already set became %d", got)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("a limit already set became %d after restore", got)
	}
}
