package wire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/zklab/zklab/sim"
)

// Config configures a Server. The zero value serves with ZooKeeper's
// limits but unlimited connections per address.
type Config struct {
	// MaxFrameBytes is jute.maxbuffer as the server applies it to a
	// request's length prefix: a longer frame closes its connection
	// unread (NIOServerCnxn.readLength "Len error"). Zero means the
	// simulated server's own limit, sim.ServerConfig.MaxPacketBytes
	// (0xfffff, measured on ZooKeeper 3.8).
	MaxFrameBytes int
	// MaxClientCnxns is maxClientCnxns: the connections one remote IP may
	// hold at once. Past it a new connection is closed at accept, before
	// it is read, as NIOServerCnxnFactory refuses it ("Too many
	// connections from IP - max is N"). Zero means unlimited (ZooKeeper's
	// own default is 60; a zoo.cfg reader should pass that on).
	MaxClientCnxns int
	// FourLetterWord, if set, answers a four-letter word: a connection
	// whose first four bytes are lowercase ASCII letters (never a valid
	// length: they read as more than 1.6 GB) gets the word and a writer
	// for its answer, and is closed after, as ZooKeeper closes it. Without
	// it such a connection is closed as a frame past MaxFrameBytes.
	FourLetterWord func(word string, w io.Writer)
	// Observer, if set, is told everything the server does, in order.
	Observer Observer
	// Journal, if set, makes the server durable: every input is written
	// to it before any output it causes leaves (see Journal). The
	// simulated server given to New must be the one OpenJournal returned
	// with it; its time continues where the journal's left off.
	Journal *Journal
}

// A Server serves the ZooKeeper client protocol over one pure
// *sim.Server. It only translates: it decodes frames into sim.Requests,
// feeds them to the simulated server with the current time, and encodes
// what the simulated server outputs back into frames. Every ZooKeeper
// semantics is the simulated server's.
//
// Its clock is package time's: wall-clock time on a real network, virtual
// time inside a testing/synctest bubble. Virtual time 0 of the simulated
// server is the moment New is called; the simulated server must not have
// been used before. A Server used under synctest must be made inside the
// bubble, and closed before the bubble ends.
//
// One mutex guards the simulated server: requests from all connections are
// applied one at a time, in the order they take it.
type Server struct {
	cfg Config
	obs Observer

	mu        sync.Mutex
	sim       *sim.Server
	start     time.Time
	closed    bool
	nextConn  sim.ConnID
	conns     map[sim.ConnID]*conn
	perIP     map[string]int
	listeners map[net.Listener]struct{}
	timer     deadlineTimer
	stats     counters
	faults    faultState  // faults.go
	keyed     keyedFaults // keyed.go
	journal   *Journal
	fatal     error // the journal failed: the server stopped
	// heldConns are the connections with frames held for an fsync
	// (group commit, see Journal.startGroupCommit).
	heldConns []*conn
	// replying is the connection whose reader is applying one of its
	// requests: what that queues for it is written by the reader itself
	// once no whole frame is left in its read buffer (writeInline), not
	// handed to its writer one request at a time.
	replying *conn

	wg sync.WaitGroup // every goroutine the server started
}

// New returns a server for srv, which it owns from now on: every call into
// srv must go through the Server (Inspect for reading).
func New(srv *sim.Server, cfg Config) *Server {
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = srv.Config().MaxPacketBytes
	}
	obs := cfg.Observer
	if obs == nil {
		obs = NopObserver{}
	}
	s := &Server{
		cfg:       cfg,
		obs:       obs,
		sim:       srv,
		start:     time.Now(),
		conns:     make(map[sim.ConnID]*conn),
		perIP:     make(map[string]int),
		listeners: make(map[net.Listener]struct{}),
	}
	if j := cfg.Journal; j != nil {
		s.journal = j
		s.start = s.start.Add(-time.Duration(j.resumeMs) * time.Millisecond)
		s.nextConn = j.nextConn - 1
	}
	s.stats.latencyMinMs = math.MaxInt64
	s.timer = newDeadlineTimer(s.onTimer)
	if cfg.Journal != nil {
		// The restarted sessions expire unless their clients come back.
		s.rearmLocked(s.nowMs())
		if cfg.Journal.sync {
			cfg.Journal.startGroupCommit()
			s.wg.Add(1)
			go s.syncLoop()
		}
	}
	return s
}

// ErrServerClosed is returned by Serve and ServeConn after Close.
var ErrServerClosed = errors.New("wire: server closed")

// Serve accepts connections on l and serves each until it closes. It
// returns when l fails or the server is closed (ErrServerClosed); it does
// not close l unless the server is closed.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	return acceptLoop(l, func(nc net.Conn) { s.ServeConn(nc) }, &s.mu, func() error {
		if s.fatal != nil {
			return s.fatal
		}
		if s.closed {
			return ErrServerClosed
		}
		return nil
	})
}

// ServeConn serves one client connection (a net.Pipe end, say) in the
// background and returns at once; the server closes nc when it is done
// with it. After Close it closes nc and returns ErrServerClosed.
func (s *Server) ServeConn(nc net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return ErrServerClosed
	}
	remote := nc.RemoteAddr().String()
	addr := remoteIP(nc)
	ipKey := addr.String()
	at := time.Now()
	if s.cfg.MaxClientCnxns > 0 && s.perIP[ipKey] >= s.cfg.MaxClientCnxns {
		nc.Close()
		s.obs.ConnRefused(at, remote, fmt.Sprintf("too many connections from %s - max is %d", ipKey, s.cfg.MaxClientCnxns))
		return nil
	}
	if why := s.refuseLocked(at); why != "" {
		nc.Close()
		s.obs.ConnRefused(at, remote, why)
		return nil
	}
	s.nextConn++
	c := &conn{
		s: s, id: s.nextConn, nc: nc, remote: remote, ipKey: ipKey, opened: at,
		pending:  make(map[int32]pendingRequest),
		outQueue: newOutQueue(),
		raw:      rawConnOf(nc),
	}
	c.stats.latencyMinMs = math.MaxInt64
	s.conns[c.id] = c
	s.perIP[ipKey]++
	if s.journal != nil {
		s.journal.open(c.id, addr)
	}
	s.sim.OpenFrom(c.id, addr)
	s.obs.ConnOpened(at, c.infoLocked())
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return nil
}

// remoteIP is the peer's IP for the simulated server's ip scheme and for
// maxClientCnxns; a connection with no IP (net.Pipe) counts as
// sim.DefaultClientAddr.
func remoteIP(nc net.Conn) netip.Addr {
	if tcp, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		if ap := tcp.AddrPort(); ap.Addr().IsValid() {
			return ap.Addr().Unmap()
		}
	}
	return sim.DefaultClientAddr
}

// Close stops the server: it closes its listeners and every connection,
// stops its timer and waits for all its goroutines to end. The simulated
// server keeps its state (Inspect still reads it).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for _, c := range s.conns {
		c.nc.Close()
	}
	s.timer.stop()
	s.stopSyncLocked()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Inspect runs fn with the simulated server, under the server's lock: for
// reading its state (NodeCount, Sessions, Node, LastZxid, ...). fn must not
// change it or call back into s.
func (s *Server) Inspect(fn func(srv *sim.Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.sim)
}

// ExpireSession expires a session now, as if its timeout had run out
// (sim.Server.ExpireSession): a fault a test injects. It reports whether
// the session was live.
func (s *Server) ExpireSession(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveLocked(id) {
		s.noteFaultLocked(Fault{Verb: "EXPIRESESSION", Session: id})
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	ok := s.expireLocked(nowMs, id)
	s.stepInternalLocked(nowMs)
	s.rearmLocked(nowMs)
	return ok
}

// nowMs is the simulated server's time: milliseconds since New.
func (s *Server) nowMs() int64 { return time.Since(s.start).Milliseconds() }

// advanceLocked lets the simulated server's time reach nowMs before
// anything else happens at nowMs: a session whose deadline has passed
// expires before a request that arrives later is applied, whichever
// goroutine the runtime schedules first.
func (s *Server) advanceLocked(nowMs int64) {
	if !s.timer.due(nowMs) {
		return
	}
	if s.journal != nil {
		s.journal.tick(nowMs)
	}
	s.sim.Tick(nowMs)
	s.flushLocked()
	s.stepInternalLocked(nowMs)
}

// stepInternalLocked applies the closeSessions of expired sessions.
func (s *Server) stepInternalLocked(nowMs int64) {
	for s.sim.HasInternal() {
		if s.journal != nil {
			s.journal.step(nowMs)
		}
		id := s.sim.StepInternal(nowMs)
		s.obs.SessionExpired(time.Now(), id)
		s.flushLocked()
	}
}

// rearmLocked sets the timer for the simulated server's next deadline.
func (s *Server) rearmLocked(nowMs int64) {
	if !s.closed {
		s.timer.rearm(nowMs, s.sim.NextDeadlineMs())
	}
}

func (s *Server) onTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	s.rearmLocked(nowMs)
}

// flushLocked turns the simulated server's outputs into frames on their
// connections' queues, in order.
func (s *Server) flushLocked() {
	if s.journal != nil {
		if err := s.journal.commit(s.sim); err != nil {
			s.failLocked(err)
			return
		}
	}
	at := time.Now()
	for _, o := range s.sim.Outputs() {
		c := s.conns[o.Conn]
		if c == nil {
			panic(fmt.Sprintf("wire: output for unknown connection %d", o.Conn))
		}
		if c.cut {
			continue // broken by a fault: nothing more reaches the client
		}
		switch o.Kind {
		case sim.OutConnect:
			c.enqueue(AppendConnectResponse(c.outBuf(), o.Connect, c.connect.HasReadOnly))
			if o.Connect.SessionID != 0 {
				c.session = o.Connect.SessionID
				c.timeoutMs = o.Connect.TimeoutMs
			}
			s.obs.Handshake(at, c.id, c.connect, o.Connect)
			if c.connect.SessionID == 0 && o.Connect.SessionID != 0 {
				s.obs.SessionCreated(at, c.id, o.Connect.SessionID, o.Connect.TimeoutMs)
			}
		case sim.OutReply:
			r := o.Reply
			op, latencyMs := answered(c.pending, &c.stats, c.id, &r, at)
			s.stats.reply(latencyMs)
			// Applied, and its reply perhaps lost: no observer hears of a
			// reply the client never gets, so a history keeps the request
			// open, ambiguous, as its client sees it.
			if !s.replyLostLocked(c, r.Xid) {
				c.enqueue(AppendReply(c.outBuf(), op, &r))
				s.obs.ReplySent(at, c.id, c.session, op, r)
			}
			if op == sim.OpCloseSession && r.Err == sim.CodeOK {
				s.obs.SessionClosed(at, c.session)
			}
		case sim.OutEvent:
			c.enqueue(AppendEvent(c.outBuf(), o.Event))
			s.obs.WatchEventSent(at, c.id, c.session, o.Event)
		case sim.OutClose:
			c.closeAfterFlush("closed by the server")
		}
	}
	// Between two inputs, with the outputs taken: where a snapshot holds
	// exactly the inputs logged before it.
	if s.journal != nil && s.journal.snapshotDue() {
		if err := s.journal.snapshot(s.sim); err != nil {
			s.failLocked(err)
			return
		}
		s.releaseLocked() // the snapshot made everything durable
	}
}

// syncLoop is group commit's syncer: it writes and fsyncs what the
// journal buffered, outside the server's lock, and then lets out the
// frames that waited for it.
func (s *Server) syncLoop() {
	defer s.wg.Done()
	j := s.journal
	for range j.kick {
		s.mu.Lock()
		batch, seq, needSync := j.takeBatch()
		s.mu.Unlock()
		err := j.writeBatch(batch, needSync)
		s.mu.Lock()
		if err := j.batchDone(batch, seq, err); err != nil {
			s.failLocked(err)
			s.mu.Unlock()
			return
		}
		if j.snapshotDue() {
			if err := j.snapshot(s.sim); err != nil {
				s.failLocked(err)
				s.mu.Unlock()
				return
			}
		}
		s.releaseLocked()
		if len(j.buf) > 0 && j.kick != nil {
			select {
			case j.kick <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
	}
}

// releaseLocked lets out the held frames whose fsync is done.
func (s *Server) releaseLocked() {
	durable := s.journal.durableSeq
	keep := s.heldConns[:0]
	for _, c := range s.heldConns {
		n := 0
		for n < len(c.heldMarks) && c.heldMarks[n].seq <= durable {
			n++
		}
		if n > 0 {
			end := c.heldMarks[n-1].end
			c.out = append(c.out, c.held[:end]...)
			c.held = append(c.held[:0], c.held[end:]...)
			rest := c.heldMarks[:0]
			for _, m := range c.heldMarks[n:] {
				rest = append(rest, heldMark{end: m.end - end, seq: m.seq})
			}
			c.heldMarks = rest
			c.wakeWriter()
		}
		if len(c.heldMarks) > 0 {
			keep = append(keep, c)
		}
	}
	clear(s.heldConns[len(keep):])
	s.heldConns = keep
}

// stopSyncLocked ends the syncer, and lets every writer that waits for
// held frames see that the server is closed.
func (s *Server) stopSyncLocked() {
	if j := s.journal; j != nil && j.kick != nil {
		close(j.kick)
		j.kick = nil
	}
	for _, c := range s.heldConns {
		c.wakeWriter()
	}
}

// failLocked stops the server because its journal failed: what was not
// logged must not be answered (ZooKeeper exits when it cannot write its
// transaction log). Serve returns err.
func (s *Server) failLocked(err error) {
	s.sim.Outputs()
	if s.closed {
		return
	}
	s.fatal = err
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for _, c := range s.conns {
		c.nc.Close()
	}
	s.timer.stop()
	s.stopSyncLocked()
}

// Err is why the server stopped on its own (its journal failed), or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// pendingRequest is a request the simulated server has not answered yet:
// its reply is encoded by its type.
type pendingRequest struct {
	op sim.OpCode
	at time.Time
}

// answered takes the request that reply r (sent at) answers off
// connection id's pending requests, and counts it in stats. It returns
// the request's type, which the reply is encoded by, and its latency.
func answered(pending map[int32]pendingRequest, stats *connCounters, id sim.ConnID, r *sim.Response, at time.Time) (op sim.OpCode, latencyMs int64) {
	p, ok := pending[r.Xid]
	if !ok {
		panic(fmt.Sprintf("wire: reply to xid %d, which connection %d has not sent", r.Xid, id))
	}
	delete(pending, r.Xid)
	latencyMs = int64(at.Sub(p.at) / time.Millisecond)
	stats.reply(latencyMs, r.Zxid, at)
	return p.op, latencyMs
}

// conn is one client connection: a reader goroutine that decodes frames
// and applies them under the server's lock, and a writer goroutine that
// sends what the server queued, so that no lock is held during I/O. The
// reader sends its own requests' replies when it has applied every whole
// frame it has read, as far as the socket takes them without waiting
// (writeInline): a pipelining client's replies then leave in one write
// per read, without a goroutine woken per request; the writer sends the
// rest, what other connections' requests and the timers cause, and what
// waited for a partition or an fsync.
type conn struct {
	s       *Server
	id      sim.ConnID
	nc      net.Conn
	remote  string
	ipKey   string
	opened  time.Time
	connect ConnectRequest // the handshake, once received
	session int64
	// timeoutMs is the negotiated session timeout.
	timeoutMs int32
	pending   map[int32]pendingRequest
	stats     connCounters
	// cut, loseXid and loseArmed are faults.go's: the connection broken by
	// a fault, and the request whose reply is to be lost.
	cut       bool
	loseXid   int32
	loseArmed bool

	// Guarded by s.mu: the frames queued for the writer, and why the
	// connection closes after them.
	outQueue
	closeReason string
	gone        bool // the reader has ended and reported the close
	// raw is nc's file descriptor, for the reader's writes that must not
	// block (writeInline); nil when nc has none (net.Pipe): then only
	// the writer writes.
	raw syscall.RawConn
	// held are frames that wait for the journal's fsync (group commit),
	// heldMarks where each run of them ends and the fsync it waits for.
	held      []byte
	heldMarks []heldMark
}

// outBuf is the buffer the next frame is appended to, for enqueue: the
// writer's, or the held one while a transaction is not yet durable (or
// earlier frames are still held: the order is kept).
func (c *conn) outBuf() []byte {
	if c.mustHold() {
		return c.held
	}
	return c.out
}

func (c *conn) mustHold() bool {
	return len(c.heldMarks) > 0 || c.s.journal != nil && c.s.journal.holding()
}

// enqueue takes b, outBuf with a frame appended.
func (c *conn) enqueue(b []byte) {
	c.queued++
	c.stats.sent++
	c.s.stats.sent++
	if c.mustHold() {
		if len(c.heldMarks) == 0 {
			c.s.heldConns = append(c.s.heldConns, c)
		}
		c.held = b
		c.heldMarks = append(c.heldMarks, heldMark{end: len(b), seq: c.s.journal.txnSeq})
		return
	}
	c.out = b
	if c.s.replying != c {
		c.wakeWriter()
	}
}

// heldMark ends a run of held frames (held[:end]) that may leave once the
// journal's durableSeq reaches seq.
type heldMark struct {
	end int
	seq uint64
}

func (c *conn) closeAfterFlush(reason string) {
	if !c.closing {
		c.closeReason = reason
	}
	c.outQueue.closeAfterFlush()
}

func (c *conn) readLoop() {
	defer c.s.wg.Done()
	fr := frameReading{maxFrameBytes: c.s.cfg.MaxFrameBytes, answerWord: c.s.cfg.FourLetterWord, drainOversized: true}
	c.end(fr.readFrames(c.nc, c))
}

// caughtUp: what the requests read so far have queued leaves before the
// reader waits for more, in one write for all of them.
func (c *conn) caughtUp() { c.writeInline() }

// handshake applies the connect request. It returns why the connection
// must close, or "".
func (c *conn) handshake(body []byte) string {
	req, err := DecodeConnectRequest(body)
	if err != nil {
		return err.Error()
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "server closed"
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	if s.awaitHealLocked(req.SessionID) { // a partition holds the handshake
		if s.closed {
			return "server closed"
		}
		nowMs = s.nowMs()
		s.advanceLocked(nowMs)
	}
	if !s.sim.HasConn(c.id) {
		// Cut while its handshake was on the way (a restart, a fault):
		// the server no longer knows the connection.
		return "connection closed by the server"
	}
	c.connect = req
	c.stats.received++
	s.stats.received++
	if s.journal != nil {
		s.journal.connect(nowMs, c.id, body)
	}
	s.sim.Connect(nowMs, c.id, req.ConnectRequest)
	s.flushLocked()
	s.rearmLocked(nowMs)
	return ""
}

// request applies one request. It returns why the connection must close,
// or "".
func (c *conn) request(body []byte) string {
	req, err := DecodeRequest(body)
	if err != nil && !req.Malformed {
		return err.Error()
	}
	s := c.s
	if d := s.delayBeforeRequest(); d > 0 {
		c.writeInline() // what earlier requests queued is not delayed
		time.Sleep(d)   // ADDDELAY
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "server closed"
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	if !s.sim.HasConn(c.id) {
		// The server has closed the connection (an expired session's
		// handshake, closeSession): what the client sent after is unread.
		return ""
	}
	keyed, fired := s.keyedBeforeLocked(c, req)
	if s.awaitHealLocked(c.session) { // a partition holds the request
		if s.closed {
			return "server closed"
		}
		nowMs = s.nowMs()
		s.advanceLocked(nowMs)
		if !s.sim.HasConn(c.id) {
			return "" // expired meanwhile: the server has closed it
		}
	}
	switch s.requestFaultLocked(c, req) {
	case failRequest:
		c.enqueue(AppendReply(c.outBuf(), req.Op, &sim.Response{Xid: req.Xid, Err: sim.CodeAPIError}))
		return ""
	case dropRequest:
		return "fault: request dropped"
	}
	at := time.Now()
	c.stats.request(req, at)
	s.stats.received++
	c.pending[req.Xid] = pendingRequest{op: req.Op, at: at}
	s.obs.RequestReceived(at, c.id, c.session, req)
	if s.journal != nil {
		s.journal.receive(nowMs, c.id, body)
	}
	s.sim.Receive(nowMs, c.id, req)
	if c.raw != nil {
		s.replying = c
	}
	s.flushLocked()
	s.replying = nil
	if fired {
		s.keyedAfterLocked(c, keyed, nowMs)
	}
	s.rearmLocked(nowMs)
	return ""
}

// end is the reader's last act: the connection is gone, by the client's
// doing, a network error, or the server's. The simulated server is told
// (the session lives on until it expires), and the writer stops after what
// is queued.
func (c *conn) end(reason string) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c.closeAfterFlush(reason)
	if s.sim.HasConn(c.id) {
		s.disconnectLocked(c.id)
	}
	c.gone = true
	delete(s.conns, c.id)
	if s.perIP[c.ipKey]--; s.perIP[c.ipKey] == 0 {
		delete(s.perIP, c.ipKey)
	}
	s.obs.ConnClosed(time.Now(), c.infoLocked(), c.closeReason)
	// Closing unblocks a writer stuck on a client that reads nothing.
	c.nc.Close()
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	s := c.s
	c.writeFrames(&s.mu, c.nc, func() bool {
		s.awaitHealLocked(c.session) // a partition holds what is sent too
		// Held frames go out before the close, unless the server has
		// stopped and they never will.
		return c.closing && (len(c.heldMarks) == 0 || s.closed)
	})
}

// writeInline writes what is queued for c from its reader, as far as the
// socket takes it without waiting, and leaves the rest (and a close) to
// the writer. A pipelining client's replies then leave in one write per
// batch of requests read, with no goroutine woken to write them. It never
// waits for the client: a client that reads nothing still has its
// requests read, as ZooKeeper's selector thread never blocks on one
// connection.
func (c *conn) writeInline() {
	if c.raw == nil {
		return
	}
	s := c.s
	s.mu.Lock()
	if c.writing || len(c.out) == 0 || s.closed || c.session != 0 && s.partitionedLocked(c.session) {
		// The writer has it, or a partition holds it (the writer waits
		// the partition out).
		if len(c.out) > 0 {
			c.wakeWriter()
		}
		s.mu.Unlock()
		return
	}
	buf := c.takeLocked()
	s.mu.Unlock()
	n, err := writeNoWait(c.raw, buf)
	s.mu.Lock()
	if n < len(buf) && err == nil {
		// The socket is full: the rest goes ahead of anything queued
		// meanwhile, by the writer, which may wait.
		c.writing = false
		rest := append(buf[:0], buf[n:]...)
		c.out = append(rest, c.out...)
	} else {
		c.giveBackLocked(buf)
	}
	// On an error the reader sees the close; the writer stops.
	if len(c.out) > 0 || c.closing || err != nil {
		c.wakeWriter()
	}
	s.mu.Unlock()
}

// disconnectLocked, expireLocked and restartLocked feed the simulated
// server an input the driver decides on (a connection gone, a session
// expired or the server restarted by a fault or a control request), through
// the journal when there is one, so that a recovery replays it too.
func (s *Server) disconnectLocked(id sim.ConnID) {
	if s.journal != nil {
		s.journal.disconnect(id)
	}
	s.sim.Disconnect(id)
}

func (s *Server) expireLocked(nowMs int64, session int64) bool {
	if s.journal != nil {
		s.journal.expire(nowMs, session)
	}
	return s.sim.ExpireSession(nowMs, session)
}

func (s *Server) restartLocked(nowMs int64) {
	if s.journal != nil {
		s.journal.restart(s.sim, nowMs) // it restarts the server
		return
	}
	s.sim.Restart(nowMs)
}
