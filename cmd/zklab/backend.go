package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

// A backend runs clients and their tasks: on the simulator, or on a real
// ZooKeeper named by --zk. The workloads of the CLI are written once over
// it, as the recipes are over recipes.Conn.
type backend interface {
	// NewClient connects a new client with its own session.
	NewClient(sessionTimeout time.Duration) (recipes.Conn, error)
	// Go runs fn as a task of client c.
	Go(c recipes.Conn, name string, fn func(ctx context.Context))
	// Run waits until every task has ended.
	Run() error
	// Close disconnects every client.
	Close()
	// Name says where the run happens, for the output.
	Name() string
	// Root is the path under which a run may create its nodes.
	Root() string
}

// newBackend returns the simulator, or a real ZooKeeper when zkServers is
// set; an unreachable server is bad input.
func newBackend(zkServers string, seed uint64) (backend, error) {
	if zkServers == "" {
		return &simBackend{w: sim.New(sim.Config{Seed: seed})}, nil
	}
	servers, err := zkList(zkServers)
	if err != nil {
		return nil, err
	}
	b := &zkBackend{servers: servers, root: fmt.Sprintf("/zklab-%d", time.Now().UnixNano())}
	// Reach the server once before anything else, so that a wrong address
	// is reported as such, at once.
	c, err := b.NewClient(4 * time.Second)
	if err != nil {
		return nil, usagef("--zk %s: cannot reach ZooKeeper: %v", zkServers, err)
	}
	b.admin = c.(*zkconn.Conn)
	return b, nil
}

// zkList parses --zk: HOST:PORT, comma-separated.
func zkList(s string) ([]string, error) {
	servers := splitList(s)
	if len(servers) == 0 {
		return nil, usagef("--zk: no HOST:PORT in %s", scenarios.Cut(s))
	}
	for _, srv := range servers {
		if _, _, err := net.SplitHostPort(srv); err != nil {
			return nil, usagef("--zk: %s is not HOST:PORT", scenarios.Cut(srv))
		}
	}
	return servers, nil
}

// progressLine tells a person at a terminal what a long run is doing.
func progressLine(w io.Writer, line string) {
	if isTerminal(w) {
		fmt.Fprintln(w, line)
	}
}

type simBackend struct{ w *sim.World }

func (b *simBackend) NewClient(timeout time.Duration) (recipes.Conn, error) {
	return b.w.NewClient(sim.ClientConfig{SessionTimeout: timeout})
}

func (b *simBackend) Go(c recipes.Conn, name string, fn func(ctx context.Context)) {
	b.w.Go(c.(*sim.Client), name, fn)
}

func (b *simBackend) Run() error   { return b.w.Run() }
func (b *simBackend) Close()       { b.w.Close() }
func (b *simBackend) Name() string { return "simulator" }
func (b *simBackend) Root() string { return "" }

// zkBackend runs each task in a goroutine against a real ZooKeeper.
type zkBackend struct {
	servers []string
	root    string
	admin   *zkconn.Conn
	mu      sync.Mutex
	conns   []*zkconn.Conn
	wg      sync.WaitGroup
}

// connectWait bounds how long a client may take to get its session.
const connectWait = 10 * time.Second

func (b *zkBackend) NewClient(timeout time.Duration) (recipes.Conn, error) {
	c, err := zkconn.Dial(b.servers, timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectWait)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("no session after %v: %w", connectWait, err)
	}
	b.mu.Lock()
	b.conns = append(b.conns, c)
	b.mu.Unlock()
	return c, nil
}

func (b *zkBackend) Go(c recipes.Conn, name string, fn func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(context.Background())
	}()
}

// runLimit bounds a whole run on a real server.
const runLimit = 10 * time.Minute

func (b *zkBackend) Run() error {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(runLimit):
		return fmt.Errorf("the run on %s did not end within %v", strings.Join(b.servers, ","), runLimit)
	}
}

func (b *zkBackend) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		zkconn.DeleteTree(ctx, b.admin, b.root)
		cancel()
	}
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
}

func (b *zkBackend) Name() string { return "ZooKeeper at " + strings.Join(b.servers, ",") }
func (b *zkBackend) Root() string { return b.root }
