package recipes_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TestSemaphoreSessionLostAtLeaseCreate cuts a semaphore acquirer off for
// longer than its session just before it creates its lease node, after it
// has taken the gate: the create's outcome is unknown and the gate node
// goes with the session. The acquire must start over, gate first, and be
// granted on one lease node; it used to make the lease node again in the
// new session, outside the gate, restart behind it (the gate was gone)
// and wait on its own live lease node forever
// (scenarios/testdata/semaphore-mutex-expiry.scenario).
func TestSemaphoreSessionLostAtLeaseCreate(t *testing.T) {
	for _, name := range []string{"semaphore-mutex", "semaphore"} {
		for _, kind := range []sim.FaultKind{sim.FaultPartition, sim.FaultPause} {
			t.Run(name+"/"+string(kind), func(t *testing.T) {
				r, ok := recipes.Lookup(name)
				if !ok {
					t.Fatalf("no recipe %s", name)
				}
				o := recipes.Options{}
				if name == "semaphore" {
					o.Leases = 2
				}
				e := simBackend.open(t, 31)
				const dir = "/locks/s"
				fc := newProbe(e.Conn(t), nil)
				injected := false
				hooked := &createHook{Conn: fc, before: func(path string) {
					if strings.Contains(path, "/leases/") && !injected {
						injected = true
						if err := e.Inject(fc, kind, 3*sessionTimeout); err != nil {
							t.Error(err)
						}
					}
				}}
				e.Go(fc, "acquirer", func(ctx context.Context) {
					actx, cancel := within(fc, 2*time.Minute)
					defer cancel()
					lease, err := r.New(hooked, dir, o).Acquire(actx)
					if err != nil {
						t.Errorf("acquire after the session was lost: %v", err)
						return
					}
					if !injected {
						t.Error("the fault was not injected")
					}
					left, err := lockNodes(ctx, fc, dir)
					if err != nil {
						t.Error(err)
					}
					leases := slices.DeleteFunc(left, func(p string) bool { return !strings.Contains(p, "/leases/") })
					if !slices.Equal(leases, lease.Nodes()) {
						t.Errorf("lease nodes %v, the lease stands on %v", leases, lease.Nodes())
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
	}
}

// createHook runs before before each create, with its path.
type createHook struct {
	recipes.Conn
	before func(path string)
}

func (c *createHook) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.before(path)
	return c.Conn.Create(ctx, path, data, flags, acl)
}
