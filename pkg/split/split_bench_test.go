package split

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
)

// BenchmarkSplit is `shard-router split - -o DIR` on a generated
// ResourceList of 10,000 items and 64 contexts: read, route, write.
func BenchmarkSplit(b *testing.B) {
	data := gen.Bytes(gen.Options{Items: 10000, Contexts: 64, Seed: 1})
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		in, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
		if err != nil {
			b.Fatal(err)
		}
		od, err := input.OpenOutDir(filepath.Join(b.TempDir(), "out"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := runRoute(b, in, od, &Options{PackageName: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}
