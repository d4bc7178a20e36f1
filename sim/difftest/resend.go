package difftest

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
)

// go-zookeeper v1.0.4 tells its caller that a new connection has its
// session (StateHasSession) before its loop goroutine calls sendSetWatches
// (conn.go:483). That call reads the client's lastZxid (conn.go:614), which
// the receive loop writes without a lock on every reply (conn.go:849): a
// request sent at once after a reconnect races with it, and the race
// detector says so. The read is done only when the client has watches to
// set again, and its setWatches packet goes out after it: a client that
// had watches when it lost its connection is left alone until that packet
// has been written. A setWatchesTap sees it written.
type setWatchesTap struct {
	mu      sync.Mutex
	written int           // setWatches packets written, on every connection
	changed chan struct{} // closed and replaced at every one
}

func newSetWatchesTap() *setWatchesTap {
	return &setWatchesTap{changed: make(chan struct{})}
}

// opSetWatches is ZooKeeper's setWatches opcode (ZooDefs.OpCode).
const opSetWatches = 101

// resendWaitMax bounds the wait for a setWatches packet: past it, the
// client is taken to have had no watches left to set (one whose event
// arrived but was not yet read is no longer the client's).
const resendWaitMax = 2 * time.Second

// dialer wraps next (nil: net.DialTimeout) so that every connection it
// makes reports its setWatches packets to t.
func (t *setWatchesTap) dialer(next zk.Dialer) zk.Dialer {
	if next == nil {
		next = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := next(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return tappedConn{c, t}, nil
	}
}

// count is the number of setWatches packets written so far.
func (t *setWatchesTap) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// await waits until more than before setWatches packets have been
// written, or resendWaitMax has passed.
func (t *setWatchesTap) await(before int) {
	timer := time.NewTimer(resendWaitMax)
	defer timer.Stop()
	for {
		t.mu.Lock()
		written, changed := t.written, t.changed
		t.mu.Unlock()
		if written > before {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		}
	}
}

// tappedConn is a client's connection whose writes t looks at.
// go-zookeeper writes each packet in one Write: its length, xid, opcode,
// then its body (conn.go:751, :781).
type tappedConn struct {
	net.Conn
	t *setWatchesTap
}

func (c tappedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && len(b) >= 12 && binary.BigEndian.Uint32(b[8:12]) == opSetWatches {
		c.t.mu.Lock()
		c.t.written++
		close(c.t.changed)
		c.t.changed = make(chan struct{})
		c.t.mu.Unlock()
	}
	return n, err
}

// dialTapped connects a client through dialer (nil: net.DialTimeout),
// with a setWatchesTap on its connections, and adds both to b.
func (b *RealBackend) dialTapped(addr string, sessionTimeout time.Duration, dialer zk.Dialer) (*zkconn.Conn, error) {
	tap := newSetWatchesTap()
	c, err := zkconn.Dial([]string{addr}, sessionTimeout, zkconn.WithDialer(tap.dialer(dialer)))
	if err != nil {
		return nil, err
	}
	b.Conns = append(b.Conns, c)
	b.taps = append(b.taps, tap)
	return c, nil
}

// setWatchesTap is client i's tap, nil if it has none.
func (b *RealBackend) setWatchesTap(i int) *setWatchesTap {
	if i < len(b.taps) {
		return b.taps[i]
	}
	return nil
}

// A tappedBackend has a setWatchesTap on its clients' connections.
type tappedBackend interface {
	setWatchesTap(i int) *setWatchesTap
}

// setWatchesSent is how many setWatches packets client i has written,
// -1 if its backend cannot tell.
func (r *Run) setWatchesSent(i int) int {
	if tb, ok := r.b.(tappedBackend); ok {
		if tap := tb.setWatchesTap(i); tap != nil {
			return tap.count()
		}
	}
	return -1
}

// awaitWatchesResent leaves client i alone, after a reconnect, until it
// has written a setWatches packet beyond the sent it had written before:
// only if it had a watch that had not fired (a client with none reads
// nothing).
func (r *Run) awaitWatchesResent(i, sent int) {
	if sent < 0 {
		return
	}
	pending := false
	for _, w := range r.watches {
		pending = pending || (w.client == i && !w.fired)
	}
	if pending {
		r.b.(tappedBackend).setWatchesTap(i).await(sent)
	}
}

// handleHasSession tells whether c's own view of its session agrees that
// it has one: go-zookeeper sets its state before it sends the event that
// zkconn's view follows, and fails a request made between its losing a
// connection and its next dial with ErrNoServer (conn.go:376) - a request
// made because the view had not yet heard of the loss.
func handleHasSession(c any) bool {
	if real, ok := c.(*zkconn.Conn); ok {
		return real.ZK().State() == zk.StateHasSession
	}
	return true
}
