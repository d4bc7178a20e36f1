package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
)

// correctRecipes are the recipes that must pass every test.
func correctRecipes() []recipes.Recipe {
	var out []recipes.Recipe
	for _, r := range recipes.Recipes() {
		if !r.Flawed() {
			out = append(out, r)
		}
	}
	return out
}

// fairRecipes grant in the order of arrival (exclusive-lock does not).
var fairRecipes = map[string]bool{
	"herd-lock": true, "fair-lock": true, "reentrant-mutex": true, "semaphore-mutex": true,
	"semaphore": true, "rw-lock": true, "herd-rw-lock": true, "multi-lock": true,
	"leader-latch": true, "leader-selector": true, "election": true, "herd-election": true,
}

// A tracker records who is inside the critical section and the tokens
// granted, in grant order. It is locked, for backends whose tasks are
// goroutines.
type tracker struct {
	mu      sync.Mutex
	inside  int
	maxIn   int
	tokens  []int64
	granted []string
}

func (tr *tracker) enter(who string, token int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.inside++
	tr.maxIn = max(tr.maxIn, tr.inside)
	tr.tokens = append(tr.tokens, token)
	tr.granted = append(tr.granted, who)
}

func (tr *tracker) exit() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.inside--
}

// checkGrowing fails unless the tokens grow strictly.
func checkGrowing(t *testing.T, tokens []int64) {
	t.Helper()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Errorf("fencing token %d of grant %d is not above %d of grant %d: %v", tokens[i], i, tokens[i-1], i-1, tokens)
			return
		}
	}
}

// listLockNodes runs a task that lists the lock nodes left under dirs.
func listLockNodes(t *testing.T, e env, dirs ...string) []string {
	t.Helper()
	c := e.Conn(t)
	var left []string
	e.Go(c, "inspect", func(ctx context.Context) {
		ictx, cancel := within(c, 30*time.Second)
		defer cancel()
		var err error
		if left, err = lockNodes(ictx, c, dirs...); err != nil {
			t.Errorf("listing lock nodes: %v", err)
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	return left
}

// checkNoLockNodes fails if lock nodes other than allowed are left under
// dirs, and returns those left.
func checkNoLockNodes(t *testing.T, e env, allowed []string, dirs ...string) []string {
	t.Helper()
	left := listLockNodes(t, e, dirs...)
	extra := slices.DeleteFunc(slices.Clone(left), func(p string) bool { return slices.Contains(allowed, p) })
	if len(extra) > 0 {
		t.Errorf("lock nodes left behind: %v", extra)
	}
	return left
}

// TestRegistry checks that every recipe the issue names is registered,
// with a source and a summary.
func TestRegistry(t *testing.T) {
	want := []string{"exclusive-lock", "herd-lock", "fair-lock", "reentrant-mutex", "semaphore-mutex", "semaphore",
		"rw-lock", "herd-rw-lock", "multi-lock", "leader-latch", "leader-selector", "election", "herd-election",
		"sync-resume-lock", "persistent-lock", "unprotected-lock", "lost-wakeup-lock", "old-session-latch", "stale-resume-lock"}
	if got := recipes.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		r, ok := recipes.Lookup(name)
		if !ok || r.Summary == "" || r.Source == "" || r.New == nil {
			t.Errorf("Lookup(%q) = %+v, %v", name, r, ok)
		}
		if flawed := slices.Index(want, name) >= 14; r.Flawed() != flawed {
			t.Errorf("%s: Flawed() = %v", name, r.Flawed())
		}
	}
	if _, ok := recipes.Lookup("no-such-lock"); ok {
		t.Error("Lookup found a recipe that does not exist")
	}
}

// TestMutualExclusion: clients take turns; never two holders, and the
// fencing tokens grow strictly in grant order; nothing is left behind.
func TestMutualExclusion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				for seed := uint64(1); seed <= 3; seed++ {
					takeTurns(t, b.open(t, seed), r, 4, 3, 50*time.Millisecond, fmt.Sprintf("seed %d: ", seed))
				}
			})
		}
	})
}

// takeTurns has clients of r take the lock rounds times each, holding it
// for hold; never two holders, every grant made, the fencing tokens
// growing in grant order, nothing left behind. label starts each error.
func takeTurns(t *testing.T, e env, r recipes.Recipe, clients, rounds int, hold time.Duration, label string) {
	t.Helper()
	var tr tracker
	for i := range clients {
		c := e.Conn(t)
		l := r.New(c, "/locks/x", recipes.Options{})
		e.Go(c, fmt.Sprint("client", i), func(ctx context.Context) {
			for range rounds {
				actx, cancel := within(c, time.Minute)
				lease, err := l.Acquire(actx)
				cancel()
				if err != nil {
					t.Errorf("%sclient %d: acquire: %v", label, i, err)
					return
				}
				tr.enter(fmt.Sprint(i), lease.Token())
				c.Sleep(ctx, hold)
				tr.exit()
				if err := lease.Release(ctx); err != nil {
					t.Errorf("%sclient %d: release: %v", label, i, err)
				}
			}
		})
	}
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if tr.maxIn != 1 {
		t.Errorf("%s%d holders at once", label, tr.maxIn)
	}
	if len(tr.tokens) != clients*rounds {
		t.Errorf("%s%d grants, want %d", label, len(tr.tokens), clients*rounds)
	}
	checkGrowing(t, tr.tokens)
	checkNoLockNodes(t, e, nil, "/locks")
}

// TestFairness: clients that arrive one after another are granted in
// that order (creation order of their nodes).
func TestFairness(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, r := range correctRecipes() {
			if !fairRecipes[r.Name] {
				continue
			}
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 7)
				const waiters = 6
				var order, queued []int
				var mu sync.Mutex
				h := e.Conn(t)
				hl := r.New(h, "/locks/f", recipes.Options{})
				e.Go(h, "holder", func(ctx context.Context) {
					lease, err := hl.Acquire(ctx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					h.Sleep(ctx, (waiters+2)*200*time.Millisecond)
					lease.Release(ctx)
				})
				for i := 1; i <= waiters; i++ {
					c := e.Conn(t)
					l := r.New(c, "/locks/f", recipes.Options{})
					e.Go(c, fmt.Sprint("waiter", i), func(ctx context.Context) {
						c.Sleep(ctx, time.Duration(i)*200*time.Millisecond)
						actx, cancel := within(c, time.Minute)
						defer cancel()
						lease, err := l.Acquire(actx)
						if err != nil {
							t.Errorf("waiter %d: %v", i, err)
							return
						}
						mu.Lock()
						order = append(order, i)
						queued = append(queued, queuePosition(t, lease.Nodes()))
						mu.Unlock()
						lease.Release(ctx)
					})
				}
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				// Fairness is first come, first served by the position
				// each waiter's node took in the queue; the waiters start
				// 200 ms apart, which on a loaded real server need not
				// be the order their creates arrive in.
				if len(order) != waiters || !slices.IsSorted(queued) {
					t.Errorf("grant order %v, with queue positions %v: want all %d granted in queue order", order, queued, waiters)
				}
				if want := []int{1, 2, 3, 4, 5, 6}; b.name == "sim" && !slices.Equal(order, want) {
					t.Errorf("grant order %v, want %v", order, want)
				}
			})
		}
	})
}

// TestTimeoutCancelTry: while one client holds the lock, an acquire that
// times out, one that is cancelled and a TryAcquire all fail and leave no
// node behind; the lock then works.
func TestTimeoutCancelTry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 3)
				const dir = "/locks/t"
				h, cb, cc, cd := e.Conn(t), e.Conn(t), e.Conn(t), e.Conn(t)
				hl := r.New(h, dir, recipes.Options{})
				var held []string
				// The others start once the holder holds: on a loaded real
				// server its acquire can take longer than their head start,
				// and a waiter that queued first would be granted.
				var holding atomic.Bool
				cctx, cancelC := context.WithCancel(context.Background())
				e.Go(h, "holder", func(ctx context.Context) {
					lease, err := hl.Acquire(ctx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					held = lease.Nodes()
					holding.Store(true)
					h.Sleep(ctx, time.Second)
					cancelC()
					h.Sleep(ctx, 9*time.Second)
					if err := lease.Release(ctx); err != nil {
						t.Errorf("holder release: %v", err)
					}
				})
				e.Go(cb, "times-out", func(ctx context.Context) {
					cb.Sleep(ctx, 100*time.Millisecond)
					awaitFlag(ctx, cb, &holding)
					actx, cancel := within(cb, 2*time.Second)
					defer cancel()
					lease, err := r.New(cb, dir, recipes.Options{}).Acquire(actx)
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("acquire with a timeout: %v, %v; want a deadline error", lease, err)
					}
				})
				e.Go(cc, "cancelled", func(ctx context.Context) {
					cc.Sleep(ctx, 200*time.Millisecond)
					awaitFlag(ctx, cc, &holding)
					lease, err := r.New(cc, dir, recipes.Options{}).Acquire(cctx)
					if !errors.Is(err, context.Canceled) {
						t.Errorf("cancelled acquire: %v, %v; want context.Canceled", lease, err)
					}
				})
				e.Go(cd, "tries", func(ctx context.Context) {
					cd.Sleep(ctx, 300*time.Millisecond)
					awaitFlag(ctx, cd, &holding)
					lease, err := r.New(cd, dir, recipes.Options{}).TryAcquire(ctx)
					if !errors.Is(err, recipes.ErrNotAcquired) {
						t.Errorf("TryAcquire on a held lock: %v, %v; want ErrNotAcquired", lease, err)
					}
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, dir)
				// The lock still works, and TryAcquire takes a free lock.
				e.Go(cd, "again", func(ctx context.Context) {
					lease, err := r.New(cd, dir, recipes.Options{}).TryAcquire(ctx)
					if err != nil {
						t.Errorf("TryAcquire on a free lock: %v", err)
						return
					}
					lease.Release(ctx)
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				checkNoLockNodes(t, e, nil, dir)
				_ = held
			})
		}
	})
}

// TestTimeoutLeavesOnlyTheHolder checks the timeout case while the holder
// still holds: the lock nodes are exactly the holder's.
func TestTimeoutLeavesOnlyTheHolder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		g := newGroup(t, b)
		defer g.wait()
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 5)
				const dir = "/locks/o"
				h, w := e.Conn(t), e.Conn(t)
				var held []string
				var granted atomic.Bool
				e.Go(h, "holder", func(ctx context.Context) {
					lease, err := r.New(h, dir, recipes.Options{}).Acquire(ctx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					held = lease.Nodes()
					granted.Store(true)
				})
				e.Go(w, "waiter", func(ctx context.Context) {
					w.Sleep(ctx, 100*time.Millisecond)
					awaitFlag(ctx, w, &granted)
					actx, cancel := within(w, time.Second)
					defer cancel()
					if _, err := r.New(w, dir, recipes.Options{}).Acquire(actx); !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("acquire: %v, want a deadline error", err)
					}
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				left := checkNoLockNodes(t, e, held, dir)
				if len(left) != len(held) {
					t.Errorf("lock nodes %v, want the holder's %v", left, held)
				}
			})
		}
	})
}

// queuePosition is the sequence number of a lease's node: the place its
// create took in the lock's queue.
func queuePosition(t *testing.T, nodes []string) int {
	t.Helper()
	if len(nodes) == 0 || len(nodes[0]) < 10 {
		t.Errorf("lease nodes %v: no sequential node", nodes)
		return -1
	}
	n, err := strconv.Atoi(nodes[0][len(nodes[0])-10:])
	if err != nil {
		t.Errorf("lease node %s: no sequence number: %v", nodes[0], err)
		return -1
	}
	return n
}
