package function

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/shard-router/shard-router/pkg/gen"
)

// BenchmarkRun compares the streaming path with the reference path on
// generated packages. ns/item and B/item are per item of the package.
func BenchmarkRun(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		input := gen.Bytes(gen.Options{Items: n, Contexts: 64, Seed: 1})
		for _, path := range []struct {
			name string
			run  func(io.Reader, io.Writer) error
		}{{"stream", Run}, {"reference", RunReference}} {
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
