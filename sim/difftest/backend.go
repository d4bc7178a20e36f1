package difftest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
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
	return NewSimFrom(cfg, make([]netip.Addr, n), sessionTimeout)
}

// NewSimFrom is NewSim with a client per address, connecting from it (the
// zero Addr: sim.DefaultClientAddr).
func NewSimFrom(cfg sim.Config, addrs []netip.Addr, sessionTimeout time.Duration) (*SimBackend, error) {
	b := &SimBackend{W: sim.New(cfg)}
	for _, addr := range addrs {
		c, err := b.W.NewClient(sim.ClientConfig{SessionTimeout: sessionTimeout, Addr: addr})
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

// Inject injects a fault on client i.
func (b *SimBackend) Inject(i int, fault string) error {
	if fault == FaultPartitionExpire {
		c := b.Conns[i]
		return b.W.Inject(sim.Fault{Kind: sim.FaultPartition, Client: i + 1, Duration: 3 * time.Duration(c.Session().TimeoutMs) * time.Millisecond})
	}
	kinds := map[string]sim.FaultKind{FaultDisconnect: sim.FaultDisconnect, FaultDropReply: sim.FaultDropReply, FaultExpire: sim.FaultExpire}
	kind, ok := kinds[fault]
	if !ok {
		return fmt.Errorf("difftest: unknown fault %q", fault)
	}
	return b.W.Inject(sim.Fault{Kind: kind, Client: i + 1})
}

// RealBackend runs each step on the calling goroutine, one at a time.
type RealBackend struct {
	Addr    string
	Conns   []*zkconn.Conn
	Proxies []*zktest.Proxy  // one per client, when dialed with proxies
	taps    []*setWatchesTap // one per client, when dialed by dialTapped
}

// Bounds of an expiry on a real server.
const (
	// expireTimeout bounds Proxy.Expire (FaultExpire).
	expireTimeout = 10 * time.Second
	// expireBlackholeMax bounds the blackhole of FaultPartitionExpire.
	expireBlackholeMax = time.Minute
	expirePollInterval = 50 * time.Millisecond
)

// Inject injects a fault on client i through its proxy. FaultExpire is
// Proxy.Expire: the server expires the session now, as sim.FaultExpire
// does. FaultPartitionExpire blackholes the client until the server has
// timed the session out (it has no trace of it in the four-letter word
// dump), then heals.
func (b *RealBackend) Inject(i int, fault string) error {
	if i >= len(b.Proxies) {
		return fmt.Errorf("difftest: client %d has no proxy", i+1)
	}
	p := b.Proxies[i]
	switch fault {
	case FaultDisconnect:
		p.CloseConns()
	case FaultDropReply:
		p.DropNextReply()
	case FaultExpire:
		return p.Expire(expireTimeout)
	case FaultPartitionExpire:
		sid := fmt.Sprintf("0x%x", b.Conns[i].Session().ID)
		p.Blackhole(expireBlackholeMax)
		defer p.Heal()
		deadline := time.Now().Add(expireBlackholeMax)
		for {
			dump, err := zktest.FourLetterWord(b.Addr, "dump")
			if err == nil && !strings.Contains(dump, sid) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("difftest: session %s not expired after %v", sid, expireBlackholeMax)
			}
			time.Sleep(expirePollInterval)
		}
	default:
		return fmt.Errorf("difftest: unknown fault %q", fault)
	}
	return nil
}

var _ Backend = (*RealBackend)(nil)

// DialReal connects n clients to addr and waits until each has a session.
// With t, each client connects through its own fault proxy.
func DialReal(t testing.TB, addr string, n int, sessionTimeout time.Duration) (*RealBackend, error) {
	return DialRealFrom(t, addr, make([]netip.Addr, n), sessionTimeout)
}

// DialRealFrom is DialReal with a client per local address, which the
// server sees as the client's (the zero Addr: the system's choice); a
// loopback server can be reached from any 127.x.y.z. Without t only.
func DialRealFrom(t testing.TB, addr string, locals []netip.Addr, sessionTimeout time.Duration) (*RealBackend, error) {
	b := &RealBackend{Addr: addr}
	ctx, cancel := context.WithTimeout(context.Background(), sessionWaitMax)
	defer cancel()
	for _, local := range locals {
		var dialer zk.Dialer
		switch {
		case t != nil:
			p := zktest.NewProxy(t, addr)
			b.Proxies = append(b.Proxies, p)
			dialer = p.Dialer()
		case local.IsValid():
			dialer = localDialer(local)
		}
		c, err := b.dialTapped(addr, sessionTimeout, dialer)
		if err != nil {
			b.Close()
			return nil, err
		}
		if err := c.WaitConnected(ctx); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// Clients is the number of clients.
func (b *RealBackend) Clients() int { return len(b.Conns) }

// Do runs fn on client i, once go-zookeeper has finished starting the
// client's connection (awaitStarted).
func (b *RealBackend) Do(i int, fn func(ctx context.Context, c recipes.Conn)) error {
	if err := b.awaitStarted(i); err != nil {
		return err
	}
	fn(context.Background(), b.Conns[i])
	return nil
}

// Close closes every client (again: Close is idempotent), each once
// go-zookeeper has finished starting its connection: the reply to its
// closeSession is a reply like any other (awaitStarted).
func (b *RealBackend) Close() {
	for i, c := range b.Conns {
		_ = b.awaitStarted(i) // a client that does not start is closed all the same
		c.Close()
	}
}

// localDialer dials from local, so that the server sees that address.
func localDialer(local netip.Addr) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
		return d.Dial(network, address)
	}
}
