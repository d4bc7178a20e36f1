package main

// Benchmarks of zklab serve beside Debian's ZooKeeper 3.8, in one run:
//
//	go test ./cmd/zklab -run '^$' -bench 'Serve' -benchtime 2s
//
// Each benchmark has a sub-benchmark per server, zookeeper and zklab (in
// memory, and with a dataDir: its journal fsynced or not), the same
// go-zookeeper v1.0.4 client code against all over loopback. Both
// servers are warmed up (the JVM's JIT) before the clock starts.

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// benchServers gives each sub-benchmark its server's address.
func benchServers(b *testing.B, run func(b *testing.B, addr string)) {
	b.Run("zookeeper", func(b *testing.B) {
		if _, err := exec.LookPath(zktest.ZkServerScript); err != nil {
			b.Skip(zktest.HowToRun)
		}
		real := zktest.Start(b)
		run(b, real.Addr)
	})
	// zklab in memory; with a dataDir, its journal fsynced (forceSync=yes,
	// ZooKeeper's default) and not (forceSync=no).
	for _, tc := range []struct{ name, forceSync string }{{"zklab", ""}, {"zklab-journal-fsync", "yes"}, {"zklab-journal-nosync", "no"}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := zooConfig{maxClientCnxnsSet: true, forceSync: tc.forceSync}
			if tc.forceSync != "" {
				cfg.dataDir = b.TempDir()
			}
			s, err := newServeSettings(cfg, "127.0.0.1:0", false)
			if err != nil {
				b.Fatal(err)
			}
			srv, err := startServe(s, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.close()
			run(b, srv.addr)
		})
	}
}

func benchConn(b *testing.B, addr string) *zk.Conn {
	b.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	return c
}

// benchNode makes a fresh node for a benchmark and returns its path.
func benchNode(b *testing.B, c *zk.Conn) string {
	b.Helper()
	p, err := c.Create("/bench-", []byte("v"), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// One client reads, waiting for each reply before the next request:
// getData round trips.
func BenchmarkServeSyncReads(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		c := benchConn(b, addr)
		defer c.Close()
		p := benchNode(b, c)
		for range 2000 { // warm up
			if _, _, err := c.Get(p); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			if _, _, err := c.Get(p); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}

// One client writes, waiting for each reply before the next request:
// setData round trips.
func BenchmarkServeSyncWrites(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		c := benchConn(b, addr)
		defer c.Close()
		p := benchNode(b, c)
		data := []byte("0123456789abcdef")
		for range 2000 { // warm up
			if _, err := c.Set(p, data, -1); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		start := time.Now()
		for b.Loop() {
			if _, err := c.Set(p, data, -1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}

// syncWriters is how many clients write at once in
// BenchmarkServeConcurrentSyncWrites.
const syncWriters = 16

// syncWriters clients, each on its own connection, each writing
// synchronously (setData, waiting for each reply): with fsync on, what
// group commit is for. One client's synchronous writes each need their own
// fsync; concurrent clients' writes share them.
func BenchmarkServeConcurrentSyncWrites(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		var clients []*zk.Conn
		var paths []string
		for range syncWriters {
			c := benchConn(b, addr)
			defer c.Close()
			clients = append(clients, c)
			paths = append(paths, benchNode(b, c))
		}
		data := []byte("0123456789abcdef")
		run := func(n int) {
			var next atomic.Int64
			var wg sync.WaitGroup
			var failed atomic.Value
			for i, c := range clients {
				wg.Go(func() {
					for k := next.Add(1); k <= int64(n); k = next.Add(1) {
						if _, err := c.Set(paths[i], data, -1); err != nil {
							failed.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := failed.Load(); err != nil {
				b.Fatal(err)
			}
		}
		run(500) // warm up
		b.ResetTimer()
		start := time.Now()
		run(b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}

// pipelineDepth is the requests one client keeps in flight: go-zookeeper
// sends a request as soon as its caller makes it and matches replies by
// xid, so concurrent callers on one *zk.Conn pipeline.
const pipelineDepth = 128

// One client, one connection, pipelineDepth requests in flight: half
// getData, half setData.
func BenchmarkServePipelined(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		c := benchConn(b, addr)
		defer c.Close()
		p := benchNode(b, c)
		pipelinedLoad(b, c, p, 20000) // warm up
		b.ResetTimer()
		start := time.Now()
		pipelinedLoad(b, c, p, b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}

// pipelinedLoad makes n requests on c from pipelineDepth goroutines at
// once, half getData and half setData of node p.
func pipelinedLoad(b *testing.B, c *zk.Conn, p string, n int) {
	b.Helper()
	data := []byte("0123456789abcdef")
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range pipelineDepth {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				var err error
				if i%2 == 0 {
					_, _, err = c.Get(p)
				} else {
					_, err = c.Set(p, data, -1)
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

// From starting the server's process to the first granted session:
// Debian's zkServer.sh start-foreground (as zktest starts it, polling
// for a session every 50 ms) beside the zklab binary's serve.
func BenchmarkServeStartToFirstSession(b *testing.B) {
	b.Run("zookeeper", func(b *testing.B) {
		if _, err := exec.LookPath(zktest.ZkServerScript); err != nil {
			b.Skip(zktest.HowToRun)
		}
		for b.Loop() {
			s := zktest.Start(b)
			b.StopTimer()
			s.Stop()
			b.StartTimer()
		}
	})
	b.Run("zklab", func(b *testing.B) {
		bin := zklabBinary(b)
		for b.Loop() {
			cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			addr := strings.TrimPrefix(strings.TrimSpace(line), "zklab serve: listening on ")
			c := benchConn(b, addr)
			b.StopTimer()
			c.Close()
			cmd.Process.Kill()
			cmd.Wait()
			b.StartTimer()
		}
	})
}

// The server's own capacity, without go-zookeeper's costs (a write
// system call per request, two reads per reply): one connection, a raw
// client that writes pipelineDepth requests (half getData, half setData)
// at a time in one write and reads the replies through a buffer. It
// reports this process's CPU per op too (process-µs/op).
func BenchmarkServePipelinedRawClient(b *testing.B) {
	benchServers(b, func(b *testing.B, addr string) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		r := bufio.NewReaderSize(nc, 256<<10)
		readFrame := func(buf []byte) []byte {
			var n [4]byte
			if _, err := io.ReadFull(r, n[:]); err != nil {
				b.Fatal(err)
			}
			size := int(binary.BigEndian.Uint32(n[:]))
			if cap(buf) < size {
				buf = make([]byte, size)
			}
			buf = buf[:size]
			if _, err := io.ReadFull(r, buf); err != nil {
				b.Fatal(err)
			}
			return buf
		}
		hello := wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}})
		if _, err := nc.Write(hello); err != nil {
			b.Fatal(err)
		}
		buf := readFrame(nil)
		const path = "/bench-raw"
		create := wire.AppendRequest(nil, sim.Request{Xid: 1, Op: sim.OpCreate, Path: path, Data: []byte("v"), ACL: zk.WorldACL(zk.PermAll)})
		if _, err := nc.Write(create); err != nil {
			b.Fatal(err)
		}
		buf = readFrame(buf)
		xid := int32(1)
		data := []byte("0123456789abcdef")
		var batch []byte
		run := func(n int) {
			for done := 0; done < n; {
				k := min(pipelineDepth, n-done)
				batch = batch[:0]
				for i := range k {
					xid++
					req := sim.Request{Xid: xid, Op: sim.OpGetData, Path: path}
					if i%2 == 1 {
						req = sim.Request{Xid: xid, Op: sim.OpSetData, Path: path, Data: data, Version: -1}
					}
					batch = wire.AppendRequest(batch, req)
				}
				if _, err := nc.Write(batch); err != nil {
					b.Fatal(err)
				}
				for range k {
					buf = readFrame(buf)
					h, err := wire.DecodeReplyHeader(buf)
					if err != nil || h.Err != sim.CodeOK {
						b.Fatalf("reply %+v, %v", h, err)
					}
				}
				done += k
			}
		}
		run(20000) // warm up
		b.ResetTimer()
		start, cpuStart := time.Now(), processCPUTime()
		run(b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
		if cpuStart >= 0 {
			// For zklab, its CPU with the raw client's (which is
			// little); for zookeeper, the raw client's only.
			b.ReportMetric(float64((processCPUTime()-cpuStart).Microseconds())/float64(b.N), "process-µs/op")
		}
	})
}
