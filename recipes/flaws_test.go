package recipes_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// Each flawed variant runs beside fair-lock in the scenario that shows its
// flaw: fair-lock must come through, the variant must not.

// crashedHolder: the holder's process crashes while it holds the lock; a
// second client then asks for it, with a timeout well past the session
// timeout. It reports whether the second client got the lock, and the
// lock nodes left at the end.
func crashedHolder(t *testing.T, b backend, name string) (bool, []string) {
	r, _ := recipes.Lookup(name)
	e := b.open(t, 37)
	const dir = "/locks/crash"
	hc, wc := e.Conn(t), e.Conn(t)
	var holds atomic.Bool
	e.Go(hc, "holder", func(ctx context.Context) {
		if _, err := r.New(hc, dir, recipes.Options{}).Acquire(ctx); err != nil {
			t.Errorf("holder: %v", err)
		}
		holds.Store(true)
		hc.Sleep(ctx, time.Hour) // ended by the crash
	})
	got := false
	e.Go(wc, "next", func(ctx context.Context) {
		wc.Sleep(ctx, 500*time.Millisecond)
		// On a loaded machine the holder's acquire may outlast the head
		// start: the crash waits for it.
		for i := 0; !holds.Load(); i++ {
			if i == 400 || wc.Sleep(ctx, 20*time.Millisecond) != nil {
				t.Error("the holder never held the lock")
				return
			}
		}
		e.Inject(hc, sim.FaultCrash, 0)
		actx, cancel := within(wc, 5*sessionTimeout)
		defer cancel()
		lease, err := r.New(wc, dir, recipes.Options{}).Acquire(actx)
		if err == nil {
			got = true
			lease.Release(ctx)
		} else if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("next: %v", err)
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return got, listLockNodes(t, e, dir)
}

// TestPersistentLockFlaw: a crashed holder's PERSISTENT node outlives its
// session, and everyone waits forever (seed 000).
func TestPersistentLockFlaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if !b.faults {
			t.Skip("no fault injection")
		}
		g := newGroup(t, b)
		defer g.wait()
		g.run("fair-lock", func(t *testing.T) {
			if got, left := crashedHolder(t, b, "fair-lock"); !got || len(left) != 0 {
				t.Errorf("fair-lock after a crashed holder: got the lock %v, left %v", got, left)
			}
		})
		g.run("persistent-lock", func(t *testing.T) {
			if got, left := crashedHolder(t, b, "persistent-lock"); got || len(left) != 1 {
				t.Errorf("persistent-lock after a crashed holder: got the lock %v, left %v; want it blocked behind the orphan", got, left)
			}
		})
	})
}

// lostCreateReply: the reply to the first create of a lock node is lost
// (the server made the node). It reports whether the client got the lock
// and the lock nodes left while its session still lives.
func lostCreateReply(t *testing.T, b backend, name string) (bool, []string) {
	r, _ := recipes.Lookup(name)
	e := b.open(t, 41)
	const dir = "/locks/lost"
	fc := newProbe(e.Conn(t), nil)
	armed := false
	fc.before = func(_ int, op string) {
		if op == "create" && armed {
			armed = false
			e.Inject(fc, sim.FaultDropReply, 0)
		}
	}
	got := false
	var left []string
	e.Go(fc, "client", func(ctx context.Context) {
		// The directory exists, so the first create makes the lock node.
		for _, p := range []string{"/locks", dir} {
			if _, err := fc.CreateContainer(ctx, p, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
				t.Error(err)
			}
		}
		armed = true
		actx, cancel := within(fc, 2*sessionTimeout)
		defer cancel()
		lease, err := r.New(fc, dir, recipes.Options{}).Acquire(actx)
		if err == nil {
			got = true
			lease.Release(ctx)
		} else if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("acquire: %v", err)
		}
		left, err = lockNodes(ctx, fc, dir)
		if err != nil {
			t.Error(err)
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return got, left
}

// TestUnprotectedLockFlaw: without the GUID, a create whose reply was lost
// is made again; the first node is orphaned, and the client waits behind
// its own orphan (seed 004, ZooKeeper's recipe notes).
func TestUnprotectedLockFlaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if !b.faults {
			t.Skip("no fault injection")
		}
		g := newGroup(t, b)
		defer g.wait()
		g.run("fair-lock", func(t *testing.T) {
			if got, left := lostCreateReply(t, b, "fair-lock"); !got || len(left) != 0 {
				t.Errorf("fair-lock after a lost create reply: got the lock %v, left %v", got, left)
			}
		})
		g.run("unprotected-lock", func(t *testing.T) {
			if got, left := lostCreateReply(t, b, "unprotected-lock"); got || len(left) != 1 {
				t.Errorf("unprotected-lock after a lost create reply: got the lock %v, left %v; want it stuck behind its orphan", got, left)
			}
		})
	})
}

// vanishingPredecessor: a client holds the lock; a second asks for it, and
// the holder releases just after the second listed the children and just
// before it sets its watch. It reports whether the second got the lock.
func vanishingPredecessor(t *testing.T, b backend, name, watchOp string) bool {
	r, _ := recipes.Lookup(name)
	e := b.open(t, 43)
	const dir = "/locks/wake"
	hc := e.Conn(t)
	wc := newProbe(e.Conn(t), nil)
	var held atomic.Pointer[recipes.Lease] // the holder's lease, until released
	got := false
	e.Go(hc, "holder", func(ctx context.Context) {
		lease, err := r.New(hc, dir, recipes.Options{}).Acquire(ctx)
		if err != nil {
			t.Errorf("holder: %v", err)
			return
		}
		held.Store(lease)
	})
	e.Go(wc, "waiter", func(ctx context.Context) {
		// The waiter comes second: on a loaded machine the holder's
		// acquire may take longer than any fixed head start.
		for i := 0; held.Load() == nil; i++ {
			if i == 400 || wc.Sleep(ctx, 20*time.Millisecond) != nil {
				t.Error("the holder never held the lock")
				return
			}
		}
		wc.before = func(_ int, op string) {
			if lease := held.Load(); op == watchOp && lease != nil {
				// The holder releases between the listing and the watch.
				if err := lease.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
				held.Store(nil)
			}
		}
		actx, cancel := within(wc, 2*sessionTimeout)
		defer cancel()
		lease, err := r.New(wc, dir, recipes.Options{}).Acquire(actx)
		if err == nil {
			got = true
			lease.Release(ctx)
		} else if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiter: %v", err)
		}
		if held.Load() != nil {
			t.Error("the holder never released: the scenario did not happen")
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLostWakeupLockFlaw: the predecessor leaves between the listing and
// the exists watch; the variant waits on a creation watch that never
// fires, on a free lock (seed 002).
func TestLostWakeupLockFlaw(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		g.run("fair-lock", func(t *testing.T) {
			if !vanishingPredecessor(t, b, "fair-lock", "getW") {
				t.Error("fair-lock missed the release of its predecessor")
			}
		})
		g.run("lost-wakeup-lock", func(t *testing.T) {
			if vanishingPredecessor(t, b, "lost-wakeup-lock", "existsW") {
				t.Error("lost-wakeup-lock got the lock: the flaw did not show")
			}
		})
	})
}
