package main

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// freePort is a loopback port nothing listens on, for a server that must
// come back on the same address.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitSession waits until c has a session again after its server came
// back, and returns its id.
func waitSession(t *testing.T, c *zk.Conn) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session after the restart in 20 s (state %v)", c.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c.SessionID()
}

// A served server with a dataDir is durable as ZooKeeper is: killed with
// SIGKILL and started again on the same dataDir, it has every node, ACL,
// sequence counter and zxid, and the client's session: the client
// reconnects to it and its ephemeral is still there. A real ZooKeeper
// 3.8, killed with -9 with a client connected and restarted, did the
// same: the client reattached to its session, its ephemeral was there,
// and the next sequential name continued the counter.
func TestServeSurvivesKillWithDataDir(t *testing.T) {
	addr := freePort(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	args := []string{"--listen", addr, "--data-dir", dataDir}
	server, _, _ := startServeProcess(t, args...)

	c := connect(t, addr)
	session := c.SessionID()
	if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	private := zk.DigestACL(zk.PermAll, "alice", "secret")
	if _, err := c.Create("/private", []byte("p"), 0, private); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/q", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Create("/q/n-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/eph", []byte("mine"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/q", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	_, qBefore, err := c.Get("/q")
	if err != nil {
		t.Fatal(err)
	}
	_, ephBefore, err := c.Get("/eph")
	if err != nil {
		t.Fatal(err)
	}

	if err := server.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	server.Wait()
	startServeProcess(t, args...)

	if got := waitSession(t, c); got != session {
		t.Fatalf("after the restart the client has session %#x, want its own %#x back", got, session)
	}
	data, ephAfter, err := c.Get("/eph")
	if err != nil {
		t.Fatalf("the session's ephemeral after the restart: %v", err)
	}
	if string(data) != "mine" || *ephAfter != *ephBefore || ephAfter.EphemeralOwner != session {
		t.Errorf("/eph after the restart: %q %+v, want %q %+v", data, ephAfter, "mine", ephBefore)
	}
	data, qAfter, err := c.Get("/q")
	if err != nil || string(data) != "v1" || *qAfter != *qBefore {
		t.Errorf("/q after the restart: %q %+v %v, want %q %+v", data, qAfter, err, "v1", qBefore)
	}
	acl, _, err := c.GetACL("/private")
	if err != nil || !slices.Equal(acl, private) {
		t.Errorf("/private's ACL after the restart: %v %v, want %v", acl, err, private)
	}
	// The auth was the connection's, as on ZooKeeper; go-zookeeper resends
	// it on reconnect, so the node reads.
	if data, _, err := c.Get("/private"); err != nil || string(data) != "p" {
		t.Errorf("/private after the restart: %q %v", data, err)
	}
	name, err := c.Create("/q/n-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil || name != "/q/n-0000000003" {
		t.Errorf("the next sequential node after the restart: %q %v, want /q/n-0000000003", name, err)
	}
	_, st, err := c.Get(name)
	if err != nil || st.Czxid != qBefore.Mzxid+1 {
		t.Errorf("the first zxid after the restart: %+v %v, want %d, the next after the last before", st, err, qBefore.Mzxid+1)
	}
	if st != nil && st.Ctime < qBefore.Mtime {
		t.Errorf("time went back across the restart: ctime %d before the last mtime %d", st.Ctime, qBefore.Mtime)
	}

	// A session whose client does not come back expires after its full
	// timeout from the restart, and takes its ephemeral with it.
	c.Close()
	other := connect(t, addr)
	if _, err := other.Sync("/"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, _, err := other.Exists("/eph")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ephemeral of a closed session is still there after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A journal that is not one (garbage, another version) stops serve with
// exit 2 and one line naming the file; the file is left as it was.
func TestServeRefusesGarbageJournal(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":       "this is not a journal\n",
		"other version": "ZKLABJNL\x00\x00\x00\x63",
	} {
		t.Run(name, func(t *testing.T) {
			dataDir := t.TempDir()
			path := filepath.Join(dataDir, "zklab-log.0000000000000000")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := zklab(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir)
			if code != 2 || !strings.Contains(errOut, path) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line naming %s", code, errOut, path)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the journal was changed to %q", b)
			}
		})
	}
}

// Killed with SIGKILL at random points while a client writes and the
// journal compacts (a snapshot and a new log every 5 inputs, the oldest
// pruned), serve comes back every time with every write it acknowledged,
// and at most the one write in flight besides, as a real ZooKeeper does;
// its dataDir holds no more than the snapshots autopurge keeps.
func TestServeSurvivesKillsWhileCompacting(t *testing.T) {
	addr := freePort(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	// A write(2) survives a kill -9; fsync is for power loss.
	args := []string{"--listen", addr, "--data-dir", dataDir, "--snap-count", "5", "--fsync=false"}
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	acked := map[string]string{} // every sequential node acknowledged, and its data
	lastSet := ""                // /v's last acknowledged data
	next := 0
	for round := range 8 {
		server, _, _ := startServeProcess(t, args...)
		c := connect(t, addr)
		// What the server holds is what it acknowledged, or that and the
		// write in flight at the kill.
		if round == 0 {
			if _, err := c.Create("/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create("/v", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		} else {
			children, _, err := c.Children("/k")
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			for name, data := range acked {
				got, _, err := c.Get("/k/" + name)
				if err != nil || string(got) != data {
					t.Fatalf("round %d: acknowledged /k/%s is %q %v after the restart, want %q", round, name, got, err, data)
				}
			}
			for _, name := range children {
				if _, ok := acked[name]; ok {
					continue
				}
				got, _, err := c.Get("/k/" + name)
				if err != nil || string(got) != strconv.Itoa(next-1) || len(children) != len(acked)+1 {
					t.Fatalf("round %d: /k/%s (%q) is there unacknowledged, and is not the one write in flight (%d)", round, name, got, next-1)
				}
				acked[name] = string(got)
			}
			v, _, err := c.Get("/v")
			if err != nil || string(v) != lastSet && string(v) != strconv.Itoa(next-1) {
				t.Fatalf("round %d: /v is %q %v after the restart, want %q or the write in flight %d", round, v, err, lastSet, next-1)
			}
			lastSet = string(v)
		}
		// Write until the kill; a write after it fails.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				i := next
				next++
				data := strconv.Itoa(i)
				name, err := c.Create("/k/n-", []byte(data), zk.FlagSequence, zk.WorldACL(zk.PermAll))
				if err != nil {
					return
				}
				acked[strings.TrimPrefix(name, "/k/")] = data
				if _, err := c.Set("/v", []byte(data), -1); err != nil {
					return // the create is acknowledged; the set may be in flight
				}
				lastSet = data
			}
		}()
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		if err := server.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		server.Wait()
		c.Close() // fails what is still queued
		<-done
	}
	if len(acked) < 20 {
		t.Fatalf("only %d writes were acknowledged in 8 rounds: the workload did not run", len(acked))
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	snapshots := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "zklab-snapshot.") {
			snapshots++
		}
	}
	// The kill may fall between a snapshot and the pruning after it.
	if snapshots < 3 || snapshots > 4 || len(entries) > 10 {
		t.Errorf("dataDir holds %d files, %d of them snapshots; want 3 snapshots (4 if a kill fell before pruning) and their logs", len(entries), snapshots)
	}
}
