package recipes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TestSweepFaults runs four clients taking turns on each correct recipe
// over many seeds, with a connection loss or disconnect during acquire and
// a lost release reply: never two holders, tokens growing, nothing left.
// It runs on the simulator only (it draws schedules from seeds).
func TestSweepFaults(t *testing.T) {
	for _, r := range correctRecipes() {
		for seed := uint64(100); seed < 160; seed++ {
			e := openSim(t, seed).(*simEnv)
			var tr tracker
			for i := range 4 {
				c := e.Conn(t)
				l := r.New(c, "/locks/x", recipes.Options{})
				e.Go(c, fmt.Sprint("client", i), func(ctx context.Context) {
					for k := range 4 {
						if k == 1 && i == int(seed%4) {
							e.Inject(c, []sim.FaultKind{sim.FaultDropReply, sim.FaultDropRequest, sim.FaultDisconnect}[seed%3], time.Second)
						}
						actx, cancel := within(c, 2*time.Minute)
						lease, err := l.Acquire(actx)
						cancel()
						if err != nil {
							t.Errorf("%s seed %d client %d: acquire: %v", r.Name, seed, i, err)
							return
						}
						tr.enter(fmt.Sprint(i), lease.Token())
						c.Sleep(ctx, 50*time.Millisecond)
						tr.exit()
						if i == int(seed%4)+1 && k == 2 {
							e.Inject(c, sim.FaultDropReply, 0)
						}
						if err := lease.Release(ctx); err != nil {
							t.Errorf("%s seed %d client %d: release: %v", r.Name, seed, i, err)
						}
					}
				})
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if tr.maxIn != 1 {
				t.Errorf("%s seed %d: %d holders", r.Name, seed, tr.maxIn)
			}
			checkGrowing(t, tr.tokens)
			checkNoLockNodes(t, e, nil, "/locks")
		}
	}
}

// TestSweepExpiry expires sessions and partitions clients past their
// session timeout while others hold and wait, over many seeds: every
// acquire comes through (in a new session if need be), every release
// settles, and nothing is left behind.
func TestSweepExpiry(t *testing.T) {
	for _, r := range correctRecipes() {
		for seed := uint64(200); seed < 240; seed++ {
			e := openSim(t, seed).(*simEnv)
			var conns []recipes.Conn
			for i := range 4 {
				c := e.Conn(t)
				conns = append(conns, c)
				l := r.New(c, "/locks/x", recipes.Options{})
				e.Go(c, fmt.Sprint("client", i), func(ctx context.Context) {
					for k := range 4 {
						actx, cancel := within(c, 5*time.Minute)
						lease, err := l.Acquire(actx)
						cancel()
						if err != nil {
							t.Errorf("%s seed %d client %d: acquire: %v", r.Name, seed, i, err)
							return
						}
						c.Sleep(ctx, 50*time.Millisecond)
						if (k+i+int(seed))%5 == 0 {
							e.Inject(conns[(i+1)%4], sim.FaultExpire, 0)
						}
						if (k+i+int(seed))%7 == 0 {
							e.Inject(conns[(i+2)%4], sim.FaultPartition, 6*time.Second)
						}
						rctx, cancel := within(c, 5*time.Minute)
						if err := lease.Release(rctx); err != nil && err != recipes.ErrLeaseLost {
							t.Errorf("%s seed %d client %d: release: %v", r.Name, seed, i, err)
						}
						cancel()
					}
				})
			}
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			checkNoLockNodes(t, e, nil, "/locks")
		}
	}
}
