package zkconn_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
)

// The recipe workload of BenchmarkRecipeSimVsReal: benchClients clients
// each take a fair-lock benchCycles times, holding it for the hold of the
// sub-benchmark.
const (
	benchClients        = 5
	benchCycles         = 20
	benchSessionTimeout = 10 * time.Second
	// benchWorkloadMax bounds one run of the workload on either backend.
	benchWorkloadMax = time.Minute
	// benchOpsPerRound is the number of operations of one round of
	// BenchmarkOpsRealVsSim on each backend.
	benchOpsPerRound = 100
)

// lockCycles takes the fair-lock on dir cycles times through c, holding
// it for hold each time.
func lockCycles(ctx context.Context, c recipes.Conn, dir string, cycles int, hold time.Duration) error {
	l := recipes.NewFairLock(c, dir)
	for range cycles {
		actx, cancel := c.WithTimeout(ctx, benchWorkloadMax)
		lease, err := l.Acquire(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if hold > 0 {
			if err := c.Sleep(ctx, hold); err != nil {
				return err
			}
		}
		if err := lease.Release(ctx); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	return nil
}

// simLockWorkload runs the workload in a new simulated world, whose
// making (clients and their sessions included) counts in its time.
func simLockWorkload(b *testing.B, seed uint64, hold time.Duration) {
	w := sim.New(sim.Config{Seed: seed, MaxSteps: math.MaxUint64})
	defer w.Close()
	for i := range benchClients {
		c, err := w.NewClient(sim.ClientConfig{SessionTimeout: benchSessionTimeout})
		if err != nil {
			b.Fatal(err)
		}
		w.Go(c, fmt.Sprint("client", i), func(ctx context.Context) {
			if err := lockCycles(ctx, c, "/bench/lock", benchCycles, hold); err != nil {
				b.Errorf("sim client %d: %v", i, err)
			}
		})
	}
	if err := w.Run(); err != nil {
		b.Fatal(err)
	}
}

// realLockWorkload runs the workload on connected clients of a real
// server, in a directory of its own (their dialing does not count).
func realLockWorkload(b *testing.B, conns []*zkconn.Conn, dir string, hold time.Duration) {
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lockCycles(context.Background(), c, dir, benchCycles, hold); err != nil {
				b.Errorf("real client %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRecipeSimVsReal runs one recipe workload (5 clients × 20
// fair-lock acquire/release cycles) on the simulator and on a real
// ZooKeeper, alternately, and reports how many times faster the
// simulator ran it (x-faster: real wall time over simulated wall time)
// and the wall time of one workload on each. hold=0 measures the
// protocol alone; with a hold, the simulator also skips the time the
// holders wait, in virtual time, as it does for every timeout of a test.
func BenchmarkRecipeSimVsReal(b *testing.B) {
	srv := zktest.Shared(b)
	for _, hold := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("hold=%v", hold), func(b *testing.B) {
			var conns []*zkconn.Conn
			for range benchClients {
				conns = append(conns, srv.Dial(b, benchSessionTimeout))
			}
			root := "/zklab-bench-" + conns[0].GUID()[:16]
			var simWall, realWall time.Duration
			runs := 0
			for b.Loop() {
				start := time.Now()
				simLockWorkload(b, uint64(runs+1), hold)
				simWall += time.Since(start)
				start = time.Now()
				realLockWorkload(b, conns, fmt.Sprintf("%s/%d", root, runs), hold)
				realWall += time.Since(start)
				runs++
			}
			b.ReportMetric(realWall.Seconds()/simWall.Seconds(), "x-faster")
			b.ReportMetric(float64(simWall.Microseconds())/float64(runs), "sim-µs/workload")
			b.ReportMetric(float64(realWall.Microseconds())/float64(runs), "real-µs/workload")
		})
	}
}

// BenchmarkOpsRealVsSim measures one client's synchronous operations
// (create+delete pairs, exists) on a real ZooKeeper and on the simulator,
// benchOpsPerRound a round on each, and reports both rates (real-ops/s,
// sim-ops/s; a create+delete pair counts as one op) and their ratio.
func BenchmarkOpsRealVsSim(b *testing.B) {
	srv := zktest.Shared(b)
	acl := zk.WorldACL(zk.PermAll)
	ops := []struct {
		name string
		prep func(ctx context.Context, c recipes.Conn, root string) error
		op   func(ctx context.Context, c recipes.Conn, root string) error
	}{
		{"create+delete", nil, func(ctx context.Context, c recipes.Conn, root string) error {
			if _, err := c.Create(ctx, root+"/n", nil, 0, acl); err != nil {
				return err
			}
			return c.Delete(ctx, root+"/n", -1)
		}},
		{"exists", func(ctx context.Context, c recipes.Conn, root string) error {
			_, err := c.Create(ctx, root+"/n", nil, 0, acl)
			return err
		}, func(ctx context.Context, c recipes.Conn, root string) error {
			_, _, err := c.Exists(ctx, root+"/n")
			return err
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			ctx := context.Background()
			rc := srv.Dial(b, benchSessionTimeout)
			realRoot := "/zklab-bench-" + rc.GUID()[:16]
			if _, err := rc.Create(ctx, realRoot, nil, 0, acl); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				rc.Delete(ctx, realRoot+"/n", -1)
				rc.Delete(ctx, realRoot, -1)
			})
			w := sim.New(sim.Config{Seed: 1, MaxSteps: math.MaxUint64})
			defer w.Close()
			sc, err := w.NewClient(sim.ClientConfig{SessionTimeout: benchSessionTimeout})
			if err != nil {
				b.Fatal(err)
			}
			const simRoot = "/bench"
			w.Go(sc, "prep", func(ctx context.Context) {
				if _, err := sc.Create(ctx, simRoot, nil, 0, acl); err != nil {
					b.Error(err)
				}
				if o.prep != nil {
					if err := o.prep(ctx, sc, simRoot); err != nil {
						b.Error(err)
					}
				}
			})
			if err := w.Run(); err != nil {
				b.Fatal(err)
			}
			if o.prep != nil {
				if err := o.prep(ctx, rc, realRoot); err != nil {
					b.Fatal(err)
				}
			}
			var simWall, realWall time.Duration
			rounds := 0
			for b.Loop() {
				start := time.Now()
				for range benchOpsPerRound {
					if err := o.op(ctx, rc, realRoot); err != nil {
						b.Fatal(err)
					}
				}
				realWall += time.Since(start)
				start = time.Now()
				w.Go(sc, "round", func(ctx context.Context) {
					for range benchOpsPerRound {
						if err := o.op(ctx, sc, simRoot); err != nil {
							b.Error(err)
							return
						}
					}
				})
				if err := w.Run(); err != nil {
					b.Fatal(err)
				}
				simWall += time.Since(start)
				rounds++
			}
			n := float64(rounds * benchOpsPerRound)
			b.ReportMetric(n/realWall.Seconds(), "real-ops/s")
			b.ReportMetric(n/simWall.Seconds(), "sim-ops/s")
			b.ReportMetric(realWall.Seconds()/simWall.Seconds(), "x-faster")
		})
	}
}
