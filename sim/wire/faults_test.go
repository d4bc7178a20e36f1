package wire_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

var worldACL = zk.WorldACL(zk.PermAll)

// nodeOnServer reports whether the simulated server holds path.
func nodeOnServer(srv pipeServer, path string) (sim.NodeInfo, bool) {
	var info sim.NodeInfo
	var ok bool
	srv.Inspect(func(s *sim.Server) { info, ok = s.Node(path) })
	return info, ok
}

// An expiry from the controller is the server's own: the session's
// ephemerals go, another session's watch on them fires, and the client
// learns its session expired when it reconnects.
func TestFaultExpireSessionIsServerSide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		a, aEvents := srv.connect(t, 10*time.Second)
		b, _ := srv.connect(t, 10*time.Second)
		if _, err := a.Create("/e", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		_, _, watch, err := b.ExistsW("/e")
		if err != nil {
			t.Fatal(err)
		}
		if !srv.ExpireSession(a.SessionID()) {
			t.Fatal("ExpireSession: the session was not live")
		}
		if ev := <-watch; ev.Type != zk.EventNodeDeleted || ev.Path != "/e" {
			t.Fatalf("b's watch: %+v, want NodeDeleted /e", ev)
		}
		if _, ok := nodeOnServer(srv, "/e"); ok {
			t.Fatal("/e outlived its session")
		}
		waitState(t, aEvents, zk.StateExpired)
		if got := srv.ExpireSession(a.SessionID()); got {
			t.Fatal("ExpireSession of an expired session reported it live")
		}
	})
}

// A lost reply: the request is applied, the client sees its connection
// close, and reconnects to the same session.
func TestFaultLoseNextReplyAppliesTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, events := srv.connect(t, 10*time.Second)
		id := c.SessionID()
		if err := srv.LoseNextReply(id); err != nil {
			t.Fatal(err)
		}
		_, err := c.Create("/lost", nil, zk.FlagEphemeral, worldACL)
		if !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("create with its reply lost: %v, want %v", err, zk.ErrConnectionClosed)
		}
		info, ok := nodeOnServer(srv, "/lost")
		if !ok || info.Owner != id {
			t.Fatalf("/lost on the server: %+v %v, want it owned by 0x%x", info, ok, id)
		}
		waitState(t, events, zk.StateHasSession)
		if c.SessionID() != id {
			t.Fatalf("session 0x%x after reconnecting, want 0x%x", c.SessionID(), id)
		}
		if _, err := c.Create("/lost", nil, zk.FlagEphemeral, worldACL); !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create again: %v, want %v", err, zk.ErrNodeExists)
		}
	})
}

// A dropped request is never applied; the client sees its connection close.
func TestFaultDropNextRequestIsNotApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, events := srv.connect(t, 10*time.Second)
		if err := srv.DropNextRequest(c.SessionID()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create("/dropped", nil, 0, worldACL); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("create dropped: %v, want %v", err, zk.ErrConnectionClosed)
		}
		if _, ok := nodeOnServer(srv, "/dropped"); ok {
			t.Fatal("a dropped create was applied")
		}
		waitState(t, events, zk.StateHasSession)
		if _, err := c.Create("/dropped", nil, 0, worldACL); err != nil {
			t.Fatalf("create after reconnecting: %v", err)
		}
	})
}

// FAILREQUESTS n answers n requests with APIERROR and applies none.
func TestFaultFailRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, _ := srv.connect(t, 10*time.Second)
		srv.FailRequests(1)
		if _, err := c.Create("/f", nil, 0, worldACL); !errors.Is(err, zk.ErrAPIError) {
			t.Fatalf("failed create: %v, want %v", err, zk.ErrAPIError)
		}
		if _, ok := nodeOnServer(srv, "/f"); ok {
			t.Fatal("a failed create was applied")
		}
		if _, err := c.Create("/f", nil, 0, worldACL); err != nil {
			t.Fatalf("the next create: %v", err)
		}
	})
}

// NORESPONSE applies a request and withholds its reply: the client waits
// until its connection goes (here closed by CLOSECONNECTION).
func TestFaultHoldResponsesThenCloseConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, events := srv.connect(t, 10*time.Second)
		srv.HoldResponses(1)
		done := make(chan error, 1)
		go func() {
			_, err := c.Create("/held", nil, 0, worldACL)
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("create answered while its reply was held: %v", err)
		default:
		}
		if _, ok := nodeOnServer(srv, "/held"); !ok {
			t.Fatal("the held create was not applied")
		}
		if err := srv.CloseConnection(c.SessionID()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("held create after the close: %v, want %v", err, zk.ErrConnectionClosed)
		}
		waitState(t, events, zk.StateHasSession)
	})
}

// A partition is silent, as a network's is: nothing closes. Shorter than
// the client's read timeout (two thirds of the session timeout), it only
// delays: a request sent into it is answered when it ends, on the same
// connection and session, and the client never sees a disconnect. Longer
// than the session timeout, the client learns of it through its own read
// timeout, not an RST, the server expires the session on its own clock,
// and the client hears of the expiry when the partition ends.
func TestFaultPartitionIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, events := srv.connect(t, 9*time.Second) // a read timeout of 6 s
		id := c.SessionID()
		if _, err := c.Create("/p", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := srv.Partition(id, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get("/p"); err != nil {
			t.Fatalf("get into a 3 s partition: %v, want it answered after it", err)
		}
		if waited := time.Since(start); waited < 3*time.Second || c.SessionID() != id {
			t.Fatalf("answered after %v on session 0x%x, want >= 3s on 0x%x", waited, c.SessionID(), id)
		}
		select {
		case ev := <-events:
			t.Fatalf("the client saw %v during a partition shorter than its read timeout", ev)
		default:
		}

		start = time.Now()
		if err := srv.Partition(id, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		// Over TCP the request fits the socket's buffers and the client's
		// read timeout fires (ErrConnectionClosed); net.Pipe has no
		// buffers, so its write deadline, of the same length, fires first.
		var timeout net.Error
		if _, _, err := c.Get("/p"); !errors.Is(err, zk.ErrConnectionClosed) && !(errors.As(err, &timeout) && timeout.Timeout()) {
			t.Fatalf("get into a 30 s partition: %v, want the client's own timeout", err)
		}
		if waited := time.Since(start); waited < 6*time.Second {
			t.Fatalf("the client gave up after %v, before its 6 s read timeout: the partition was not silent", waited)
		}
		// Past the session's expiry, within the partition: its last request
		// was read at 3 s, and 9 s later rounds up to the next 2 s tick, 14 s,
		// where the Get's 6 s read timeout and 5 s more would end too (at a
		// tie, which of the server's timer and this test runs first is
		// synctest's choice: it failed 5 runs in 40).
		time.Sleep(6 * time.Second)
		if _, ok := nodeOnServer(srv, "/p"); ok {
			t.Fatal("/p outlived its partitioned session")
		}
		waitState(t, events, zk.StateExpired)
		if waited := time.Since(start); waited < 30*time.Second {
			t.Fatalf("the client heard of its expiry after %v, inside the 30 s partition", waited)
		}
	})
}

// A restart keeps the tree and the sessions; REJECTCONNECTIONS keeps
// clients out until RESET.
func TestFaultRestartAndRejectConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, events := srv.connect(t, 10*time.Second)
		id := c.SessionID()
		if _, err := c.Create("/r", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		srv.Restart(time.Second)
		waitState(t, events, zk.StateDisconnected)
		waitState(t, events, zk.StateHasSession)
		if c.SessionID() != id {
			t.Fatalf("session 0x%x after the restart, want 0x%x", c.SessionID(), id)
		}
		if _, ok := nodeOnServer(srv, "/r"); !ok {
			t.Fatal("/r lost in the restart")
		}
		srv.RejectConnections()
		if err := srv.CloseConnection(0); err != nil {
			t.Fatal(err)
		}
		waitState(t, events, zk.StateDisconnected)
		time.Sleep(5 * time.Second)
		if got := srv.Armed(); !got.RejectConnections {
			t.Fatalf("armed: %+v", got)
		}
		if n := len(srv.Conns()); n != 0 {
			t.Fatalf("%d connections while rejecting", n)
		}
		srv.ResetFaults()
		waitState(t, events, zk.StateHasSession)
		if c.SessionID() != id {
			t.Fatalf("session 0x%x after the rejection, want 0x%x", c.SessionID(), id)
		}
	})
}

// Faults aimed at a session the server does not hold say so.
func TestFaultUnknownSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		for name, err := range map[string]error{
			"LoseNextReply":   srv.LoseNextReply(0x1234),
			"DropNextRequest": srv.DropNextRequest(0x1234),
			"Partition":       srv.Partition(0x1234, time.Second),
			"CloseConnection": srv.CloseConnection(0x1234),
		} {
			if !errors.Is(err, wire.ErrNoSession) {
				t.Errorf("%s: %v, want %v", name, err, wire.ErrNoSession)
			}
		}
	})
}

// The session list shows each session's connection, ephemerals and watches.
func TestSessionStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, _ := srv.connect(t, 10*time.Second)
		if _, err := c.Create("/s", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := c.GetW("/s"); err != nil {
			t.Fatal(err)
		}
		states := srv.SessionStates()
		if len(states) != 1 || states[0].ID != c.SessionID() || states[0].Conn == nil {
			t.Fatalf("sessions: %+v", states)
		}
		st := states[0]
		if !slices.Equal(st.Ephemerals, []string{"/s"}) || len(st.Watches) != 1 || st.Watches[0].Path != "/s" {
			t.Fatalf("session: ephemerals %v watches %+v", st.Ephemerals, st.Watches)
		}
	})
}

// faultRecorder keeps the faults a Server tells its observer of, and the
// connections it closes, in order.
type faultRecorder struct {
	wire.NopObserver
	mu  sync.Mutex
	log []string
}

func (r *faultRecorder) FaultInjected(_ time.Time, f wire.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf("%s %s %v %d", f.Verb, wire.SessionHex(f.Session), f.Duration, f.Count))
}

func (r *faultRecorder) ConnClosed(_ time.Time, _ wire.ConnInfo, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "closed: "+reason)
}

func (r *faultRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// Every fault method tells a FaultObserver of the fault, with its
// parameters, before what it causes (the connection it closes); one
// refused for a session that is gone is not told.
func TestFaultsAreObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &faultRecorder{}
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{Observer: rec})
		a, _ := srv.connect(t, 10*time.Second)
		s := wire.SessionHex(a.SessionID())
		srv.AddDelay(5 * time.Millisecond)
		srv.FailRequests(2)
		srv.HoldResponses(-1)
		srv.RejectConnections()
		srv.ResetFaults()
		if err := srv.CloseConnection(a.SessionID()); err != nil {
			t.Fatal(err)
		}
		for !slices.ContainsFunc(rec.lines(), func(l string) bool { return strings.HasPrefix(l, "closed: ") }) {
			time.Sleep(time.Millisecond) // the connection's goroutine reports its close
		}
		if err := srv.LoseNextReply(0x99); !errors.Is(err, wire.ErrNoSession) {
			t.Fatalf("LoseNextReply of no session: %v", err)
		}
		for try := 0; ; try++ { // until it has reconnected
			if _, _, err := a.Exists("/"); err == nil {
				break
			} else if try == 100 {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := srv.Partition(a.SessionID(), 40*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if !srv.ExpireSession(a.SessionID()) {
			t.Fatal("ExpireSession: not live")
		}
		srv.Restart(0)
		a.Close()
		var faults []string
		index := map[string]int{} // a fault's verb, or a close's reason -> its first line
		for i, l := range rec.lines() {
			key := l
			if !strings.HasPrefix(l, "closed: ") {
				faults = append(faults, l)
				key = strings.Fields(l)[0]
			}
			if _, ok := index[key]; !ok {
				index[key] = i
			}
		}
		want := []string{
			"ADDDELAY  5ms 0", "FAILREQUESTS  0s 2", "NORESPONSE  0s -1", "REJECTCONNECTIONS  0s 0", "RESET  0s 0",
			"CLOSECONNECTION " + s + " 0s 0", "PARTITION " + s + " 40ms 0", "EXPIRESESSION " + s + " 0s 0", "RESTART  0s 0",
		}
		if !slices.Equal(faults, want) {
			t.Errorf("faults observed:\n%q\nwant\n%q", faults, want)
		}
		// The cause comes before what it caused.
		const reason = "closed: fault: connection closed by the controller"
		if at, ok := index[reason]; !ok || at < index["CLOSECONNECTION"] {
			t.Errorf("%q is not after CLOSECONNECTION: %q", reason, rec.lines())
		}
	})
}
