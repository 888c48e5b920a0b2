package route_test

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/shard-router/shard-router/internal/gen"
	"github.com/shard-router/shard-router/pkg/function"
	"github.com/shard-router/shard-router/pkg/route"
)

// BenchmarkRoute routes a generated package of 10,000 items with 2, 64 and
// 1,000 contexts. ns/item and allocs/item should not grow with the number
// of contexts: selectors are indexed by label, so only candidate contexts
// are evaluated.
func BenchmarkRoute(b *testing.B) {
	const items = 10000
	for _, k := range []int{2, 64, 1000} {
		router, objs := routeInput(b, gen.Options{Items: items, Contexts: k, Seed: 1})
		b.Run(fmt.Sprintf("contexts=%d", k), func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if p := router.Route(objs); slices.ContainsFunc(p.Problems, isError) {
					b.Fatalf("routing errors: %v", p.Problems[0])
				}
			}
			runtime.ReadMemStats(&after)
			perItem := float64(b.N * len(objs))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perItem, "ns/item")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perItem, "allocs/item")
		})
	}
}

func isError(p route.Problem) bool { return p.Severity == route.Error }

func routeInput(b *testing.B, o gen.Options) (*route.Router, []route.Object) {
	b.Helper()
	r := &kio.ByteReader{Reader: bytes.NewReader(gen.Bytes(o))}
	nodes, err := r.Read()
	if err != nil {
		b.Fatal(err)
	}
	cfg, errs := function.LoadConfig(r.FunctionConfig)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	objs := make([]route.Object, len(nodes))
	for i, n := range nodes {
		objs[i] = function.ItemOf(n).Object
	}
	return cfg.Router, objs
}
