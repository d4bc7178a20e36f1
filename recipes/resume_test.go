package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
)

// stale-resume-lock on one server: uncontended, a release keeps the node
// and the next acquire resumes it with the same token (its economy, and
// the broken promise of a growing token); a node no acquire came back
// for is deleted after the grace period; with a waiter behind it, the
// release deletes at once. (Its flaw needs an ensemble: see the scenario
// library's stale-resume-ensemble.)
func TestStaleResumeLockKeepsAndResumes(t *testing.T) {
	e := openSim(t, 7).(*simEnv)
	defer e.Close()
	c := e.Conn(t)
	l := recipes.NewStaleResumeLock(c, "/locks/r")
	var tokens []int64
	var kept []string
	e.Go(c, "holder", func(ctx context.Context) {
		for range 2 {
			lease, err := l.Acquire(ctx)
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			tokens = append(tokens, lease.Token())
			if err := lease.Release(ctx); err != nil {
				t.Errorf("release: %v", err)
			}
			names, _, _ := c.Children(ctx, "/locks/r")
			kept = append(kept, names...)
		}
		c.Sleep(ctx, 2*time.Second) // past keepGrace: the background deletes it
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 2 || tokens[0] != tokens[1] {
		t.Errorf("tokens %v: want the second acquire to resume the first's node and token", tokens)
	}
	if len(kept) != 2 || kept[0] != kept[1] {
		t.Errorf("nodes after each release %v: want the one node kept", kept)
	}
	checkNoLockNodes(t, e, nil, "/locks")
}

// The correct twin on one server is fair-lock with a sync before each
// listing: grants in order, tokens growing.
func TestSyncResumeLockSyncs(t *testing.T) {
	e := openSim(t, 7).(*simEnv)
	defer e.Close()
	c := &syncCounter{Conn: e.Conn(t)}
	l := recipes.NewSyncResumeLock(c, "/locks/s")
	var tokens []int64
	e.Go(c.Conn, "holder", func(ctx context.Context) {
		for range 2 {
			lease, err := l.Acquire(ctx)
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			tokens = append(tokens, lease.Token())
			lease.Release(ctx)
		}
	})
	if err := e.Run(); err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 2 || tokens[1] <= tokens[0] {
		t.Errorf("tokens %v: want them growing", tokens)
	}
	if c.syncs < 2 {
		t.Errorf("%d syncs, want one before each acquire's listing", c.syncs)
	}
	checkNoLockNodes(t, e, nil, "/locks")
}

// syncCounter counts the Sync calls of a recipe.
type syncCounter struct {
	recipes.Conn
	syncs int
}

func (c *syncCounter) Sync(ctx context.Context, path string) (string, error) {
	c.syncs++
	return c.Conn.Sync(ctx, path)
}
