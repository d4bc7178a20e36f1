package recipes_test

import (
	"context"
	"fmt"
	"sync/atomic"
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
	var granted atomic.Int64 // the tasks are goroutines on a real server
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
			held := granted.Add(1)
			// Hold until every client still waiting waits again. The
			// first sleep matters: a waiter inside Wait may have an event
			// pending, and on the simulator a sleep ends only once every
			// other task is blocked, its events taken. A real server
			// gives no such guarantee: there the count must also have
			// stood still for a poll (settled), which leaves fewer waiters
			// still busy with the last notification when the holder
			// releases.
			const pollsMax = 10_000
			settled, lastNotified := b.exact, int64(-1)
			for k := 0; ; k++ {
				c.Sleep(ctx, 10*time.Millisecond)
				notified := stats.notified.Load()
				if stats.waiting.Load() >= int64(n)-held && (settled || notified == lastNotified) {
					break
				}
				lastNotified = notified
				if k == pollsMax {
					t.Errorf("%d of %d waiters blocked after %d polls", stats.waiting.Load(), int64(n)-held, k)
					break
				}
			}
			if held == 1 {
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
	if got := granted.Load(); got != int64(n) {
		t.Errorf("%d of %d clients held the lock", got, n)
	}
	checkNoLockNodes(t, e, nil, dir)
	return e.Watches() - baseDelivered, int(stats.notified.Load() - baseWaited)
}

// TestHerd checks the herd figures: with n clients queued, the recipes
// whose waiters watch the children (or the one lock node) deliver
// n(n−1)/2 notifications until all have held the lock; those whose
// waiters watch their predecessor deliver n−1.
//
// On a real server the predecessor chain is exact too, but a children
// watch can miss a release: a waiter still busy with the previous
// notification has not set its watch again when the next holder releases
// (ZooKeeper's watches are one-shot, Programmer's Guide, "ZooKeeper
// Watches"). There the herd figures must reach herdShareMin of the ideal,
// and may pass it by at most n: notifications of the last arrivals still
// on their way when the count starts.
func TestHerd(t *testing.T) {
	const herdShareMin = 0.9
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, n := range []int{10, 100} {
			herd, chain := n*(n-1)/2, n-1
			chained := newGroup(t, b)
			for _, c := range []struct {
				name string
				want int
				// chain: each notification goes to one waiter, so the
				// figure is exact on any backend.
				chain bool
			}{
				// The herd figures first, one at a time; then the chain
				// figures, which are exact under any load, at once (a
				// group on a real server).
				{"herd-lock", herd, false},
				{"herd-rw-lock", herd, false}, // the write side
				{"exclusive-lock", herd, false},
				{"herd-election", herd, false},
				// The gate holder watches the leases, the others their gate
				// predecessor: two notifications a hand-over, none after
				// the last gate hand-over: 2n−3. The gate holder's watch
				// is a children watch.
				{"semaphore-mutex", 2*n - 3, false},
				{"fair-lock", chain, true},
				{"rw-lock", chain, true}, // the write side
				{"reentrant-mutex", chain, true},
				{"leader-latch", chain, true},
				{"leader-selector", chain, true},
				{"election", chain, true},
			} {
				check := func(t *testing.T) {
					delivered, waited := herdRun(t, b, c.name, n)
					t.Logf("%s, n=%d: %d notifications delivered, %d returned by Wait (want %d)", c.name, n, delivered, waited, c.want)
					for _, got := range []struct {
						what  string
						count int
					}{{"delivered", delivered}, {"returned by Wait", waited}} {
						switch {
						case b.exact || c.chain:
							if got.count != c.want {
								t.Errorf("%d notifications %s, want %d", got.count, got.what, c.want)
							}
						case float64(got.count) < herdShareMin*float64(c.want) || got.count > c.want+n:
							t.Errorf("%d notifications %s, want %d (at least %.0f%% of it, at most %d more)", got.count, got.what, c.want, 100*herdShareMin, n)
						}
					}
				}
				name := fmt.Sprintf("%s/n=%d", c.name, n)
				if c.chain {
					chained.run(name, check)
				} else {
					t.Run(name, check)
				}
			}
			chained.wait()
		}
	})
}
