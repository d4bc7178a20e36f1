package inproc_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/inproc"
)

// lockers is the number of clients that take turns on the lock.
const lockers = 5

// BenchmarkLockWorkload: five clients take turns on a lock, one op being
// one acquisition and release. "inproc" runs go-zookeeper's zk.Lock on
// real *zk.Conns over net.Pipe to a wire.Server (on wall-clock time: a
// benchmark has no synctest bubble, and the workload never waits on a
// timer); "recipes" runs the same algorithm (an ephemeral sequential node,
// the children, a watch on the predecessor: recipes.NewFairLock) on
// recipes.Conn in the simulated world, where the scheduler runs one task
// at a time.
//
//	go test ./sim/inproc -run XXX -bench LockWorkload -benchtime 2s
func BenchmarkLockWorkload(b *testing.B) {
	b.Run("inproc-zk.Lock", func(b *testing.B) {
		srv := inproc.Start(b, inproc.Config{})
		var conns []*zk.Conn
		for range lockers {
			c, _ := srv.Connect(b)
			conns = append(conns, c)
		}
		var remaining atomic.Int64
		remaining.Store(int64(b.N))
		b.ResetTimer()
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() {
				lock := zk.NewLock(c, "/lock", acl)
				for remaining.Add(-1) >= 0 {
					if err := lock.Lock(); err != nil {
						b.Error(err)
						return
					}
					if err := lock.Unlock(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
	})
	b.Run("recipes-sim", func(b *testing.B) {
		w := sim.New(sim.Config{Seed: 1, MaxSteps: math.MaxUint64})
		defer w.Close()
		var clients []*sim.Client
		for range lockers {
			c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		remaining := b.N
		b.ResetTimer()
		for _, c := range clients {
			w.Go(c, "locker", func(ctx context.Context) {
				lock := recipes.NewFairLock(c, "/lock")
				for remaining > 0 {
					remaining--
					lease, err := lock.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					if err := lease.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		if err := w.Run(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
	})
}
