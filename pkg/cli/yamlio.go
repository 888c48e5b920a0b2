package cli

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// ReferenceEnv names the environment variable that, set to any non-empty
// value, makes every command read and write YAML on the reference path
// (kyaml's own readers and writers) instead of the fast one: for
// benchmarks, and for ruling the fast path out when debugging.
const ReferenceEnv = "SHARD_ROUTER_REFERENCE"

// ioOptions are the YAML I/O options of every command.
func ioOptions() yamlio.Options {
	return yamlio.Options{Reference: os.Getenv(ReferenceEnv) != ""}
}

// limitMemory sets a soft memory limit for function mode's streaming path,
// unless one is set already (GOMEMLIMIT), and returns what restores the
// previous one. At the end of the first pass the heap holds the input
// (inHeap bytes of it: none when it is mapped), the packed items (about the
// input's size) and the items' routing facts (more than half of it);
// without a limit the collector lets the heap grow to twice that before
// collecting. With it, it collects more often near the end of the first
// pass instead. It is a process-wide setting: the command line decides it,
// the library only reports the sizes.
func limitMemory(input, inHeap int) func() {
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(int64(inHeap) + 3*int64(input) + 64<<20)
	return func() { debug.SetMemoryLimit(prev) }
}
