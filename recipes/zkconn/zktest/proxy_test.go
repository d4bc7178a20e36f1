package zktest_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var acl = zk.WorldACL(zk.PermAll)

// waitFor waits, at most 20 s, for the session to satisfy ok.
func waitFor(t *testing.T, c *zkconn.Conn, what string, ok func(recipes.Session) bool) recipes.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.WaitUntil(ctx, ok)
	if err != nil {
		t.Fatalf("waiting for %s: %v (session %+v)", what, err, s)
	}
	return s
}

func TestFourLetterWords(t *testing.T) {
	srv := zktest.Shared(t)
	if err := zktest.Ruok(srv.Addr); err != nil {
		t.Fatal(err)
	}
	out, err := zktest.FourLetterWord(srv.Addr, "mntr")
	if err != nil || len(out) == 0 {
		t.Fatalf("mntr = %q, %v", out, err)
	}
}

func TestProxyCloseConns(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	ctx := context.Background()
	root := "/proxy-close-" + c.GUID()
	if _, err := c.Create(ctx, root, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := c.GetW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Session()
	p.CloseConns()
	waitFor(t, c, "a disconnect", func(s recipes.Session) bool { return !s.Connected() })
	after := waitFor(t, c, "the reconnect", recipes.Session.Connected)
	if after.ID != before.ID {
		t.Fatalf("session changed across a dropped connection: %#x then %#x", before.ID, after.ID)
	}
	if p.Accepted() < 2 {
		t.Fatalf("proxy accepted %d connections, want a reconnect", p.Accepted())
	}
	// The watch was re-registered (setWatches) and still fires.
	if _, err := c.Set(ctx, root, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ev, err := c.Wait(wctx, watch); err != nil || ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("watch after reconnect = %+v, %v", ev, err)
	}
}

func TestProxyDropNextReply(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	ctx := context.Background()
	root := "/proxy-drop-" + c.GUID()
	p.DropNextReply()
	_, err := c.Create(ctx, root, nil, 0, acl)
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create with its reply dropped = %v, want ErrConnectionClosed", err)
	}
	waitFor(t, c, "the reconnect", recipes.Session.Connected)
	if ok, _, err := c.Exists(ctx, root); err != nil || !ok {
		t.Fatalf("the create was applied: exists = %v, %v", ok, err)
	}
	// Disarmed: the next request is answered.
	if _, err := c.Create(ctx, root+"/x", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
}

func TestProxyDelayAndShortBlackhole(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	ctx := context.Background()
	const delay = 100 * time.Millisecond
	p.Delay(delay)
	start := time.Now()
	if _, _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*delay {
		t.Fatalf("a round trip with %v each way took %v", delay, d)
	}
	p.Heal()

	// A blackhole shorter than the read timeout delays a call; the session
	// and the connection survive it.
	before := c.Session()
	const hole = 500 * time.Millisecond
	p.Blackhole(hole)
	start = time.Now()
	if _, _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < hole*8/10 {
		t.Fatalf("a call during a %v blackhole took %v", hole, d)
	}
	if after := c.Session(); after.Generation != before.Generation {
		t.Fatalf("the session changed: %+v then %+v", before, after)
	}
}

func TestProxyDropNextRequest(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	ctx := context.Background()
	root := "/proxy-drop-request-" + c.GUID()
	before := c.Session()
	p.DropNextRequest()
	_, err := c.Create(ctx, root, nil, 0, acl)
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create with its request dropped = %v, want ErrConnectionClosed", err)
	}
	after := waitFor(t, c, "the reconnect", recipes.Session.Connected)
	if after.ID != before.ID {
		t.Fatalf("session changed across a dropped request: %#x then %#x", before.ID, after.ID)
	}
	if ok, _, err := c.Exists(ctx, root); err != nil || ok {
		t.Fatalf("the server never saw the create: exists = %v, %v", ok, err)
	}
	// Disarmed: the next request is answered.
	if _, err := c.Create(ctx, root, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
}

// waitRefused waits, at most 20 s, until the proxy has refused n
// connections.
func waitRefused(t *testing.T, p *zktest.Proxy, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for p.Refused() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy refused %d connections, want %d", p.Refused(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProxyRefuse(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	before := c.Session()

	// Until Heal: the client tries, is refused, and stays without a
	// connection; after Heal it has its session back.
	p.Refuse(time.Minute)
	waitFor(t, c, "a disconnect", func(s recipes.Session) bool { return !s.Connected() })
	waitRefused(t, p, 1)
	if s := c.Session(); s.Connected() {
		t.Fatalf("connected while refused: %+v", s)
	}
	p.Heal()
	after := waitFor(t, c, "the reconnect after Heal", recipes.Session.Connected)
	if after.ID != before.ID {
		t.Fatalf("session changed across a refusal: %#x then %#x", before.ID, after.ID)
	}

	// For a while: the refusal ends by itself.
	const refusal = 300 * time.Millisecond
	start := time.Now()
	p.Refuse(refusal)
	waitFor(t, c, "a disconnect", func(s recipes.Session) bool { return !s.Connected() })
	waitFor(t, c, "the reconnect after the refusal", recipes.Session.Connected)
	if d := time.Since(start); d < refusal {
		t.Fatalf("reconnected %v into a %v refusal", d, refusal)
	}
	if s := c.Session(); s.ID != before.ID {
		t.Fatalf("session changed across a refusal: %#x then %#x", before.ID, s.ID)
	}
}

// TestProxyKill: a killed client's session lives on without it and
// expires on the server after its timeout, taking its ephemeral node
// (Programmer's Guide, "Ephemeral Nodes"). Heal does not revive it.
func TestProxyKill(t *testing.T) {
	t.Parallel()
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	const sessionTimeout = 4 * time.Second // the server's minimum: 2 ticks of 2 s
	c := srv.Dial(t, sessionTimeout, zkconn.WithDialer(p.Dialer()))
	other := srv.Dial(t, 10*time.Second)
	ctx := context.Background()
	node := "/proxy-kill-" + c.GUID()
	if _, err := c.Create(ctx, node, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	ok, _, gone, err := other.ExistsW(ctx, node)
	if err != nil || !ok {
		t.Fatalf("exists = %v, %v", ok, err)
	}
	start := time.Now()
	p.Kill()
	p.Heal() // no effect on a kill
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ev, err := other.Wait(wctx, gone)
	if err != nil || ev.Type != zk.EventNodeDeleted {
		t.Fatalf("the killed client's ephemeral node: %+v, %v", ev, err)
	}
	if d := time.Since(start); d < sessionTimeout*8/10 {
		t.Fatalf("the session expired %v after the kill, before its timeout of %v", d, sessionTimeout)
	}
	if ok, _, err := other.Exists(ctx, node); err != nil || ok {
		t.Fatalf("exists after the expiry = %v, %v", ok, err)
	}
	waitRefused(t, p, 1) // the client tried to reconnect, and could not
	if s := c.Session(); s.Connected() {
		t.Fatalf("a killed client has a session: %+v", s)
	}
}

func TestProxySession(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	if _, _, ok := p.Session(); ok {
		t.Fatal("a session before any connection")
	}
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	id, passwd, ok := p.Session()
	if !ok || id != c.Session().ID || len(passwd) != 16 {
		t.Fatalf("captured session %#x %x %v, client's %#x", id, passwd, ok, c.Session().ID)
	}
	// The same session after a reconnect.
	p.CloseConns()
	waitFor(t, c, "a disconnect", func(s recipes.Session) bool { return !s.Connected() })
	waitFor(t, c, "the reconnect", recipes.Session.Connected)
	if id2, passwd2, ok := p.Session(); !ok || id2 != id || string(passwd2) != string(passwd) {
		t.Fatalf("after a reconnect: %#x %x %v, want %#x %x", id2, passwd2, ok, id, passwd)
	}
}

// TestProxyExpire: Proxy.Expire is the simulator's FaultExpire on a real
// server. The other clients see the ephemeral node go at once; the client
// sees its connection drop, then "session expired" when it reconnects
// (StateExpired), then a new session; its own watches end with
// EventNotWatching, not with the deletion of its node.
func TestProxyExpire(t *testing.T) {
	srv := zktest.Shared(t)
	p := zktest.NewProxy(t, srv.Addr)
	if err := p.Expire(5 * time.Second); err == nil {
		t.Fatal("Expire without a session succeeded")
	}
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	other := srv.Dial(t, 10*time.Second)
	ctx := context.Background()
	node := "/proxy-expire-" + c.GUID()
	if _, err := c.Create(ctx, node, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	_, _, own, err := c.GetW(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	_, _, gone, err := other.ExistsW(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Session()
	if err := p.Expire(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The deletion is done when Expire returns.
	if ok, _, err := other.Exists(ctx, node); err != nil || ok {
		t.Fatalf("exists after Expire = %v, %v", ok, err)
	}
	if ev, err := other.Wait(wctx, gone); err != nil || ev.Type != zk.EventNodeDeleted {
		t.Fatalf("the other client's watch = %+v, %v", ev, err)
	}
	// The client: expired (zkconn clears the id only on StateExpired),
	// then a new session.
	waitFor(t, c, "the expiry", func(s recipes.Session) bool { return s.ID == 0 })
	after := waitFor(t, c, "a new session", recipes.Session.Connected)
	if after.ID == before.ID {
		t.Fatalf("the client kept session %#x", before.ID)
	}
	if ev, err := c.Wait(wctx, own); err != nil || ev.Type != zk.EventNotWatching || !errors.Is(ev.Err, zk.ErrSessionExpired) {
		t.Fatalf("the client's own watch = %+v, %v; want EventNotWatching with ErrSessionExpired", ev, err)
	}
	if err := p.Expire(5 * time.Second); err != nil {
		t.Fatalf("expiring the new session: %v", err)
	}
}

// TestProxyTargets: StartProxy, for the CLI, takes any HOST:PORT, since
// the user's server may be remote; NewProxy, for tests, keeps them on
// loopback as Shared and ZKLAB_ZK do.
func TestProxyTargets(t *testing.T) {
	p, err := zktest.StartProxy("192.0.2.1:2181") // TEST-NET-1: never dialed here
	if err != nil {
		t.Fatalf("StartProxy to a remote target: %v", err)
	}
	p.Close()
	if _, err := zktest.StartProxy("no port"); err == nil {
		t.Fatal("StartProxy took a target without a port")
	}

	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		zktest.NewProxy(ft, "192.0.2.1:2181")
	}()
	if !ft.failed {
		t.Fatal("a test proxy to a non-loopback address was allowed")
	}
}

type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Fatalf(string, ...any) { f.failed = true; panic("fatal") }
func (f *fatalRecorder) Helper()               {}
