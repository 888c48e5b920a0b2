package yamlio_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
)

// FuzzFastMatchesReference: whatever the input, every fast path either
// refuses it (with a fallback reason) or gives exactly its reference's
// bytes, errors and results: function mode, the stream reader, the
// package reader (the input as one file of a package) and the encoder (on
// every resource kyaml reads from the input). The seeds are the function
// mode cases, the encoder cases, the golden inputs and small generated
// packages; `go test` runs them, `go test -fuzz` mutates them.
func FuzzFastMatchesReference(f *testing.F) {
	for _, tc := range streamCases {
		f.Add([]byte(tc.input))
	}
	for _, c := range encodeCases {
		f.Add([]byte(c))
	}
	for _, tc := range shapeCases {
		f.Add([]byte(tc.input))
	}
	for _, g := range goldenInputs(f) {
		f.Add(g)
	}
	// Small generated packages: each execution runs every reader and
	// writer twice, so a seed's size is the fuzzer's speed.
	f.Add(gen.Bytes(gen.Options{Items: 4, Contexts: 3, Seed: 7}))
	f.Add(gen.Bytes(gen.Options{Items: 3, Contexts: 2, Seed: 8, Routed: true}))
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) > maxFuzzInput {
			t.Skip("too big: no input may take seconds (the fuzz engine gives up on one after 10 s)")
		}
		// Function mode; runBoth asserts a refusal as a fallback.
		if fast, ref, streamed, _ := runBoth(t, input); streamed {
			requireSame(t, "function mode", fast, ref)
		}

		requireSameStream(t, "stream reader", input)

		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "resources.yaml"), input, 0o644); err != nil {
			t.Fatal(err)
		}
		requireSamePackage(t, "package reader", dir)

		nodes, _, err := yamlio.ReadStream(bytes.NewReader(input), yamlio.Options{Reference: true},
			func(n *yaml.RNode, _ bool) *yaml.RNode { return n })
		if err != nil {
			return
		}
		for _, n := range nodes {
			requireSameEncoding(t, "encoder, one resource", []*yaml.RNode{n})
		}
		if len(nodes) > 0 { // a file holds at least one resource
			requireSameEncoding(t, "encoder, all resources", nodes)
		}
	})
}

// maxFuzzInput bounds an input's size, and so its time: a few milliseconds.
// The differential suite covers big inputs.
const maxFuzzInput = 16 << 10
