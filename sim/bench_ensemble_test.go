package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// BenchmarkEnsembleWorld measures whole short runs, as exploration makes
// them, on a standalone server and on three and five servers: each op is a
// fresh world of its own seed where three clients take an ephemeral
// sequential lock three times each (create, children, a watch on the
// predecessor, delete), random walk, trace off. It reports runs
// (schedules) per second of wall time and the steps a run takes.
func BenchmarkEnsembleWorld(b *testing.B) {
	for _, servers := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) {
			b.ReportAllocs()
			steps := uint64(0)
			start := time.Now()
			for i := 0; i < b.N; i++ {
				steps += benchLockRun(b, uint64(i), servers)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "schedules/s")
			b.ReportMetric(float64(steps)/float64(b.N), "steps/schedule")
		})
	}
}

func benchLockRun(b *testing.B, seed uint64, servers int) uint64 {
	w := New(Config{Seed: seed, Servers: servers})
	defer w.Close()
	for i := range 3 {
		c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		w.Go(c, fmt.Sprintf("locker%d", i+1), func(ctx context.Context) {
			for range 3 {
				if _, err := c.Create(ctx, "/lock", nil, 0, acl); err != nil && err != zk.ErrNodeExists {
					b.Error(err)
					return
				}
				me, err := c.Create(ctx, "/lock/n-", nil, zk.FlagEphemeralSequential, acl)
				if err != nil {
					b.Error(err)
					return
				}
				for {
					kids, _, err := c.Children(ctx, "/lock")
					if err != nil {
						b.Error(err)
						return
					}
					first := minName(kids)
					if "/lock/"+first == me {
						break
					}
					ok, _, ch, err := c.ExistsW(ctx, "/lock/"+first)
					if err == nil && ok {
						c.Wait(ctx, ch)
					}
				}
				if err := c.Delete(ctx, me, -1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	if err := w.Run(); err != nil {
		b.Fatal(err)
	}
	return w.StepCount()
}
