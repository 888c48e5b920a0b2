package plan

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/testfixture/pkgload"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
	"github.com/shard-router/shard-router/pkg/split"
)

// BenchmarkSplitAgain is the same split twice into one directory: fresh,
// then again over its own output, side by side in each iteration. It
// reports again/fresh, which issue 19 wants at most 1.3: a re-split must
// not read the previous split at the cost of parsing it.
//   - unchanged: nothing changed, so every context directory is kept.
//   - last-file-edited: the last file of every context was edited on disk
//     after the fresh split, so split holds each context's other files
//     until it renders that one, then writes and swaps every context: the
//     dearest re-split.
func BenchmarkSplitAgain(b *testing.B) {
	data := gen.Bytes(gen.Options{Items: 10000, Contexts: 64, Seed: 1})
	for _, edit := range []bool{false, true} {
		name := "unchanged"
		if edit {
			name = "last-file-edited"
		}
		b.Run(name, func(b *testing.B) {
			var fresh, again time.Duration
			for i := 0; i < b.N; i++ {
				out := filepath.Join(b.TempDir(), "out")
				start := time.Now()
				splitStream(b, data, out)
				fresh += time.Since(start)
				if edit {
					editLastFiles(b, out)
				}
				start = time.Now()
				splitStream(b, data, out)
				again += time.Since(start)
			}
			b.ReportMetric(float64(again)/float64(fresh), "again/fresh")
		})
	}
}

// editLastFiles appends a comment to the last file each context's marker
// lists.
func editLastFiles(b *testing.B, out string) {
	b.Helper()
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		b.Fatal(err)
	}
	for _, pc := range od.Previous {
		f, err := os.OpenFile(filepath.Join(out, pc.Name, pc.Files[len(pc.Files)-1]), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("# edited\n")
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// splitStream runs what `shard-router split - -o out` runs.
func splitStream(b *testing.B, data []byte, out string) {
	b.Helper()
	in, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
	if err != nil {
		b.Fatal(err)
	}
	od, err := outdir.OpenOutDir(out)
	if err != nil {
		b.Fatal(err)
	}
	layout, err := Split(in, pkgload.Config(b, in), Options{Split: split.Options{Out: od, PackageName: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	if layout.Results.ExitCode() != 0 {
		b.Fatal(layout.Results)
	}
}
