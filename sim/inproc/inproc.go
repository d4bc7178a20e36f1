package inproc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// Config configures a Server. The zero value is a default standalone
// ZooKeeper (tickTime 2 s, session timeouts 4 s to 40 s) and clients that
// ask for 10 s sessions.
type Config struct {
	// Server configures the simulated server.
	Server sim.ServerConfig
	// Wire configures the protocol server (frame limit, observer, ...).
	Wire wire.Config
	// SessionTimeout is what Connect's clients ask for; 0 means 10 s.
	SessionTimeout time.Duration
	// Logger receives go-zookeeper's log lines; nil discards them.
	Logger zk.Logger
}

// Server is a simulated ZooKeeper server that go-zookeeper clients reach
// over in-memory connections (net.Pipe). It embeds the wire.Server, whose
// Stats, Conns, Inspect and ExpireSession are at hand.
type Server struct {
	*wire.Server
	cfg Config

	mu      sync.Mutex
	closed  bool
	clients map[*zk.Conn]*client
	cuts    []func(sim.Request) bool // one-shot rules: cut the link that carries a matching request
	wg      sync.WaitGroup           // the relays' goroutines
}

// client is one zk.Conn's side of the network.
type client struct {
	partitioned bool
	links       map[*link]struct{}
}

// Start gives the test a server, closed when the test ends. Call it inside
// the synctest bubble (synctest.Test) so that the server's clock and
// timers are virtual; outside one it runs on wall-clock time.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	s := &Server{
		Server:  wire.New(sim.NewServer(cfg.Server), cfg.Wire),
		cfg:     cfg,
		clients: make(map[*zk.Conn]*client),
	}
	t.Cleanup(s.Close)
	return s
}

// Close closes every link and the server, and waits for all their
// goroutines. Clients still open see their connection fail and retry in
// vain; close them first (Connect's cleanup does) so that their goroutines
// end too.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.clients {
		for l := range c.links {
			l.close()
		}
	}
	s.mu.Unlock()
	s.Server.Close()
	s.wg.Wait()
}

// quiet discards go-zookeeper's log lines.
var quiet = zk.Logger(log.New(io.Discard, "", 0))

// Connect gives the test an unmodified go-zookeeper client with a session
// on the server, and its event channel; the client is closed when the test
// ends. opts (zk.WithEventCallback, zk.WithMaxBufferSize, ...) go to
// zk.Connect after the dialer and logger it sets.
func (s *Server) Connect(t testing.TB, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	cl := &client{links: make(map[*link]struct{})}
	logger := s.cfg.Logger
	if logger == nil {
		logger = quiet
	}
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) { return s.dial(cl) }
	all := connOptions(opts, zk.WithDialer(dialer), zk.WithLogger(logger))
	// The address is never dialled; an IP literal spares a DNS lookup.
	conn, events, err := zk.Connect([]string{"127.0.0.1:2181"}, s.cfg.SessionTimeout, all...)
	if err != nil {
		t.Fatalf("inproc: zk.Connect: %v", err)
	}
	s.mu.Lock()
	s.clients[conn] = cl
	s.mu.Unlock()
	t.Cleanup(conn.Close)
	for ev := range events {
		if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
			settle()
			return conn, events
		}
	}
	t.Fatalf("inproc: the client closed before it had a session")
	return nil, nil
}

// connOptions returns first then extra as a slice of zk's unexported
// option type, which zk.Connect's variadic parameter needs.
func connOptions[O ~func(*zk.Conn)](extra []func(*zk.Conn), first ...O) []O {
	for _, f := range extra {
		first = append(first, O(f))
	}
	return first
}

// settleWallClock is how long Connect waits, outside a synctest bubble,
// for go-zookeeper to settle after the handshake.
const settleWallClock = 10 * time.Millisecond

// settle lets go-zookeeper's connection loop get past the handshake before
// the caller sends anything. zk.Conn reports StateHasSession before its
// loop goroutine calls sendSetWatches, which reads the watches and
// lastZxid that the receive loop writes without a lock: a watch set in
// that window is a data race inside go-zookeeper (the race detector flags
// it with a fast server) and a needless setWatches. Inside a bubble
// synctest.Wait returns once the loop is blocked; outside one (synctest.Wait
// panics there) a short wall-clock wait does it.
func settle() {
	defer func() {
		if recover() != nil {
			time.Sleep(settleWallClock)
		}
	}()
	synctest.Wait()
}

// ErrPartitioned is what a partitioned client's dial fails with.
var ErrPartitioned = errors.New("inproc: partitioned from the server")

func (s *Server) dial(cl *client) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, wire.ErrServerClosed
	}
	if cl.partitioned {
		return nil, ErrPartitioned
	}
	zkEnd, up := net.Pipe()
	down, serverEnd := net.Pipe()
	if err := s.ServeConn(serverEnd); err != nil {
		zkEnd.Close()
		up.Close()
		down.Close()
		return nil, err
	}
	l := &link{s: s, client: cl, up: up, down: down}
	cl.links[l] = struct{}{}
	s.wg.Add(2)
	go l.relayRequests()
	go l.relayReplies()
	return &tcpLikeConn{Conn: zkEnd}, nil
}

// tcpLikeConn is the client's end of a link. Over TCP a client's write
// after the server closed the connection goes into the socket buffer and
// succeeds; the client learns of the close from its reader. Over net.Pipe
// the write fails at once, and go-zookeeper v1.0.4 then sends that
// request's error twice on a channel with room for one (a ping's: sendData
// fails it, and flushRequests fails it again), which leaves its loop
// blocked for ever. So a write after the server's side closed succeeds
// here and is lost, as TCP's first write would be; a write after the
// client's own Close fails as on TCP.
type tcpLikeConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *tcpLikeConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil && !c.closed.Load() && errors.Is(err, io.ErrClosedPipe) {
		return len(b), nil
	}
	return n, err
}

func (c *tcpLikeConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (s *Server) client(c *zk.Conn) *client {
	cl := s.clients[c]
	if cl == nil {
		panic("inproc: a *zk.Conn this server's Connect did not make")
	}
	return cl
}

// Disconnect closes c's connection, as a network failure would: the
// client sees it at once and reconnects, with its session.
func (s *Server) Disconnect(c *zk.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for l := range s.client(c).links {
		l.close()
	}
}

// Partition cuts c off from the server until Heal: what either side sends
// is lost, and its dials fail. Neither side learns of it but by silence:
// the client by its read timeout (two thirds of the session timeout), the
// server by the session's expiry.
func (s *Server) Partition(c *zk.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.client(c).partitioned = true
}

// Heal ends c's partition.
func (s *Server) Heal(c *zk.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.client(c).partitioned = false
}

// CutWhen arms a one-shot fault: the first request any client sends after
// this for which match is true is lost with its connection, which closes
// before the server reads it. The client sees the connection fail under
// its request and reconnects, with its session.
func (s *Server) CutWhen(match func(req sim.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts = append(s.cuts, match)
}

// ExpireSessionOf expires c's session on the server now, as if its
// timeout had run out; the client learns it when it next connects.
func (s *Server) ExpireSessionOf(c *zk.Conn) bool { return s.ExpireSession(c.SessionID()) }

// link relays one connection between a client's pipe and the server's,
// where the faults act.
type link struct {
	s      *Server
	client *client
	up     net.Conn // the relay's end of the client's pipe
	down   net.Conn // the relay's end of the server's pipe
	once   sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		l.up.Close()
		l.down.Close()
	})
}

// end closes the link and forgets it.
func (l *link) end() {
	l.close()
	l.s.mu.Lock()
	delete(l.client.links, l)
	l.s.mu.Unlock()
}

// frameRelayBytesMax bounds a frame the relay reads whole; a longer one is
// passed through as it comes (the server closes the connection on it).
const frameRelayBytesMax = 16 << 20

// relayRequests carries the client's frames to the server, frame by frame
// so that CutWhen can see each request.
func (l *link) relayRequests() {
	defer l.s.wg.Done()
	defer l.end()
	r := bufio.NewReader(l.up)
	first := true
	var prefix [4]byte
	for {
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(prefix[:])
		if n > frameRelayBytesMax {
			if _, err := l.down.Write(prefix[:]); err != nil {
				return
			}
			io.Copy(l.down, r)
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, prefix[:])
		if _, err := io.ReadFull(r, frame[4:]); err != nil {
			return
		}
		deliver, cut := l.pass(frame[4:], first)
		first = false
		if cut {
			return
		}
		if deliver {
			if _, err := l.down.Write(frame); err != nil {
				return
			}
		}
	}
}

// pass decides a request frame's fate: delivered, lost to a partition, or
// the end of the link.
func (l *link) pass(body []byte, first bool) (deliver, cut bool) {
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.client.partitioned {
		return false, false
	}
	if first || len(s.cuts) == 0 {
		return true, false
	}
	req, err := wire.DecodeRequest(body)
	if err != nil {
		return true, false
	}
	for i, match := range s.cuts {
		if match(req) {
			s.cuts = append(s.cuts[:i:i], s.cuts[i+1:]...)
			return false, true
		}
	}
	return true, false
}

// relayReplies carries the server's frames to the client, byte for byte.
func (l *link) relayReplies() {
	defer l.s.wg.Done()
	defer l.end()
	buf := make([]byte, 32<<10)
	for {
		n, err := l.down.Read(buf)
		if n > 0 {
			l.s.mu.Lock()
			lost := l.client.partitioned
			l.s.mu.Unlock()
			if !lost {
				if _, werr := l.up.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *Server) String() string { return fmt.Sprintf("inproc.Server(%d clients)", len(s.clients)) }
