package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Limits of the proxy.
const (
	// faultDurationMax bounds Blackhole, Delay and Refuse: every fault
	// but Kill ends.
	faultDurationMax = 2 * time.Minute
	// frameBytesMax is the largest frame the proxy passes; a longer length
	// prefix closes the connection. ZooKeeper's jute.maxbuffer is 1 MiB.
	frameBytesMax = 16 << 20
	// queuedFramesMax bounds the frames read and not yet written, per
	// direction of a connection; past it the reader stops reading.
	queuedFramesMax = 1024
	// dialTimeoutMax bounds the proxy's dial of the server.
	dialTimeoutMax = 5 * time.Second
)

// Reply header xids that are not answers to a request (go-zookeeper's
// watcherEventXid and pingXid).
const (
	xidWatchEvent = -1
	xidPing       = -2
)

// A Proxy is an in-process TCP proxy on loopback between go-zookeeper
// clients and a ZooKeeper server, for fault injection. Give its Dialer to
// zk.Connect (zkconn.WithDialer): every connection the client makes goes
// through the proxy, whatever address the client dials. The proxy passes
// whole frames (the 4-byte length prefix and its body), so that it can
// tell requests and replies apart.
//
// Its faults, with the simulator's fault kinds (sim.FaultKind) they stand
// for:
//   - CloseConns drops the connections; the client reconnects at once
//     (disconnect without a duration).
//   - Refuse drops the connections and closes new ones at once, for a
//     while: the client cannot connect (disconnect with a duration).
//   - Blackhole stops forwarding both ways without closing anything, for a
//     while (partition; a pause is a Blackhole plus a client that does
//     nothing).
//   - DropNextRequest drops the next request before the server sees it and
//     closes the connection (drop-request).
//   - DropNextReply lets the next request through and drops its reply,
//     closing the connection: the ambiguous case (drop-reply).
//   - Delay holds every frame for a while.
//   - Kill drops the connections and refuses every new one for good: the
//     client's process is gone and its session lives on until it expires
//     (crash).
//   - Expire expires the client's session on the server (ExpireSession)
//     with the session the proxy saw in the handshake (Session); the
//     client learns of it when it reconnects (expire).
//
// Heal ends a Blackhole, a Delay and a Refuse, not a Kill.
type Proxy struct {
	ln     net.Listener
	target string

	mu               sync.Mutex
	conns            map[*proxyConn]struct{}
	accepted         int
	refused          int
	blackholeUntil   time.Time
	refuseUntil      time.Time
	expiring         int // Expire calls under way: they refuse new connections
	killed           bool
	delay            time.Duration
	dropReplyArmed   bool
	dropRequestArmed bool
	session          connectResponse // the latest the server sent
	hasSession       bool
	changed          chan struct{} // closed and replaced when a fault changes
	closed           bool
	wg               sync.WaitGroup
}

// NewProxy starts a proxy to target (HOST:PORT, on loopback: a test
// injects faults only into a server of its own, as Shared and ZKLAB_ZK
// require) and stops it when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	if err := checkLoopback(target); err != nil {
		t.Fatalf("zktest: proxy: %v", err)
	}
	p, err := StartProxy(target)
	if err != nil {
		t.Fatalf("zktest: proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy to target (HOST:PORT, any host: the server may
// be remote) outside a test, for a tool such as the CLI; the caller closes
// it. The proxy itself listens on loopback only.
func StartProxy(target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("zktest: proxy target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[*proxyConn]struct{}), changed: make(chan struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	return nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Dialer is a zk.Dialer that connects to the proxy whatever the address.
func (p *Proxy) Dialer() zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", p.Addr(), timeout)
	}
}

// Accepted is the number of client connections the proxy has accepted,
// refused ones included.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Refused is the number of client connections the proxy has accepted and
// closed at once (Refuse, Kill, Expire) without dialing the server.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Session returns the session of the latest ConnectResponse the server
// sent through the proxy: its id and password. It reports false before
// the first, and when the latest refused the client's session (id 0: the
// session had expired). A malformed response is ignored.
func (p *Proxy) Session() (id int64, passwd []byte, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hasSession || p.session.sessionID == 0 {
		return 0, nil, false
	}
	return p.session.sessionID, append([]byte(nil), p.session.passwd...), true
}

// Close stops the proxy: its listener and every connection. It waits for
// its goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.CloseConns()
	p.wg.Wait()
}

// CloseConns closes every current connection, both ways. The client sees
// the connection drop and reconnects (through the proxy again).
func (p *Proxy) CloseConns() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close()
	}
}

// Blackhole stops forwarding, both ways and on new connections too, for d
// (at most faultDurationMax) or until Heal. Nothing is closed: what is
// sent meanwhile waits in the proxy and the sockets, as in a network
// partition, and passes afterwards if its connection still stands.
func (p *Proxy) Blackhole(d time.Duration) {
	d = min(d, faultDurationMax)
	p.mu.Lock()
	p.blackholeUntil = time.Now().Add(d)
	p.broadcastLocked()
	p.mu.Unlock()
}

// Refuse closes every current connection and, for d (at most
// faultDurationMax) or until Heal, closes every new one as soon as it is
// accepted, without dialing the server: the client cannot connect. After
// it, the client connects again.
func (p *Proxy) Refuse(d time.Duration) {
	d = min(d, faultDurationMax)
	p.mu.Lock()
	p.refuseUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.CloseConns() // after refuseUntil is set: the reconnect meets it
}

// Kill stands for the crash of the client's process: it closes every
// connection and refuses every new one from now on, for good (Heal does
// not end it; Close still closes the proxy). The server keeps the
// session until it times out.
func (p *Proxy) Kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.CloseConns()
}

// Expire expires the client's session on the server, as the simulator's
// FaultExpire does: the server ends the session, its ephemeral nodes go
// and the other clients' watches fire; the client sees only its
// connection drop, and when it reconnects it is told the session expired.
// Expire keeps the client off while it works (new connections are
// refused), closes the client's connections, expires the session it saw
// last (Session) with ExpireSession, bounded by timeout, and lets the
// client connect again. Without a session it fails and changes nothing.
func (p *Proxy) Expire(timeout time.Duration) error {
	id, passwd, ok := p.Session()
	if !ok {
		return fmt.Errorf("zktest: proxy to %s: expire: no session seen", p.target)
	}
	p.mu.Lock()
	p.expiring++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.expiring--
		p.mu.Unlock()
	}()
	p.CloseConns()
	return ExpireSession(p.target, id, passwd, timeout)
}

// Heal ends a blackhole, a delay and a refusal now; not a Kill.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.blackholeUntil = time.Time{}
	p.refuseUntil = time.Time{}
	p.delay = 0
	p.broadcastLocked()
	p.mu.Unlock()
}

// Delay holds every frame, both ways, for d (at most faultDurationMax)
// after the proxy read it, until Delay(0) or Heal.
func (p *Proxy) Delay(d time.Duration) {
	d = min(max(d, 0), faultDurationMax)
	p.mu.Lock()
	p.delay = d
	p.broadcastLocked()
	p.mu.Unlock()
}

// DropNextReply arms the ambiguous fault: the next request a client sends
// with a positive xid (not a ping or an auth packet; go-zookeeper's own
// setWatches after a reconnect counts) passes to the server, and when its reply comes the proxy
// drops it and closes that connection. The server has applied the request;
// the client sees the connection close with the request in flight.
func (p *Proxy) DropNextReply() {
	p.mu.Lock()
	p.dropReplyArmed = true
	p.mu.Unlock()
}

// DropNextRequest arms the lost request: the next request a client sends
// with a positive xid (as DropNextReply counts them) is dropped before the
// server sees it, and the proxy closes that connection. The server never
// applies it; the client sees the connection close with the request in
// flight (go-zookeeper: ErrConnectionClosed) and reconnects. Armed with
// DropNextReply, it goes first, and DropNextReply waits for the request
// after.
func (p *Proxy) DropNextRequest() {
	p.mu.Lock()
	p.dropRequestArmed = true
	p.mu.Unlock()
}

func (p *Proxy) broadcastLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.accepted++
		if p.refusingLocked() {
			p.refused++
			p.mu.Unlock()
			client.Close()
			continue
		}
		pc := &proxyConn{p: p, client: client, done: make(chan struct{}), dropXid: noXid}
		p.conns[pc] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go pc.run()
	}
}

// refusingLocked reports whether a new connection is to be closed at once.
func (p *Proxy) refusingLocked() bool {
	return p.killed || p.expiring > 0 || time.Now().Before(p.refuseUntil)
}

// noteConnectResponse keeps the session of a ConnectResponse frame (with
// its length prefix); a malformed one is ignored.
func (p *Proxy) noteConnectResponse(f []byte) {
	r, err := parseConnectResponse(f[4:])
	if err != nil {
		return
	}
	p.mu.Lock()
	p.session, p.hasSession = r, true
	p.mu.Unlock()
}

const noXid = int64(1) << 40

type frame struct {
	data []byte // the length prefix and the body
	at   time.Time
}

// proxyConn is one client connection and its connection to the server.
type proxyConn struct {
	p      *Proxy
	client net.Conn
	server net.Conn // set before the pipes start

	once sync.Once
	done chan struct{}

	mu      sync.Mutex
	dropXid int64 // the xid whose reply is to be dropped, or noXid
}

func (pc *proxyConn) close() {
	pc.once.Do(func() {
		close(pc.done)
		pc.client.Close()
		pc.mu.Lock()
		server := pc.server
		pc.mu.Unlock()
		if server != nil {
			server.Close()
		}
	})
}

func (pc *proxyConn) run() {
	defer pc.p.wg.Done()
	defer func() {
		pc.p.mu.Lock()
		delete(pc.p.conns, pc)
		pc.p.mu.Unlock()
	}()
	server, err := net.DialTimeout("tcp", pc.p.target, dialTimeoutMax)
	if err != nil {
		pc.close()
		return
	}
	pc.mu.Lock()
	pc.server = server
	pc.mu.Unlock()
	select {
	case <-pc.done: // closed while dialing: close may not have seen server
		server.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pc.pipe(pc.client, server, true) }()
	go func() { defer wg.Done(); pc.pipe(server, pc.client, false) }()
	wg.Wait()
}

// pipe forwards frames from src to dst: a reader goroutine reads and
// stamps them, this goroutine writes each when its delay has passed and no
// blackhole stands. When src ends, the frames read before it ended pass
// (a server's last answer before it hangs up, such as "session expired"),
// unless a blackhole holds them, and then both connections close.
func (pc *proxyConn) pipe(src, dst net.Conn, toServer bool) {
	defer pc.close()
	queue := make(chan frame, queuedFramesMax)
	ended := make(chan struct{}) // closed when src has ended
	go func() {
		defer close(queue)
		first := true // the connect request or response: no xid
		for {
			f, err := readFrame(src)
			if err != nil {
				close(ended)
				return
			}
			if first && !toServer {
				pc.p.noteConnectResponse(f)
			}
			if !first && !pc.inspect(f, toServer) {
				return
			}
			first = false
			select {
			case queue <- frame{data: f, at: time.Now()}:
			case <-pc.done:
				return
			}
		}
	}()
	for f := range queue {
		if !pc.p.hold(f.at, pc.done, ended) {
			return
		}
		if _, err := dst.Write(f.data); err != nil {
			return
		}
	}
}

// inspect applies DropNextRequest and DropNextReply to a frame after the
// handshake; it reports false when the frame is to be dropped and the
// connection closed.
func (pc *proxyConn) inspect(f []byte, toServer bool) bool {
	if len(f) < 8 {
		return true
	}
	xid := int64(int32(binary.BigEndian.Uint32(f[4:8])))
	if toServer {
		if xid <= 0 {
			return true // a ping, an auth packet: not a request of the caller
		}
		pc.p.mu.Lock()
		dropRequest := pc.p.dropRequestArmed
		pc.p.dropRequestArmed = false
		armed := !dropRequest && pc.p.dropReplyArmed
		if armed {
			pc.p.dropReplyArmed = false
		}
		pc.p.mu.Unlock()
		if dropRequest {
			pc.close() // before the frame is queued: the server never sees it
			return false
		}
		if armed {
			pc.mu.Lock()
			pc.dropXid = xid
			pc.mu.Unlock()
		}
		return true
	}
	if xid == xidWatchEvent || xid == xidPing {
		return true
	}
	pc.mu.Lock()
	drop := xid == pc.dropXid
	pc.mu.Unlock()
	if drop {
		pc.close()
		return false
	}
	return true
}

// hold waits until a frame read at may pass: its delay has passed and no
// blackhole stands. It reports false when done closes first, or when the
// frame's source has ended (ended is closed) while a blackhole holds it:
// a connection closed in a partition closes at once.
func (p *Proxy) hold(at time.Time, done, ended <-chan struct{}) bool {
	for {
		p.mu.Lock()
		until := at.Add(p.delay)
		blackholed := p.blackholeUntil.After(until)
		if blackholed {
			until = p.blackholeUntil
		}
		changed := p.changed
		p.mu.Unlock()
		wait := time.Until(until)
		if wait <= 0 {
			return true
		}
		var endedInBlackhole <-chan struct{} // nil, never ready, without a blackhole
		if blackholed {
			endedInBlackhole = ended
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-changed:
		case <-done:
			timer.Stop()
			return false
		case <-endedInBlackhole:
			timer.Stop()
			return false
		}
		timer.Stop()
	}
}

var errFrameTooLong = errors.New("zktest: frame too long")

func readFrame(r io.Reader) ([]byte, error) { return readFrameMax(r, frameBytesMax) }

// readFrameMax reads one frame whose body is at most bytesMax long.
func readFrameMax(r io.Reader, bytesMax uint32) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(prefix[:])
	if n > bytesMax {
		return nil, errFrameTooLong
	}
	f := make([]byte, 4+int(n))
	copy(f, prefix[:])
	if _, err := io.ReadFull(r, f[4:]); err != nil {
		return nil, err
	}
	return f, nil
}
