package inproc_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/inproc"
	"github.com/zklab/zklab/sim/wire"
)

var acl = zk.WorldACL(zk.PermAll)

// Several clients take go-zookeeper's own lock in turns: never two
// holders, every round done, all on virtual time.
func TestZkLockMutualExclusion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		const clients, rounds = 5, 20
		var mu sync.Mutex
		holders, maxHolders, done := 0, 0, 0
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for i := range clients {
			conn, _ := srv.Connect(t)
			wg.Go(func() {
				lock := zk.NewLock(conn, "/lock", acl)
				for r := range rounds {
					if err := lock.Lock(); err != nil {
						errs <- fmt.Errorf("client %d round %d: Lock: %w", i, r, err)
						return
					}
					mu.Lock()
					holders++
					maxHolders = max(maxHolders, holders)
					mu.Unlock()
					time.Sleep(10 * time.Millisecond) // the critical section, on virtual time
					mu.Lock()
					holders--
					done++
					mu.Unlock()
					if err := lock.Unlock(); err != nil {
						errs <- fmt.Errorf("client %d round %d: Unlock: %w", i, r, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if maxHolders != 1 || done != clients*rounds {
			t.Fatalf("at most %d holders at once (want 1), %d rounds done (want %d)", maxHolders, done, clients*rounds)
		}
		if n := children(t, srv, "/lock"); n != 0 {
			t.Fatalf("%d lock nodes left behind", n)
		}
	})
}

func children(t *testing.T, srv *inproc.Server, path string) int {
	t.Helper()
	var n int
	srv.Inspect(func(s *sim.Server) {
		info, ok := s.Node(path)
		if !ok {
			t.Fatalf("%s is gone", path)
		}
		n = len(info.Children)
	})
	return n
}

// waitState waits on a client's events for a session state, on virtual
// time.
func waitState(t *testing.T, events <-chan zk.Event, want zk.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, within)
		}
	}
}

// A client partitioned for longer than its session timeout finds its
// session expired when the partition heals; its ephemeral node went with
// the session, on the server's own timer.
func TestPartitionExpiresSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{SessionTimeout: 4 * time.Second})
		a, events := srv.Connect(t)
		b, _ := srv.Connect(t)
		if _, err := a.Create("/e", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		sid := a.SessionID()
		srv.Partition(a)
		waitState(t, events, zk.StateDisconnected, 4*time.Second) // the client's read timeout
		time.Sleep(10 * time.Second)
		if ok, _, err := b.Exists("/e"); ok || err != nil {
			t.Fatalf("a's ephemeral after its session timed out: exists=%v err=%v", ok, err)
		}
		srv.Heal(a)
		waitState(t, events, zk.StateExpired, time.Minute)
		waitState(t, events, zk.StateHasSession, time.Minute)
		if a.SessionID() == sid {
			t.Fatalf("the client kept session %#x after it expired", sid)
		}
	})
}

// The server expires a session (a fault): the client's next handshake is
// answered with session id 0, and go-zookeeper reports StateExpired.
func TestServerSideExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, events := srv.Connect(t)
		if !srv.ExpireSessionOf(a) {
			t.Fatal("the session was not live")
		}
		waitState(t, events, zk.StateExpired, time.Minute)
		if _, err := a.Create("/after", nil, 0, acl); err != nil {
			t.Fatalf("the client did not come back with a new session: %v", err)
		}
	})
}

// opRecorder records the ops the server receives.
type opRecorder struct {
	wire.NopObserver
	mu  sync.Mutex
	ops []sim.Request
}

func (r *opRecorder) RequestReceived(_ time.Time, _ sim.ConnID, _ int64, req sim.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, req)
}

// A client that lost its connection, but not its session, reattaches the
// session from a new connection and re-sets its watches with setWatches:
// the change it missed fires at once.
func TestReconnectReattachesSessionAndWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &opRecorder{}
		srv := inproc.Start(t, inproc.Config{Wire: wire.Config{Observer: rec}})
		a, events := srv.Connect(t)
		b, _ := srv.Connect(t)
		if _, err := a.Create("/x", []byte("1"), 0, acl); err != nil {
			t.Fatal(err)
		}
		_, _, watch, err := a.GetW("/x")
		if err != nil {
			t.Fatal(err)
		}
		sid := a.SessionID()
		srv.Partition(a)
		waitState(t, events, zk.StateDisconnected, 10*time.Second)
		if _, err := b.Set("/x", []byte("2"), -1); err != nil {
			t.Fatal(err)
		}
		srv.Heal(a)
		waitState(t, events, zk.StateHasSession, time.Minute)
		if a.SessionID() != sid {
			t.Fatalf("session %#x after reconnect, want %#x reattached", a.SessionID(), sid)
		}
		select {
		case ev := <-watch:
			if ev.Type != zk.EventNodeDataChanged || ev.Path != "/x" {
				t.Fatalf("watch fired %+v", ev)
			}
		case <-time.After(time.Minute):
			t.Fatal("the missed change did not fire the re-set watch")
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var set *sim.Request
		for i := range rec.ops {
			if rec.ops[i].Op == sim.OpSetWatches {
				set = &rec.ops[i]
			}
		}
		// go-zookeeper sends it with an ordinary xid, not the Java
		// client's -8 (conn.go sendSetWatches).
		if set == nil || len(set.DataWatches) != 1 || set.DataWatches[0] != "/x" || set.RelativeZxid == 0 {
			t.Fatalf("setWatches as received: %+v", set)
		}
	})
}

// An hour of virtual time: the client's pings keep its session, and the
// test takes milliseconds.
func TestAnHourOfVirtualTime(t *testing.T) {
	start := time.Now()
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{SessionTimeout: 6 * time.Second})
		a, events := srv.Connect(t)
		sid := a.SessionID()
		time.Sleep(time.Hour)
		if _, err := a.Create("/still-here", nil, zk.FlagEphemeral, acl); err != nil || a.SessionID() != sid {
			t.Fatalf("after an hour: session %#x (was %#x), create: %v", a.SessionID(), sid, err)
		}
		select {
		case ev := <-events:
			t.Fatalf("session event in a quiet hour: %+v", ev)
		default:
		}
		// go-zookeeper pings every third of the timeout it got.
		var pings int64
		for _, c := range srv.Conns() {
			pings += c.Received
		}
		if pings < 3600/2 {
			t.Fatalf("%d packets in an hour, want a ping every 2 s", pings)
		}
	})
	t.Logf("an hour of virtual time took %v", time.Since(start))
}

// CutWhen loses a request with its connection: the caller gets
// ErrConnectionClosed, and the session survives the reconnect.
func TestCutWhen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, events := srv.Connect(t)
		sid := a.SessionID()
		srv.CutWhen(func(r sim.Request) bool { return r.Op == sim.OpGetData && r.Path == "/zookeeper" })
		if _, _, err := a.Get("/zookeeper"); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("get through a cut: %v, want ErrConnectionClosed", err)
		}
		// A request sent before go-zookeeper has its session again may
		// meet its lap of its one server (ErrNoServer, as it failed once
		// in CI): the session survives the reconnect, which is the point.
		waitState(t, events, zk.StateHasSession, time.Minute)
		if _, _, err := a.Get("/zookeeper"); err != nil || a.SessionID() != sid {
			t.Fatalf("after the cut: %v, session %#x (was %#x)", err, a.SessionID(), sid)
		}
	})
}
