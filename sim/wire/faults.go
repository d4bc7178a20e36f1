package wire

import (
	"fmt"
	"time"

	"github.com/zklab/zklab/sim"
)

// A FaultAction is what a fault does to the request that triggers it and
// to its session's connection. Every action acts through the connection
// or through the simulated server's own expiry: no ZooKeeper semantics is
// re-implemented here.
type FaultAction int

const (
	// FaultLoseReply applies the request and loses its reply: the
	// connection closes after what was queued before it, and nothing the
	// request produced for this connection (its reply, a watch event it
	// fired on its own session) reaches the client. The client sees its
	// request fail with connection loss, though it took effect: the
	// ambiguous outcome of ZooKeeper's recipes doc. The served history has
	// the request and no reply.
	FaultLoseReply FaultAction = iota + 1
	// FaultDropRequest closes the connection before the request is
	// applied: the client sees connection loss and the request never took
	// effect.
	FaultDropRequest
	// FaultDisconnect applies the request and sends its reply, then closes
	// the connection, as a network failure right after would.
	FaultDisconnect
	// FaultExpire applies the request and sends its reply, then expires the
	// session as its timeout running out would (sim.Server.ExpireSession):
	// its ephemerals are deleted and watches fire for the others; the
	// client learns it when it next connects. On a request that sets a
	// watch, this is an expiry while the client waits.
	FaultExpire
	// FaultPartition cuts the session off for Duration, starting with this
	// request, which is not applied: its connections go silent (what the
	// client sends is read and discarded, nothing is sent to it, pings
	// included), and a handshake for the session within Duration gets no
	// answer. The client learns of it by its read timeout, the server by
	// the session's expiry if Duration passes its timeout. A connection
	// that went silent stays silent after Duration (the client drops it by
	// its read timeout and reconnects).
	FaultPartition
)

var faultActionNames = map[FaultAction]string{
	FaultLoseReply: "lose-reply", FaultDropRequest: "drop-request", FaultDisconnect: "disconnect",
	FaultExpire: "expire", FaultPartition: "partition",
}

// FaultActions lists the actions in their order.
var FaultActions = []FaultAction{FaultLoseReply, FaultDropRequest, FaultDisconnect, FaultExpire, FaultPartition}

func (a FaultAction) String() string {
	if n, ok := faultActionNames[a]; ok {
		return n
	}
	return fmt.Sprintf("FaultAction(%d)", int(a))
}

// ParseFaultAction reads an action's name as String writes it.
func ParseFaultAction(name string) (FaultAction, error) {
	for _, a := range FaultActions {
		if a.String() == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown fault %q (want lose-reply, drop-request, disconnect, expire or partition)", name)
}

// A Fault is a one-shot rule: it fires on the first request that matches
// it after it is armed, and then is spent. A request is matched by its
// session and its number within the session: the session's requests are
// counted from 1 in the order the server reads them, pings left out, and
// if Op is set only the requests of that type are counted (the 2nd
// getChildren). These counts depend only on what the session's client
// sent, not on other sessions or on time, which makes a fault land on the
// same request of a run however its clients' goroutines interleave.
type Fault struct {
	// Session is the session id; 0 matches any session.
	Session int64
	// Op, if not 0, restricts the count to requests of this type.
	Op sim.OpCode
	// Request is the number the matched request has within its session
	// (of type Op, if set), from 1; 0 matches the next one.
	Request int
	Action  FaultAction
	// Duration is a partition's length.
	Duration time.Duration
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s on session %s", f.Action, SessionHex(f.Session))
	if f.Session == 0 {
		s = fmt.Sprintf("%s on any session", f.Action)
	}
	op := "request"
	if f.Op != 0 {
		op = f.Op.String()
	}
	if f.Request == 0 {
		s += ", its next " + op
	} else {
		s += fmt.Sprintf(", its %s #%d", op, f.Request)
	}
	if f.Action == FaultPartition {
		s += fmt.Sprintf(" for %v", f.Duration)
	}
	return s
}

// A FiredFault is a fault that fired, and on what.
type FiredFault struct {
	Fault
	At      time.Time // the server's clock when it fired
	Session int64     // the session it fired on
	Number  int       // the request's number within the session (of type Op, if set)
	Request sim.Request
}

// faultState is the Server's fault rules, guarded by its mutex.
type faultState struct {
	armed []Fault
	fired []FiredFault
	// counts are the requests each session has sent, pings left out:
	// [0] all of them, then by type.
	counts map[int64]map[sim.OpCode]int
	// partitionedUntil is when each partitioned session's partition ends.
	partitionedUntil map[int64]time.Time
}

// AddFault arms a one-shot fault. It returns an error for a fault that can
// never act (no action, a partition without a duration, a negative
// request number).
func (s *Server) AddFault(f Fault) error {
	if _, ok := faultActionNames[f.Action]; !ok {
		return fmt.Errorf("wire: fault with no action (%d)", int(f.Action))
	}
	if f.Request < 0 {
		return fmt.Errorf("wire: fault on request #%d: requests count from 1", f.Request)
	}
	if f.Action == FaultPartition && f.Duration <= 0 {
		return fmt.Errorf("wire: partition for %v: a partition needs a positive duration", f.Duration)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.armed = append(s.faults.armed, f)
	return nil
}

// ClearFaults disarms every fault not yet fired and ends the partitions
// (connections already silent stay so until their client drops them).
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.armed = nil
	s.faults.partitionedUntil = nil
}

// ArmedFaults returns the faults not yet fired, in the order armed.
func (s *Server) ArmedFaults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault(nil), s.faults.armed...)
}

// FiredFaults returns the faults that fired, in the order they did.
func (s *Server) FiredFaults() []FiredFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FiredFault(nil), s.faults.fired...)
}

// RequestCount returns how many requests a session has sent (pings left
// out), of type op if it is not 0.
func (s *Server) RequestCount(session int64, op sim.OpCode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.counts[session][op]
}

// countLocked counts a request of a session and returns the armed fault it
// triggers, if any, with the request's number.
func (s *Server) countLocked(session int64, req sim.Request) (Fault, int, bool) {
	if req.Op == sim.OpPing || session == 0 {
		return Fault{}, 0, false
	}
	fs := &s.faults
	if fs.counts == nil {
		fs.counts = make(map[int64]map[sim.OpCode]int)
	}
	c := fs.counts[session]
	if c == nil {
		c = make(map[sim.OpCode]int)
		fs.counts[session] = c
	}
	c[0]++
	c[req.Op]++
	for i, f := range fs.armed {
		if f.Session != 0 && f.Session != session || f.Op != 0 && f.Op != req.Op {
			continue
		}
		n := c[f.Op]
		if f.Request != 0 && f.Request != n {
			continue
		}
		fs.armed = append(fs.armed[:i:i], fs.armed[i+1:]...)
		return f, n, true
	}
	return Fault{}, 0, false
}

// partitionedLocked reports whether a session is cut off now.
func (s *Server) partitionedLocked(session int64, at time.Time) bool {
	until, ok := s.faults.partitionedUntil[session]
	if !ok {
		return false
	}
	if !at.Before(until) {
		delete(s.faults.partitionedUntil, session)
		return false
	}
	return true
}

// requestWithFaultsLocked applies a request on c, or what a fault makes of
// it. c is not muted and has a session.
func (s *Server) requestWithFaultsLocked(c *conn, req sim.Request, nowMs int64, at time.Time) {
	if s.partitionedLocked(c.session, at) {
		c.muted = true
		return
	}
	f, n, fire := s.countLocked(c.session, req)
	if !fire {
		s.applyLocked(c, req, nowMs, at)
		return
	}
	s.faults.fired = append(s.faults.fired, FiredFault{Fault: f, At: at, Session: c.session, Number: n, Request: req})
	switch f.Action {
	case FaultLoseReply:
		c.muted = true // flushLocked drops this request's outputs for c
		s.applyLocked(c, req, nowMs, at)
		c.closeAfterFlush("fault: reply lost")
	case FaultDropRequest:
		c.muted = true
		c.closeAfterFlush("fault: request dropped")
	case FaultDisconnect:
		s.applyLocked(c, req, nowMs, at)
		c.muted = true // what the client sends after is not read
		c.closeAfterFlush("fault: disconnected")
	case FaultExpire:
		s.applyLocked(c, req, nowMs, at)
		s.sim.ExpireSession(nowMs, c.session)
		s.stepInternalLocked(nowMs)
	case FaultPartition:
		if s.faults.partitionedUntil == nil {
			s.faults.partitionedUntil = make(map[int64]time.Time)
		}
		s.faults.partitionedUntil[c.session] = at.Add(f.Duration)
		for _, other := range s.conns {
			if other.session == c.session {
				other.muted = true
			}
		}
	default:
		panic(fmt.Sprintf("wire: fault action %v armed", f.Action))
	}
}
