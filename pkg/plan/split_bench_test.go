package plan

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/split"
)

// BenchmarkSplitAgain is the same split twice into one directory: fresh,
// then again over its own output (every file kept), side by side in each
// iteration. It reports again/fresh, which issue 19 wants at most 1.3: a
// re-split must not read the previous split at the cost of parsing it.
func BenchmarkSplitAgain(b *testing.B) {
	data := gen.Bytes(gen.Options{Items: 10000, Contexts: 64, Seed: 1})
	var fresh, again time.Duration
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "out")
		start := time.Now()
		splitStream(b, data, out)
		fresh += time.Since(start)
		start = time.Now()
		splitStream(b, data, out)
		again += time.Since(start)
	}
	b.ReportMetric(float64(again)/float64(fresh), "again/fresh")
}

// splitStream runs what `shard-router split - -o out` runs.
func splitStream(b *testing.B, data []byte, out string) {
	b.Helper()
	in, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	od, err := input.OpenOutDir(out)
	if err != nil {
		b.Fatal(err)
	}
	node, err := in.Config()
	if err != nil {
		b.Fatal(err)
	}
	cfg, results := function.LoadConfig(node)
	if len(results) > 0 {
		b.Fatal(results)
	}
	layout, err := Split(in, cfg, Options{Split: split.Options{Out: od, PackageName: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	if layout.Results.ExitCode() != 0 {
		b.Fatal(layout.Results)
	}
}
