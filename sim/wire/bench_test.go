package wire_test

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// BenchmarkGoZookeeper measures go-zookeeper's operations per second
// against wire.Server over loopback TCP and against a real ZooKeeper
// (Debian's 3.8, started by zktest) in the same run: synchronous (one
// request at a time) and pipelined (many goroutines on one *zk.Conn, so
// that many requests are in flight on the connection).
//
//	go test ./sim/wire -run XXX -bench GoZookeeper -benchtime 2s
func BenchmarkGoZookeeper(b *testing.B) {
	servers := []struct {
		name string
		addr func(b *testing.B) string
	}{
		{"wire", func(b *testing.B) string {
			srv := wire.New(sim.NewServer(sim.ServerConfig{EpochMs: time.Now().UnixMilli()}), wire.Config{})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(l)
			b.Cleanup(func() { srv.Close() })
			return l.Addr().String()
		}},
		{"zookeeper", func(b *testing.B) string { return zktest.Shared(b).Addr }},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			addr := s.addr(b)
			c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for ev := range events {
				if ev.State == zk.StateHasSession {
					break
				}
			}
			root := fmt.Sprintf("/bench-%d", time.Now().UnixNano())
			acl := zk.WorldACL(zk.PermAll)
			if _, err := c.Create(root, []byte("x"), 0, acl); err != nil {
				b.Fatal(err)
			}
			b.Run("sync-set", func(b *testing.B) {
				for b.Loop() {
					if _, err := c.Set(root, []byte("y"), -1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
			b.Run("sync-create-delete", func(b *testing.B) {
				for b.Loop() {
					if _, err := c.Create(root+"/n", nil, 0, acl); err != nil {
						b.Fatal(err)
					}
					if err := c.Delete(root+"/n", -1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
			b.Run("sync-get", func(b *testing.B) {
				for b.Loop() {
					if _, _, err := c.Get(root); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
			for _, op := range []string{"get", "set"} {
				b.Run("pipelined-"+op, func(b *testing.B) {
					var failed atomic.Value
					b.SetParallelism(64) // 64 × GOMAXPROCS requests in flight on one connection
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							var err error
							if op == "get" {
								_, _, err = c.Get(root)
							} else {
								_, err = c.Set(root, []byte("z"), -1)
							}
							if err != nil {
								failed.Store(err)
							}
						}
					})
					if err := failed.Load(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				})
			}
			// The same reads over four connections: go-zookeeper runs one
			// send and one receive goroutine per *zk.Conn (one write(2) per
			// request, two read(2)s per reply), so one connection's
			// pipelining is bounded by its receive goroutine; several
			// connections spread that over the cores.
			b.Run("pipelined-get-4conns", func(b *testing.B) {
				conns := []*zk.Conn{c}
				for range 3 {
					o, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger))
					if err != nil {
						b.Fatal(err)
					}
					defer o.Close()
					for ev := range events {
						if ev.State == zk.StateHasSession {
							break
						}
					}
					conns = append(conns, o)
				}
				var failed atomic.Value
				var next atomic.Int64
				b.SetParallelism(64)
				b.RunParallel(func(pb *testing.PB) {
					conn := conns[next.Add(1)%int64(len(conns))]
					for pb.Next() {
						if _, _, err := conn.Get(root); err != nil {
							failed.Store(err)
						}
					}
				})
				if err := failed.Load(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
		})
	}
}
