package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/zklab/zklab/sim"
)

// Faults a test injects into a running Server, by name after ZooKeeper's
// own test controller (ZOOKEEPER-3948/3970, package
// org.apache.zookeeper.server.controller: CLOSECONNECTION, EXPIRESESSION,
// REJECTCONNECTIONS, ADDDELAY, FAILREQUESTS, NORESPONSE, RESET) and
// zklab's own, aimed at one session's next request (LoseNextReply,
// DropNextRequest), a session's network (Partition) and the server as a
// whole (Restart).
//
// Every fault acts where the wire meets the simulated server: on frames,
// connections and the order of calls into *sim.Server. None has semantics
// of its own; an expiry and a restart are the simulated server's
// (sim.Server.ExpireSession, sim.Server.Restart). Each method takes the
// server's lock, so faults may race client traffic freely.
//
// A lost message takes its connection with it, as on TCP, where a message
// is lost only when the connection breaks (a partition loses nothing: it
// holds the connection's traffic both ways until it ends): without the close a client
// would wait forever for that xid (go-zookeeper) or fail on the next one's
// order (the Java client). The session lives on; the client reconnects to
// it and must find out for itself whether its request was applied.

// ErrNoSession is returned for a fault aimed at a session the server does
// not hold (never created, closed or expired).
var ErrNoSession = errors.New("no such session")

// ErrNoConnection is returned for a fault aimed at a live session that has
// no connection at the moment.
var ErrNoConnection = errors.New("session has no connection")

// faultState is what the faults armed now; guarded by Server.mu.
type faultState struct {
	rejecting     bool
	rejectUntil   time.Time // a restart's down time: connections are refused before it
	failRemaining int64     // FAILREQUESTS: requests to fail, -1 for all
	holdRemaining int64     // NORESPONSE: replies to withhold, -1 for all
	loseReply     map[int64]bool
	dropRequest   map[int64]bool
	partitioned   map[int64]time.Time // session -> the end of its partition
	delayNs       int64               // ADDDELAY
}

// FaultsArmed lists what is armed now, for the control API's answers.
type FaultsArmed struct {
	RejectConnections bool
	DelayMs           int64
	FailRequests      int64 // -1: all until reset
	HoldResponses     int64 // -1: all until reset
	LoseReply         []int64
	DropRequest       []int64
	Partitioned       []int64
}

// SessionState is one live session for the control API's session list.
type SessionState struct {
	sim.SessionInfo
	// Conn is its connection, nil while it has none.
	Conn *ConnInfo
	// Watches are the watches its connection holds.
	Watches []sim.Watch
}

func (s *Server) liveLocked(session int64) bool {
	for _, id := range s.sim.Sessions() {
		if id == session {
			return true
		}
	}
	return false
}

// SessionLive reports whether the server holds session now.
func (s *Server) SessionLive(session int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveLocked(session)
}

// connOfLocked is the open connection a session is attached to.
func (s *Server) connOfLocked(session int64) *conn {
	for _, c := range s.conns {
		if c.session == session && !c.cut && s.sim.HasConn(c.id) {
			return c
		}
	}
	return nil
}

// cutLocked breaks a connection now: nothing more is sent on it, nothing
// more it sends is applied, and the simulated server is told at once, so
// that the next call sees it gone.
func (s *Server) cutLocked(c *conn, reason string) {
	c.cut = true
	c.closeAfterFlush(reason)
	if s.sim.HasConn(c.id) {
		s.disconnectLocked(c.id)
	}
	c.nc.Close()
}

// CloseConnection closes the connection of a session (CLOSECONNECTION),
// or every connection when session is 0. The session lives on: its client
// reconnects to it.
func (s *Server) CloseConnection(session int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if session == 0 {
		s.noteFaultLocked(Fault{Verb: "CLOSECONNECTION"})
		for _, c := range s.conns {
			s.cutLocked(c, "fault: connection closed by the controller")
		}
		return nil
	}
	if !s.liveLocked(session) {
		return fmt.Errorf("session 0x%x: %w", session, ErrNoSession)
	}
	c := s.connOfLocked(session)
	if c == nil {
		return fmt.Errorf("session 0x%x: %w", session, ErrNoConnection)
	}
	s.noteFaultLocked(Fault{Verb: "CLOSECONNECTION", Session: session})
	s.cutLocked(c, "fault: connection closed by the controller")
	return nil
}

// ExpireSessions expires every live session (EXPIRESESSION without a
// session) through the simulated server, and returns their ids.
func (s *Server) ExpireSessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "EXPIRESESSION"})
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	ids := s.sim.Sessions()
	for _, id := range ids {
		s.expireLocked(nowMs, id)
	}
	s.stepInternalLocked(nowMs)
	s.rearmLocked(nowMs)
	return ids
}

// RejectConnections makes the server close every new connection at
// accept, unread, until ResetFaults (REJECTCONNECTIONS; ZooKeeper 3.8's
// controller leaves it unimplemented).
func (s *Server) RejectConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "REJECTCONNECTIONS"})
	s.faults.rejecting = true
}

// AddDelay delays every request by d before it is applied (ADDDELAY), as
// ZooKeeper's ControllableConnection sleeps before readRequest. Requests
// of one connection stay in order.
func (s *Server) AddDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "ADDDELAY", Duration: max(d, 0)})
	s.faults.delayNs = max(int64(d), 0)
}

// FailRequests answers the next n requests of any connection (pings
// included, as ZooKeeper's controller counts them) with APIERROR, without
// applying them (FAILREQUESTS); n < 0 fails every request until
// ResetFaults.
func (s *Server) FailRequests(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "FAILREQUESTS", Count: max(n, -1)})
	s.faults.failRemaining = max(n, -1)
}

// HoldResponses applies the next n requests but sends none of their
// replies (NORESPONSE); n < 0 holds every reply until ResetFaults. Unlike
// ZooKeeper's controller, which holds notifications too, watch events are
// still sent: the fault is about replies.
func (s *Server) HoldResponses(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "NORESPONSE", Count: max(n, -1)})
	s.faults.holdRemaining = max(n, -1)
}

// LoseNextReply applies the session's next request (a ping, an auth or a
// setWatches aside: the next with an xid of 0 or more) and loses its
// reply with the connection: the ambiguous outcome a client must handle.
func (s *Server) LoseNextReply(session int64) error {
	return s.armForSession(Fault{Verb: "LOSEREPLY", Session: session}, func(f *faultState) { f.loseReply[session] = true })
}

// DropNextRequest loses the session's next request (as LoseNextReply
// counts them) with the connection, before the server sees it.
func (s *Server) DropNextRequest(session int64) error {
	return s.armForSession(Fault{Verb: "DROPREQUEST", Session: session}, func(f *faultState) { f.dropRequest[session] = true })
}

// Partition cuts a session off for d, silently, as a network partition
// (netem's 100% loss) does: its connection stays open, nothing the client
// sends on it is read and nothing is sent to it until d has passed; a
// handshake for the session on a new connection waits the same way. Then,
// as TCP's retransmissions deliver what the partition held, the requests
// are applied and the replies, events and a close the server decided on
// meanwhile go out. The client notices only through its own timeouts (its
// read timeout, two thirds of the session timeout for the Java client and
// go-zookeeper), and the server's clock runs on: a partition longer than
// the session's timeout expires it.
func (s *Server) Partition(session int64, d time.Duration) error {
	return s.armForSession(Fault{Verb: "PARTITION", Session: session, Duration: d}, func(f *faultState) {
		f.partitioned[session] = time.Now().Add(d)
	})
}

// partitionPollWait bounds how long a held connection sleeps before it
// looks again whether its partition has ended (RESET ends it early).
const partitionPollWait = 20 * time.Millisecond

// awaitHealLocked blocks, without the lock, until session is not partitioned or
// the server closed. Called with s.mu held; it returns with s.mu held and
// reports whether it waited.
func (s *Server) awaitHealLocked(session int64) bool {
	waited := false
	for !s.closed && session != 0 && s.partitionedLocked(session) {
		wait := min(time.Until(s.faults.partitioned[session]), partitionPollWait)
		s.mu.Unlock()
		time.Sleep(wait)
		s.mu.Lock()
		waited = true
	}
	return waited
}

func (s *Server) armForSession(fault Fault, arm func(*faultState)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	session := fault.Session
	if !s.liveLocked(session) {
		return fmt.Errorf("session 0x%x: %w", session, ErrNoSession)
	}
	s.noteFaultLocked(fault)
	if s.faults.loseReply == nil {
		s.faults.loseReply = make(map[int64]bool)
		s.faults.dropRequest = make(map[int64]bool)
		s.faults.partitioned = make(map[int64]time.Time)
	}
	arm(&s.faults)
	return nil
}

// Restart restarts the server (sim.Server.Restart: the tree and sessions
// survive, every session's timeout starts again) after closing every
// connection; for down after, new connections are refused, as while a
// real server starts up.
func (s *Server) Restart(down time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "RESTART", Duration: down})
	for _, c := range s.conns {
		s.cutLocked(c, "fault: server restarted")
	}
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	s.restartLocked(nowMs)
	s.faults.rejectUntil = time.Now().Add(down)
	s.timer.atMs = -1 // the deadlines have all moved: rearm anew
	s.rearmLocked(nowMs)
}

// ResetFaults disarms every fault (RESET): delay, failures, held replies,
// rejection, and zklab's per-session faults and partitions.
func (s *Server) ResetFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteFaultLocked(Fault{Verb: "RESET"})
	s.faults = faultState{}
}

// Armed reports the faults armed now.
func (s *Server) Armed() FaultsArmed {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &s.faults
	a := FaultsArmed{
		RejectConnections: f.rejecting, DelayMs: f.delayNs / int64(time.Millisecond),
		FailRequests: f.failRemaining, HoldResponses: f.holdRemaining,
	}
	now := time.Now()
	for _, id := range s.sim.Sessions() {
		if f.loseReply[id] {
			a.LoseReply = append(a.LoseReply, id)
		}
		if f.dropRequest[id] {
			a.DropRequest = append(a.DropRequest, id)
		}
		if until, ok := f.partitioned[id]; ok && now.Before(until) {
			a.Partitioned = append(a.Partitioned, id)
		}
	}
	return a
}

// SessionStates lists the live sessions in id order with their
// connections, ephemerals and watches.
func (s *Server) SessionStates() []SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	watches := s.sim.Watches()
	var out []SessionState
	for _, info := range s.sim.SessionInfos() {
		st := SessionState{SessionInfo: info, Watches: []sim.Watch{}}
		if st.Ephemerals == nil {
			st.Ephemerals = []string{}
		}
		if c := s.connOfLocked(info.ID); c != nil {
			ci := c.infoLocked()
			st.Conn = &ci
			for _, w := range watches {
				if w.Conn == c.id {
					st.Watches = append(st.Watches, w)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// The hooks below are called by server.go, under s.mu.

// refuseLocked reports why a new connection is refused, or "".
func (s *Server) refuseLocked(at time.Time) string {
	if s.faults.rejecting {
		return "fault: rejecting connections"
	}
	if at.Before(s.faults.rejectUntil) {
		return "fault: server restarting"
	}
	return ""
}

// delayBeforeRequest is ADDDELAY's delay, read without the lock.
func (s *Server) delayBeforeRequest() time.Duration {
	s.mu.Lock()
	d := s.faults.delayNs
	s.mu.Unlock()
	return time.Duration(d)
}

// partitionedLocked reports whether a session is cut off now.
func (s *Server) partitionedLocked(session int64) bool {
	until, ok := s.faults.partitioned[session]
	if !ok {
		return false
	}
	if time.Now().Before(until) {
		return true
	}
	delete(s.faults.partitioned, session)
	return false
}

// requestFault is what a fault does to a request about to be applied.
type requestFault int

const (
	applyRequest requestFault = iota
	failRequest               // answered APIERROR, not applied
	dropRequest               // lost with its connection
)

// requestFaultLocked decides a request's fate, and arms the loss of its
// reply when that is what is armed.
func (s *Server) requestFaultLocked(c *conn, req sim.Request) requestFault {
	f := &s.faults
	if f.failRemaining != 0 {
		if f.failRemaining > 0 {
			f.failRemaining--
		}
		return failRequest
	}
	if req.Xid < 0 {
		return applyRequest
	}
	if f.dropRequest[c.session] {
		delete(f.dropRequest, c.session)
		return dropRequest
	}
	if f.loseReply[c.session] {
		delete(f.loseReply, c.session)
		c.loseXid, c.loseArmed = req.Xid, true
	}
	return applyRequest
}

// replyLostLocked reports whether a reply must not be sent: withheld by
// NORESPONSE, or lost with its connection.
func (s *Server) replyLostLocked(c *conn, xid int32) bool {
	if c.loseArmed && c.loseXid == xid {
		c.loseArmed = false
		s.cutLocked(c, "fault: reply lost")
		return true
	}
	if f := &s.faults; f.holdRemaining != 0 {
		if f.holdRemaining > 0 {
			f.holdRemaining--
		}
		return true
	}
	return false
}
