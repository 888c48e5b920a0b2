package apply

import (
	"sync"
	"testing"
)

// The Lease writes of many contexts run leaseFactor times --parallel at
// once, and --parallel still bounds them: --parallel 2 never has more
// than 8 in flight, --parallel 0 has all of them.
func TestLeaseGroupBound(t *testing.T) {
	for _, tc := range []struct {
		parallel, contexts, want int
	}{
		{parallel: 2, contexts: 20, want: 2 * leaseFactor},
		{parallel: DefaultParallel, contexts: 100, want: DefaultParallel * leaseFactor},
		{parallel: 0, contexts: 20, want: 20},
	} {
		r := &run{opts: Options{Parallel: tc.parallel}}
		g := r.leaseGroup()
		var (
			mu        sync.Mutex
			now, most int
			release   = make(chan struct{})
			started   = make(chan struct{}, tc.contexts)
		)
		// Every write waits until the bound's worth of them has started:
		// then at most that many ran at once, and no fewer.
		go func() {
			for range tc.want {
				<-started
			}
			close(release)
		}()
		for range tc.contexts {
			g.Go(func() error {
				mu.Lock()
				now++
				most = max(most, now)
				mu.Unlock()
				started <- struct{}{}
				<-release
				mu.Lock()
				now--
				mu.Unlock()
				return nil
			})
		}
		_ = g.Wait()
		if most != tc.want {
			t.Errorf("--parallel %d, %d contexts: %d Lease writes at once, want %d", tc.parallel, tc.contexts, most, tc.want)
		}
	}
}
