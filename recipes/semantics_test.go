package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// tryOther reports whether another client's handle on dir could take the
// lock now: it TryAcquires and at once releases.
func tryOther(ctx context.Context, l recipes.Lock) (bool, error) {
	lease, err := l.TryAcquire(ctx)
	if errors.Is(err, recipes.ErrNotAcquired) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, lease.Release(ctx)
}

// TestReentrancy: a reentrant handle takes its lock again at once and
// keeps it until its last lease is released; a non-reentrant handle waits
// on itself.
func TestReentrancy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, name := range []string{"reentrant-mutex", "rw-lock", "herd-rw-lock", "multi-lock"} {
			g.run(name, func(t *testing.T) {
				r, _ := recipes.Lookup(name)
				e := b.open(t, 11)
				a, o := e.Conn(t), e.Conn(t)
				la, lo := r.New(a, "/locks/r", recipes.Options{}), r.New(o, "/locks/r", recipes.Options{})
				e.Go(a, "owner", func(ctx context.Context) {
					first, err := la.Acquire(ctx)
					if err != nil {
						t.Errorf("first: %v", err)
						return
					}
					actx, cancel := within(a, time.Second)
					second, err := la.Acquire(actx)
					cancel()
					if err != nil {
						t.Errorf("reentrant acquire: %v", err)
						return
					}
					if second.Token() != first.Token() {
						t.Errorf("tokens %d and %d of one hold differ", first.Token(), second.Token())
					}
					if ok, err := tryOther(ctx, lo); ok || err != nil {
						t.Errorf("another client took a held lock: %v %v", ok, err)
					}
					first.Release(ctx)
					first.Release(ctx) // idempotent: does not count twice
					if ok, err := tryOther(ctx, lo); ok || err != nil {
						t.Errorf("another client took a lock still held once: %v %v", ok, err)
					}
					second.Release(ctx)
					if ok, err := tryOther(ctx, lo); !ok || err != nil {
						t.Errorf("another client could not take the released lock: %v %v", ok, err)
					}
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, "/locks")
			})
		}
		for _, name := range []string{"semaphore-mutex", "fair-lock", "exclusive-lock"} {
			g.run("not-"+name, func(t *testing.T) {
				r, _ := recipes.Lookup(name)
				e := b.open(t, 12)
				a := e.Conn(t)
				l := r.New(a, "/locks/n", recipes.Options{})
				e.Go(a, "owner", func(ctx context.Context) {
					first, err := l.Acquire(ctx)
					if err != nil {
						t.Errorf("first: %v", err)
						return
					}
					actx, cancel := within(a, time.Second)
					_, err = l.Acquire(actx)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("second acquire on a non-reentrant handle: %v, want a deadline error", err)
					}
					first.Release(ctx)
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, "/locks")
			})
		}
	})
}

// TestReadWriteSharing checks seed 003's rules: readers share, a writer
// excludes everyone, a reader behind a writer waits for it, a write
// holder may read, and a reader never upgrades.
func TestReadWriteSharing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, variant := range []struct {
			name  string
			newRW func(recipes.Conn, string) *recipes.RWLock
		}{{"rw-lock", recipes.NewRWLock}, {"herd-rw-lock", recipes.NewHerdRWLock}} {
			newRW := variant.newRW
			g.run(variant.name, func(t *testing.T) {
				e := b.open(t, 13)
				const dir = "/locks/rw"
				var mu sync.Mutex // the roles' tasks are goroutines on a real server
				readers, writers, maxReaders := 0, 0, 0
				var log []string
				enter := func(i int, write bool) {
					mu.Lock()
					defer mu.Unlock()
					if write {
						writers++
					} else {
						readers++
					}
					log = append(log, fmt.Sprint(i))
					if writers > 1 || writers == 1 && readers > 0 {
						t.Errorf("%d writers and %d readers at once", writers, readers)
					}
					maxReaders = max(maxReaders, readers)
				}
				exit := func(write bool) {
					mu.Lock()
					defer mu.Unlock()
					if write {
						writers--
					} else {
						readers--
					}
				}
				// Three readers, then a writer once all three hold, then a
				// reader once the writer's node is queued behind them. The
				// readers hold until both are queued: each step waits on
				// the one before, not on the clock, so that a loaded
				// machine cannot reorder the creates on a real server.
				roles := []struct {
					write bool
					after int // the writer: readers holding; a reader: nodes in dir; before the role starts
				}{{false, 0}, {false, 0}, {false, 0}, {true, 3}, {false, 4}}
				var readersIn atomic.Int32
				for i, role := range roles {
					c := e.Conn(t)
					l := newRW(c, dir)
					e.Go(c, fmt.Sprint("role", i), func(ctx context.Context) {
						if role.write {
							awaitCount(ctx, c, func() int { return int(readersIn.Load()) }, role.after)
						} else {
							awaitCount(ctx, c, func() int { return countChildren(ctx, c, dir) }, role.after)
						}
						side := l.Read()
						if role.write {
							side = l.Write()
						}
						lease, err := side.Acquire(ctx)
						if err != nil {
							t.Errorf("role %d: %v", i, err)
							return
						}
						enter(i, role.write)
						if i < 3 {
							readersIn.Add(1)
							awaitCount(ctx, c, func() int { return countChildren(ctx, c, dir) }, len(roles))
						}
						c.Sleep(ctx, 200*time.Millisecond)
						exit(role.write)
						lease.Release(ctx)
					})
				}
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				if maxReaders != 3 {
					t.Errorf("at most %d readers shared the lock, want 3", maxReaders)
				}
				if fmt.Sprint(log[3:]) != "[3 4]" {
					t.Errorf("grant order %v: the writer must come before the reader behind it", log)
				}

				// A write holder may read; releasing the write lease keeps
				// the lock exclusive until the read lease goes; a reader
				// never upgrades.
				a, o := e.Conn(t), e.Conn(t)
				la, lo := newRW(a, dir), newRW(o, dir)
				e.Go(a, "downgrade", func(ctx context.Context) {
					w, err := la.Write().Acquire(ctx)
					if err != nil {
						t.Errorf("write: %v", err)
						return
					}
					r, err := la.Read().TryAcquire(ctx)
					if err != nil {
						t.Errorf("read under write: %v", err)
						return
					}
					if ok, _ := tryOther(ctx, lo.Read()); ok {
						t.Error("another reader got in beside a writer")
					}
					w.Release(ctx)
					if ok, _ := tryOther(ctx, lo.Write()); ok {
						t.Error("a writer got in beside a downgraded reader")
					}
					r.Release(ctx)
					r2, err := la.Read().Acquire(ctx)
					if err != nil {
						t.Errorf("read: %v", err)
						return
					}
					if ok, _ := tryOther(ctx, lo.Read()); !ok {
						t.Error("readers do not share")
					}
					if _, err := la.Write().Acquire(ctx); !errors.Is(err, recipes.ErrUpgrade) {
						t.Errorf("upgrade: %v, want ErrUpgrade", err)
					}
					r2.Release(ctx)
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, dir)
			})
		}
	})
}

// TestSemaphoreBound: never more than the limit holders, and the limit is
// reached.
func TestSemaphoreBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for seed := uint64(1); seed <= 3; seed++ {
			e := b.open(t, seed)
			const limit, clients, rounds = 3, 8, 2
			var tr tracker
			for i := range clients {
				c := e.Conn(t)
				s := recipes.NewSemaphore(c, "/sem", limit)
				e.Go(c, fmt.Sprint("c", i), func(ctx context.Context) {
					for range rounds {
						lease, err := s.Acquire(ctx)
						if err != nil {
							t.Errorf("acquire: %v", err)
							return
						}
						tr.enter(fmt.Sprint(i), lease.Token())
						c.Sleep(ctx, 200*time.Millisecond)
						tr.exit()
						lease.Release(ctx)
					}
				})
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if tr.maxIn != limit {
				t.Errorf("seed %d: at most %d holders, want %d", seed, tr.maxIn, limit)
			}
			checkGrowing(t, tr.tokens)
			checkNoLockNodes(t, e, nil, "/sem")
		}
	})
}

// TestMultiLockAllOrNothing: a multi-lock whose second member is taken
// gets none, leaves none of its nodes, and gets all once it is free.
func TestMultiLockAllOrNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := b.open(t, 17)
		members := []string{"/m/0", "/m/1"}
		a, o := e.Conn(t), e.Conn(t)
		var held atomic.Pointer[[]string] // the member holder's nodes
		e.Go(o, "member-holder", func(ctx context.Context) {
			lease, err := recipes.NewReentrantMutex(o, "/m/1").Acquire(ctx)
			if err != nil {
				t.Errorf("member: %v", err)
				return
			}
			nodes := lease.Nodes()
			held.Store(&nodes)
			o.Sleep(ctx, 3*time.Second)
			lease.Release(ctx)
		})
		ml := recipes.NewMultiLock(a, members)
		e.Go(a, "multi", func(ctx context.Context) {
			a.Sleep(ctx, 100*time.Millisecond)
			for i := 0; held.Load() == nil && i < 3000; i++ { // a loaded real server may be slower
				a.Sleep(ctx, 10*time.Millisecond)
			}
			actx, cancel := within(a, time.Second)
			_, err := ml.Acquire(actx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("multi-lock over a taken member: %v, want a deadline error", err)
			}
			left, err := lockNodes(ctx, a, "/m")
			if nodes := held.Load(); err != nil || nodes == nil || len(left) != 1 || left[0] != (*nodes)[0] {
				t.Errorf("lock nodes %v (%v), want only the member holder's %v", left, err, nodes)
			}
			if _, err := ml.TryAcquire(ctx); !errors.Is(err, recipes.ErrNotAcquired) {
				t.Errorf("TryAcquire: %v, want ErrNotAcquired", err)
			}
			lease, err := ml.Acquire(ctx)
			if err != nil {
				t.Errorf("multi-lock: %v", err)
				return
			}
			if len(lease.Parts()) != 2 {
				t.Errorf("%d parts", len(lease.Parts()))
			}
			for _, m := range members {
				if ok, _ := tryOther(ctx, recipes.NewFairLock(o, m)); ok {
					t.Errorf("member %s free while the multi-lock holds it", m)
				}
			}
			if err := lease.Release(ctx); err != nil {
				t.Errorf("release: %v", err)
			}
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		checkNoLockNodes(t, e, nil, "/m")
	})
}

// TestLeaseState: a disconnect suspends the lease and a reconnect
// restores it; a partition longer than the session timeout loses it on
// the client's clock, before the client hears of the expiry; release then
// reports the loss.
func TestLeaseState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if !b.faults {
			t.Skip("no fault injection")
		}
		e := b.open(t, 19)
		a := e.Conn(t)
		e.Go(a, "holder", func(ctx context.Context) {
			lease, err := recipes.NewFairLock(a, "/locks/s").Acquire(ctx)
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			if st := lease.State(); st != recipes.LeaseHeld {
				t.Errorf("state %v, want held", st)
			}
			wctx, cancel := within(a, time.Minute)
			defer cancel()
			e.Inject(a, sim.FaultDisconnect, 500*time.Millisecond)
			if st, err := lease.WaitState(wctx, recipes.LeaseHeld); st != recipes.LeaseSuspended || err != nil {
				t.Errorf("after a disconnect: %v %v, want suspended", st, err)
			}
			if st, err := lease.WaitState(wctx, recipes.LeaseSuspended); st != recipes.LeaseHeld || err != nil {
				t.Errorf("after the reconnect: %v %v, want held", st, err)
			}
			start := a.Now()
			e.Inject(a, sim.FaultPartition, 3*sessionTimeout)
			if st, err := lease.WaitState(wctx, recipes.LeaseHeld); st != recipes.LeaseSuspended || err != nil {
				t.Errorf("after a partition: %v %v, want suspended", st, err)
			}
			if st, err := lease.WaitState(wctx, recipes.LeaseSuspended); st != recipes.LeaseLost || err != nil {
				t.Errorf("a session timeout into the partition: %v %v, want lost", st, err)
			}
			// Lost comes a session timeout after the client noticed the
			// disconnect (2/3 of a timeout): 5/3 of a timeout on the
			// simulator. A loaded real server and its client's real timers
			// get a margin, short of the partition's end.
			limit := 2 * sessionTimeout
			if !b.exact {
				limit = 5 * sessionTimeout / 2
			}
			if d := a.Now().Sub(start); d > limit {
				t.Errorf("lost only after %v, want within %v", d, limit)
			}
			if s := a.Session(); s.Connected() {
				t.Errorf("the client is connected (%v): the loss should be seen first", s)
			}
			if err := lease.Release(wctx); !errors.Is(err, recipes.ErrLeaseLost) {
				t.Errorf("release of a lost lease: %v, want ErrLeaseLost", err)
			}
			if err := lease.Release(wctx); !errors.Is(err, recipes.ErrLeaseLost) {
				t.Errorf("second release: %v, want the same ErrLeaseLost", err)
			}
			if st := lease.State(); st != recipes.LeaseReleased {
				t.Errorf("state after release: %v", st)
			}
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		checkNoLockNodes(t, e, nil, "/locks")
	})
}
