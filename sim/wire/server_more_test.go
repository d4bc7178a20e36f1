package wire_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// historyObserver writes down what the server reports, in its order.
type historyObserver struct {
	mu    sync.Mutex
	lines []string
}

func (h *historyObserver) add(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
}

func (h *historyObserver) ConnOpened(_ time.Time, c wire.ConnInfo) { h.add("open %d", c.ID) }
func (h *historyObserver) ConnRefused(_ time.Time, remote, reason string) {
	h.add("refused %s", reason)
}
func (h *historyObserver) ConnClosed(_ time.Time, c wire.ConnInfo, reason string) {
	h.add("close %d (%s)", c.ID, reason)
}
func (h *historyObserver) Handshake(_ time.Time, conn sim.ConnID, req wire.ConnectRequest, resp sim.ConnectResponse) {
	h.add("handshake %d asked=%#x got=%#x", conn, req.SessionID, resp.SessionID)
}
func (h *historyObserver) SessionCreated(_ time.Time, conn sim.ConnID, id int64, timeoutMs int32) {
	h.add("session %#x created on %d timeout=%d", id, conn, timeoutMs)
}
func (h *historyObserver) SessionExpired(_ time.Time, id int64) { h.add("session %#x expired", id) }
func (h *historyObserver) SessionClosed(_ time.Time, id int64)  { h.add("session %#x closed", id) }
func (h *historyObserver) RequestReceived(_ time.Time, conn sim.ConnID, _ int64, req sim.Request) {
	if req.Op != sim.OpPing {
		h.add("request %d %v %s", conn, req.Op, req.Path)
	}
}
func (h *historyObserver) ReplySent(_ time.Time, conn sim.ConnID, _ int64, op sim.OpCode, r sim.Response) {
	if op != sim.OpPing {
		h.add("reply %d %v %v", conn, op, r.Err)
	}
}
func (h *historyObserver) WatchEventSent(_ time.Time, conn sim.ConnID, _ int64, ev zk.Event) {
	h.add("event %d %v %s", conn, ev.Type, ev.Path)
}

func (h *historyObserver) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.lines, "\n")
}

// The observer hears everything in the server's order: connections,
// handshakes, requests, replies, events, and the sessions' births, expiry
// and close.
func TestObserverHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &historyObserver{}
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{Observer: h})
		a, _ := srv.connect(t, 4*time.Second)
		b, _ := srv.connect(t, 4*time.Second)
		if _, _, _, err := b.ExistsW("/e"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		idA, idB := a.SessionID(), b.SessionID()
		if !srv.ExpireSession(idA) {
			t.Fatal("a's session not live")
		}
		synctest.Wait()
		b.Close()
		synctest.Wait()
		got := h.text()
		got = strings.ReplaceAll(got, fmt.Sprintf("%#x", idA), "A")
		got = strings.ReplaceAll(got, fmt.Sprintf("%#x", idB), "B")
		want := `open 1
handshake 1 asked=0x0 got=A
session A created on 1 timeout=4000
open 2
handshake 2 asked=0x0 got=B
session B created on 2 timeout=4000
request 2 exists /e
reply 2 exists NONODE
request 1 create /e
event 2 EventNodeCreated /e
reply 1 create OK
session A expired
close 1 (closed by the server)`
		if !strings.HasPrefix(got, want) {
			t.Fatalf("history:\n%s\n\nwant it to begin:\n%s", got, want)
		}
		if !strings.Contains(got, "session B closed") || !strings.Contains(got, "reply 2 closeSession OK") {
			t.Fatalf("b's close missing from the history:\n%s", got)
		}
	})
}

// Past maxClientCnxns a connection from the same address is closed at
// accept, unread, as ZooKeeper refuses it; the others are untouched, and
// a place that frees up is taken again.
func TestMaxClientCnxns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &historyObserver{}
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{MaxClientCnxns: 2, Observer: h})
		a, _ := srv.connect(t, 10*time.Second)
		srv.connect(t, 10*time.Second)
		third, server := net.Pipe()
		defer third.Close()
		srv.ServeConn(server)
		if _, err := third.Write(wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}})); err == nil {
			t.Fatal("the third connection was read")
		}
		if !strings.Contains(h.text(), "refused too many connections from 127.0.0.1 - max is 2") {
			t.Fatalf("no refusal in the history:\n%s", h.text())
		}
		if _, err := a.Create("/still", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("a refused connection hurt another: %v", err)
		}
		a.Close()
		synctest.Wait()
		srv.connect(t, 10*time.Second) // a's place is free again
	})
}

// A malformed frame closes its connection only.
func TestMalformedFrameClosesOnlyItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		a, _ := srv.connect(t, 10*time.Second)
		for name, frame := range map[string][]byte{
			"shorter than a header": {0, 0, 0, 3, 1, 2, 3},
			"negative length":       {0x80, 0, 0, 0},
			"past jute.maxbuffer":   {0, 0x10, 0, 0},
		} {
			bad, server := net.Pipe()
			srv.ServeConn(server)
			go io.Copy(io.Discard, bad)
			bad.Write(wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}}))
			bad.Write(frame)
			synctest.Wait()
			time.Sleep(time.Second)
			if _, err := bad.Write(wire.AppendRequest(nil, sim.Request{Xid: 1, Op: sim.OpPing})); !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("%s: the connection is still open (%v)", name, err)
			}
			bad.Close()
			if _, _, err := a.Exists("/"); err != nil {
				t.Fatalf("%s: another connection hurt: %v", name, err)
			}
		}
	})
}

// A connection whose first bytes are a four-letter word gets the hook's
// answer and is closed.
func TestFourLetterWordHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{FourLetterWord: func(word string, w io.Writer) {
			fmt.Fprintf(w, "asked %s\n", word)
		}})
		c, server := net.Pipe()
		srv.ServeConn(server)
		go c.Write([]byte("ruok"))
		got, err := io.ReadAll(bufio.NewReader(c))
		if err != nil || string(got) != "asked ruok\n" {
			t.Fatalf("answer %q, %v", got, err)
		}
	})
}

// The server's read-only views: connections with their sessions and
// counts, and the server's totals.
func TestStatsAndConns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		a, _ := srv.connect(t, 10*time.Second)
		if _, _, _, err := a.GetW("/zookeeper"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create("/n", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		conns := srv.Conns()
		if len(conns) != 1 || conns[0].Session != a.SessionID() || conns[0].TimeoutMs != 10000 ||
			conns[0].Received < 3 || conns[0].Sent < 3 || conns[0].LastOp != sim.OpCreate || conns[0].Outstanding != 0 {
			t.Fatalf("conns: %+v", conns)
		}
		st := srv.Stats()
		if st.Connections != 1 || st.Sessions != 1 || st.NodeCount != 5 || st.Watches != 1 || st.WatchPaths != 1 ||
			st.WatchConns != 1 || st.Zxid == 0 || st.Received < 3 || st.Ephemerals != 1 || st.ApproximateDataSize == 0 {
			t.Fatalf("stats: %+v", st)
		}
		srv.ResetStats()
		if st := srv.Stats(); st.Received != 0 || st.MaxLatencyMs != 0 {
			t.Fatalf("after reset: %+v", st)
		}
	})
}
