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

// A store is the resource a lock protects. It records the writes it
// takes. With fencing it remembers the highest fencing token it has seen
// and refuses a write that comes with a lower one (Kleppmann, "How to do
// distributed locking"); without, it takes every write.
type store struct {
	fencing bool

	mu      sync.Mutex
	highest int64
	writes  []storeWrite
}

type storeWrite struct {
	who   string
	token int64
}

var errStaleToken = errors.New("store: fencing token below the highest seen")

func (s *store) write(who string, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fencing && token < s.highest {
		return fmt.Errorf("%s with token %d, highest %d: %w", who, token, s.highest, errStaleToken)
	}
	s.highest = max(s.highest, token)
	s.writes = append(s.writes, storeWrite{who, token})
	return nil
}

func (s *store) log() []storeWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeWrite(nil), s.writes...)
}

// TestSplitBrain: a holder checks that it holds the lock, then pauses
// (a stop-the-world pause: on a real server its connection is blackholed
// and its tasks stand still) for longer than its session timeout. The
// server expires its session (Programmer's Guide, "ZooKeeper Sessions"),
// a second client gets the lock and writes to the store, and the first
// wakes and writes too, still believing it holds the lock: two holders at
// once, whatever the recipe. A store without fencing takes both writes,
// the stale one last; a store with fencing refuses the stale one. The
// stale holder's release then reports the loss.
func TestSplitBrain(t *testing.T) {
	const pause = 3 * sessionTimeout
	forEachBackend(t, func(t *testing.T, b backend) {
		if !b.faults {
			t.Skip("no fault injection")
		}
		g := newGroup(t, b)
		defer g.wait()
		for _, r := range correctRecipes() {
			g.run(r.Name, func(t *testing.T) {
				e := b.open(t, 53)
				const dir = "/locks/split"
				hc, oc := e.Conn(t), e.Conn(t)
				plain, fenced := &store{}, &store{fencing: true}
				var holderGranted, otherHolds, staleWritten atomic.Bool
				// awaitGrant holds a task until the holder has the lock.
				awaitGrant := func(ctx context.Context, c recipes.Conn) {
					const pollsMax = 6000
					for i := 0; !holderGranted.Load() && i < pollsMax; i++ {
						c.Sleep(ctx, 10*time.Millisecond)
					}
				}
				var otherHeldAtStaleWrite bool
				var staleErr error
				e.Go(hc, "holder", func(ctx context.Context) {
					actx, cancel := within(hc, time.Minute)
					defer cancel()
					lease, err := r.New(hc, dir, recipes.Options{}).Acquire(actx)
					if err != nil {
						t.Errorf("holder: %v", err)
						return
					}
					if st := lease.State(); st != recipes.LeaseHeld {
						t.Errorf("holder's lease %v before the pause", st)
					}
					holderGranted.Store(true)
					hc.Sleep(ctx, time.Second) // working; paused meanwhile
					otherHeldAtStaleWrite = otherHolds.Load()
					if err := plain.write("holder", lease.Token()); err != nil {
						t.Errorf("the store without fencing refused a write: %v", err)
					}
					staleErr = fenced.write("holder", lease.Token())
					staleWritten.Store(true)
					if err := lease.Release(actx); !errors.Is(err, recipes.ErrLeaseLost) {
						t.Errorf("release after the pause: %v, want ErrLeaseLost", err)
					}
				})
				e.Go(nil, "pauser", func(ctx context.Context) {
					awaitGrant(ctx, hc)
					hc.Sleep(ctx, 500*time.Millisecond)
					if err := e.Inject(hc, sim.FaultPause, pause); err != nil {
						t.Errorf("pause: %v", err)
					}
				})
				e.Go(oc, "other", func(ctx context.Context) {
					awaitGrant(ctx, oc)
					actx, cancel := within(oc, 2*time.Minute)
					defer cancel()
					lease, err := r.New(oc, dir, recipes.Options{}).Acquire(actx)
					if err != nil {
						t.Errorf("other: %v", err)
						return
					}
					otherHolds.Store(true)
					for _, s := range []*store{plain, fenced} {
						if err := s.write("other", lease.Token()); err != nil {
							t.Errorf("the new holder's write: %v", err)
						}
					}
					// Hold until the stale holder has written.
					const pollsMax = 600
					for i := 0; !staleWritten.Load() && i < pollsMax; i++ {
						oc.Sleep(ctx, 100*time.Millisecond)
					}
					otherHolds.Store(false)
					if err := lease.Release(actx); err != nil {
						t.Errorf("other's release: %v", err)
					}
				})
				if err := e.Run(); err != nil {
					t.Fatal(err)
				}
				if !otherHeldAtStaleWrite {
					t.Fatalf("the other client did not hold the lock when the paused holder wrote: the scenario did not happen (%v)", plain.log())
				}
				// Without fencing: both writes taken, the stale one last,
				// with the lower token.
				if w := plain.log(); len(w) != 2 || w[0].who != "other" || w[1].who != "holder" || w[1].token >= w[0].token {
					t.Errorf("store without fencing: writes %v, want the other's then the stale holder's, with a lower token", w)
				}
				// With fencing: the stale write refused.
				if !errors.Is(staleErr, errStaleToken) {
					t.Errorf("store with fencing took the stale write (%v): %v", staleErr, fenced.log())
				}
				if w := fenced.log(); len(w) != 1 || w[0].who != "other" {
					t.Errorf("store with fencing: writes %v, want the other's only", w)
				}
				checkNoLockNodes(t, e, nil, dir)
			})
		}
	})
}
