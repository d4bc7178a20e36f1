package wire_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/inproc"
	"github.com/zklab/zklab/sim/wire"
)

// exists asks another client, so the answer is the server's.
func existsOn(t *testing.T, c *zk.Conn, path string) bool {
	t.Helper()
	ok, _, err := c.Exists(path)
	if err != nil {
		t.Fatalf("exists %s: %v", path, err)
	}
	return ok
}

// A lost reply: the create took effect, the client saw connection loss.
func TestKeyedFaultLoseReplyAppliesTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, _ := srv.Connect(t)
		b, _ := srv.Connect(t)
		if err := srv.AddKeyedFault(wire.KeyedFault{Session: a.SessionID(), Op: sim.OpCreate, Request: 1, Action: wire.FaultLoseReply}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Create("/x", nil, 0, worldACL); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("create with its reply lost: %v, want ErrConnectionClosed", err)
		}
		if !existsOn(t, b, "/x") {
			t.Fatal("the create whose reply was lost was not applied")
		}
		fired := srv.KeyedFaultsFired()
		if len(fired) != 1 || fired[0].On != a.SessionID() || fired[0].Number != 1 || fired[0].Request.Path != "/x" {
			t.Fatalf("fired: %+v", fired)
		}
	})
}

// A dropped request never takes effect.
func TestKeyedFaultDropRequestDoesNotApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, _ := srv.Connect(t)
		b, _ := srv.Connect(t)
		srv.AddKeyedFault(wire.KeyedFault{Session: a.SessionID(), Request: 0, Action: wire.FaultDropRequest})
		if _, err := a.Create("/x", nil, 0, worldACL); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("dropped create: %v, want ErrConnectionClosed", err)
		}
		if existsOn(t, b, "/x") {
			t.Fatal("a dropped create was applied")
		}
		if _, err := a.Create("/x", nil, 0, worldACL); err != nil {
			t.Fatalf("the session did not survive the dropped request: %v", err)
		}
	})
}

// A request is matched by its number among its session's requests of
// one type: the second getData, not the first, and not another session's.
func TestKeyedFaultCountsRequestsPerSessionAndType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, _ := srv.Connect(t)
		b, _ := srv.Connect(t)
		srv.AddKeyedFault(wire.KeyedFault{Session: a.SessionID(), Op: sim.OpGetData, Request: 2, Action: wire.FaultDropRequest})
		for range 3 {
			if _, _, err := b.Get("/zookeeper"); err != nil {
				t.Fatalf("another session's getData: %v", err)
			}
		}
		if _, err := a.Create("/x", nil, 0, worldACL); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get("/x"); err != nil {
			t.Fatalf("getData #1: %v", err)
		}
		if _, _, err := a.Get("/x"); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("getData #2: %v, want ErrConnectionClosed", err)
		}
		if got := srv.RequestCount(a.SessionID(), sim.OpGetData); got != 2 {
			t.Fatalf("a's getData count %d, want 2", got)
		}
		if n := len(srv.KeyedFaultsArmed()); n != 0 {
			t.Fatalf("%d faults still armed", n)
		}
	})
}

// A disconnect after the reply: the client has its answer, then
// reconnects with its session.
func TestKeyedFaultDisconnectAfterReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, events := srv.Connect(t)
		sid := a.SessionID()
		srv.AddKeyedFault(wire.KeyedFault{Session: sid, Op: sim.OpCreate, Request: 1, Action: wire.FaultDisconnect})
		if _, err := a.Create("/x", nil, 0, worldACL); err != nil {
			t.Fatalf("create before the disconnect: %v", err)
		}
		waitStateWithin(t, events, zk.StateDisconnected, time.Minute)
		waitStateWithin(t, events, zk.StateHasSession, time.Minute)
		if a.SessionID() != sid {
			t.Fatalf("session %#x after the disconnect, want %#x", a.SessionID(), sid)
		}
	})
}

// An expiry while the client waits on a watch: the ephemeral is gone at
// once, and the waiting watch ends with the expiry.
func TestKeyedFaultExpireWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, _ := srv.Connect(t)
		b, _ := srv.Connect(t)
		if _, err := a.Create("/e", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		srv.AddKeyedFault(wire.KeyedFault{Session: a.SessionID(), Op: sim.OpExists, Action: wire.FaultExpire})
		_, _, watch, err := a.ExistsW("/other")
		if err != nil {
			t.Fatalf("exists before the expiry: %v", err)
		}
		if existsOn(t, b, "/e") {
			t.Fatal("an expired session's ephemeral is still there")
		}
		select {
		case ev := <-watch:
			if !errors.Is(ev.Err, zk.ErrSessionExpired) {
				t.Fatalf("the waiting watch got %+v, want the expiry", ev)
			}
		case <-time.After(time.Minute):
			t.Fatal("the waiting watch never learned of the expiry")
		}
	})
}

// A partition longer than the session timeout: the client hears nothing,
// the server expires the session on its own timer.
func TestKeyedFaultPartitionExpiresTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{SessionTimeout: 4 * time.Second})
		a, events := srv.Connect(t)
		b, _ := srv.Connect(t)
		if _, err := a.Create("/e", nil, zk.FlagEphemeral, worldACL); err != nil {
			t.Fatal(err)
		}
		sid := a.SessionID()
		srv.AddKeyedFault(wire.KeyedFault{Session: sid, Action: wire.FaultPartition, Duration: 20 * time.Second})
		if _, _, err := a.Get("/e"); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("get into a partition: %v, want ErrConnectionClosed after the read timeout", err)
		}
		time.Sleep(10 * time.Second)
		if existsOn(t, b, "/e") {
			t.Fatal("the partitioned session's ephemeral outlived its timeout")
		}
		waitStateWithin(t, events, zk.StateExpired, time.Minute)
		waitStateWithin(t, events, zk.StateHasSession, time.Minute)
		if a.SessionID() == sid {
			t.Fatal("the client kept its expired session")
		}
	})
}

// A partition shorter than the client's read timeout loses nothing but
// time: the request that set it off is held, then answered, on the same
// session.
func TestKeyedFaultShortPartitionKeepsTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{SessionTimeout: 9 * time.Second})
		a, _ := srv.Connect(t)
		sid := a.SessionID()
		srv.AddKeyedFault(wire.KeyedFault{Session: sid, Op: sim.OpCreate, Action: wire.FaultPartition, Duration: 2 * time.Second})
		start := time.Now()
		if _, err := a.Create("/x", nil, 0, worldACL); err != nil || a.SessionID() != sid {
			t.Fatalf("create into a partition: %v, session %#x (was %#x)", err, a.SessionID(), sid)
		}
		if waited := time.Since(start); waited < 2*time.Second {
			t.Fatalf("create answered after %v, inside its 2 s partition", waited)
		}
	})
}

func TestAddKeyedFaultRefusesFaultsThatCannotAct(t *testing.T) {
	srv := wire.New(sim.NewServer(sim.ServerConfig{}), wire.Config{})
	defer srv.Close()
	for _, f := range []wire.KeyedFault{{}, {Action: wire.FaultLoseReply, Request: -1}, {Action: wire.FaultPartition}} {
		if err := srv.AddKeyedFault(f); err == nil {
			t.Errorf("AddKeyedFault(%+v) accepted", f)
		}
	}
	for _, a := range wire.FaultActions {
		if got, err := wire.ParseFaultAction(a.String()); err != nil || got != a {
			t.Errorf("ParseFaultAction(%q) = %v, %v", a, got, err)
		}
	}
}

// waitStateWithin waits on a client's events for a session state.
func waitStateWithin(t *testing.T, events <-chan zk.Event, want zk.State, within time.Duration) {
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
