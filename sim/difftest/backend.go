package difftest

import (
	"context"
	"fmt"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/sim"
)

// SimBackend runs each step as a task of its client's process in a
// simulated world, and runs the world until the step is done: the clients
// move in lockstep.
type SimBackend struct {
	W     *sim.World
	Conns []*sim.Client
}

var _ Backend = (*SimBackend)(nil)

// NewSim makes a world with n clients and waits until each has a session.
func NewSim(cfg sim.Config, n int, sessionTimeout time.Duration) (*SimBackend, error) {
	b := &SimBackend{W: sim.New(cfg)}
	for range n {
		c, err := b.W.NewClient(sim.ClientConfig{SessionTimeout: sessionTimeout})
		if err != nil {
			return nil, err
		}
		b.Conns = append(b.Conns, c)
	}
	for i, c := range b.Conns {
		b.W.Go(c, fmt.Sprintf("c%d connect", i+1), func(ctx context.Context) {
			s := c.Session()
			for !s.Connected() {
				var err error
				if s, err = c.WaitSession(ctx, s); err != nil {
					return
				}
			}
		})
	}
	if err := b.W.Run(); err != nil {
		return nil, err
	}
	return b, nil
}

// Clients is the number of clients.
func (b *SimBackend) Clients() int { return len(b.Conns) }

// Do runs fn as a task of client i and runs the world until it is done.
func (b *SimBackend) Do(i int, fn func(ctx context.Context, c recipes.Conn)) error {
	c := b.Conns[i]
	b.W.Go(c, fmt.Sprintf("c%d step", i+1), func(ctx context.Context) { fn(ctx, c) })
	return b.W.Run()
}

// RealBackend runs each step on the calling goroutine, one at a time.
type RealBackend struct {
	Conns []*zkconn.Conn
}

var _ Backend = (*RealBackend)(nil)

// DialReal connects n clients to addr and waits until each has a session.
func DialReal(addr string, n int, sessionTimeout time.Duration, opts ...zkconn.Option) (*RealBackend, error) {
	b := &RealBackend{}
	ctx, cancel := context.WithTimeout(context.Background(), sessionWaitMax)
	defer cancel()
	for range n {
		c, err := zkconn.Dial([]string{addr}, sessionTimeout, opts...)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Conns = append(b.Conns, c)
		if err := c.WaitConnected(ctx); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// Clients is the number of clients.
func (b *RealBackend) Clients() int { return len(b.Conns) }

// Do runs fn on client i.
func (b *RealBackend) Do(i int, fn func(ctx context.Context, c recipes.Conn)) error {
	fn(context.Background(), b.Conns[i])
	return nil
}

// Close closes every client (again: Close is idempotent).
func (b *RealBackend) Close() {
	for _, c := range b.Conns {
		c.Close()
	}
}
