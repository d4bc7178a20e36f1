package recipes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TestGuaranteedDelete: a release whose delete is lost (the request
// dropped, the connection broken) and whose context ends before the
// client reconnects fails; reentrant-mutex (Curator's
// InterProcessMutex, whose release deletes with guaranteed()) goes on
// deleting in the background, so its node is gone once the partition
// ends, although the handle never acquires again. fair-lock, without a
// guaranteed delete, keeps the node pending until its handle's next
// acquire: with none, it stays as long as the session lives.
func TestGuaranteedDelete(t *testing.T) {
	for _, c := range []struct {
		recipe string
		left   int
	}{
		{"reentrant-mutex", 0},
		{"fair-lock", 1},
	} {
		t.Run(c.recipe, func(t *testing.T) {
			r, _ := recipes.Lookup(c.recipe)
			e := simBackend.open(t, 5)
			const dir = "/locks/guaranteed"
			conn := e.Conn(t)
			l := r.New(conn, dir, recipes.Options{})
			e.Go(conn, "holder", func(ctx context.Context) {
				lease, err := l.Acquire(ctx)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				// The release's delete is lost and the connection breaks;
				// the client reconnects in its session, after the
				// release gave up.
				if err := e.Inject(conn, sim.FaultDropRequest, 0); err != nil {
					t.Error(err)
				}
				rctx, cancel := within(conn, 100*time.Millisecond)
				err = lease.Release(rctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("release with its delete lost: %v, want the context's deadline", err)
				}
				// The faults are over; the client lives on, its session
				// with it, and never acquires again.
				conn.Sleep(ctx, 20*time.Second)
				if s := conn.Session(); !s.Connected() {
					t.Errorf("the session did not survive the partition: %+v", s)
				}
			})
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if left := listLockNodes(t, e, dir); len(left) != c.left {
				t.Errorf("lock nodes left after the faults stopped: %v, want %d", left, c.left)
			}
		})
	}
}
