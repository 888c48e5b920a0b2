package yamlio

import (
	"runtime"
	"sync"
	"sync/atomic"
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
// taking batch indexes at a time, and returns one of the errors, stopping
// early after the first.
func forEach(workers, batch, n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				lo := int(next.Add(int64(batch))) - batch
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+batch, n); i++ {
					if err := f(i); err != nil {
						once.Do(func() { first = err })
						failed.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}
