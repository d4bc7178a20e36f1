package recipes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TestOldSessionLatch tells the story of a candidate whose client starts
// a new session while its old one still lives on the server. c2 leads;
// c1 and c3 wait behind it, c1 first. c1's connection breaks for longer
// than a connection timeout (a quarter of the session timeout) but less
// than the session timeout: the latch's listener gives the session up
// and starts a new one, and c1's old candidate node lives on until the
// server expires the old session. c2 abdicates meanwhile, so c1's old
// node heads the queue when c1 is back. c1 leads for 8 s, longer than
// its old session has left.
//
// leader-latch compares its node's owner with its session, takes a new
// node, and leads only after the old one has gone and c3 has had its
// turn: one leader at a time. old-session-latch leads on the old node at
// once, for longer than the old session has left; when the old session
// expires the server deletes the node and c3 leads too.
func TestOldSessionLatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) { oldSessionStory(t, b, nil) })
}

// TestOldSessionLatchSlowNewSession is the story on the simulator with
// c1's NewSession returning only after c1's other tasks have run, as on a
// real server, where zkconn closes the old handle on a goroutine of its
// own: the campaign hears its requests and watches fail with
// zk.ErrClosing before the listener is back from NewSession, and must
// still take that for the listener's renewal, not for a closed client.
func TestOldSessionLatchSlowNewSession(t *testing.T) {
	oldSessionStory(t, simBackend, func(c recipes.Conn) recipes.Conn { return slowNewSession{c} })
}

// A slowNewSession sleeps after NewSession before it returns.
type slowNewSession struct{ recipes.Conn }

func (c slowNewSession) NewSession(ctx context.Context) error {
	err := c.Conn.NewSession(ctx)
	c.Conn.Sleep(ctx, 10*time.Millisecond)
	return err
}

// oldSessionStory tells the story on b; wrap, when set, wraps c1.
func oldSessionStory(t *testing.T, b backend, wrap func(recipes.Conn) recipes.Conn) {
	for _, c := range []struct {
		recipe     string
		twoLeaders bool
	}{
		{"leader-latch", false},
		{"old-session-latch", true},
	} {
		t.Run(c.recipe, func(t *testing.T) {
			r, _ := recipes.Lookup(c.recipe)
			e := b.open(t, 3)
			const dir = "/election/old-session"
			c1, c2, c3 := e.Conn(t), e.Conn(t), e.Conn(t)
			var mu sync.Mutex // the leaders' count, and c1's node: tasks are goroutines on a real server
			leaders, most := 0, 0
			var c1Owner, c1Session int64
			begin := c1.Now()
			lead := func(conn recipes.Conn, name string, start, term time.Duration, inspect func(ctx context.Context, l *recipes.Lease)) {
				e.Go(conn, name, func(ctx context.Context) {
					conn.Sleep(ctx, start)
					actx, cancel := within(conn, time.Minute)
					defer cancel()
					rc := conn // the recipe's client
					if conn == c1 && wrap != nil {
						rc = wrap(conn)
					}
					l, err := r.New(rc, dir, recipes.Options{}).Acquire(actx)
					if err != nil {
						t.Errorf("%s: campaign: %v", name, err)
						return
					}
					t.Logf("%s leads from %v in session %#x on %s", name, conn.Now().Sub(begin).Round(time.Millisecond), conn.Session().ID, l.Nodes()[0])
					mu.Lock()
					leaders++
					most = max(most, leaders)
					mu.Unlock()
					if inspect != nil {
						inspect(ctx, l)
					}
					conn.Sleep(ctx, term)
					mu.Lock()
					leaders--
					mu.Unlock()
					l.Release(ctx)
				})
			}
			lead(c2, "c2", 0, 1500*time.Millisecond, nil)
			lead(c1, "c1", 100*time.Millisecond, 8*time.Second, func(ctx context.Context, l *recipes.Lease) {
				_, st, err := c1.Exists(ctx, l.Nodes()[0])
				if err != nil {
					t.Errorf("c1: reading its node: %v", err)
					return
				}
				mu.Lock()
				c1Owner, c1Session = st.EphemeralOwner, c1.Session().ID
				mu.Unlock()
			})
			lead(c3, "c3", 200*time.Millisecond, 3*time.Second, nil)
			e.Go(c1, "fault", func(ctx context.Context) {
				c1.Sleep(ctx, 300*time.Millisecond)
				if err := e.Inject(c1, sim.FaultDisconnect, 2*time.Second); err != nil {
					t.Error(err)
				}
			})
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if got := most > 1; got != c.twoLeaders {
				t.Errorf("at most %d leaders at once; want two leaders %v", most, c.twoLeaders)
			}
			if ours := c1Owner == c1Session; ours == c.twoLeaders {
				t.Errorf("c1 led on a node owned by %#x in session %#x", c1Owner, c1Session)
			}
		})
	}
}

// TestLeaderLatchRequestOnReplacedHandle: a request of c1's campaign is
// made just as c1's connection breaks, and stays queued on the handle
// until the latch's listener gives the session up (NewSession) and the old
// handle's Close fails it with zk.ErrClosing. go-zookeeper does this to a
// request it queued while disconnected (its reconnect loop, told to quit,
// fails the requests it has not sent), and zkconn hears of the disconnect on a goroutine of
// its own, so the recipe can send one after the connection broke. The
// simulated client knows its state at once; a wrapper holds the request
// instead. Whether the request was c1's create or the read of its new
// node's token, the campaign takes the failure for the renewal, goes on
// in the new session and leads there, on a node of its own, alone.
func TestLeaderLatchRequestOnReplacedHandle(t *testing.T) {
	for _, op := range []string{"create", "exists"} {
		t.Run(op, func(t *testing.T) {
			r, _ := recipes.Lookup("leader-latch")
			e := simBackend.open(t, 5)
			const dir = "/election/replaced-handle"
			c1, c2 := e.Conn(t), e.Conn(t)
			held := &heldOnOldHandle{Conn: c1, op: op}
			leaders, most := 0, 0
			e.Go(c2, "c2", func(ctx context.Context) {
				l, err := r.New(c2, dir, recipes.Options{}).Acquire(ctx)
				if err != nil {
					t.Errorf("c2: campaign: %v", err)
					return
				}
				leaders++
				most = max(most, leaders)
				c2.Sleep(ctx, 3*time.Second)
				leaders--
				l.Release(ctx)
			})
			e.Go(c1, "c1", func(ctx context.Context) {
				c1.Sleep(ctx, 100*time.Millisecond)
				actx, cancel := within(c1, time.Minute)
				defer cancel()
				l, err := r.New(held, dir, recipes.Options{}).Acquire(actx)
				if err != nil {
					t.Errorf("c1: campaign: %v", err)
					return
				}
				leaders++
				most = max(most, leaders)
				_, st, err := c1.Exists(ctx, l.Nodes()[0])
				if err != nil {
					t.Errorf("c1: reading its node: %v", err)
				} else if s := c1.Session(); st.EphemeralOwner != s.ID {
					t.Errorf("c1 leads on %s, owned by %#x, in session %#x", l.Nodes()[0], st.EphemeralOwner, s.ID)
				}
				leaders--
				l.Release(ctx)
			})
			e.Go(c1, "fault", func(ctx context.Context) {
				c1.Sleep(ctx, 300*time.Millisecond)
				if err := e.Inject(c1, sim.FaultDisconnect, 2*time.Second); err != nil {
					t.Error(err)
				}
			})
			if err := e.Run(); err != nil {
				t.Fatal(err)
			}
			if !held.failed {
				t.Fatalf("c1's %s was never held on the old handle", op)
			}
			if most != 1 {
				t.Errorf("at most %d leaders at once, want 1", most)
			}
		})
	}
}

// heldOnOldHandle holds the first request of its kind (op: "create" or
// "exists") made while the session is connected until the connection
// breaks and the session is given up for another, then fails it with
// zk.ErrClosing, as go-zookeeper fails a request it queued on a handle
// that is closed.
type heldOnOldHandle struct {
	recipes.Conn
	op     string
	failed bool
}

func (c *heldOnOldHandle) hold(ctx context.Context, op string) error {
	s := c.Session()
	if c.failed || op != c.op || !s.Connected() {
		return nil
	}
	old := s.ID
	for s.ID == old {
		var err error
		if s, err = c.WaitSession(ctx, s); err != nil {
			return err
		}
	}
	c.failed = true
	return zk.ErrClosing
}

func (c *heldOnOldHandle) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := c.hold(ctx, "create"); err != nil {
		return "", err
	}
	return c.Conn.Create(ctx, path, data, flags, acl)
}

func (c *heldOnOldHandle) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	if err := c.hold(ctx, "exists"); err != nil {
		return false, nil, err
	}
	return c.Conn.Exists(ctx, path)
}
