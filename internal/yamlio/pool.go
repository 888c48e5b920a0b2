package yamlio

import (
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// batchSize indexes are one unit of work: an item rendered, read or
// packed is a few microseconds, too little to hand out one at a time.
const batchSize = 64

// Parallel calls f(i) for i in [0, n) on GOMAXPROCS workers, batchSize
// indexes at a time, and returns one of the errors, stopping early after
// the first.
func Parallel(n int, f func(i int) error) error {
	return forEach(runtime.GOMAXPROCS(0), batchSize, n, f)
}

// ForEach calls f(i) for i in [0, n) on the given number of workers, one
// index at a time (for work that waits, such as creating files), and
// returns one of the errors, stopping early after the first.
func ForEach(workers, n int, f func(i int) error) error { return forEach(workers, 1, n, f) }

// forEach calls f(i) for i in [0, n) on the given number of workers, each
// taking the next batch indexes until none is left, and returns the first
// error; no batch starts after it. The workers live for the whole loop:
// handing each batch to a goroutine of its own (errgroup's SetLimit) made
// split measurably slower.
func forEach(workers, batch, n int, f func(i int) error) error {
	var g errgroup.Group
	var next atomic.Int64
	var failed atomic.Bool
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			for !failed.Load() {
				lo := int(next.Add(int64(batch))) - batch
				if lo >= n {
					return nil
				}
				for i := lo; i < min(lo+batch, n); i++ {
					if err := f(i); err != nil {
						failed.Store(true)
						return err
					}
				}
			}
			return nil
		})
	}
	return g.Wait()
}
