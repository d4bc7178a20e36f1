package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// A connFault is a connection loss injected before the at-th request of
// one phase (acquire or release) of the faulty client.
type connFault struct {
	phase string // "acquire" or "release"
	kind  sim.FaultKind
	at    int // 0: no fault
}

// faultRun runs one fault case: another client holds the lock, the faulty
// client acquires (waiting), holds, releases, then the other client takes
// the lock again. It returns the number of requests the faulty client's
// acquire and release made. The lock must stay usable and nothing may be
// left behind.
func faultRun(t *testing.T, b backend, r recipes.Recipe, f connFault) (acquireCalls, releaseCalls int) {
	t.Helper()
	e := b.open(t, 23)
	const dir = "/locks/f"
	oc := e.Conn(t)
	fc := newProbe(e.Conn(t), nil)
	other, faulty := r.New(oc, dir, recipes.Options{}), r.New(fc, dir, recipes.Options{})
	arm := func(phase string) {
		fc.calls = 0
		fc.before = nil
		if f.at == 0 || f.phase != phase {
			return
		}
		fc.before = func(n int, _ string) {
			if n == f.at {
				if err := e.Inject(fc, f.kind, 0); err != nil {
					t.Error(err)
				}
			}
		}
	}
	var done atomic.Bool // the faulty client is done
	e.Go(oc, "other", func(ctx context.Context) {
		lease, err := other.Acquire(ctx)
		if err != nil {
			t.Errorf("other: %v", err)
			return
		}
		oc.Sleep(ctx, 2*time.Second)
		lease.Release(ctx)
		for i := 0; !done.Load() && i < 600; i++ {
			oc.Sleep(ctx, 100*time.Millisecond)
		}
		actx, cancel := within(oc, 30*time.Second)
		defer cancel()
		lease, err = other.Acquire(actx)
		if err != nil {
			t.Errorf("%+v: the lock is not usable after the fault: %v", f, err)
			return
		}
		if err := lease.Release(ctx); err != nil {
			t.Errorf("other release: %v", err)
		}
	})
	e.Go(fc, "faulty", func(ctx context.Context) {
		defer done.Store(true)
		fc.Sleep(ctx, 100*time.Millisecond)
		arm("acquire")
		actx, cancel := within(fc, time.Minute)
		lease, err := faulty.Acquire(actx)
		cancel()
		acquireCalls = fc.calls
		arm("")
		if err != nil {
			t.Errorf("%+v: acquire: %v", f, err)
			return
		}
		fc.Sleep(ctx, 200*time.Millisecond)
		arm("release")
		rctx, cancel := within(fc, time.Minute)
		err = lease.Release(rctx)
		cancel()
		releaseCalls = fc.calls
		arm("")
		if err != nil {
			t.Errorf("%+v: release: %v", f, err)
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	checkNoLockNodes(t, e, nil, dir)
	return acquireCalls, releaseCalls
}

// TestConnectionLossAtEveryStep injects a connection loss, with the
// request dropped and with the reply dropped after the server applied it,
// at each request of acquire and of release in turn. A real server runs
// the drop-reply cases only (see realBackend).
func TestConnectionLossAtEveryStep(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if !b.faults {
			t.Skip("no fault injection")
		}
		kinds := b.lossKinds
		if kinds == nil {
			kinds = []sim.FaultKind{sim.FaultDropRequest, sim.FaultDropReply}
		}
		recipeGroup := newGroup(t, b)
		defer recipeGroup.wait()
		for _, r := range correctRecipes() {
			recipeGroup.run(r.Name, func(t *testing.T) {
				acq, rel := faultRun(t, b, r, connFault{})
				if acq == 0 || rel == 0 {
					t.Fatalf("acquire made %d requests, release %d", acq, rel)
				}
				g := newGroup(t, b)
				defer g.wait()
				cases := 0
				for _, kind := range kinds {
					for _, phase := range []struct {
						name string
						n    int
					}{{"acquire", acq}, {"release", rel}} {
						for at := 1; at <= phase.n; at++ {
							f := connFault{phase: phase.name, kind: kind, at: at}
							g.run(fmt.Sprintf("%s-%s-%d", kind, phase.name, at), func(t *testing.T) { faultRun(t, b, r, f) })
							cases++
						}
					}
				}
				t.Logf("%d requests to acquire, %d to release: %d fault cases", acq, rel, cases)
			})
		}
	})
}

// TestExpiryWhileWaiting expires the session of a waiting client: its
// acquire starts over in the new session and succeeds; nothing is left.
func TestExpiryWhileWaiting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		if !b.faults {
			t.Skip("no fault injection")
		}
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 29)
				const dir = "/locks/e"
				hc, wc := e.Conn(t), e.Conn(t)
				var held atomic.Bool
				e.Go(hc, "holder", func(ctx context.Context) {
					lease, err := r.New(hc, dir, recipes.Options{}).Acquire(ctx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					held.Store(true)
					hc.Sleep(ctx, time.Second)
					e.Inject(wc, sim.FaultExpire, 0)
					hc.Sleep(ctx, 5*time.Second)
					lease.Release(ctx)
				})
				e.Go(wc, "waiter", func(ctx context.Context) {
					wc.Sleep(ctx, 100*time.Millisecond)
					awaitFlag(ctx, wc, &held)
					first := wc.Session().ID
					actx, cancel := within(wc, time.Minute)
					defer cancel()
					lease, err := r.New(wc, dir, recipes.Options{}).Acquire(actx)
					if err != nil {
						t.Errorf("waiter: %v", err)
						return
					}
					if lease.SessionID() == first {
						t.Errorf("granted in the expired session %#x", first)
					}
					if err := lease.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
					}
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, dir)
			})
		}
	})
}

// TestExpiryWhileHolding expires the holder's session: the lease reports
// lost, its release says so, the next client gets the lock with a higher
// fencing token, and nothing is left.
func TestExpiryWhileHolding(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		if !b.faults {
			t.Skip("no fault injection")
		}
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 31)
				const dir = "/locks/h"
				hc, wc := e.Conn(t), e.Conn(t)
				var holderToken, nextToken int64
				var held atomic.Bool
				e.Go(hc, "holder", func(ctx context.Context) {
					lease, err := r.New(hc, dir, recipes.Options{}).Acquire(ctx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					holderToken = lease.Token()
					held.Store(true)
					hc.Sleep(ctx, time.Second)
					e.Inject(hc, sim.FaultExpire, 0)
					wctx, cancel := within(hc, time.Minute)
					defer cancel()
					st := recipes.LeaseHeld
					for st == recipes.LeaseHeld || st == recipes.LeaseSuspended {
						if st, err = lease.WaitState(wctx, st); err != nil {
							t.Errorf("WaitState: %v", err)
							return
						}
					}
					if st != recipes.LeaseLost {
						t.Errorf("state %v, want lost", st)
					}
					if err := lease.Release(wctx); !errors.Is(err, recipes.ErrLeaseLost) {
						t.Errorf("release of a lost lease: %v, want ErrLeaseLost", err)
					}
				})
				e.Go(wc, "next", func(ctx context.Context) {
					wc.Sleep(ctx, 100*time.Millisecond)
					awaitFlag(ctx, wc, &held)
					actx, cancel := within(wc, time.Minute)
					defer cancel()
					lease, err := r.New(wc, dir, recipes.Options{}).Acquire(actx)
					if err != nil {
						t.Errorf("next: %v", err)
						return
					}
					nextToken = lease.Token()
					lease.Release(ctx)
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				if nextToken <= holderToken {
					t.Errorf("token %d after the lost lease's %d", nextToken, holderToken)
				}
				checkNoLockNodes(t, e, nil, dir)
			})
		}
	})
}

// awaitFlag holds a task until flag is set (another task got where the
// test needs it), at most awaitPollsMax polls of 10ms (awaitCount). On the
// simulator the flag is set long before; on a loaded real server a first
// acquire can take longer than the head start a test gives it.
func awaitFlag(ctx context.Context, c recipes.Conn, flag *atomic.Bool) {
	awaitCount(ctx, c, func() int {
		if flag.Load() {
			return 1
		}
		return 0
	}, 1)
}

// awaitCount holds a task until count() reaches want, polling as
// awaitFlag does.
func awaitCount(ctx context.Context, c recipes.Conn, count func() int, want int) {
	const awaitPollsMax = 3000
	for i := 0; count() < want && i < awaitPollsMax; i++ {
		c.Sleep(ctx, 10*time.Millisecond)
	}
}

// countChildren is the number of dir's children; 0 while dir is missing
// or the call fails.
func countChildren(ctx context.Context, c recipes.Conn, dir string) int {
	kids, _, err := c.Children(ctx, dir)
	if err != nil {
		return 0
	}
	return len(kids)
}
