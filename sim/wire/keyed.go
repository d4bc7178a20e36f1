package wire

import (
	"fmt"
	"time"

	"github.com/zklab/zklab/sim"
)

// Keyed faults: a fault armed for a session's n-th request, counted by the
// server, so that a test can say "lose the reply of client 0's first
// getChildren" before the client sends it. They act through the faults of
// faults.go (a lost reply, a dropped request, a partition, a cut
// connection) and the simulated server's own expiry; they only choose the
// request.

// A FaultAction is what a keyed fault does to the request it is keyed to.
type FaultAction int

const (
	// FaultLoseReply applies the request and loses its reply with the
	// connection (LoseNextReply): the client sees connection loss, though
	// the request took effect.
	FaultLoseReply FaultAction = iota + 1
	// FaultDropRequest loses the request with the connection before it is
	// applied (DropNextRequest).
	FaultDropRequest
	// FaultDisconnect applies the request and sends its reply, then closes
	// the connection, as a network failure right after would; what the
	// client sent after it is not applied.
	FaultDisconnect
	// FaultExpire applies the request and sends its reply, then expires the
	// session as its timeout running out would (sim.Server.ExpireSession):
	// on a request that sets a watch, an expiry while the client waits.
	FaultExpire
	// FaultPartition partitions the session for Duration from this
	// request, which the partition holds with the rest (Partition).
	FaultPartition
)

// FaultActions lists the actions in their order.
var FaultActions = []FaultAction{FaultLoseReply, FaultDropRequest, FaultDisconnect, FaultExpire, FaultPartition}

var faultActionNames = map[FaultAction]string{
	FaultLoseReply: "lose-reply", FaultDropRequest: "drop-request", FaultDisconnect: "disconnect",
	FaultExpire: "expire", FaultPartition: "partition",
}

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

// A KeyedFault is a one-shot fault keyed to a request: it fires on the
// first request that matches it after it is armed. A session's requests
// are counted from 1 in the order the server reads them, those with a
// negative xid (pings, auth) left out, and if Op is set only the requests
// of that type are counted (the 2nd getChildren). The counts depend only
// on what the session's client sent, not on other sessions or on time, so
// a fault lands on the same request of a client however the clients'
// goroutines interleave.
type KeyedFault struct {
	// Session is the session id; 0 matches any session.
	Session int64
	// Op, if not 0, restricts the count to requests of this type.
	Op sim.OpCode
	// Request is the matched request's number within its session (among
	// those of type Op, if set), from 1; 0 matches the next one.
	Request int
	Action  FaultAction
	// Duration is a partition's length.
	Duration time.Duration
}

func (f KeyedFault) String() string {
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

// A FiredKeyedFault is a keyed fault that fired, and on what.
type FiredKeyedFault struct {
	KeyedFault
	At      time.Time // the server's clock when it fired
	On      int64     // the session it fired on
	Number  int       // the request's number within the session (of type Op, if set)
	Request sim.Request
}

// keyedFaults is the keyed faults' state, guarded by Server.mu.
type keyedFaults struct {
	armed []KeyedFault
	fired []FiredKeyedFault
	// counts are each session's requests: [0] all of them, then by type.
	counts map[int64]map[sim.OpCode]int
}

// AddKeyedFault arms a one-shot fault keyed to a request. It returns an
// error for a fault that cannot act.
func (s *Server) AddKeyedFault(f KeyedFault) error {
	if _, ok := faultActionNames[f.Action]; !ok {
		return fmt.Errorf("wire: keyed fault with no action (%d)", int(f.Action))
	}
	if f.Request < 0 {
		return fmt.Errorf("wire: keyed fault on request #%d: requests count from 1", f.Request)
	}
	if f.Action == FaultPartition && f.Duration <= 0 {
		return fmt.Errorf("wire: partition for %v: a partition needs a positive duration", f.Duration)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyed.armed = append(s.keyed.armed, f)
	return nil
}

// ClearKeyedFaults disarms the keyed faults not yet fired.
func (s *Server) ClearKeyedFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyed.armed = nil
}

// KeyedFaultsArmed returns the keyed faults not yet fired, in the order armed.
func (s *Server) KeyedFaultsArmed() []KeyedFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]KeyedFault(nil), s.keyed.armed...)
}

// KeyedFaultsFired returns the keyed faults that fired, in the order they did.
func (s *Server) KeyedFaultsFired() []FiredKeyedFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FiredKeyedFault(nil), s.keyed.fired...)
}

// RequestCount returns how many requests a session has sent as keyed
// faults count them, of type op if it is not 0.
func (s *Server) RequestCount(session int64, op sim.OpCode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyed.counts[session][op]
}

// keyedBeforeLocked counts a request and, if it triggers a keyed fault,
// arms what acts before the request is applied (faults.go's lost reply,
// dropped request or partition). It returns the fault fired, for
// keyedAfterLocked.
func (s *Server) keyedBeforeLocked(c *conn, req sim.Request) (FaultAction, bool) {
	if req.Xid < 0 || c.session == 0 {
		return 0, false
	}
	k := &s.keyed
	if k.counts == nil {
		k.counts = make(map[int64]map[sim.OpCode]int)
	}
	counts := k.counts[c.session]
	if counts == nil {
		counts = make(map[sim.OpCode]int)
		k.counts[c.session] = counts
	}
	counts[0]++
	counts[req.Op]++
	for i, f := range k.armed {
		if f.Session != 0 && f.Session != c.session || f.Op != 0 && f.Op != req.Op {
			continue
		}
		n := counts[f.Op]
		if f.Request != 0 && f.Request != n {
			continue
		}
		k.armed = append(k.armed[:i:i], k.armed[i+1:]...)
		k.fired = append(k.fired, FiredKeyedFault{KeyedFault: f, At: time.Now(), On: c.session, Number: n, Request: req})
		fs := &s.faults
		if fs.loseReply == nil {
			fs.loseReply = make(map[int64]bool)
			fs.dropRequest = make(map[int64]bool)
			fs.partitioned = make(map[int64]time.Time)
		}
		switch f.Action {
		case FaultLoseReply:
			c.loseXid, c.loseArmed = req.Xid, true
		case FaultDropRequest:
			fs.dropRequest[c.session] = true
		case FaultPartition:
			fs.partitioned[c.session] = time.Now().Add(f.Duration)
		}
		return f.Action, true
	}
	return 0, false
}

// keyedAfterLocked does what a fired keyed fault does after its request
// was applied and answered.
func (s *Server) keyedAfterLocked(c *conn, action FaultAction, nowMs int64) {
	switch action {
	case FaultDisconnect:
		// Not cutLocked: the reply already queued must still go out; the
		// writer closes the connection after it.
		c.cut = true
		c.closeAfterFlush("fault: disconnected")
		if s.sim.HasConn(c.id) {
			s.disconnectLocked(c.id)
		}
	case FaultExpire:
		s.expireLocked(nowMs, c.session)
		s.stepInternalLocked(nowMs)
	}
}
