package wire

import (
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// An Observer is told what a Server does, in the order the simulated
// server does it: its calls are made under the server's lock, one at a
// time, so their order is the order of the server's history. A method must
// return quickly and must not call back into the Server (it would
// deadlock). Embed NopObserver to implement only some.
//
// at is the server's clock (package time) when it happened.
type Observer interface {
	// ConnOpened: a connection was accepted.
	ConnOpened(at time.Time, c ConnInfo)
	// ConnRefused: a connection was closed at accept, past MaxClientCnxns.
	ConnRefused(at time.Time, remote string, reason string)
	// ConnClosed: a connection is gone, with why (the client closed it,
	// the server did, a malformed or oversized frame, ...).
	ConnClosed(at time.Time, c ConnInfo, reason string)
	// Handshake: a connect request was answered. resp.SessionID 0 is a
	// refused session (expired or unknown, or a wrong password).
	Handshake(at time.Time, conn sim.ConnID, req ConnectRequest, resp sim.ConnectResponse)
	// SessionCreated: a handshake created a session.
	SessionCreated(at time.Time, conn sim.ConnID, session int64, timeoutMs int32)
	// SessionExpired: the server expired a session (its closeSession was
	// applied: its ephemerals are gone).
	SessionExpired(at time.Time, session int64)
	// SessionClosed: a client's closeSession was applied.
	SessionClosed(at time.Time, session int64)
	// RequestReceived: a request was decoded and is about to be applied.
	RequestReceived(at time.Time, conn sim.ConnID, session int64, req sim.Request)
	// ReplySent: a reply was queued on its connection; op is the type of
	// the request it answers.
	ReplySent(at time.Time, conn sim.ConnID, session int64, op sim.OpCode, resp sim.Response)
	// WatchEventSent: a watch notification was queued on a connection.
	WatchEventSent(at time.Time, conn sim.ConnID, session int64, ev zk.Event)
}

// NopObserver ignores everything; embed it to observe only some things.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) ConnOpened(time.Time, ConnInfo)                                       {}
func (NopObserver) ConnRefused(time.Time, string, string)                                {}
func (NopObserver) ConnClosed(time.Time, ConnInfo, string)                               {}
func (NopObserver) Handshake(time.Time, sim.ConnID, ConnectRequest, sim.ConnectResponse) {}
func (NopObserver) SessionCreated(time.Time, sim.ConnID, int64, int32)                   {}
func (NopObserver) SessionExpired(time.Time, int64)                                      {}
func (NopObserver) SessionClosed(time.Time, int64)                                       {}
func (NopObserver) RequestReceived(time.Time, sim.ConnID, int64, sim.Request)            {}
func (NopObserver) ReplySent(time.Time, sim.ConnID, int64, sim.OpCode, sim.Response)     {}
func (NopObserver) WatchEventSent(time.Time, sim.ConnID, int64, zk.Event)                {}

// A FaultObserver is an Observer that is also told of every fault a test
// injects through the Server's fault methods (faults.go), when it is
// injected: under the server's lock, before its effects (the connections
// it closes, the session it expires), so that a served history shows the
// cause before what it caused.
type FaultObserver interface {
	FaultInjected(at time.Time, f Fault)
}

// A Fault is one injection, named by the control API's verb (ZooKeeper's
// test controller's, and zklab's own).
type Fault struct {
	// Verb is CLOSECONNECTION, EXPIRESESSION, REJECTCONNECTIONS, ADDDELAY,
	// FAILREQUESTS, NORESPONSE, RESET, LOSEREPLY, DROPREQUEST, PARTITION
	// or RESTART.
	Verb string
	// Session is the session aimed at; 0 for every session, or none.
	Session int64
	// Duration is ADDDELAY's delay, PARTITION's length, RESTART's down
	// time.
	Duration time.Duration
	// Count is FAILREQUESTS' and NORESPONSE's number of requests, -1 for
	// all until RESET.
	Count int64
}

// noteFaultLocked tells the observer of a fault, if it listens for them.
func (s *Server) noteFaultLocked(f Fault) {
	if fo, ok := s.obs.(FaultObserver); ok {
		fo.FaultInjected(time.Now(), f)
	}
}
