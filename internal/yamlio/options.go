package yamlio

// Options choose, for every reader and writer of this package, between the
// fast path and the reference path. The command line builds them; nothing
// in this package reads the environment or sets a process-wide setting.
type Options struct {
	// Reference takes kyaml's own readers and writers (the reference path)
	// for every input, never the fast ones: for benchmarks, and to rule the
	// fast path out when debugging.
	Reference bool
	// Streaming, when not nil, is called when function mode takes the
	// streaming path, with the input's size and how many of its bytes are
	// on the heap (none when the input is a mapped file). The function it
	// returns is called when that path is done, or when it refused the
	// input for the reference path. The command line sets a memory limit
	// with it.
	Streaming func(input, inHeap int) (done func())
}
