package yamlio_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/shard-router/shard-router/internal/yamlio"
)

// TestPool: every index is called once; an error is returned, and no
// batch starts after it.
func TestPool(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		calls := make([]atomic.Int32, n)
		if err := yamlio.Parallel(n, func(i int) error { calls[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
	boom := errors.New("boom")
	var after atomic.Int32
	var failed atomic.Bool
	err := yamlio.ForEach(2, 10000, func(i int) error {
		if failed.Load() {
			after.Add(1)
		}
		if i == 10 {
			failed.Store(true)
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want boom", err)
	}
	// At most the other worker's index in flight may still run.
	if a := after.Load(); a > 2 {
		t.Errorf("%d indexes ran after the error", a)
	}
}
