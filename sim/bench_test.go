package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// BenchmarkSimThroughput measures one client doing a create / getData /
// setData / delete mix through the recipe interface, with the scheduler
// deciding every step, trace off. It reports operations per second of
// wall time (ops/s).
func BenchmarkSimThroughput(b *testing.B) {
	w := New(Config{Seed: 1, MaxSteps: math.MaxUint64})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	data := []byte("value")
	w.Go(c, "warmup", func(ctx context.Context) {
		if _, err := c.Create(ctx, "/bench", nil, 0, acl); err != nil {
			b.Error(err)
		}
	})
	if err := w.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	w.Go(c, "mix", func(ctx context.Context) {
		for i := 0; i < b.N; i++ {
			var err error
			switch i % 4 {
			case 0:
				_, err = c.Create(ctx, "/bench/n", data, 0, acl)
			case 1:
				_, _, err = c.Get(ctx, "/bench/n")
			case 2:
				_, err = c.Set(ctx, "/bench/n", data, -1)
			case 3:
				err = c.Delete(ctx, "/bench/n", -1)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := w.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkContendedLockCycle measures five clients taking turns on an
// ephemeral lock node with watches: the scheduler's handoffs between
// goroutines and the watch path, which the single-client benchmark does
// not exercise. One op is one acquisition and release.
func BenchmarkContendedLockCycle(b *testing.B) {
	w := New(Config{Seed: 1, MaxSteps: math.MaxUint64})
	defer w.Close()
	var clients []*Client
	for range 5 {
		c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	remaining := b.N
	for i, c := range clients {
		w.Go(c, "locker", func(ctx context.Context) {
			for remaining > 0 {
				_, err := c.Create(ctx, "/lock", nil, zk.FlagEphemeral, acl)
				if err == zk.ErrNodeExists {
					ok, _, ch, err := c.ExistsW(ctx, "/lock")
					if err == nil && ok {
						c.Wait(ctx, ch)
					}
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				remaining--
				c.Delete(ctx, "/lock", -1)
			}
			_ = i
		})
	}
	if err := w.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}
