package function

import (
	"testing"

	"github.com/shard-router/shard-router/pkg/gen"
)

// FuzzStreamMatchesReference: whatever the input, the streaming path either
// refuses it or gives exactly the reference path's bytes, error and
// results. The seeds are the hand-written cases, the golden inputs and
// small generated packages; `go test` runs them, `go test -fuzz` mutates them.
func FuzzStreamMatchesReference(f *testing.F) {
	for _, tc := range streamCases {
		f.Add([]byte(tc.input))
	}
	for _, g := range goldenInputs(f) {
		f.Add(g)
	}
	for _, tc := range manifestCases { // merge keys, aliases, Lists, old versions
		f.Add(manifestInput(tc))
	}
	f.Add(gen.Bytes(gen.Options{Items: 12, Contexts: 3, Seed: 7}))
	f.Add(gen.Bytes(gen.Options{Items: 8, Contexts: 2, Seed: 8, Routed: true}))
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > 1<<16 {
			t.Skip("too big to be worth a reference run")
		}
		fast, ref, _, _ := runBoth(t, input)
		requireSame(t, "fuzzed input", fast, ref)
	})
}
