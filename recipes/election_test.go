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

// LeaderSelector.Lead: each candidate leads while its work runs and gives
// leadership up when the work returns; one leader at a time, the terms'
// epochs growing, and the work's error comes back.
func TestLeaderSelectorLeadsWhileWorkRuns(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := b.open(t, 5)
		var tr tracker
		errWork := errors.New("work failed")
		for i := range 3 {
			c := e.Conn(t)
			s := recipes.NewLeaderSelector(c, "/election/s")
			e.Go(c, fmt.Sprint("candidate", i), func(ctx context.Context) {
				lctx, cancel := within(c, time.Minute)
				defer cancel()
				err := s.Lead(lctx, func(ctx context.Context, term *recipes.Lease) error {
					if st := term.State(); st != recipes.LeaseHeld {
						t.Errorf("candidate %d: term %v at the start of its work", i, st)
					}
					tr.enter(fmt.Sprint(i), term.Token())
					c.Sleep(ctx, 20*time.Millisecond)
					tr.exit()
					if i == 1 {
						return errWork
					}
					return nil
				})
				if want := map[bool]error{true: errWork, false: nil}[i == 1]; !errors.Is(err, want) {
					t.Errorf("candidate %d: Lead = %v, want %v", i, err, want)
				}
			})
		}
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if tr.maxIn != 1 || len(tr.tokens) != 3 {
			t.Errorf("%d leaders at once, %d terms; want 1 and 3", tr.maxIn, len(tr.tokens))
		}
		checkGrowing(t, tr.tokens)
		checkNoLockNodes(t, e, nil, "/election")
	})
}

// A term of leader-latch is lost with its session: a leader whose session
// the server expires sees LOST, and the next candidate leads with a
// higher epoch.
func TestLeaderLatchTermLostWithSession(t *testing.T) {
	e := simBackend.open(t, 9)
	c1, c2 := e.Conn(t), e.Conn(t)
	l1, l2 := recipes.NewLeaderLatch(c1, "/election/l"), recipes.NewLeaderLatch(c2, "/election/l")
	var first, second int64
	e.Go(c1, "leader", func(ctx context.Context) {
		term, err := l1.Acquire(ctx)
		if err != nil {
			t.Errorf("leader: %v", err)
			return
		}
		first = term.Token()
		if err := e.Inject(c1, sim.FaultExpire, 0); err != nil {
			t.Errorf("expire: %v", err)
		}
		// SUSPENDED first (the connection drops), then LOST.
		var seen []recipes.LeaseState
		st := recipes.LeaseHeld
		for st != recipes.LeaseLost && st != recipes.LeaseReleased && len(seen) < 5 {
			var err error
			if st, err = term.WaitState(ctx, st); err != nil {
				t.Errorf("WaitState: %v", err)
				return
			}
			seen = append(seen, st)
		}
		if fmt.Sprint(seen) != "[suspended lost]" {
			t.Errorf("after its session expired the term went %v, want [suspended lost]", seen)
		}
	})
	e.Go(c2, "follower", func(ctx context.Context) {
		c2.Sleep(ctx, 10*time.Millisecond)
		actx, cancel := within(c2, time.Minute)
		defer cancel()
		term, err := l2.Acquire(actx)
		if err != nil {
			t.Errorf("follower: %v", err)
			return
		}
		second = term.Token()
		term.Release(ctx)
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if first == 0 || second <= first {
		t.Errorf("epochs %#x then %#x: want the second higher", first, second)
	}
}

// Lead's listener runs in the background (Conn.Go) and ends the leader's
// work as soon as its term is suspended: the work, asleep for an hour,
// returns when the leader's session is expired, and the next candidate
// leads with a higher epoch.
func TestLeaderSelectorWorkEndsWhenTermIsSuspended(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := b.open(t, 3)
		c1, c2 := e.Conn(t), e.Conn(t)
		s1, s2 := recipes.NewLeaderSelector(c1, "/election/w"), recipes.NewLeaderSelector(c2, "/election/w")
		// first is read by the follower's task, a goroutine of its own on
		// a real server.
		var first atomic.Int64
		var second int64
		var ended error
		e.Go(c1, "leader", func(ctx context.Context) {
			lctx, cancel := within(c1, time.Minute)
			defer cancel()
			s1.Lead(lctx, func(wctx context.Context, term *recipes.Lease) error {
				first.Store(term.Token())
				if err := e.Inject(c1, sim.FaultExpire, 0); err != nil {
					t.Errorf("expire: %v", err)
				}
				ended = c1.Sleep(wctx, time.Hour)
				return nil
			})
		})
		e.Go(c2, "follower", func(ctx context.Context) {
			// The follower campaigns once the leader leads: a fixed head
			// start let a loaded real server take the follower's create
			// first.
			for first.Load() == 0 {
				if err := c2.Sleep(ctx, 10*time.Millisecond); err != nil {
					t.Errorf("follower: %v", err)
					return
				}
			}
			lctx, cancel := within(c2, time.Minute)
			defer cancel()
			if err := s2.Lead(lctx, func(_ context.Context, term *recipes.Lease) error {
				second = term.Token()
				return nil
			}); err != nil {
				t.Errorf("follower: %v", err)
			}
		})
		if err := e.Run(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(ended, context.Canceled) {
			t.Errorf("the leader's work ended with %v, want context.Canceled from the listener", ended)
		}
		if first.Load() == 0 || second <= first.Load() {
			t.Errorf("epochs %#x then %#x: want the second higher", first.Load(), second)
		}
	})
}
