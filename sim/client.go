package sim

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// ClientConfig configures a simulated client.
type ClientConfig struct {
	// SessionTimeout is the timeout the client asks for, as the argument of
	// zk.Connect; the server clamps it to its bounds. It must be positive.
	SessionTimeout time.Duration
	// ConnectTimeout bounds a connection attempt that gets no answer
	// (go-zookeeper's default is 1 s).
	ConnectTimeout time.Duration
	// Addr is the address the client connects from, which the server's
	// ip scheme sees; the zero value is DefaultClientAddr.
	Addr netip.Addr
	// Servers is the client's connect string on an ensemble, as server
	// numbers (1-based): the client walks them in this order, round and
	// round. Empty means every server, in an order the seed shuffles, as
	// go-zookeeper's DNSHostProvider shuffles its connect string. A test
	// that pins a client to some servers names them here; unlike
	// go-zookeeper the given order is kept, so the test knows which the
	// client tries first. On a single server it may only name server 1.
	Servers []int
}

// reconnectBackoff is go-zookeeper's pause before each connection round
// after the first: with one server, every reconnect starts a new round of
// the host list (DNSHostProvider.Next reports retryStart), which flushes
// the unsent requests with ErrNoServer and sleeps one second.
const reconnectBackoff = time.Second

type watchType int

// The three client-side watch kinds of go-zookeeper (watchTypeData,
// watchTypeExist, watchTypeChild).
const (
	watchData watchType = iota + 1
	watchExist
	watchChild
)

type watchKey struct {
	path string
	typ  watchType
}

// clientWatch is the channels waiting on one watch key, in the order
// they were set. A client's watches are a list searched from end to end
// rather than a map: a client has few at a time, and the map's storage
// and a slice for each key's channels were some 6% of the allocations of
// an exploration.
type clientWatch struct {
	key   watchKey
	first chan zk.Event
	more  []chan zk.Event // those after the first, seldom any
}

// fire sends ev on the key's channels and closes them, and reports how
// many there were.
func (cw *clientWatch) fire(ev zk.Event) int {
	cw.first <- ev
	close(cw.first)
	for _, ch := range cw.more {
		ch <- ev
		close(ch)
	}
	return 1 + len(cw.more)
}

// pingRequest is every ping; the server only reads it.
var pingRequest = Request{Xid: -2, Op: OpPing}

// pending is a request between its call and its reply.
type pending struct {
	req Request
	// wide is set when req may hold a field besides the basic ones
	// setBasic writes (Xid, Op, Path, Data, Mode, Version, Watch, ACL):
	// setBasic then clears it whole first. Otherwise setBasic writes just
	// those fields, the rest being zero already (a Request is some 360
	// bytes, and writing it whole for every create, get, set and delete
	// was a thirtieth of BenchmarkSimThroughput).
	wide    bool
	done    bool
	resp    Response
	err     error // set when the request failed before a reply: connection closed, no server, closing
	onReply func(err error)
	// A call with a watch registers it on its reply: the type for a reply
	// without error and the type for ErrNoNode (0: none), and the channel.
	watchOK, watchNoNode watchType
	watchCh              <-chan zk.Event
	// task is the task that last blocked on the call, woken when it
	// completes (task.await).
	task *task
}

// Client is a simulated go-zookeeper/zk client connection. Its connection
// life follows zk.Conn's: it connects in the background, reconnects after
// a loss with the same session while the session lives, fails requests in
// flight at a loss with zk.ErrConnectionClosed whether or not the server
// applied them, fails requests still unsent at the next reconnection round
// with zk.ErrNoServer, re-registers its watches with setWatches, and after
// an expiry invalidates every watch (EventNotWatching) and goes on with a
// new session. Its methods implement recipes.Conn and must be called from
// tasks of its world.
type Client struct {
	w   *World
	id  int
	cfg ClientConfig

	sessionID     int64
	passwd        []byte
	timeoutMs     int32
	recvTimeoutNs int64
	pingEveryNs   int64
	lastZxid      int64
	xid           int32
	state         zk.State
	generation    uint64
	rounds        int
	hosts         hostList // the servers of an ensemble, as go-zookeeper walks them

	conn       *netConn
	authed     bool
	lastRecvNs int64
	authTimer  *timer
	pingTimer  *timer
	recvTimer  *timer
	dialTimer  *timer
	// The records the four timers above are armed in while idle
	// (World.afterClient), and Close's.
	authRec, pingRec, recvRec, dialRec, closeRec timer

	unsent   []*pending
	inflight []*pending
	free     []*pending // finished request records, for reuse

	watches []clientWatch // go-zookeeper's watchers map, in the order its keys came

	closing bool
	closed  bool
	crashed bool

	pausedUntilNs      int64
	partitionedUntilNs int64
	dialBlockedUntilNs int64
	frozen             []*timer
	dropRequests       int
	dropReplies        int

	tasks []*task
	// inline is the first storage of the lists above that every client
	// grows, and the empty password of its first connect: grown and
	// allocated afresh, they were some 2% of the allocations of an
	// exploration.
	inline struct {
		inflight [2]*pending
		free     [2]*pending
		tasks    [2]*task
		passwd   [16]byte
	}

	// creds are the credentials AddAuth got accepted, sent again on each
	// new connection; while resending is set they are being sent, and
	// requests wait in unsent (go-zookeeper's send loop has not started).
	creds     []authCred
	resending bool
	// closeRecord is the record of the client's Close, which no call
	// gives back: the world's Close does (releasePendings).
	closeRecord *pending
}

// NewClient adds a client to the world; it starts connecting at once, in
// the background, as zk.Connect does.
func (w *World) NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.SessionTimeout <= 0 {
		return nil, fmt.Errorf("sim: session timeout must be positive, got %v", cfg.SessionTimeout)
	}
	if cfg.ConnectTimeout < 0 {
		return nil, fmt.Errorf("sim: connect timeout must not be negative, got %v", cfg.ConnectTimeout)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = time.Second
	}
	seen := make([]bool, w.Servers()+1)
	for i, n := range cfg.Servers {
		if n < 1 || n > w.Servers() {
			return nil, fmt.Errorf("sim: client servers[%d] is s%d, want a server of 1..%d", i, n, w.Servers())
		}
		if seen[n] {
			return nil, fmt.Errorf("sim: client servers[%d] names s%d twice", i, n)
		}
		seen[n] = true
	}
	cfg.Servers = slices.Clone(cfg.Servers)
	c := &Client{w: w, id: len(w.clients) + 1, cfg: cfg, state: zk.StateDisconnected}
	c.inflight, c.free, c.tasks = c.inline.inflight[:0], c.inline.free[:0], c.inline.tasks[:0]
	if p := w.takePending(); p != nil {
		c.free = append(c.free, p) // (here rather than in newPending, which stays inlined)
	}
	c.setTimeouts(int32(cfg.SessionTimeout / time.Millisecond))
	w.clients = append(w.clients, c)
	if w.ens != nil {
		c.hosts = newHostList(w, cfg.Servers)
	}
	// The connect timer is armed in the dial timer's record, which no
	// field points to yet: nothing can stop it, as nothing could before.
	w.afterClient(&c.dialRec, 0, c, "connect", clientStartRound)
	return c, nil
}

// Clients returns the world's clients, numbered from 1.
func (w *World) Clients() []*Client { return w.clients }

// Number is the client's number in its world, from 1.
func (c *Client) Number() int { return c.id }

// ServerNumber is the server (1-based) of the client's connection now, 0
// while it has none; like zk.Conn.Server, it is the server the client
// dialed, which may already have closed a connection the client has not
// yet seen close.
func (c *Client) ServerNumber() int {
	switch {
	case c.conn == nil:
		return 0
	case c.w.ens == nil:
		return 1
	}
	return c.hosts.current()
}

func (c *Client) number() int {
	if c == nil {
		return 0
	}
	return c.id
}

func (c *Client) session() int64 {
	if c == nil {
		return 0
	}
	return c.sessionID
}

func (c *Client) paused() bool      { return c.pausedUntilNs > c.w.nowNs }
func (c *Client) partitioned() bool { return c.partitionedUntilNs > c.w.nowNs }

// setTimeouts derives the read timeout and ping interval from the session
// timeout as go-zookeeper does: reads time out after 2/3 of it, pings go
// every 1/3.
func (c *Client) setTimeouts(ms int32) {
	c.timeoutMs = ms
	c.recvTimeoutNs = int64(ms) * int64(time.Millisecond) * 2 / 3
	c.pingEveryNs = c.recvTimeoutNs / 2
}

func (c *Client) setState(s zk.State) {
	c.state = s
	c.generation++
	c.w.wakeSessionWaiters(c)
	c.w.emit(Event{Kind: "session", Client: c.id, Session: c.sessionID, State: s.String()})
}

// --- the connection loop, as steps ---

// startRound begins a connection attempt (zk.Conn.connect).
func (c *Client) startRound() {
	if c.crashed {
		return
	}
	if c.closing {
		c.finishClose()
		return
	}
	if c.w.ens != nil {
		c.nextHost()
		return
	}
	c.rounds++
	c.setState(zk.StateConnecting)
	if c.rounds > 1 {
		c.flushUnsent(zk.ErrNoServer)
		c.dialTimer = c.w.afterClient(&c.dialRec, int64(reconnectBackoff), c, "reconnect backoff", clientDial)
		return
	}
	c.dial()
}

func (c *Client) dial() {
	if c.closing {
		c.finishClose()
		return
	}
	conn, refused := c.w.dial(c)
	if conn == nil {
		if refused {
			c.w.emit(Event{Kind: "session", Client: c.id, Detail: "connection refused"})
			c.startRound()
			return
		}
		c.dialTimer = c.w.afterClient(&c.dialRec, int64(c.cfg.ConnectTimeout), c, "connect timeout", clientConnectTimeout)
		return
	}
	c.conn = conn
	c.setState(zk.StateConnected)
	passwd := c.passwd
	if passwd == nil {
		passwd = c.inline.passwd[:] // zero, and nothing writes it
	}
	c.w.sendToServer(conn, wireMsg{kind: wireConnect, connect: ConnectRequest{SessionID: c.sessionID, Passwd: passwd, TimeoutMs: c.timeoutMs, LastZxidSeen: c.lastZxid}})
	if c.w.trace.wants(kindSend) {
		c.w.emit(Event{Kind: "send", Client: c.id, Session: c.sessionID, Op: "connect", Detail: fmt.Sprintf("conn%d timeout=%dms", conn.id, c.timeoutMs)})
	}
	// authenticate() waits ten read timeouts for the handshake.
	c.authTimer = c.w.afterClient(&c.authRec, c.recvTimeoutNs*10, c, "handshake timeout", clientHandshakeTimeout)
}

// receive handles one message from the server. It takes the message by
// pointer, as handleReply takes the reply: an Output is some 370 bytes,
// and each copy of one was a few percent of BenchmarkSimThroughput.
func (c *Client) receive(conn *netConn, o *Output) {
	if conn != c.conn {
		panic(fmt.Sprintf("sim: client %d got a message on conn%d, not its current one", c.id, conn.id))
	}
	c.lastRecvNs = c.w.nowNs
	switch o.Kind {
	case OutConnect:
		c.authenticated(o.Connect)
	case OutReply:
		c.handleReply(&o.Reply)
	case OutEvent:
		c.w.emit(Event{Kind: "watch", Client: c.id, Session: c.sessionID, Op: o.Event.Type.String(), Path: o.Event.Path})
		c.notifyWatches(o.Event)
	case OutClose:
		c.connectionLost("closed by the server")
	}
}

func (c *Client) authenticated(r ConnectResponse) {
	c.w.stop(c.authTimer)
	if r.SessionID == 0 {
		if c.w.trace.wants(kindRecv) {
			c.w.emit(Event{Kind: "recv", Client: c.id, Session: c.sessionID, Op: "connect", Detail: "session expired"})
		}
		c.sessionID = 0
		c.passwd = nil
		c.lastZxid = 0
		c.setState(zk.StateExpired)
		c.invalidateWatches(zk.ErrSessionExpired)
		c.endConn(zk.ErrSessionExpired)
		return
	}
	c.sessionID = r.SessionID
	c.passwd = r.Passwd
	c.setTimeouts(r.TimeoutMs)
	c.authed = true
	c.hosts.connected()
	c.lastRecvNs = c.w.nowNs
	c.setState(zk.StateHasSession)
	if len(c.creds) == 0 {
		c.schedulePing()
		c.recvTimer = c.w.afterClient(&c.recvRec, c.recvTimeoutNs, c, TimerReadDeadline, clientCheckRecv)
		c.startSending(len(c.unsent))
		return
	}
	c.recvTimer = c.w.afterClient(&c.recvRec, c.recvTimeoutNs, c, TimerReadDeadline, clientCheckRecv)
	// The credentials go first, before the send loop (and its pings)
	// starts; what was queued before stays ahead of setWatches, what
	// tasks queue meanwhile comes behind it.
	c.resending = true
	queued := len(c.unsent)
	c.resendAuth(0, func() {
		c.resending = false
		c.schedulePing()
		c.startSending(queued)
	})
}

// startSending is the send loop's start on a new connection: the first
// queued requests (those queued before the connection), then the
// setWatches goroutine's requests, then the rest.
func (c *Client) startSending(queued int) {
	unsent := c.unsent
	c.unsent = nil
	for _, p := range unsent[:queued] {
		c.transmit(p)
	}
	c.sendSetWatches()
	for _, p := range unsent[queued:] {
		c.transmit(p)
	}
}

func (c *Client) schedulePing() {
	c.pingTimer = c.w.afterClient(&c.pingRec, c.pingEveryNs, c, "ping", clientPing)
}

// ping is the ping timer's work: a ping, and the next ping's timer.
func (c *Client) ping() {
	if !c.authed {
		return
	}
	c.w.sendToServer(c.conn, wireMsg{kind: wireRequest, req: pingRequest})
	c.schedulePing()
}

// clientEvent names what one of a client's own timers does when it
// fires (timer.event, run by timerFired): armed with a function, each
// such timer was a closure besides its record, and the two were some 10%
// of the allocations of an exploration.
type clientEvent uint8

const (
	clientFunc             clientEvent = iota // none: the timer's fire function
	clientStartRound                          // the first connection round
	clientDial                                // the reconnect backoff's end
	clientConnectTimeout                      // a connection attempt with no answer
	clientHandshakeTimeout                    // a handshake with no answer
	clientCheckRecv                           // the read deadline
	clientPing                                // the ping interval
	clientCloseTimeout                        // Close's wait for its reply
)

// timerFired does what one of c's own timers fires for.
func (c *Client) timerFired(ev clientEvent) {
	switch ev {
	case clientStartRound:
		c.startRound()
	case clientDial:
		c.dial()
	case clientConnectTimeout:
		c.w.emit(Event{Kind: "session", Client: c.id, Detail: "connect timed out"})
		c.startRound()
	case clientHandshakeTimeout:
		c.connectionLost("handshake timed out")
	case clientCheckRecv:
		c.checkRecv()
	case clientPing:
		c.ping()
	case clientCloseTimeout:
		if !c.closed {
			c.endConn(zk.ErrClosing)
		}
	default:
		panic(fmt.Sprintf("sim: client timer event %d", ev))
	}
}

// checkRecv is the read deadline: the connection is given up when nothing
// at all came for a read timeout.
func (c *Client) checkRecv() {
	if !c.authed {
		return
	}
	if deadline := c.lastRecvNs + c.recvTimeoutNs; deadline > c.w.nowNs {
		c.recvTimer = c.w.afterClient(&c.recvRec, deadline-c.w.nowNs, c, TimerReadDeadline, clientCheckRecv)
		return
	}
	c.connectionLost("read timed out")
}

// connectionLost ends the current connection after a network failure.
func (c *Client) connectionLost(why string) {
	c.w.emit(Event{Kind: "session", Client: c.id, Session: c.sessionID, Detail: "connection lost: " + why})
	c.endConn(zk.ErrConnectionClosed)
}

// endConn is the tail of zk.Conn.loop: the connection is closed, the
// client is disconnected, requests in flight fail with err, and a new
// connection round begins (unless the client is closing).
func (c *Client) endConn(err error) {
	c.w.stop(c.authTimer)
	c.w.stop(c.pingTimer)
	c.w.stop(c.recvTimer)
	if c.conn != nil {
		c.w.closeClientEnd(c.conn)
		c.conn = nil
	}
	c.authed = false
	c.resending = false
	c.setState(zk.StateDisconnected)
	if c.closing {
		c.failInflight(zk.ErrClosing)
		c.finishClose()
		return
	}
	c.failInflight(err)
	c.startRound()
}

func (c *Client) failInflight(err error) {
	inflight := c.inflight
	c.inflight = nil
	for _, p := range inflight {
		p.fail(err)
	}
}

func (c *Client) flushUnsent(err error) {
	unsent := c.unsent
	c.unsent = nil
	for _, p := range unsent {
		p.fail(err)
	}
}

// newPending takes a request record from the client's free list: a call
// allocates nothing for its bookkeeping in the steady state. A client's
// free list starts with a record worlds closed before gave back
// (pendingStores, NewClient), if there is one.
func (c *Client) newPending() *pending {
	if n := len(c.free); n > 0 {
		p := c.free[n-1]
		c.free = c.free[:n-1]
		return p
	}
	return &pending{}
}

// pendingStores holds request records of clients of worlds closed,
// zeroed, 32 to a list: a world takes a list at its first client and
// gives it back, with its clients' records, when it closes
// (releasePendings): a record of some 700 bytes for each client of each
// world of an exploration was 4% of the bytes it allocated.
var pendingStores = sparePool[*pending]{max: 32}

// takePending returns a record from the world's spares, nil if it has
// none.
func (w *World) takePending() *pending {
	return pendingStores.take(&w.sparePendings).pop()
}

// releasePendings gives the records of every client's calls, free or
// not, back to pendingStores as the world closes: nothing reads them
// after (every task has ended, and a record is the client's own, never
// handed to user code), and each client is left with none, so that a
// call after Close (a client's Close) makes a record of its own.
func (w *World) releasePendings() {
	sp := pendingStores.take(&w.sparePendings)
	for _, c := range w.clients {
		for _, list := range [...][]*pending{c.free, c.inflight, c.unsent, {c.closeRecord}} {
			for _, p := range list {
				if p != nil && !sp.full() && !slices.Contains(sp.list, p) {
					*p = pending{}
					sp.keep(p)
				}
			}
			clear(list)
		}
		c.free, c.inflight, c.unsent, c.closeRecord = c.free[:0], c.inflight[:0], c.unsent[:0], nil
	}
	pendingStores.give(&w.sparePendings)
}

// freePending gives back a finished call's record for reuse. It resets
// only what the next call does not write before it is read: call
// writes the request (setBasic the fields wide says it must), the reply
// callback and the watch types, and a reply is copied in whole before
// it is read (a call that fails before its reply hands no record to
// read). Clearing all 680 bytes, pointers and
// all, showed in BenchmarkSimThroughput's profile; the price is that a
// record kept for reuse holds on to its last request's and reply's data
// until the next call.
func (c *Client) freePending(p *pending) {
	p.done, p.err, p.watchCh, p.task = false, nil, nil, nil
	if len(c.free) < 64 {
		c.free = append(c.free, p)
	}
}

// setBasic writes the call's request: one that sets no field but the
// basic ones, as the calls that build their request from their
// arguments do (create, delete, exists, getData, setData, getChildren);
// sendCall writes the Xid. It is p.req = Request{Op: op, Path: path, ...}
// without writing the fields that are zero already
// (TestSetBasicIsWholeWrite holds it to that).
func (p *pending) setBasic(op OpCode, path string, data []byte, mode, version int32, watch bool, acl []zk.ACL) {
	if p.wide {
		p.req = Request{}
		p.wide = false
	}
	r := &p.req
	r.Op, r.Path, r.Data, r.Mode, r.Version, r.Watch, r.ACL = op, path, data, mode, version, watch, acl
}

// ready makes a pending request the waiter of the task that sent it.
func (p *pending) ready() bool { return p.done }

func (p *pending) fail(err error) {
	p.done = true
	p.err = err
	p.wakeTask()
}

// wakeTask has the scheduler ask the task waiting on the call again.
func (p *pending) wakeTask() {
	if p.task != nil {
		p.task.wakeUp()
	}
}

func (c *Client) nextXid() int32 {
	c.xid = (c.xid + 1) & 0x7fffffff
	return c.xid
}

// transmit sends a request on the live connection. A request too large for
// go-zookeeper's send buffer fails there and then, unsent.
func (c *Client) transmit(p *pending) {
	size := packetLen(&p.req)
	if size > clientBufferBytes {
		p.fail(zk.ErrShortBuffer)
		return
	}
	c.inflight = append(c.inflight, p)
	c.w.sendRequest(c.conn, &p.req, size, !p.wide)
	if c.w.trace.wants(kindSend) {
		c.w.emit(Event{Kind: "send", Client: c.id, Session: c.sessionID, Op: p.req.Op.String(), Xid: p.req.Xid, Path: p.req.Path})
	}
}

func (c *Client) handleReply(r *Response) {
	if p := c.matchReply(r); p != nil {
		c.completeReply(p)
	}
}

// takeReply is receive for a reply, up to completeReply: it copies the
// reply into its call's record, which it returns (nil for a ping's answer
// or a reply to no call), and does nothing else with it.
func (c *Client) takeReply(conn *netConn, r *Response) *pending {
	if conn != c.conn {
		panic(fmt.Sprintf("sim: client %d got a message on conn%d, not its current one", c.id, conn.id))
	}
	c.lastRecvNs = c.w.nowNs
	return c.matchReply(r)
}

// matchReply finds the call a reply answers, takes it out of the calls in
// flight and copies the reply into it.
func (c *Client) matchReply(r *Response) *pending {
	if r.Xid == -2 {
		return nil // a ping's answer; go-zookeeper ignores it, zxid and all
	}
	if r.Zxid > 0 {
		c.lastZxid = r.Zxid
	}
	xid := r.Xid
	i := slices.IndexFunc(c.inflight, func(p *pending) bool { return p.req.Xid == xid })
	if i < 0 {
		if c.w.trace.wants(kindRecv) {
			c.w.emit(Event{Kind: "recv", Client: c.id, Xid: r.Xid, Detail: "reply for an unknown request"})
		}
		return nil
	}
	p := c.inflight[i]
	if n := len(c.inflight); i == n-1 {
		// The last sent, as a rule the only one: no shift, just the
		// clear slices.Delete would make of the slot it frees.
		c.inflight[i] = nil
		c.inflight = c.inflight[:i]
	} else {
		c.inflight = slices.Delete(c.inflight, i, i+1)
	}
	p.resp = *r
	return p
}

// completeReply finishes a call whose reply matchReply has copied into it.
func (c *Client) completeReply(p *pending) {
	r := &p.resp
	err := r.Err.Error()
	if c.w.trace.wants(kindRecv) {
		e := Event{Kind: "recv", Client: c.id, Session: c.sessionID, Op: p.req.Op.String(), Xid: r.Xid, Zxid: r.Zxid}
		if err != nil {
			e.Err = err.Error()
		}
		c.w.emit(e)
	}
	if p.onReply != nil {
		p.onReply(err)
	}
	switch {
	case err == nil && p.watchOK != 0:
		p.watchCh = c.addWatcher(p.req.Path, p.watchOK)
	case err == zk.ErrNoNode && p.watchNoNode != 0:
		p.watchCh = c.addWatcher(p.req.Path, p.watchNoNode)
	}
	p.done = true
	p.wakeTask()
	if p.req.Op == OpCloseSession {
		// The recv loop ends with io.EOF after the close reply.
		c.endConn(zk.ErrConnectionClosed)
	}
}

// --- watches ---

func (c *Client) addWatcher(path string, typ watchType) <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	k := watchKey{path, typ}
	if i := c.findWatch(k); i >= 0 {
		c.watches[i].more = append(c.watches[i].more, ch)
	} else {
		c.watches = append(c.watches, clientWatch{key: k, first: ch})
	}
	return ch
}

// findWatch returns the index in c.watches of key k, -1 if none.
func (c *Client) findWatch(k watchKey) int {
	for i := range c.watches {
		if c.watches[i].key == k {
			return i
		}
	}
	return -1
}

// notifyWatches hands a server notification to every client-side watcher
// it concerns, as zk.Conn.notifyWatches does: one server event may fire
// several channels.
func (c *Client) notifyWatches(ev zk.Event) {
	var types []watchType
	switch ev.Type {
	case zk.EventNodeCreated:
		types = []watchType{watchExist}
	case zk.EventNodeDataChanged:
		types = []watchType{watchExist, watchData}
	case zk.EventNodeChildrenChanged:
		types = []watchType{watchChild}
	case zk.EventNodeDeleted:
		types = []watchType{watchExist, watchData, watchChild}
	}
	delivered := false
	for _, t := range types {
		i := c.findWatch(watchKey{ev.Path, t})
		if i < 0 {
			continue
		}
		c.w.channelChanges += uint64(c.watches[i].fire(ev))
		delivered = true
		c.watches = slices.Delete(c.watches, i, i+1)
	}
	if delivered {
		c.w.wakeWatchers(c)
	}
}

// ownsWatches reports whether every channel is one of c's watches that
// has not fired yet: they reach user code receive-only, so only the
// simulation can send on them or close them (and wakes their waiters
// when it does: wakeWatchers).
func (c *Client) ownsWatches(chans []<-chan zk.Event) bool {
	for _, ch := range chans {
		if !c.ownsWatch(ch) {
			return false
		}
	}
	return true
}

func (c *Client) ownsWatch(ch <-chan zk.Event) bool {
	for i := range c.watches {
		cw := &c.watches[i]
		if (<-chan zk.Event)(cw.first) == ch {
			return true
		}
		for _, own := range cw.more {
			if (<-chan zk.Event)(own) == ch {
				return true
			}
		}
	}
	return false
}

// invalidateWatches ends every watch with EventNotWatching carrying err.
func (c *Client) invalidateWatches(err error) {
	for i := range c.watches {
		k := c.watches[i].key
		ev := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: k.path, Err: err}
		c.w.channelChanges += uint64(c.watches[i].fire(ev))
	}
	if n := len(c.watches); n > 0 {
		c.w.wakeWatchers(c)
		c.w.emit(Event{Kind: "watch", Client: c.id, Op: zk.EventNotWatching.String(), Err: err.Error(), Detail: fmt.Sprintf("%d watches", n)})
	}
	clear(c.watches)
	c.watches = c.watches[:0]
}

// setWatchesLimitBytes is the largest setWatches packet go-zookeeper sends;
// more watches go in further packets, one after another.
const setWatchesLimitBytes = 128 * 1024

func (c *Client) sendSetWatches() {
	if len(c.watches) == 0 {
		return
	}
	var reqs []Request
	var req *Request
	size := 0
	for i := range c.watches {
		k := c.watches[i].key
		add := 4 + len(k.path)
		if req == nil || size+add > setWatchesLimitBytes {
			if req != nil {
				reqs = append(reqs, *req)
			}
			size = 28
			req = &Request{Op: OpSetWatches, RelativeZxid: c.lastZxid}
		}
		size += add
		switch k.typ {
		case watchData:
			req.DataWatches = append(req.DataWatches, k.path)
		case watchExist:
			req.ExistWatches = append(req.ExistWatches, k.path)
		case watchChild:
			req.ChildWatches = append(req.ChildWatches, k.path)
		}
	}
	reqs = append(reqs, *req)
	c.sendSetWatchesFrom(reqs)
}

func (c *Client) sendSetWatchesFrom(reqs []Request) {
	if len(reqs) == 0 || !c.authed {
		return
	}
	p := &pending{req: reqs[0], wide: true}
	p.req.Xid = c.nextXid()
	p.onReply = func(err error) {
		if err == nil {
			c.sendSetWatchesFrom(reqs[1:])
		}
	}
	c.transmit(p)
}

// --- closing and crashing ---

// Close closes the session, as zk.Conn.Close does: it sends closeSession
// and waits for the answer, a second at most; then every request still
// pending fails with zk.ErrClosing and every watch ends with
// EventNotWatching. Called outside a task, it starts the close and
// returns; the world finishes it.
func (c *Client) Close() {
	if c.closing || c.crashed {
		return
	}
	c.closing = true
	if c.w.trace.wants(kindCall) {
		c.w.emit(Event{Kind: "call", Client: c.id, Session: c.sessionID, Op: "close"})
	}
	if !c.authed {
		// The connection loop sees shouldQuit at its next turn.
		if c.conn != nil {
			c.endConn(zk.ErrClosing)
		} else {
			c.w.stop(c.dialTimer)
			c.finishClose()
		}
		return
	}
	// The record comes from the free list, as a task's call's does: a
	// record of its own was 2% of the bytes an exploration allocated (a
	// client closes once, and its last call's record is free by then).
	// Nothing gives it back: the client makes no call after this one;
	// the world's Close does, to pendingStores (closeRecord).
	p := c.newPending()
	c.closeRecord = p
	p.req, p.wide = Request{Xid: c.nextXid(), Op: OpCloseSession}, true
	p.onReply, p.watchOK, p.watchNoNode = nil, 0, 0
	if c.resending {
		c.unsent = append(c.unsent, p)
	} else {
		c.transmit(p)
	}
	giveUp := c.w.afterClient(&c.closeRec, int64(time.Second), c, "close timeout", clientCloseTimeout)
	if c.w.current != nil {
		armed := giveUp.seq
		c.w.block((*closedWait)(c))
		// The timer fired if it armed the client's close record and the
		// record was armed again since (the client reopened and closed
		// once more): that timer is not this call's to stop.
		if giveUp.seq == armed {
			c.w.stop(giveUp)
		}
	}
}

// closedWait is the waiter of a task that waits for its client's close
// to finish: the client itself, not a closure of it, which allocated.
type closedWait Client

func (cw *closedWait) ready() bool { return cw.closed }

func (c *Client) finishClose() {
	if c.closed {
		return
	}
	c.closed = true
	c.w.wakeSessionWaiters(c)
	c.w.stop(c.dialTimer)
	c.state = zk.StateDisconnected
	c.failInflight(zk.ErrClosing)
	c.flushUnsent(zk.ErrClosing)
	c.invalidateWatches(zk.ErrClosing)
	c.w.emit(Event{Kind: "session", Client: c.id, Detail: "closed"})
}

// crash kills the client's process: its tasks end where they stand, its
// connection breaks without a closeSession, and nothing of it runs again.
func (c *Client) crash() {
	if c.crashed {
		return
	}
	c.crashed = true
	for _, t := range c.tasks {
		if !t.done {
			t.killed = true
			t.await(always, true)
		}
	}
	c.w.wakeAll() // another client's task may sleep or wait on this one
	c.w.freeze(c) // its timers never fire again
	c.frozen = nil
	c.pausedUntilNs = 0
	if c.conn != nil {
		conn := c.conn
		c.conn = nil
		c.authed = false
		c.w.clearConn(conn)
		c.w.disconnectServer(conn.id)
		conn.clientClosed = true
		c.w.connsClosed = true
		c.w.pruneConns()
	}
	c.unsent, c.inflight = nil, nil
}
