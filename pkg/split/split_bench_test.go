package split

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/internal/yamlio"
	"github.com/shard-router/shard-router/pkg/gitops"
	"github.com/shard-router/shard-router/pkg/input"
	"github.com/shard-router/shard-router/pkg/outdir"
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
		od, err := outdir.OpenOutDir(filepath.Join(b.TempDir(), "out"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := runRoute(b, in, od, &Options{PackageName: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitEngine is split with each engine at 10,000 and 100,000
// items (64 contexts): an engine's split is kpt's less two files per
// context plus the engine's objects, so its time should stay within 1.05x
// of --engine kpt's.
func BenchmarkSplitEngine(b *testing.B) {
	for _, items := range []int{10000, 100000} {
		data := gen.Bytes(gen.Options{Items: items, Contexts: 64, Seed: 1})
		for _, engine := range gitops.Engines {
			b.Run(fmt.Sprintf("items=%d/engine=%s", items, engine), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				opts := &Options{PackageName: "bench", Engine: engine}
				if engine.Pulls() {
					opts.Source = gitops.Source{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "out", Interval: gitops.DefaultInterval}
				}
				for i := 0; i < b.N; i++ {
					in, err := input.ReadStream(bytes.NewReader(data), yamlio.Options{})
					if err != nil {
						b.Fatal(err)
					}
					od, err := outdir.OpenOutDir(filepath.Join(b.TempDir(), "out"))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := runRoute(b, in, od, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
