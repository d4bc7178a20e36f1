package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
)

// TestMain stops the package's shared ZooKeeper (zktest.Shared) once
// every test has run.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// realBackend runs the table against a real ZooKeeper: the package's
// shared server (zktest.Shared: one started for the package, or the one
// named by ZKLAB_ZK). Each env lives in a namespace of its own (a
// persistent node with a random name, as a client-side chroot), so that
// envs can share the server, and at once. Every client connects through a
// zktest.Proxy of its own, which injects its faults:
//
//   - drop-reply: Proxy.DropNextReply: the next request passes, its reply
//     is dropped and the connection closed (the ambiguous case);
//   - disconnect: the connection closed, and new ones blackholed for the
//     duration;
//   - partition: Proxy.Blackhole for the duration;
//   - pause: a blackhole, and the client's tasks stand still at their next
//     call into the client until the pause ends;
//   - crash: the client's tasks cancelled, its connection blackholed and
//     closed, the client closed without closing its session (which
//     lives until it expires);
//   - expire: Proxy.Expire: the server expires the session now (the
//     proxy attaches to it and sends closeSession) and the client hears
//     of the expiry when it reconnects. Inject returns once the session
//     is gone.
//
// drop-request has no faithful counterpart: go-zookeeper queues a request
// made while disconnected and sends it after the reconnect, so the proxy
// cannot lose a request before the server sees it; the tests that inject
// it at a chosen request run the drop-reply cases only here (lossKinds).
// A server restart is not injected.
var realBackend = backend{
	name:       "real",
	faults:     true,
	open:       openReal,
	lossKinds:  []sim.FaultKind{sim.FaultDropReply},
	concurrent: true,
}

// Bounds of the real backend.
const (
	// realRunMax bounds Run: every test's tasks end well within it.
	realRunMax = 3 * time.Minute
	// realCancelWaitMax bounds the wait for tasks once Run or Close has
	// cancelled them.
	realCancelWaitMax = 30 * time.Second
	// realExpireMax bounds an injected expiry (Proxy.Expire).
	realExpireMax = 10 * time.Second
	// realCleanupMax bounds the deletion of an env's namespace.
	realCleanupMax = 30 * time.Second
	// realDeleteRoundsMax bounds the rounds of that deletion.
	realDeleteRoundsMax = 16
	// realSubtestsMax bounds the subtests a group runs at once on a real
	// server.
	realSubtestsMax = 12
)

type realEnv struct {
	t *testing.T
	// dial connects the env's next client through a proxy of its own,
	// waits for its session and closes it at the end of t.
	dial  func(t *testing.T) (*zkconn.Conn, *zktest.Proxy)
	admin *zkconn.Conn // makes and removes the namespace
	root  string       // the namespace: every path of the env lies under it

	ctx    context.Context // the tasks' context, ended by Close
	cancel context.CancelFunc

	mu      sync.Mutex
	clients map[recipes.Conn]*realClient

	tasks   sync.WaitGroup
	closers sync.WaitGroup // closes of crashed clients
	watches atomic.Int64   // watch notifications delivered to the clients
}

// A realClient is one client of a real env and its proxy.
type realClient struct {
	conn   *zkconn.Conn
	proxy  *zktest.Proxy
	ns     *nsConn
	ctx    context.Context // its tasks' context, ended by a crash
	cancel context.CancelFunc
}

func openReal(t *testing.T, _ uint64) env {
	srv := zktest.Shared(t)
	dial := func(t *testing.T) (*zkconn.Conn, *zktest.Proxy) {
		p := zktest.NewProxy(t, srv.Addr)
		return srv.Dial(t, sessionTimeout, zkconn.WithDialer(p.Dialer())), p
	}
	return newRealEnv(t, srv.Dial(t, sessionTimeout), dial)
}

// newRealEnv makes an env whose namespace admin makes and removes, and
// whose clients dial makes.
func newRealEnv(t *testing.T, admin *zkconn.Conn, dial func(t *testing.T) (*zkconn.Conn, *zktest.Proxy)) *realEnv {
	e := &realEnv{t: t, dial: dial, admin: admin, root: "/zklab-recipes-" + admin.GUID()[:16], clients: map[recipes.Conn]*realClient{}}
	if err := makeNamespace(admin, e.root); err != nil {
		t.Fatalf("making the namespace %s: %v", e.root, err)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	// Registered after admin's Close, so it runs before it; the clients'
	// closes (registered later, by Conn) run before this.
	t.Cleanup(e.Close)
	return e
}

// makeNamespace creates root, trying again while the connection to the
// server is lost: under a full make test the shared server is loaded by
// the other packages' ZooKeepers, and a lost connection while the test is
// only setting up is not what it tests. A create that went through before
// its reply was lost shows as the node existing already.
func makeNamespace(admin *zkconn.Conn, root string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * time.Second)
		}
		_, err = admin.Create(context.Background(), root, nil, 0, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil, attempt > 0 && errors.Is(err, zk.ErrNodeExists):
			return nil
		case !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer):
			return err
		}
	}
	return err
}

// Conn dials a client through a proxy of its own and waits for its
// session. Its close (at the end of t) closes its session.
func (e *realEnv) Conn(t *testing.T) recipes.Conn {
	c, p := e.dial(t)
	ctx, cancel := context.WithCancel(e.ctx)
	rc := &realClient{conn: c, proxy: p, ctx: ctx, cancel: cancel}
	rc.ns = &nsConn{Conn: c, root: e.root, watches: &e.watches}
	e.mu.Lock()
	e.clients[rc.ns] = rc
	e.mu.Unlock()
	return rc.ns
}

// client finds the client under c (a probe wraps one).
func (e *realEnv) client(c recipes.Conn) *realClient {
	if p, ok := c.(*probe); ok {
		c = p.base
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clients[c]
}

// Go runs fn on a goroutine of its own; its context ends when c crashes
// or the env closes.
func (e *realEnv) Go(c recipes.Conn, name string, fn func(ctx context.Context)) {
	ctx := e.ctx
	if c != nil {
		rc := e.client(c)
		if rc == nil {
			e.t.Errorf("task %s: not a client of this env", name)
			return
		}
		ctx = rc.ctx
	}
	e.tasks.Add(1)
	go func() {
		defer e.tasks.Done()
		fn(ctx)
	}()
}

// Run waits until every task has ended, at most realRunMax; then it
// cancels them and reports the overrun.
func (e *realEnv) Run() error {
	if waitFor(&e.tasks, realRunMax) {
		return nil
	}
	e.cancel()
	if !waitFor(&e.tasks, realCancelWaitMax) {
		return fmt.Errorf("tasks still running %v after they were cancelled", realCancelWaitMax)
	}
	return fmt.Errorf("tasks still running after %v: cancelled", realRunMax)
}

// waitFor waits for wg at most d; it reports whether wg is done.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

func (e *realEnv) Inject(c recipes.Conn, kind sim.FaultKind, d time.Duration) error {
	rc := e.client(c)
	if rc == nil {
		return fmt.Errorf("not a client of this env")
	}
	p := rc.proxy
	switch kind {
	case sim.FaultDropReply:
		p.DropNextReply()
	case sim.FaultDisconnect:
		if d > 0 {
			p.Blackhole(d) // first, so that the reconnect meets it
		}
		p.CloseConns()
	case sim.FaultPartition:
		p.Blackhole(d)
	case sim.FaultPause:
		p.Blackhole(d)
		rc.ns.pause(d)
	case sim.FaultCrash:
		rc.cancel()
		p.Blackhole(realRunMax)
		p.CloseConns()
		e.closers.Add(1)
		go func() {
			defer e.closers.Done()
			rc.conn.Close() // its close request dies in the blackhole
		}()
	case sim.FaultExpire:
		return p.Expire(realExpireMax)
	default:
		return fmt.Errorf("%s: not injected on a real server", kind)
	}
	return nil
}

func (e *realEnv) Watches() int { return int(e.watches.Load()) }

// Close cancels what is left of the tasks and removes the namespace. The
// clients close at the end of the test that made them (before this).
func (e *realEnv) Close() {
	e.cancel()
	if !waitFor(&e.tasks, realCancelWaitMax) {
		e.t.Errorf("tasks still running %v after the env closed", realCancelWaitMax)
	}
	waitFor(&e.closers, realCancelWaitMax)
	if err := e.removeNamespace(); err != nil {
		e.t.Logf("removing the namespace %s: %v", e.root, err)
	}
}

// removeNamespace deletes the env's tree, deepest first. Nodes of a
// crashed client's session may still stand: any session may delete them.
func (e *realEnv) removeNamespace() error {
	ctx, cancel := context.WithTimeout(context.Background(), realCleanupMax)
	defer cancel()
	var err error
	for range realDeleteRoundsMax {
		var nodes []string
		if nodes, err = e.tree(ctx, e.root); err != nil {
			continue
		}
		err = nil
		for i := len(nodes) - 1; i >= 0; i-- {
			if derr := e.admin.Delete(ctx, nodes[i], -1); derr != nil && !errors.Is(derr, zk.ErrNoNode) {
				err = derr
			}
		}
		if err == nil {
			return nil
		}
	}
	return err
}

// tree lists root and every node under it, parents first.
func (e *realEnv) tree(ctx context.Context, root string) ([]string, error) {
	nodes := []string{root}
	for i := 0; i < len(nodes); i++ {
		kids, _, err := e.admin.Children(ctx, nodes[i])
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			nodes = append(nodes, path.Join(nodes[i], k))
		}
	}
	return nodes, nil
}

// An nsConn is a client confined to a namespace, as a client-side chroot:
// paths given are put under root, paths returned (created paths, watch
// events) are taken out of it. It counts the watch notifications it
// delivers, and holds its caller while the client is paused.
type nsConn struct {
	*zkconn.Conn
	root    string
	watches *atomic.Int64

	pausedUntil atomic.Int64 // Unix nanoseconds
}

var _ recipes.Conn = (*nsConn)(nil)

func (n *nsConn) in(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p // invalid: the server says so
	}
	if p == "/" {
		return n.root
	}
	return n.root + p
}

func (n *nsConn) out(p string) string {
	if p == n.root {
		return "/"
	}
	return strings.TrimPrefix(p, n.root)
}

// pause holds the caller of every call into the client for d.
func (n *nsConn) pause(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		old := n.pausedUntil.Load()
		if old >= until || n.pausedUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

// gate waits out a pause: a paused process does nothing, not even notice
// that its context ended.
func (n *nsConn) gate() {
	if d := time.Until(time.Unix(0, n.pausedUntil.Load())); d > 0 {
		time.Sleep(d)
	}
}

// watch passes a watch's event on with its path taken out of the
// namespace, and counts it.
func (n *nsConn) watch(in <-chan zk.Event) <-chan zk.Event {
	if in == nil {
		return nil
	}
	out := make(chan zk.Event, 1)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			return
		}
		if ev.Type != zk.EventNotWatching {
			n.watches.Add(1)
		}
		ev.Path = n.out(ev.Path)
		out <- ev
	}()
	return out
}

func (n *nsConn) Create(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	n.gate()
	created, err := n.Conn.Create(ctx, n.in(p), data, flags, acl)
	return n.out(created), err
}

func (n *nsConn) CreateContainer(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	n.gate()
	created, err := n.Conn.CreateContainer(ctx, n.in(p), data, flags, acl)
	return n.out(created), err
}

func (n *nsConn) Delete(ctx context.Context, p string, version int32) error {
	n.gate()
	return n.Conn.Delete(ctx, n.in(p), version)
}

func (n *nsConn) Exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	n.gate()
	return n.Conn.Exists(ctx, n.in(p))
}

func (n *nsConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	n.gate()
	ok, stat, ch, err := n.Conn.ExistsW(ctx, n.in(p))
	return ok, stat, n.watch(ch), err
}

func (n *nsConn) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	n.gate()
	return n.Conn.Get(ctx, n.in(p))
}

func (n *nsConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	n.gate()
	data, stat, ch, err := n.Conn.GetW(ctx, n.in(p))
	return data, stat, n.watch(ch), err
}

func (n *nsConn) Set(ctx context.Context, p string, data []byte, version int32) (*zk.Stat, error) {
	n.gate()
	return n.Conn.Set(ctx, n.in(p), data, version)
}

func (n *nsConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	n.gate()
	return n.Conn.Children(ctx, n.in(p))
}

func (n *nsConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	n.gate()
	kids, stat, ch, err := n.Conn.ChildrenW(ctx, n.in(p))
	return kids, stat, n.watch(ch), err
}

func (n *nsConn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	n.gate()
	moved := make([]any, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			r := *op
			r.Path = n.in(r.Path)
			moved[i] = &r
		case *zk.DeleteRequest:
			r := *op
			r.Path = n.in(r.Path)
			moved[i] = &r
		case *zk.SetDataRequest:
			r := *op
			r.Path = n.in(r.Path)
			moved[i] = &r
		case *zk.CheckVersionRequest:
			r := *op
			r.Path = n.in(r.Path)
			moved[i] = &r
		default:
			moved[i] = op // zk refuses it
		}
	}
	res, err := n.Conn.Multi(ctx, moved...)
	for i := range res {
		if res[i].String != "" {
			res[i].String = n.out(res[i].String)
		}
	}
	return res, err
}

func (n *nsConn) Sync(ctx context.Context, p string) (string, error) {
	n.gate()
	synced, err := n.Conn.Sync(ctx, n.in(p))
	return n.out(synced), err
}

func (n *nsConn) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	ev, err := n.Conn.Wait(ctx, watches...)
	n.gate()
	return ev, err
}

func (n *nsConn) WaitSession(ctx context.Context, seen recipes.Session) (recipes.Session, error) {
	s, err := n.Conn.WaitSession(ctx, seen)
	n.gate()
	return s, err
}

func (n *nsConn) Sleep(ctx context.Context, d time.Duration) error {
	err := n.Conn.Sleep(ctx, d)
	n.gate()
	return err
}

// A group runs subtests: one after another on the simulator (whose
// scheduler wants the CPU); on a real server several at once, since their
// time goes to waiting on the real clock. t.Run may be called from
// several goroutines; wait must return before the parent test does.
type group struct {
	t   *testing.T
	b   backend
	wg  sync.WaitGroup
	sem chan struct{}
}

func newGroup(t *testing.T, b backend) *group {
	return &group{t: t, b: b, sem: make(chan struct{}, realSubtestsMax)}
}

func (g *group) run(name string, f func(t *testing.T)) {
	if !g.b.concurrent {
		g.t.Run(name, f)
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.sem <- struct{}{}
		defer func() { <-g.sem }()
		g.t.Run(name, f)
	}()
}

func (g *group) wait() { g.wg.Wait() }
