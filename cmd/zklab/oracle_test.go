package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// lockedBuffer is a report writer the server writes to from its
// goroutines while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveWithOracle is an in-process `zklab serve --oracle ORACLE
// --control`, its differences written to the returned buffer.
func serveWithOracle(t *testing.T, oracle string) (*served, string, *lockedBuffer) {
	t.Helper()
	settings, err := newServeSettings(zooConfig{}, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	report := &lockedBuffer{}
	settings.oracle, settings.oracleReport = oracle, report
	srv, err := startServe(settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.close() })
	hs, addr, err := startControl("127.0.0.1:0", srv.srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.Close() })
	return srv, "http://" + addr, report
}

// crossCheckWorkload drives two go-zookeeper clients through the
// operations a recipe uses (sequential ephemerals, children watches, data
// watches, a multi, an expiry through the control API) against addr.
func crossCheckWorkload(t *testing.T, addr, controlURL string) {
	acl := zk.WorldACL(zk.PermAll)
	a := connect(t, addr)
	b := connect(t, addr)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := a.Create("/app", []byte("v0"), 0, acl)
	must("create /app", err)
	_, _, childWatch, err := b.ChildrenW("/app")
	must("children /app", err)
	for range 3 {
		_, err := a.Create("/app/n-", []byte("x"), zk.FlagEphemeralSequential, acl)
		must("create sequential", err)
	}
	<-childWatch
	_, _, dataWatch, err := b.GetW("/app")
	must("get /app", err)
	_, err = a.Set("/app", []byte("v1"), 0)
	must("set /app", err)
	<-dataWatch
	_, err = a.Set("/app", []byte("v2"), 0) // a bad version: both must refuse it
	if err != zk.ErrBadVersion {
		t.Fatalf("set with a stale version: %v", err)
	}
	_, err = b.Multi(&zk.CreateRequest{Path: "/app/m", Data: []byte("m"), Acl: acl}, &zk.SetDataRequest{Path: "/app", Data: []byte("v3"), Version: 1})
	must("multi", err)
	children, stat, existsWatch, err := b.ChildrenW("/app")
	must("children", err)
	if len(children) != 4 || stat.NumChildren != 4 {
		t.Fatalf("children of /app: %v", children)
	}
	_, _, existsWatch, err = b.ExistsW("/app/n-0000000000")
	must("exists", err)
	// An expiry through the control API: the ephemerals go on both.
	if status, _, body := control(t, controlURL, "/command/EXPIRESESSION/"+sessionHex(a.SessionID())); status != 200 {
		t.Fatalf("EXPIRESESSION: %d %s", status, body)
	}
	<-existsWatch
	children, _, err = b.Children("/app")
	must("children after the expiry", err)
	if len(children) != 1 {
		t.Fatalf("children after the expiry: %v", children)
	}
	must("delete", b.Delete("/app/m", -1))
	must("delete", b.Delete("/app", -1))
	b.Close()
}

// The cross-check finds no difference between zklab serve and a fresh
// ZooKeeper 3.8 on a recipe's operations, an expiry included.
func TestCrossCheckAgreesWithZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ZooKeeper")
	}
	real := zktest.Start(t)
	srv, controlURL, report := serveWithOracle(t, real.Addr)
	crossCheckWorkload(t, srv.addr, controlURL)
	time.Sleep(100 * time.Millisecond)
	sum := srv.check.Summary()
	if sum.Differences != 0 || sum.Replies < 15 || sum.Events < 3 {
		t.Fatalf("%v:\n%s", sum, strings.Join(sum.First, "\n"))
	}
	t.Logf("%v; report: %q", sum, report.String())
}

// The cross-check can fail: an oracle that already holds a node answers a
// create of it NODEEXISTS where zklab creates it, and that is reported.
func TestCrossCheckReportsADifference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ZooKeeper")
	}
	real := zktest.Start(t)
	direct := connect(t, real.Addr)
	if _, err := direct.Create("/only-on-the-oracle", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srv, _, report := serveWithOracle(t, real.Addr)
	c := connect(t, srv.addr)
	if _, err := c.Create("/only-on-the-oracle", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sum := srv.check.Summary()
	if sum.Differences == 0 || !strings.Contains(report.String(), "create: error: zklab OK, ZooKeeper NODEEXISTS") {
		t.Fatalf("%v, report %q; want the create's error reported", sum, report.String())
	}
}

// heldOracle is a proxy in front of a real ZooKeeper that holds the
// server's frames after each connection's handshake answer until release:
// an oracle as slow as a test wants.
type heldOracle struct {
	addr    string
	mu      sync.Mutex
	held    bool
	release *sync.Cond
}

func startHeldOracle(t *testing.T, real string) *heldOracle {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := &heldOracle{addr: ln.Addr().String()}
	h.release = sync.NewCond(&h.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", real)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(s, c); s.Close() }()
			go func() {
				defer c.Close()
				r := bufio.NewReader(s)
				for n := 0; ; n++ {
					var prefix [4]byte
					if _, err := io.ReadFull(r, prefix[:]); err != nil {
						return
					}
					frame := make([]byte, 4+binary.BigEndian.Uint32(prefix[:]))
					copy(frame, prefix[:])
					if _, err := io.ReadFull(r, frame[4:]); err != nil {
						return
					}
					h.mu.Lock()
					for h.held && n > 0 { // the handshake's answer (or a 4lw's) goes through
						h.release.Wait()
					}
					h.mu.Unlock()
					if _, err := c.Write(frame); err != nil {
						return
					}
				}
			}()
		}
	}()
	return h
}

func (h *heldOracle) hold(held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = held
	h.release.Broadcast()
}

// zklab's reply does not wait for the oracle's: a client gets its answer
// while the oracle's is held back, and the two are compared when the
// oracle's comes. (A checker that waited would add the oracle's whole
// latency to every reply: go-zookeeper's 20 MB listing outlasted its
// client's read timeout so.) The next request waits for the oracle.
func TestCrossCheckRepliesBeforeTheOracleAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ZooKeeper")
	}
	real := zktest.Start(t)
	oracle := startHeldOracle(t, real.Addr)
	srv, _, report := serveWithOracle(t, oracle.addr)
	c := connect(t, srv.addr)
	oracle.hold(true)
	if _, err := c.Create("/answered-first", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srv.check.mu.Lock()
	compared := srv.check.compared
	srv.check.mu.Unlock()
	oracle.hold(false)
	// The next request is sent to the oracle once it answered the create.
	if data, _, err := c.Get("/answered-first"); err != nil || string(data) != "x" {
		t.Fatalf("get: %q %v", data, err)
	}
	sum := srv.check.Summary()
	if sum.Differences != 0 || sum.Replies < compared+2 {
		t.Fatalf("%v (compared %d while the oracle was held):\n%s", sum, compared, report.String())
	}
}

// startServeWithOracleOn is an in-process `zklab serve --oracle ORACLE
// --listen ADDR --data-dir DATADIR`, its differences written to report.
func startServeWithOracleOn(t *testing.T, oracle, addr, dataDir string, report io.Writer) *served {
	t.Helper()
	settings, err := newServeSettings(zooConfig{dataDir: dataDir}, addr, false)
	if err != nil {
		t.Fatal(err)
	}
	settings.oracle, settings.oracleReport = oracle, report
	srv, err := startServe(settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// zklab serve --oracle started again on its dataDir resumes the
// sessions it had paired with the oracle's (zklab-oracle-sessions),
// against an oracle that still has them (a real ZooKeeper restarted on
// its dataDir has them back): the client's session, its auth, its
// ephemeral and its watches carry over, and every reply and event after
// the restart agrees. Without the pairing the resumed handshake is
// reported: the oracle does not know zklab's session id.
func TestCrossCheckResumesSessionsAfterARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ZooKeeper")
	}
	for _, keep := range []bool{true, false} {
		t.Run(map[bool]string{true: "paired", false: "pairing lost"}[keep], func(t *testing.T) {
			real := zktest.Start(t)
			addr, dataDir := freePort(t), t.TempDir()
			report := &lockedBuffer{}
			first := startServeWithOracleOn(t, real.Addr, addr, dataDir, report)
			c := connect(t, addr)
			session := c.SessionID()
			must := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			must("addauth", c.AddAuth("digest", []byte("alice:secret")))
			_, err := c.Create("/private", []byte("p"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
			must("create /private", err)
			_, err = c.Create("/eph", []byte("e"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
			must("create /eph", err)
			_, _, dataWatch, err := c.GetW("/private")
			must("get /private", err)
			_, _, existsWatch, err := c.ExistsW("/eph")
			must("exists /eph", err)
			if sum := first.check.Summary(); sum.Differences != 0 {
				t.Fatalf("before the restart: %v:\n%s", sum, report.String())
			}
			must("stop", first.close())
			if !keep {
				must("losing the pairing", os.Remove(filepath.Join(dataDir, oracleSessionsFile)))
			}
			second := startServeWithOracleOn(t, real.Addr, addr, dataDir, report)
			t.Cleanup(func() { second.close() })
			if got := waitSession(t, c); got != session {
				t.Fatalf("after the restart the client has session %#x, want %#x", got, session)
			}
			if !keep {
				// One request so that the handshake has surely been seen.
				c.Get("/private")
				sum := second.check.Summary()
				if sum.Differences == 0 || !strings.Contains(report.String(), "ZooKeeper 0x0") {
					t.Fatalf("%v, report %q; want the resumed handshake's refusal by the oracle reported", sum, report.String())
				}
				return
			}
			data, _, err := c.Get("/private") // the auth, resent by the client
			if err != nil || string(data) != "p" {
				t.Fatalf("get /private after the restart: %q %v", data, err)
			}
			_, err = c.Set("/private", []byte("p2"), 0)
			must("set /private", err)
			if ev := <-dataWatch; ev.Type != zk.EventNodeDataChanged {
				t.Fatalf("the data watch set before the restart: %v", ev)
			}
			must("delete /eph", c.Delete("/eph", 0))
			if ev := <-existsWatch; ev.Type != zk.EventNodeDeleted {
				t.Fatalf("the exists watch set before the restart: %v", ev)
			}
			time.Sleep(100 * time.Millisecond) // the oracle's events
			sum := second.check.Summary()
			if sum.Differences != 0 || sum.Replies < 4 || sum.Events < 2 {
				t.Fatalf("after the restart: %v:\n%s", sum, report.String())
			}
			t.Logf("after the restart: %v", sum)
		})
	}
}
