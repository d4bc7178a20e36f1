package sim

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkZnodeMemory reports the heap bytes one empty persistent znode
// costs the server: 1,000,000 of them are created through Server.Receive
// under 16 parents (/bench/p<j>/n<i>), and the live heap is measured after
// a GC before and after. The goal is at most 250 B/znode.
//
//	go test -run '^$' -bench BenchmarkZnodeMemory -benchtime 1x ./sim
func BenchmarkZnodeMemory(b *testing.B) {
	const (
		znodes  = 1_000_000
		parents = 16
	)
	for range b.N {
		s := NewServer(ServerConfig{})
		const conn ConnID = 1
		s.Open(conn)
		s.Connect(0, conn, ConnectRequest{TimeoutMs: 40000})
		s.Outputs()
		create := func(path string) {
			s.Receive(0, conn, Request{Op: OpCreate, Path: path, ACL: openACL})
			if out := s.Outputs(); len(out) != 1 || out[0].Reply.Err != CodeOK {
				b.Fatalf("create %s: %+v", path, out)
			}
		}
		create("/bench")
		for j := range parents {
			create(fmt.Sprintf("/bench/p%d", j))
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range znodes {
			create(fmt.Sprintf("/bench/p%d/n%d", i%parents, i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if s.NodeCount() != znodes+parents+5 {
			b.Fatalf("%d nodes", s.NodeCount())
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/znodes, "B/znode")
		runtime.KeepAlive(s)
	}
}
