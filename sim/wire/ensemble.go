package wire

import (
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/zklab/zklab/sim"
)

// EnsembleConfig configures an EnsembleServer.
type EnsembleConfig struct {
	// MaxFrameBytes and MaxClientCnxns are Config's, per member.
	MaxFrameBytes  int
	MaxClientCnxns int
	// FourLetterWord, if set, answers a four-letter word sent to member
	// (1-based), as Config.FourLetterWord.
	FourLetterWord func(member int, word string, w io.Writer)
	// Log, if set, gets what the ensemble did that an operator wants to
	// read (elections, crashes, restarts), a line each.
	Log io.Writer
	// ElectionDelay is how long a leader election takes once a quorum
	// can elect; 0 means sim.ElectionMinMs.
	ElectionDelay time.Duration
	// Restarted, if set, is called (on a goroutine of its own) after a
	// member crashed by a fault (CrashServer, KillLeader, LoseQuorum,
	// RestartAll) restarts, for its listener to be opened again and
	// served with ServeMember: a crash closed the old one.
	Restarted func(member int)
}

// An EnsembleServer serves the ZooKeeper client protocol for every member
// of one pure *sim.Ensemble, a listener (or more) per member. As Server,
// it only translates: frames become the ensemble's inputs with the
// current time, and its outputs become frames. Replication, leader
// election, sessions moving between members, a member refusing clients
// without a leader: all of it is the ensemble's. The driver decides only
// when: it takes the ensemble's internal steps (messages between members,
// each member's application of what committed) as soon as they are
// enabled, in the order Ensemble.Steps lists them, and it elects a leader
// ElectionDelay after a quorum can elect one.
//
// Crash and Restart are a member's process killed and started again: the
// member's connections and listeners close; what it logged stays.
//
// Its clock is package time's, as Server's. One mutex guards the
// ensemble.
type EnsembleServer struct {
	cfg EnsembleConfig

	mu       sync.Mutex
	ens      *sim.Ensemble
	start    time.Time
	closed   bool
	nextConn sim.ConnID
	conns    map[sim.ConnID]*ensConn
	members  []*ensMember // members[i-1] is member i
	timer    deadlineTimer
	electing bool
	election *time.Timer
	steps    []sim.EnsembleStep
	faults   ensembleFaults

	wg sync.WaitGroup
}

type ensMember struct {
	listeners map[net.Listener]struct{}
	perIP     map[string]int
	stats     counters
	started   time.Time
}

// NewEnsemble returns a server for ens, which it owns from now on. Virtual
// time 0 of the ensemble is now.
func NewEnsemble(ens *sim.Ensemble, cfg EnsembleConfig) *EnsembleServer {
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = ens.Member(1).Config().MaxPacketBytes
	}
	if cfg.ElectionDelay == 0 {
		cfg.ElectionDelay = sim.ElectionMinMs * time.Millisecond
	}
	s := &EnsembleServer{cfg: cfg, ens: ens, start: time.Now(), conns: make(map[sim.ConnID]*ensConn)}
	for range ens.Servers() {
		s.members = append(s.members, &ensMember{listeners: make(map[net.Listener]struct{}), perIP: make(map[string]int),
			stats: counters{latencyMinMs: math.MaxInt64}, started: s.start})
	}
	s.faults = newEnsembleFaults(len(s.members))
	s.timer = newDeadlineTimer(s.onTimer)
	s.mu.Lock()
	s.logNotesLocked()
	s.rearmLocked(0)
	s.mu.Unlock()
	return s
}

// Servers is the number of members.
func (s *EnsembleServer) Servers() int { return len(s.members) }

// ServeMember accepts connections on l for member i (1-based) until l
// fails, the member crashes (ErrMemberCrashed) or the server closes
// (ErrServerClosed). A member that is down does not take l: it closes it
// and returns ErrMemberCrashed.
func (s *EnsembleServer) ServeMember(i int, l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if !s.ens.Up(i) {
		// Crashed again before its listener came back: the port stays
		// closed.
		s.mu.Unlock()
		l.Close()
		return ErrMemberCrashed
	}
	m := s.members[i-1]
	m.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(m.listeners, l)
		s.mu.Unlock()
	}()
	return acceptLoop(l, func(nc net.Conn) { s.serveConn(i, nc) }, &s.mu, func() error {
		if s.closed {
			return ErrServerClosed
		}
		if _, open := m.listeners[l]; !open {
			return ErrMemberCrashed
		}
		return nil
	})
}

// ServeMemberConn serves one client connection of member i in the
// background (a connection another process accepted and forwards, say);
// the server closes nc when it is done with it.
func (s *EnsembleServer) ServeMemberConn(i int, nc net.Conn) { s.serveConn(i, nc) }

func (s *EnsembleServer) serveConn(i int, nc net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[i-1]
	if s.closed || !s.ens.Up(i) {
		nc.Close()
		return
	}
	addr := remoteIP(nc)
	ipKey := addr.String()
	if s.cfg.MaxClientCnxns > 0 && m.perIP[ipKey] >= s.cfg.MaxClientCnxns {
		nc.Close()
		return
	}
	s.nextConn++
	c := &ensConn{s: s, member: i, id: s.nextConn, nc: nc, remote: nc.RemoteAddr().String(), ipKey: ipKey,
		opened: time.Now(), pending: make(map[int32]pendingRequest), outQueue: newOutQueue()}
	c.stats.latencyMinMs = math.MaxInt64
	// A member without a leader still reads the connection (a
	// four-letter word is answered) but closes it at its handshake
	// (NIOServerCnxn: "ZooKeeperServer not running").
	c.open = s.ens.Open(i, c.id, addr)
	s.conns[c.id] = c
	m.perIP[ipKey]++
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// Crash kills member i's process: its client connections and listeners
// close (ServeMember returns), and the ensemble loses it (sim.Ensemble.Crash).
func (s *EnsembleServer) Crash(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.ens.Up(i) {
		return
	}
	s.faultLocked(func(int64) { s.crashLocked(i) })
}

// crashLocked crashes member i, which runs.
func (s *EnsembleServer) crashLocked(i int) {
	s.ens.Crash(i)
	for _, c := range s.conns {
		if c.member == i {
			c.open = false
			c.nc.Close()
		}
	}
	for l := range s.members[i-1].listeners {
		l.Close()
		delete(s.members[i-1].listeners, l)
	}
}

// Restart starts member i's process again with what it had logged
// (sim.Ensemble.Restart); serve it again with ServeMember.
func (s *EnsembleServer) Restart(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ens.Up(i) {
		return
	}
	s.faultLocked(func(nowMs int64) { s.restartLocked(nowMs, i) })
}

// restartLocked restarts member i, which is down.
func (s *EnsembleServer) restartLocked(nowMs int64, i int) {
	s.ens.Restart(nowMs, i)
	m := s.members[i-1]
	m.stats = counters{latencyMinMs: math.MaxInt64}
	m.started = time.Now()
}

// Up reports whether member i runs.
func (s *EnsembleServer) Up(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ens.Up(i)
}

// Leader is the leading member, 0 while there is none.
func (s *EnsembleServer) Leader() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ens.Leader()
}

// Close stops the server: every listener and connection closes, and it
// waits for its goroutines.
func (s *EnsembleServer) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, m := range s.members {
			for l := range m.listeners {
				l.Close()
			}
		}
		for _, c := range s.conns {
			c.nc.Close()
		}
		s.timer.stop()
		if s.election != nil {
			s.election.Stop()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *EnsembleServer) nowMs() int64 { return time.Since(s.start).Milliseconds() }

// advanceLocked lets the leader's time reach nowMs before anything else
// happens at nowMs (as Server.advanceLocked).
func (s *EnsembleServer) advanceLocked(nowMs int64) {
	if !s.timer.due(nowMs) {
		return
	}
	s.ens.Tick(nowMs)
	s.settleLocked(nowMs)
}

// settleLocked takes the ensemble's enabled steps, the first listed each
// time, until none is left; sends what the members output; and starts an
// election if one can now find a leader.
func (s *EnsembleServer) settleLocked(nowMs int64) {
	for {
		s.steps = s.ens.Steps(s.steps[:0])
		if len(s.steps) == 0 {
			break
		}
		s.ens.Step(nowMs, s.steps[0])
	}
	s.flushLocked()
	s.logNotesLocked()
	if s.ens.CanElect() && !s.electing && !s.closed {
		s.electing = true
		s.election = time.AfterFunc(s.cfg.ElectionDelay, s.elect)
	}
}

func (s *EnsembleServer) elect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.electing = false
	if s.closed {
		return
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	s.ens.Elect(nowMs)
	s.settleLocked(nowMs)
	s.rearmLocked(nowMs)
}

func (s *EnsembleServer) logNotesLocked() {
	for _, n := range s.ens.Notes() {
		if s.cfg.Log != nil {
			fmt.Fprintf(s.cfg.Log, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), n)
		}
	}
}

func (s *EnsembleServer) rearmLocked(nowMs int64) {
	if !s.closed {
		s.timer.rearm(nowMs, s.ens.NextDeadlineMs())
	}
}

func (s *EnsembleServer) onTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	s.rearmLocked(nowMs)
}

// flushLocked turns the members' outputs into frames on their
// connections' queues, in order.
func (s *EnsembleServer) flushLocked() {
	at := time.Now()
	for _, o := range s.ens.Outputs() {
		c := s.conns[o.Conn]
		if c == nil {
			panic(fmt.Sprintf("wire: ensemble output for unknown connection %d", o.Conn))
		}
		m := s.members[c.member-1]
		switch o.Kind {
		case sim.OutConnect:
			c.enqueue(AppendConnectResponse(c.out, o.Connect, c.connect.HasReadOnly))
			if o.Connect.SessionID != 0 {
				c.session, c.timeoutMs = o.Connect.SessionID, o.Connect.TimeoutMs
			}
		case sim.OutReply:
			r := o.Reply
			op, latencyMs := answered(c.pending, &c.stats, c.id, &r, at)
			m.stats.reply(latencyMs)
			c.enqueue(AppendReply(c.out, op, &r))
		case sim.OutEvent:
			c.enqueue(AppendEvent(c.out, o.Event))
		case sim.OutClose:
			c.open = false
			c.closeAfterFlush()
		}
	}
}

// ensConn is one client connection of a member: a reader that applies
// its frames under the server's lock and a writer that sends what is
// queued, as Server's conn.
type ensConn struct {
	s         *EnsembleServer
	member    int
	id        sim.ConnID
	nc        net.Conn
	remote    string
	ipKey     string
	opened    time.Time
	open      bool // the ensemble has it: not refused, crashed or closed
	connect   ConnectRequest
	session   int64
	timeoutMs int32
	pending   map[int32]pendingRequest
	stats     connCounters

	outQueue // guarded by s.mu
}

func (c *ensConn) enqueue(b []byte) {
	c.out = b
	c.queued++
	c.stats.sent++
	c.s.members[c.member-1].stats.sent++
	c.wakeWriter()
}

func (c *ensConn) readLoop() {
	defer c.s.wg.Done()
	// A frame past MaxFrameBytes closes the connection unread, not
	// drained as Server's does.
	fr := frameReading{maxFrameBytes: c.s.cfg.MaxFrameBytes}
	if answer := c.s.cfg.FourLetterWord; answer != nil {
		fr.answerWord = func(word string, w io.Writer) { answer(c.member, word, w) }
	}
	c.end(fr.readFrames(c.nc, c))
}

// caughtUp: the writer sends everything.
func (c *ensConn) caughtUp() {}

// handshake applies the connect request. It returns why the connection
// must close, or "".
func (c *ensConn) handshake(body []byte) string {
	req, err := DecodeConnectRequest(body)
	if err != nil {
		return err.Error()
	}
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !c.open || !s.ens.HasConn(c.id) {
		// A member without a leader refuses the handshake
		// (NIOServerCnxn: "ZooKeeperServer not running").
		return "closed by the server"
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	if !s.ens.HasConn(c.id) {
		return "connection closed by the server"
	}
	c.connect = req
	c.stats.received++
	s.members[c.member-1].stats.received++
	s.ens.Connect(nowMs, c.id, req.ConnectRequest)
	s.settleLocked(nowMs)
	s.rearmLocked(nowMs)
	return ""
}

// request applies one request. It returns why the connection must close,
// or "".
func (c *ensConn) request(body []byte) string {
	req, err := DecodeRequest(body)
	if err != nil && !req.Malformed {
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
	if !s.ens.HasConn(c.id) {
		// The member has closed the connection: what the client sent
		// after is unread.
		return ""
	}
	at := time.Now()
	c.stats.request(req, at)
	s.members[c.member-1].stats.received++
	c.pending[req.Xid] = pendingRequest{op: req.Op, at: at}
	s.ens.Receive(nowMs, c.id, req)
	s.settleLocked(nowMs)
	s.rearmLocked(nowMs)
	return ""
}

// end is the reader's last act: the member is told the connection is
// gone (its session lives on until it expires). The reason is not kept.
func (c *ensConn) end(string) {
	s := c.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c.closeAfterFlush()
	if s.ens.HasConn(c.id) {
		s.ens.Disconnect(c.id)
		s.settleLocked(s.nowMs())
	}
	delete(s.conns, c.id)
	m := s.members[c.member-1]
	if m.perIP[c.ipKey]--; m.perIP[c.ipKey] == 0 {
		delete(m.perIP, c.ipKey)
	}
	c.nc.Close()
}

func (c *ensConn) writeLoop() {
	defer c.s.wg.Done()
	c.writeFrames(&c.s.mu, c.nc, func() bool { return c.closing })
}

// Member is member i (1-based) as the four-letter words see it.
func (s *EnsembleServer) Member(i int) FourLetterServer { return ensembleMember{s, i} }

type ensembleMember struct {
	s *EnsembleServer
	i int
}

func (v ensembleMember) Stats() Stats {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[v.i-1]
	srv := s.ens.Member(v.i)
	st := Stats{Received: m.stats.received, Sent: m.stats.sent, Started: m.started}
	switch {
	case !s.ens.Serving(v.i):
	case s.ens.Leader() == v.i:
		st.Mode = "leader"
	default:
		st.Mode = "follower"
	}
	st.Zxid, st.NodeCount, st.Sessions, st.ApproximateDataSize = srv.LastZxid(), srv.NodeCount(), len(srv.Sessions()), srv.ApproximateDataSize()
	for _, info := range srv.SessionInfos() {
		st.Ephemerals += len(info.Ephemerals)
	}
	st.MinLatencyMs, st.AvgLatencyMs, st.MaxLatencyMs = m.stats.latencies()
	for _, c := range s.conns {
		if c.member == v.i {
			st.Connections++
			st.Outstanding += len(c.pending)
		}
	}
	paths := make(map[string]bool)
	conns := make(map[sim.ConnID]bool)
	for _, w := range srv.Watches() {
		st.Watches++
		paths[w.Path] = true
		conns[w.Conn] = true
	}
	st.WatchPaths, st.WatchConns = len(paths), len(conns)
	return st
}

func (v ensembleMember) Conns() []ConnInfo {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var infos []ConnInfo
	for _, c := range s.conns {
		if c.member != v.i {
			continue
		}
		infos = append(infos, c.infoLocked())
	}
	slices.SortFunc(infos, func(a, b ConnInfo) int { return int(a.ID - b.ID) })
	return infos
}

func (v ensembleMember) ResetStats() {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[v.i-1].stats = counters{latencyMinMs: math.MaxInt64}
	for _, c := range s.conns {
		if c.member == v.i {
			c.stats = connCounters{counters: counters{latencyMinMs: math.MaxInt64}}
		}
	}
}

func (v ensembleMember) Inspect(fn func(srv *sim.Server)) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	fn(v.s.ens.Member(v.i))
}
