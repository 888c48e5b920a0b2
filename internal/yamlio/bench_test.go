package yamlio_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
)

// BenchmarkRun compares the streaming path with the reference path on
// generated packages. ns/item and B/item are per item of the package.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		input := gen.Bytes(gen.Options{Items: n, Contexts: 64, Seed: 1})
		for _, path := range []struct {
			name string
			run  func(io.Reader, io.Writer) error
		}{{"stream", run}, {"reference", runReference}} {
			b.Run(fmt.Sprintf("%s/items=%d", path.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(input)))
				for b.Loop() {
					if err := path.run(bytes.NewReader(input), io.Discard); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}

// BenchmarkItemDecode compares parsing an item with rebuilding it from its
// packed form, which is what the second pass does instead.
func BenchmarkItemDecode(b *testing.B) {
	input := gen.Bytes(gen.Options{Items: 1000, Contexts: 8, Seed: 1})
	items, _, err := yamlio.SplitResourceList(input)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r := items[i%len(items)]
			var doc yaml.Node
			if err := yaml.Unmarshal(input[r[0]:r[1]], &doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	packed := make([][]byte, len(items))
	for i, r := range items {
		var doc yaml.Node
		_ = yaml.Unmarshal(input[r[0]:r[1]], &doc)
		packed[i] = yamlio.PackItem(nil, doc.Content[0].Content[0])
	}
	b.Run("unpack", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := yamlio.UnpackItem(packed[i%len(packed)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
