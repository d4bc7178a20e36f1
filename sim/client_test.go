package sim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var acl = zk.WorldACL(zk.PermAll)

// newWorld returns a world with n clients of the given session timeout.
func newWorld(t *testing.T, seed uint64, n int, timeout time.Duration) (*World, []*Client) {
	t.Helper()
	w := New(Config{Seed: seed, KeepTrace: true, CheckEveryStep: true})
	var cs []*Client
	for range n {
		c, err := w.NewClient(ClientConfig{SessionTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	t.Cleanup(w.Close)
	return w, cs
}

// existsWatch sets an exists watch on path from a task, and returns its
// channel; nil, with the error reported, when the call fails.
func existsWatch(ctx context.Context, t *testing.T, c *Client, path string) <-chan zk.Event {
	t.Helper()
	_, _, ch, err := c.ExistsW(ctx, path)
	if err != nil {
		t.Error(err)
		return nil
	}
	return ch
}

func run(t *testing.T, w *World) {
	t.Helper()
	if err := w.Run(); err != nil {
		t.Fatalf("run: %v\ntrace:\n%s", err, tail(w.TraceText(), 60))
	}
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// A request whose reply is lost was applied all the same: the caller sees
// zk.ErrConnectionClosed, and after the reconnect (same session) the node
// is there. go-zookeeper flushes requests in flight with ErrConnectionClosed
// (conn.go flushRequests).
func TestDroppedReplyIsAppliedButReportedClosed(t *testing.T) {
	w, cs := newWorld(t, 1, 1, 10*time.Second)
	c := cs[0]
	var createErr error
	var exists bool
	var before, after int64
	w.Go(c, "worker", func(ctx context.Context) {
		if _, err := c.Create(ctx, "/warmup", nil, 0, acl); err != nil {
			t.Errorf("warmup: %v", err)
		}
		before = c.SessionID()
		if err := w.Inject(Fault{Kind: FaultDropReply, Client: 1}); err != nil {
			t.Error(err)
		}
		_, createErr = c.Create(ctx, "/lock", nil, zk.FlagEphemeral, acl)
		exists, _, _ = c.Exists(ctx, "/lock")
		after = c.SessionID()
	})
	run(t, w)
	if createErr != zk.ErrConnectionClosed {
		t.Fatalf("create after a dropped reply: got %v, want zk.ErrConnectionClosed", createErr)
	}
	if !exists {
		t.Fatal("the create whose reply was dropped was not applied")
	}
	if before != after {
		t.Fatalf("session changed across a short disconnect: %#x -> %#x", before, after)
	}
}

// A request dropped before the server saw it is not applied.
func TestDroppedRequestIsNotApplied(t *testing.T) {
	w, cs := newWorld(t, 2, 1, 10*time.Second)
	c := cs[0]
	var createErr error
	exists := true
	w.Go(c, "worker", func(ctx context.Context) {
		if err := w.Inject(Fault{Kind: FaultDropRequest, Client: 1}); err != nil {
			t.Error(err)
		}
		_, createErr = c.Create(ctx, "/lock", nil, 0, acl)
		exists, _, _ = c.Exists(ctx, "/lock")
	})
	run(t, w)
	if createErr != zk.ErrConnectionClosed || exists {
		t.Fatalf("got err=%v exists=%v, want zk.ErrConnectionClosed and no node", createErr, exists)
	}
}

// Watches survive a reconnect within the session timeout: the client
// re-registers them with setWatches, and a change made while it was away
// fires at once (Programmer's Guide, "ZooKeeper Watches": watches are
// re-registered on reconnect).
func TestWatchSurvivesReconnect(t *testing.T) {
	w, cs := newWorld(t, 3, 2, 10*time.Second)
	a, b := cs[0], cs[1]
	var ev zk.Event
	var waitErr error
	w.Go(a, "watcher", func(ctx context.Context) {
		if _, err := a.Create(ctx, "/n", []byte("1"), 0, acl); err != nil {
			t.Error(err)
			return
		}
		_, _, ch, err := a.GetW(ctx, "/n")
		if err != nil {
			t.Error(err)
			return
		}
		if err := w.Inject(Fault{Kind: FaultDisconnect, Client: 1, Duration: 3 * time.Second}); err != nil {
			t.Error(err)
		}
		ev, waitErr = a.Wait(ctx, ch)
	})
	w.Go(b, "writer", func(ctx context.Context) {
		// Wait until a is disconnected, then change the node.
		for a.State() != zk.StateConnecting {
			if err := b.Sleep(ctx, 100*time.Millisecond); err != nil {
				t.Error(err)
				return
			}
		}
		if _, err := b.Set(ctx, "/n", []byte("2"), -1); err != nil {
			t.Error(err)
		}
	})
	run(t, w)
	if waitErr != nil || ev.Type != zk.EventNodeDataChanged || ev.Path != "/n" {
		t.Fatalf("got %+v, %v; want NodeDataChanged /n", ev, waitErr)
	}
}

// The blind spot of re-registration: an exist watch misses a node that was
// created and deleted while the client was disconnected (Programmer's
// Guide: "a watch for the existence of a znode not yet created will be
// missed if the znode is created and deleted while disconnected").
func TestExistWatchBlindSpot(t *testing.T) {
	w, cs := newWorld(t, 4, 2, 10*time.Second)
	a, b := cs[0], cs[1]
	fired := false
	w.Go(a, "watcher", func(ctx context.Context) {
		ch := existsWatch(ctx, t, a, "/ghost")
		if ch == nil {
			return
		}
		if err := w.Inject(Fault{Kind: FaultDisconnect, Client: 1, Duration: 3 * time.Second}); err != nil {
			t.Error(err)
		}
		wctx, cancel := a.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := a.Wait(wctx, ch)
		fired = err == nil
	})
	w.Go(b, "flicker", func(ctx context.Context) {
		for a.State() != zk.StateConnecting {
			b.Sleep(ctx, 100*time.Millisecond)
		}
		b.Create(ctx, "/ghost", nil, 0, acl)
		b.Delete(ctx, "/ghost", -1)
	})
	run(t, w)
	if fired {
		t.Fatal("the exist watch fired although the node came and went while the client was away")
	}
}

// After expiry every watch gets EventNotWatching with ErrSessionExpired,
// the session's ephemerals are gone, and the client goes on with a new
// session (go-zookeeper conn.go: authenticate sees session id 0,
// invalidateWatches, then a new connect loop).
func TestExpiryInvalidatesWatchesAndStartsNewSession(t *testing.T) {
	w, cs := newWorld(t, 5, 1, 4*time.Second)
	c := cs[0]
	var ev zk.Event
	var first, second int64
	var ephemeralGone bool
	var states []zk.State
	w.Go(c, "worker", func(ctx context.Context) {
		if _, err := c.Create(ctx, "/e", nil, zk.FlagEphemeral, acl); err != nil {
			t.Error(err)
			return
		}
		first = c.SessionID()
		ch := existsWatch(ctx, t, c, "/e")
		if ch == nil {
			return
		}
		// A partition longer than the session timeout.
		w.Inject(Fault{Kind: FaultPartition, Client: 1, Duration: 12 * time.Second})
		ev, _ = c.Wait(ctx, ch)
		seen := c.Session()
		for !c.Session().Connected() || c.SessionID() == first {
			s, err := c.WaitSession(ctx, seen)
			if err != nil {
				t.Error(err)
				return
			}
			states = append(states, s.State)
			seen = s
		}
		second = c.SessionID()
		ok, _, err := c.Exists(ctx, "/e")
		ephemeralGone = err == nil && !ok
	})
	run(t, w)
	if ev.Type != zk.EventNotWatching || !errors.Is(ev.Err, zk.ErrSessionExpired) {
		t.Fatalf("watch got %+v, want EventNotWatching with ErrSessionExpired", ev)
	}
	if second == 0 || second == first {
		t.Fatalf("session after expiry %#x, before %#x: want a new one", second, first)
	}
	if !ephemeralGone {
		t.Fatal("the expired session's ephemeral survived")
	}
}

// Requests queued while disconnected fail with zk.ErrNoServer at the next
// reconnection round (go-zookeeper conn.go connect: flushUnsentRequests on
// retryStart).
func TestQueuedRequestsFailWithNoServer(t *testing.T) {
	w, cs := newWorld(t, 6, 1, 10*time.Second)
	c := cs[0]
	var err error
	w.Go(c, "worker", func(ctx context.Context) {
		c.Create(ctx, "/x", nil, 0, acl)
		w.Inject(Fault{Kind: FaultPartition, Client: 1, Duration: 30 * time.Second})
		// Wait for the client to notice, then call while it is away.
		for c.State() == zk.StateHasSession {
			c.Sleep(ctx, time.Second)
		}
		_, err = c.Create(ctx, "/y", nil, 0, acl)
	})
	run(t, w)
	if err != zk.ErrNoServer {
		t.Fatalf("a request queued while disconnected: got %v, want zk.ErrNoServer", err)
	}
}

// A pause longer than the session timeout: the server expires the session
// while the client's code and heartbeats stand still; when it resumes, the
// client learns of the expiry only on reconnecting, and goes on with a new
// session.
func TestPauseLongerThanTimeoutExpiresSession(t *testing.T) {
	w, cs := newWorld(t, 7, 2, 4*time.Second)
	a, b := cs[0], cs[1]
	var aliveForB bool
	var before, after int64
	w.Go(a, "holder", func(ctx context.Context) {
		a.Create(ctx, "/lock", nil, zk.FlagEphemeral, acl)
		before = a.SessionID()
		w.Inject(Fault{Kind: FaultPause, Client: 1, Duration: 20 * time.Second})
		// This runs only after the pause.
		seen := a.Session()
		for a.SessionID() == before || !a.Session().Connected() {
			s, err := a.WaitSession(ctx, seen)
			if err != nil {
				t.Error(err)
				return
			}
			seen = s
		}
		after = a.SessionID()
	})
	w.Go(b, "observer", func(ctx context.Context) {
		b.Sleep(ctx, 15*time.Second)
		aliveForB, _, _ = b.Exists(ctx, "/lock")
	})
	run(t, w)
	if aliveForB {
		t.Fatal("the paused holder's ephemeral outlived its session")
	}
	if !strings.Contains(w.TraceText(), "c1 session state=StateExpired") {
		t.Fatalf("the paused client never saw StateExpired\n%s", tail(w.TraceText(), 40))
	}
	if after == before || after == 0 {
		t.Fatalf("session %#x before the pause, %#x after", before, after)
	}
}

// A crashed client's tasks end, and its session expires after the
// timeout, taking its ephemerals.
func TestCrashLeavesSessionToExpire(t *testing.T) {
	w, cs := newWorld(t, 8, 2, 4*time.Second)
	a, b := cs[0], cs[1]
	reachedAfterCrash := false
	var existsAt1s, existsAt10s bool
	w.Go(a, "victim", func(ctx context.Context) {
		a.Create(ctx, "/lock", nil, zk.FlagEphemeral, acl)
		w.Inject(Fault{Kind: FaultCrash, Client: 1})
		a.Sleep(ctx, time.Second) // the process is dead: this never returns
		reachedAfterCrash = true
	})
	w.Go(b, "observer", func(ctx context.Context) {
		b.Sleep(ctx, time.Second)
		existsAt1s, _, _ = b.Exists(ctx, "/lock")
		b.Sleep(ctx, 9*time.Second)
		existsAt10s, _, _ = b.Exists(ctx, "/lock")
	})
	run(t, w)
	if reachedAfterCrash {
		t.Fatal("a crashed client's task went on running")
	}
	if !existsAt1s || existsAt10s {
		t.Fatalf("ephemeral of the crashed client: at 1s %v (want true), at 10s %v (want false)", existsAt1s, existsAt10s)
	}
}

// A server restart keeps data and sessions; clients reconnect with the same
// session and their ephemerals survive.
func TestServerRestartKeepsSessions(t *testing.T) {
	w, cs := newWorld(t, 9, 1, 10*time.Second)
	c := cs[0]
	var before, after int64
	var exists bool
	w.Go(c, "worker", func(ctx context.Context) {
		c.Create(ctx, "/e", nil, zk.FlagEphemeral, acl)
		before = c.SessionID()
		w.Inject(Fault{Kind: FaultRestart, Duration: 2 * time.Second})
		for c.State() == zk.StateHasSession {
			c.Sleep(ctx, 100*time.Millisecond)
		}
		for c.State() != zk.StateHasSession {
			c.Sleep(ctx, 100*time.Millisecond)
		}
		after = c.SessionID()
		exists, _, _ = c.Exists(ctx, "/e")
	})
	run(t, w)
	if before != after || !exists {
		t.Fatalf("after a restart: session %#x -> %#x, ephemeral exists %v", before, after, exists)
	}
}

// Close deletes the session's ephemerals at once; calls after it fail with
// zk.ErrConnectionClosed and watches end with ErrClosing, as go-zookeeper's
// do.
func TestCloseEndsSession(t *testing.T) {
	w, cs := newWorld(t, 10, 2, 10*time.Second)
	a, b := cs[0], cs[1]
	var ev zk.Event
	var afterErr error
	var gone bool
	w.Go(a, "closer", func(ctx context.Context) {
		a.Create(ctx, "/e", nil, zk.FlagEphemeral, acl)
		_, _, ch, _ := a.ExistsW(ctx, "/other")
		a.Close()
		ev, _ = a.Wait(context.Background(), ch)
		_, afterErr = a.Create(ctx, "/z", nil, 0, acl)
	})
	w.Go(b, "observer", func(ctx context.Context) {
		b.Sleep(ctx, 100*time.Millisecond)
		ok, _, _ := b.Exists(ctx, "/e")
		gone = !ok
	})
	run(t, w)
	if afterErr != zk.ErrConnectionClosed {
		t.Fatalf("call after Close: %v, want zk.ErrConnectionClosed", afterErr)
	}
	if ev.Type != zk.EventNotWatching || ev.Err != zk.ErrClosing {
		t.Fatalf("watch after Close: %+v", ev)
	}
	if !gone {
		t.Fatal("Close left the session's ephemeral behind")
	}
}

// Virtual deadlines: a wait with a timeout ends at the virtual deadline,
// and a wall-clock deadline is refused.
func TestVirtualDeadlines(t *testing.T) {
	w, cs := newWorld(t, 11, 1, 10*time.Second)
	c := cs[0]
	var waitErr, wallErr error
	var waited time.Duration
	w.Go(c, "waiter", func(ctx context.Context) {
		_, _, ch, _ := c.ExistsW(ctx, "/never")
		start := w.Now()
		tctx, cancel := c.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, waitErr = c.Wait(tctx, ch)
		waited = w.Now() - start
		real, cancel2 := context.WithTimeout(ctx, time.Hour)
		defer cancel2()
		_, wallErr = c.Create(real, "/x", nil, 0, acl)
	})
	run(t, w)
	if waitErr != context.DeadlineExceeded || waited != 5*time.Second {
		t.Fatalf("wait: %v after %v, want DeadlineExceeded after 5s", waitErr, waited)
	}
	if wallErr != errWallClockDeadline {
		t.Fatalf("wall-clock deadline: %v", wallErr)
	}
}

// Bad input gets go-zookeeper's errors, never a panic.
func TestBadInput(t *testing.T) {
	w, cs := newWorld(t, 12, 1, 10*time.Second)
	c := cs[0]
	if _, err := w.NewClient(ClientConfig{SessionTimeout: 0}); err == nil {
		t.Error("a zero session timeout was accepted")
	}
	if _, err := w.NewClient(ClientConfig{SessionTimeout: -time.Second}); err == nil {
		t.Error("a negative session timeout was accepted")
	}
	if err := w.Inject(Fault{Kind: FaultCrash, Client: 7}); err == nil {
		t.Error("a fault on a missing client was accepted")
	}
	w.Go(c, "worker", func(ctx context.Context) {
		if _, err := c.Create(ctx, "a/b", nil, 0, acl); err != zk.ErrInvalidPath {
			t.Errorf("relative path: %v", err)
		}
		if _, err := c.Create(ctx, "/a", nil, 99, acl); err == nil || err.Error() != "invalid flag value: [99]" {
			t.Errorf("bad flags: %v", err)
		}
		if _, err := c.Create(ctx, "/big", make([]byte, 1048527), 0, acl); err != zk.ErrConnectionClosed {
			t.Errorf("oversized data: %v", err)
		}
		if _, err := c.Create(ctx, "/big", make([]byte, 2<<20), 0, acl); err != zk.ErrShortBuffer {
			t.Errorf("data over the client buffer: %v", err)
		}
		if _, err := c.Create(ctx, "/ok", make([]byte, 1048526-2), 0, acl); err != nil {
			t.Errorf("largest data: %v", err)
		}
		if _, err := c.Create(ctx, "/\U0001D11E", nil, 0, acl); err != zk.ErrBadArguments {
			t.Errorf("non-BMP name: %v", err)
		}
	})
	run(t, w)
}

// RunFor stops virtual time exactly at its end, though the next timer (a
// ping) is later.
func TestRunForStopsOnTime(t *testing.T) {
	w, _ := newWorld(t, 13, 1, 10*time.Second)
	if err := w.RunFor(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if w.Now() != 1500*time.Millisecond {
		t.Fatalf("after RunFor(1.5s) the time is %v", w.Now())
	}
	if err := w.RunFor(time.Hour); err != nil {
		t.Fatal(err)
	}
	if w.Now() != time.Hour+1500*time.Millisecond {
		t.Fatalf("after another hour the time is %v", w.Now())
	}
}

// Restarts that overlap keep the server down until the last one ends, and
// every client finds it again; an expiry asked of a server that is down
// does nothing.
func TestOverlappingRestarts(t *testing.T) {
	w, cs := newWorld(t, 14, 2, 10*time.Second)
	a, b := cs[0], cs[1]
	var downAt, upAt time.Duration
	var sessionBefore, sessionAfter int64
	w.Go(a, "a", func(ctx context.Context) {
		a.Create(ctx, "/e", nil, zk.FlagEphemeral, acl)
		sessionBefore = a.SessionID()
		w.Inject(Fault{Kind: FaultRestart, Duration: 5 * time.Second})
		downAt = w.Now()
		a.Sleep(ctx, 2*time.Second)
		w.Inject(Fault{Kind: FaultRestart, Duration: 5 * time.Second}) // up at 7s, not 5s
		w.Inject(Fault{Kind: FaultExpire, Client: 1})                  // the server is down
		for {
			if ok, _, err := a.Exists(ctx, "/e"); err == nil {
				if !ok {
					t.Error("the ephemeral of a live session is gone")
				}
				break
			}
			a.Sleep(ctx, 100*time.Millisecond)
		}
		upAt = w.Now()
		sessionAfter = a.SessionID()
	})
	w.Go(b, "b", func(ctx context.Context) {
		b.Sleep(ctx, 12*time.Second)
		if _, err := b.Create(ctx, "/after", nil, 0, acl); err != nil {
			t.Errorf("b after the restarts: %v", err)
		}
	})
	run(t, w)
	if upAt-downAt < 7*time.Second {
		t.Errorf("the server answered %v after going down, before the second restart ended", upAt-downAt)
	}
	if sessionBefore != sessionAfter {
		t.Errorf("session %#x before the restarts, %#x after", sessionBefore, sessionAfter)
	}
}

// A request on its way when a partition cuts the connection stays on the
// wire as it was sent, however the client reuses its own record after the
// call failed: when the partition heals, the old connection delivers the
// request, the server applies it (the caller saw ErrConnectionClosed: an
// ambiguous outcome), and then learns the client closed that connection.
// This once panicked ("server received unknown op op(0)"): the message
// pointed into the call's record, which the failed call had already
// cleared for reuse.
func TestRequestOnTheWireOutlivesItsFailedCall(t *testing.T) {
	w, cs := newWorld(t, 8, 1, 10*time.Second)
	c := cs[0]
	var errA error
	var aExists bool
	var probes int
	w.Go(c, "worker", func(ctx context.Context) {
		if _, err := c.Create(ctx, "/warm", nil, 0, acl); err != nil {
			t.Errorf("create /warm: %v", err)
			return
		}
		w.Inject(Fault{Kind: FaultPartition, Client: 1, Duration: 10 * time.Second})
		_, errA = c.Create(ctx, "/a", nil, 0, acl)
		// The record of the failed call is reused by the calls that
		// follow, while the request to create /a is still on the wire.
		for {
			probes++
			ok, _, err := c.Exists(ctx, "/a")
			if err == nil {
				aExists = ok
				return
			}
			c.Sleep(ctx, 500*time.Millisecond)
		}
	})
	run(t, w)
	if errA != zk.ErrConnectionClosed {
		t.Errorf("create /a cut off by the partition: got %v, want zk.ErrConnectionClosed", errA)
	}
	if !aExists {
		t.Errorf("after the partition healed /a does not exist: the request on the wire was not applied")
	}
	if probes < 2 {
		t.Errorf("exists /a answered at once (%d probes): the partition did not hold the request back", probes)
	}
}

// A call whose client crashes with the request on its way never returns:
// the history keeps it pending, with no outcome, not as a success.
func TestCrashLeavesCallPending(t *testing.T) {
	w := New(Config{Seed: 3, KeepTrace: true, KeepHistory: true, CheckEveryStep: true})
	t.Cleanup(w.Close)
	var cs []*Client
	for range 2 {
		c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	a, b := cs[0], cs[1]
	w.Go(a, "victim", func(ctx context.Context) {
		a.Exists(ctx, "/")
		// Cut off, its create waits on the wire until the crash.
		w.Inject(Fault{Kind: FaultPartition, Client: 1, Duration: 5 * time.Second})
		a.Create(ctx, "/n", nil, 0, acl)
	})
	w.Go(b, "killer", func(ctx context.Context) {
		b.Sleep(ctx, time.Second)
		w.Inject(Fault{Kind: FaultCrash, Client: 1})
		b.Exists(ctx, "/n")
	})
	run(t, w)
	var pending, returned []string
	for _, o := range w.History() {
		name := fmt.Sprintf("c%d %s %s", o.Client, o.Op, o.Path)
		if o.Pending() {
			pending = append(pending, name)
			if o.Err != nil || o.OutPath != "" || o.ReturnStep != 0 {
				t.Errorf("%s never returned, yet has an outcome: err %v, path %q, return step %d", name, o.Err, o.OutPath, o.ReturnStep)
			}
			continue
		}
		returned = append(returned, name)
	}
	if want := []string{"c1 create /n"}; !slices.Equal(pending, want) {
		t.Errorf("pending calls %q, want %q", pending, want)
	}
	if want := []string{"c1 exists /", "c2 exists /n"}; !slices.Equal(returned, want) {
		t.Errorf("returned calls %q, want %q", returned, want)
	}
}

// A task that sleeps or waits through another client's calls returns when
// that client crashes, at the moment it crashes: the crash is what makes
// those calls return, and the scheduler must look again.
func TestCallsThroughACrashedClientReturnAtTheCrash(t *testing.T) {
	w, cs := newWorld(t, 8, 2, 4*time.Second)
	a, b := cs[0], cs[1]
	var sleptErr, waitedErr error
	var sleptAt, waitedAt time.Duration
	w.Go(b, "sleeps through a", func(ctx context.Context) {
		sleptErr = a.Sleep(ctx, time.Hour)
		sleptAt = w.Now()
	})
	w.Go(b, "waits through a", func(ctx context.Context) {
		watch := existsWatch(ctx, t, a, "/never")
		if watch == nil {
			return
		}
		_, waitedErr = a.Wait(ctx, watch)
		waitedAt = w.Now()
	})
	w.Go(b, "crashes a", func(ctx context.Context) {
		b.Sleep(ctx, 2*time.Second)
		w.Inject(Fault{Kind: FaultCrash, Client: 1})
	})
	run(t, w)
	if sleptAt != 2*time.Second || sleptErr == nil {
		t.Errorf("Sleep through the crashed client returned %v at %v; want an error at 2s", sleptErr, sleptAt)
	}
	if waitedAt != 2*time.Second || waitedErr == nil {
		t.Errorf("Wait through the crashed client returned %v at %v; want an error at 2s", waitedErr, waitedAt)
	}
}

// A world that closes gives its clients' request records back to the pool
// (releasePendings), the record of a client's Close included, and leaves
// each client with none: a call after the world's Close makes its own.
func TestClosedWorldGivesRecordsBack(t *testing.T) {
	w, c := runCreate(t, "/a", func(c *Client) { c.Close() })
	if c.closeRecord == nil {
		t.Fatalf("the client's Close kept no record")
	}
	w.Close()
	if len(c.free)+len(c.inflight)+len(c.unsent) != 0 || c.closeRecord != nil || w.sparePendings != nil {
		t.Fatalf("records left after the world closed: %d free, %d in flight, %d unsent, close %p, store %p", len(c.free), len(c.inflight), len(c.unsent), c.closeRecord, w.sparePendings)
	}
	if p := c.newPending(); !reflect.ValueOf(*p).IsZero() {
		t.Fatalf("a record after Close is not zero: %+v", p)
	}
}

// A world that closes leaves the unused rest of its block of Stats, and
// of its server's block of child names, to the next world
// (releaseBlockTails, takeBlockTails): a Stat or a list of names handed
// out before stays as it was while the next world fills the rest.
func TestClosedWorldLeavesBlockTails(t *testing.T) {
	run := func(calls int) (*World, []*zk.Stat, [][]string) {
		w := New(Config{Seed: 1})
		c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var stats []*zk.Stat
		var lists [][]string
		w.Go(c, "calls", func(ctx context.Context) {
			for i := range calls {
				st, err := c.Set(ctx, "/", []byte(fmt.Sprint(i)), -1)
				if err != nil {
					t.Error(err)
					return
				}
				names, _, err := c.Children(ctx, "/")
				if err != nil {
					t.Error(err)
					return
				}
				stats, lists = append(stats, st), append(lists, names)
			}
		})
		if err := w.Run(); err != nil {
			t.Fatal(err)
		}
		return w, stats, lists
	}
	w, stats, lists := run(3)
	want := make([]zk.Stat, len(stats))
	for i, st := range stats {
		want[i] = *st
	}
	w.Close()
	if w.stats != nil || w.server.names != nil {
		t.Fatalf("the closed world keeps the rest of its blocks")
	}
	run(100)
	for i, st := range stats {
		if *st != want[i] {
			t.Fatalf("Stat %d changed to %+v, want %+v", i, *st, want[i])
		}
		if strings.Join(lists[i], ",") != "zookeeper" {
			t.Fatalf("list %d changed to %v", i, lists[i])
		}
	}
}
