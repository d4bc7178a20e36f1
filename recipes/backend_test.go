package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// A backend is a ZooKeeper the recipe table runs against: the simulator
// here, a real server in real_test.go, with the same interface, so the
// same table runs on both.
type backend struct {
	name string
	// faults: the backend injects faults (connection loss with the
	// request or the reply dropped, expiry, crash) at a chosen request.
	faults bool
	// exact: every step is scheduled, so herd figures are exact.
	exact bool
	open  func(t *testing.T, seed uint64) env
	// lossKinds are the connection losses the backend injects at a chosen
	// request; nil: drop-request and drop-reply.
	lossKinds []sim.FaultKind
	// concurrent: a group runs independent subtests at once (see group).
	concurrent bool
}

// An env is one fresh ZooKeeper and the clients of one test.
type env interface {
	// Conn adds a client with its own session.
	Conn(t *testing.T) recipes.Conn
	// Go runs fn as a task of c's process.
	Go(c recipes.Conn, name string, fn func(ctx context.Context))
	// Run runs until every task has ended.
	Run() error
	// Inject injects a fault into c now (from a task or between runs).
	Inject(c recipes.Conn, kind sim.FaultKind, d time.Duration) error
	// Watches counts the watch notifications delivered so far.
	Watches() int
	// Close ends the env.
	Close()
}

// sessionTimeout is the session timeout of test clients: short, so
// expiry tests run quickly in virtual time.
const sessionTimeout = 4 * time.Second

var simBackend = backend{name: "sim", faults: true, exact: true, open: openSim}

type simEnv struct {
	w       *sim.World
	clients map[recipes.Conn]*sim.Client
}

func openSim(t *testing.T, seed uint64) env {
	w := sim.New(sim.Config{Seed: seed, KeepTrace: true, MaxTime: 2 * time.Hour})
	e := &simEnv{w: w, clients: map[recipes.Conn]*sim.Client{}}
	t.Cleanup(e.Close)
	return e
}

func (e *simEnv) Conn(t *testing.T) recipes.Conn {
	c, err := e.w.NewClient(sim.ClientConfig{SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	e.clients[c] = c
	return c
}

// client finds the simulated client under c (a probe wraps one).
func (e *simEnv) client(c recipes.Conn) *sim.Client {
	if p, ok := c.(*probe); ok {
		c = p.base
	}
	return e.clients[c]
}

func (e *simEnv) Go(c recipes.Conn, name string, fn func(ctx context.Context)) {
	var sc *sim.Client
	if c != nil {
		sc = e.client(c)
	}
	e.w.Go(sc, name, fn)
}

func (e *simEnv) Run() error { return e.w.Run() }

func (e *simEnv) Inject(c recipes.Conn, kind sim.FaultKind, d time.Duration) error {
	sc := e.client(c)
	if sc == nil {
		return fmt.Errorf("not a client of this world")
	}
	return e.w.Inject(sim.Fault{Kind: kind, Client: sc.Number(), Duration: d})
}

func (e *simEnv) Watches() int {
	n := 0
	for _, ev := range e.w.Trace() {
		if ev.Kind == "watch" && ev.Op != zk.EventNotWatching.String() {
			n++
		}
	}
	return n
}

func (e *simEnv) Close() { e.w.Close() }

// backends are the backends the table runs on.
var backends = []backend{simBackend, realBackend}

// forEachBackend runs f on every backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// --- helpers used inside tasks ---

// within returns a context that ends after d on c's clock.
func within(c recipes.Conn, d time.Duration) (context.Context, context.CancelFunc) {
	return c.WithTimeout(context.Background(), d)
}

// lockNodes lists the lock nodes left under the directories, reading
// through c: the orphan check.
func lockNodes(ctx context.Context, c recipes.Conn, dirs ...string) ([]string, error) {
	var out []string
	for len(dirs) > 0 {
		dir := dirs[0]
		dirs = dirs[1:]
		for range 32 {
			kids, _, err := c.Children(ctx, dir)
			if errors.Is(err, zk.ErrNoNode) {
				break
			}
			if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) {
				if err := c.Sleep(ctx, time.Second); err != nil {
					return out, err
				}
				continue
			}
			if err != nil {
				return out, err
			}
			for _, k := range kids {
				p := dir + "/" + k
				ok, stat, err := c.Exists(ctx, p)
				if err != nil {
					return out, err
				}
				if ok && stat.NumChildren > 0 {
					dirs = append(dirs, p)
				} else if ok && (isEphemeralOwner(stat.EphemeralOwner) || len(k) > 10 && isDigits(k[len(k)-10:])) {
					out = append(out, p)
				}
			}
			break
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// isEphemeralOwner tells a session from the marker a container carries
// (Long.MIN_VALUE, EphemeralType.CONTAINER_EPHEMERAL_OWNER).
func isEphemeralOwner(owner int64) bool { return owner != 0 && owner != math.MinInt64 }
