//go:build linux

package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// Where the CPU goes, go-zookeeper's beside the server's, with the server
// in a process of its own (Linux only, from /proc):
//
//	go test ./cmd/zklab -run '^$' -bench 'ServeCPU' -benchtime 100000x
//
// For one client's synchronous reads (getData) and writes (setData), and
// for BenchmarkServePipelined's load, it reports per operation the server
// process's CPU (server-µs/op), this process's, the client's
// (client-µs/op), and each one's read and write system calls
// (server-syscalls/op, client-syscalls/op). CPU per operation is steadier
// than a rate on a loaded machine, and on a machine of few cores the sum
// bounds the rate: 2 cores at 25 µs of CPU per operation do 80,000 per
// second at most, whatever either side's latency.
//
// ZKLAB_SERVE_BIN names the zklab binary to serve with (to compare two
// builds with one test binary); by default the package is built.
func BenchmarkServeCPU(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs Linux's /proc")
	}
	loads := []struct {
		name string
		run  func(b *testing.B, c *zk.Conn, p string, n int)
	}{
		{"sync-reads", func(b *testing.B, c *zk.Conn, p string, n int) {
			for range n {
				if _, _, err := c.Get(p); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"sync-writes", func(b *testing.B, c *zk.Conn, p string, n int) {
			data := []byte("0123456789abcdef")
			for range n {
				if _, err := c.Set(p, data, -1); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"pipelined", pipelinedLoad},
	}
	run := func(b *testing.B, addr string, pid int) {
		c := benchConn(b, addr)
		defer c.Close()
		p := benchNode(b, c)
		for _, load := range loads {
			b.Run(load.name, func(b *testing.B) {
				load.run(b, c, p, 2000) // warm up
				serverBefore, clientBefore := processCPU(b, pid), selfCPU(b)
				callsBefore, clientCallsBefore := processSyscalls(b, pid), processSyscalls(b, os.Getpid())
				b.ResetTimer()
				start := time.Now()
				load.run(b, c, p, b.N)
				elapsed := time.Since(start)
				b.StopTimer()
				n := float64(b.N)
				b.ReportMetric(n/elapsed.Seconds(), "ops/s")
				b.ReportMetric(float64((processCPU(b, pid)-serverBefore).Microseconds())/n, "server-µs/op")
				b.ReportMetric(float64((selfCPU(b)-clientBefore).Microseconds())/n, "client-µs/op")
				b.ReportMetric(float64(processSyscalls(b, pid)-callsBefore)/n, "server-syscalls/op")
				b.ReportMetric(float64(processSyscalls(b, os.Getpid())-clientCallsBefore)/n, "client-syscalls/op")
			})
		}
	}
	b.Run("zookeeper", func(b *testing.B) {
		if _, err := exec.LookPath(zktest.ZkServerScript); err != nil {
			b.Skip(zktest.HowToRun)
		}
		real := zktest.Start(b)
		run(b, real.Addr, listenerPID(b, real.Addr))
	})
	b.Run("zklab", func(b *testing.B) {
		bin := os.Getenv("ZKLAB_SERVE_BIN")
		if bin == "" {
			bin = zklabBinary(b)
		}
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--max-client-cnxns", "0")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			b.Fatalf("%s serve: %v", bin, err)
		}
		addr := strings.TrimPrefix(strings.TrimSpace(line), "zklab serve: listening on ")
		run(b, addr, cmd.Process.Pid)
	})
}

// clockTicksPerSecond is USER_HZ, the unit of /proc/PID/stat's times: 100
// on every Linux architecture Go supports.
const clockTicksPerSecond = 100

// processCPU is the user and system CPU process pid has used, from
// /proc/PID/stat (fields 14 and 15, after the parenthesised command).
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(text[strings.LastIndexByte(string(text), ')')+1:]))
	// fields[0] is field 3 (state): utime is field 14, stime 15.
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, text)
	}
	return time.Duration(utime+stime) * time.Second / clockTicksPerSecond
}

// selfCPU is the user and system CPU this process has used.
func selfCPU(b *testing.B) time.Duration {
	b.Helper()
	t := processCPUTime()
	if t < 0 {
		b.Fatal("getrusage failed")
	}
	return t
}

// processCPUTime is the user and system CPU this process has used, or -1
// where getrusage fails.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processSyscalls is how many read and write system calls process pid has
// made (/proc/PID/io's syscr and syscw).
func processSyscalls(b *testing.B, pid int) int64 {
	b.Helper()
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(string(text), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		if name == "syscr" || name == "syscw" {
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/io: %q", pid, line)
			}
			total += n
		}
	}
	return total
}

// listenerPID finds the process listening on addr (a server started by a
// script, the JVM behind zkServer.sh): the inode of the listening socket
// in /proc/net/tcp and /proc/net/tcp6, then the process holding it.
func listenerPID(b *testing.B, addr string) int {
	b.Helper()
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		b.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		text, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(text), "\n")[1:] {
			f := strings.Fields(line)
			// local_address is HEXIP:HEXPORT; state 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) {
				continue
			}
			inodes["socket:["+f[9]+"]"] = true
		}
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			return pid
		}
	}
	b.Skipf("no process found listening on %s", addr)
	return 0
}
