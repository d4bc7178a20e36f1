package difftest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
)

// go-zookeeper v1.0.4 tells its caller that a connection has its session
// (StateHasSession, conn.go:706) before its loop goroutine has started the
// connection's send and receive goroutines (conn.go:451, :466) and called
// sendSetWatches (conn.go:484). sendSetWatches reads the client's lastZxid
// (conn.go:614) without a lock if the client has a watch at that moment,
// and the receive loop writes lastZxid at every reply that carries a zxid
// (conn.go:849). Nothing orders that read before the requests the caller
// makes next, and the race detector reports go-zookeeper's own race when
// a reply to one is read unordered with it: any reply, if the client
// carried watches over a reconnect; if it had none, only once a request
// has set a watch and another has had its reply (observe's barrier
// follows every watch) before the loop goroutine got to sendSetWatches,
// which a loaded machine allows. The tests waited for the setWatches
// packet only after an AUTHFAILED reconnect of a client that still had
// watches, and for 20 ms after a first connection: not after the
// AUTHFAILED reconnect of a client whose watches had all fired, nor after
// a first connection once its 20 ms were up (TestDifferentialACLThroughWire
// raced so once in a make test, and once in some 1,300 sequences with two
// busy loops on the cores), nor after a fault's reconnect (the disconnect
// case of TestFaultsThroughWire raced in 2 runs of 5).
//
// So RealBackend.Do starts no step on a client until go-zookeeper has
// finished starting the client's connection: its loop goroutine has
// returned from sendSetWatches and waits in wg.Wait (conn.go:485), and the
// setWatches requests that call started, if any (sendSetWatches.func1,
// conn.go:642), have been written and answered. The client's goroutines
// carry a pprof label from dialTapped, so a goroutine profile tells where
// they are. If sendSetWatches read lastZxid, it built its packets after
// the read, and a setWatchesTap, whose lock is taken at each setWatches
// packet written and again once the wait is over, orders the read before
// every request of the step; if it did not, there is nothing to order.
type setWatchesTap struct {
	label string // the clientLabel value of the client's goroutines

	mu      sync.Mutex
	written int // setWatches packets written, on every connection
	dials   int // connections made
	started int // dials when the client was last seen started
}

// clientLabel is the pprof label on each client's goroutines: the loop
// goroutine zk.Connect starts inherits it, and every goroutine that one
// starts after it.
const clientLabel = "difftest.client"

var tapLabels atomic.Int64

func newSetWatchesTap() *setWatchesTap {
	return &setWatchesTap{label: strconv.FormatInt(tapLabels.Add(1), 10)}
}

// opSetWatches is ZooKeeper's setWatches opcode (ZooDefs.OpCode).
const opSetWatches = 101

// Bounds of the wait for a connection's start.
const (
	// startWaitMax bounds it: a reconnect takes go-zookeeper's
	// one-second backoff and a handshake, as for sessionWaitMax.
	startWaitMax = sessionWaitMax
	// startPollInterval is how often the goroutines are looked at again
	// while the client is not started: it decides how soon the wait sees
	// that it is, not whether it does.
	startPollInterval = 2 * time.Millisecond
)

// dialer wraps next (nil: net.DialTimeout) so that every connection it
// makes is counted, and reports its setWatches packets to t.
func (t *setWatchesTap) dialer(next zk.Dialer) zk.Dialer {
	if next == nil {
		next = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := next(network, address, timeout)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.dials++
		t.mu.Unlock()
		return tappedConn{c, t}, nil
	}
}

// count is the number of setWatches packets written so far.
func (t *setWatchesTap) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
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
		c.t.mu.Unlock()
	}
	return n, err
}

// dialTapped connects a client through dialer (nil: net.DialTimeout),
// with a setWatchesTap on its connections and its label on its
// goroutines, and adds both to b.
func (b *RealBackend) dialTapped(addr string, sessionTimeout time.Duration, dialer zk.Dialer) (*zkconn.Conn, error) {
	tap := newSetWatchesTap()
	var c *zkconn.Conn
	var err error
	pprof.Do(context.Background(), pprof.Labels(clientLabel, tap.label), func(context.Context) {
		c, err = zkconn.Dial([]string{addr}, sessionTimeout, zkconn.WithDialer(tap.dialer(dialer)))
	})
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

// awaitStarted waits until client i has a session and go-zookeeper has
// finished starting its connection (see setWatchesTap), or has closed it
// for good. A client still reconnecting is waited for: a request made in
// the meantime would go out on the new connection as soon as it opens.
func (b *RealBackend) awaitStarted(i int) error {
	tap := b.setWatchesTap(i)
	if tap == nil {
		return nil
	}
	h := b.Conns[i].ZK()
	deadline := time.Now().Add(startWaitMax)
	for {
		tap.mu.Lock()
		dials, known := tap.dials, tap.dials == tap.started
		tap.mu.Unlock()
		if known && h.State() == zk.StateHasSession {
			return nil
		}
		var profile bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&profile, 1); err != nil {
			return fmt.Errorf("difftest: goroutine profile: %w", err)
		}
		looping, started := loopStarted(profile.String(), tap.label)
		if !looping {
			return nil // closed: zkconn.Close waits for the loop goroutine's end
		}
		tap.mu.Lock()
		same := tap.dials == dials
		if same && started && h.State() == zk.StateHasSession {
			// Taking the lock ordered the setWatches packets written
			// since, if any, before this.
			tap.started = dials
			tap.mu.Unlock()
			return nil
		}
		tap.mu.Unlock()
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: client %d's go-zookeeper did not finish starting a connection in %v", i+1, startWaitMax)
		}
		time.Sleep(startPollInterval)
	}
}

// The go-zookeeper functions loopStarted looks for.
const (
	zkLoop          = "github.com/go-zookeeper/zk.(*Conn).loop"
	zkSetWatchesReq = "github.com/go-zookeeper/zk.(*Conn).sendSetWatches.func1"
	waitGroupWait   = "sync.(*WaitGroup).Wait"
)

// loopStarted reads a goroutine profile (debug=1: one record per stack,
// with its labels) for the goroutines labelled label. looping: one of them
// runs zk.(*Conn).loop. started: that one waits in wg.Wait under loop, its
// connection's sendSetWatches done, and no setWatches request it started
// is still waiting to be written or answered.
func loopStarted(profile, label string) (looping, started bool) {
	want := strconv.Quote(clientLabel) + ":" + strconv.Quote(label)
	parked, requesting := false, false
	for _, record := range strings.Split(profile, "\n\n") {
		var funcs []string
		labelled := false
		for _, line := range strings.Split(record, "\n") {
			if labels, ok := strings.CutPrefix(line, "# labels: "); ok {
				labelled = strings.Contains(labels, want)
				continue
			}
			// A frame: "#\t0x4a1b2c\tpkg.func+0x4c\tfile.go:12".
			fields := strings.Split(line, "\t")
			if len(fields) >= 3 && fields[0] == "#" {
				name, _, _ := strings.Cut(fields[2], "+0x")
				funcs = append(funcs, name)
			}
		}
		if !labelled {
			continue
		}
		for j, f := range funcs {
			switch f {
			case zkLoop:
				looping = true
				parked = parked || j > 0 && funcs[j-1] == waitGroupWait
			case zkSetWatchesReq:
				requesting = true
			}
		}
	}
	return looping, parked && !requesting
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
