package recipes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
)

// herdRun queues n clients on one lock (one holding, n−1 waiting); each
// holder releases only once every client still waiting is blocked in Wait
// again. It returns the watch notifications delivered from the first
// release until all have held the lock: counted in the backend
// (the simulator's trace) and as returned by Wait.
func herdRun(t *testing.T, b backend, name string, n int) (delivered, waited int) {
	r, _ := recipes.Lookup(name)
	e := b.open(t, 47)
	const dir = "/locks/herd"
	stats := &probeStats{}
	granted := 0
	baseDelivered, baseWaited := 0, int64(0)
	for i := range n {
		c := newProbe(e.Conn(t), stats)
		l := r.New(c, dir, recipes.Options{})
		e.Go(c, fmt.Sprint("client", i), func(ctx context.Context) {
			c.Sleep(ctx, time.Duration(i)*time.Millisecond)
			actx, cancel := within(c, time.Hour)
			defer cancel()
			lease, err := l.Acquire(actx)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			granted++
			// Hold until every client still waiting waits again. The
			// first sleep matters: a waiter inside Wait may have an event
			// pending, and on the simulator a sleep ends only once every
			// other task is blocked, its events taken.
			const pollsMax = 10_000
			for k := 0; ; k++ {
				c.Sleep(ctx, 10*time.Millisecond)
				if stats.waiting.Load() >= int64(n-granted) {
					break
				}
				if k == pollsMax {
					t.Errorf("%d of %d waiters blocked after %d polls", stats.waiting.Load(), n-granted, k)
					break
				}
			}
			if granted == 1 {
				baseDelivered, baseWaited = e.Watches(), stats.notified.Load()
			}
			if err := lease.Release(ctx); err != nil {
				t.Errorf("client %d release: %v", i, err)
			}
		})
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if granted != n {
		t.Errorf("%d of %d clients held the lock", granted, n)
	}
	checkNoLockNodes(t, e, nil, dir)
	return e.Watches() - baseDelivered, int(stats.notified.Load() - baseWaited)
}

// TestHerd checks the herd figures: with n clients queued, the recipes
// whose waiters watch the children (or the one lock node) deliver
// n(n−1)/2 notifications until all have held the lock; those whose
// waiters watch their predecessor deliver n−1.
func TestHerd(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, n := range []int{10, 100} {
			herd, chain := n*(n-1)/2, n-1
			for _, c := range []struct {
				name string
				want int
			}{
				{"herd-lock", herd},
				{"herd-rw-lock", herd}, // the write side
				{"exclusive-lock", herd},
				{"fair-lock", chain},
				{"rw-lock", chain}, // the write side
				{"reentrant-mutex", chain},
				// The gate holder watches the leases, the others their gate
				// predecessor: two notifications a hand-over, none after
				// the last gate hand-over: 2n−3.
				{"semaphore-mutex", 2*n - 3},
			} {
				t.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(t *testing.T) {
					delivered, waited := herdRun(t, b, c.name, n)
					t.Logf("%s, n=%d: %d notifications delivered, %d returned by Wait (want %d)", c.name, n, delivered, waited, c.want)
					if b.exact && delivered != c.want {
						t.Errorf("%d notifications delivered, want %d", delivered, c.want)
					}
					if b.exact && waited != c.want {
						t.Errorf("%d notifications returned by Wait, want %d", waited, c.want)
					}
				})
			}
		}
	})
}
