package sim

import (
	"fmt"
	"slices"
	"time"
)

// FaultKind names a fault the world can inject.
type FaultKind string

const (
	// FaultDropRequest: the client's next request is lost before the server
	// sees it, and its connection breaks.
	FaultDropRequest FaultKind = "drop-request"
	// FaultDropReply: the server applies the client's next request, its
	// reply is lost, and the connection breaks: the ambiguous failure.
	FaultDropReply FaultKind = "drop-reply"
	// FaultDisconnect breaks the client's connection; it cannot connect
	// again for Duration.
	FaultDisconnect FaultKind = "disconnect"
	// FaultPartition cuts the client off from the server for Duration:
	// nothing passes either way and connection attempts time out. It may
	// outlast the session timeout.
	FaultPartition FaultKind = "partition"
	// FaultPause stops the client's process for Duration (a stop-the-world
	// pause): its tasks and timers, heartbeats included, stand still, and
	// what the server sends waits in the socket.
	FaultPause FaultKind = "pause"
	// FaultCrash kills the client's process: its tasks end, its connection
	// breaks, and its session lives on until it expires.
	FaultCrash FaultKind = "crash"
	// FaultExpire expires the client's session on the server now. A real
	// server expires only a session it has stopped hearing from, so the
	// server first drops the session's connection without a word: the
	// client learns of the expiry when it reconnects, as a real client
	// does, and sees none of the events of its own session's close.
	FaultExpire FaultKind = "expire"
	// FaultRestart restarts the server, which is down for Duration; data
	// and sessions survive, connections do not.
	FaultRestart FaultKind = "restart"
)

// FaultKinds lists every fault kind.
var FaultKinds = []FaultKind{FaultDropRequest, FaultDropReply, FaultDisconnect, FaultPartition, FaultPause, FaultCrash, FaultExpire, FaultRestart}

// Fault is one fault to inject.
type Fault struct {
	Kind   FaultKind
	Client int // the client's number (1 for the first); 0 for a server restart
	// Server is the server's number (1 for s1) for a fault of
	// ServerFaultKinds that names one; 0 otherwise.
	Server   int
	Duration time.Duration
}

func (f Fault) String() string {
	if isServerFault(f.Kind) {
		return f.serverString()
	}
	switch f.Kind {
	case FaultRestart:
		return fmt.Sprintf("%s for=%v", f.Kind, f.Duration)
	case FaultDisconnect, FaultPartition, FaultPause:
		return fmt.Sprintf("%s c%d for=%v", f.Kind, f.Client, f.Duration)
	}
	return fmt.Sprintf("%s c%d", f.Kind, f.Client)
}

// ScheduledFault is a fault and when to inject it: before step AtStep, or
// when virtual time reaches AtTime if AtStep is 0.
type ScheduledFault struct {
	AtStep uint64
	AtTime time.Duration
	Fault
}

func (w *World) injectDueFaults() bool {
	for i, f := range w.faults {
		due := (f.AtStep != 0 && w.step+1 >= f.AtStep) || (f.AtStep == 0 && w.nowNs >= int64(f.AtTime))
		if due {
			w.faults = slices.Delete(w.faults, i, i+1)
			w.stepLimit = w.stepLimitNow()
			if err := w.Inject(f.Fault); err != nil {
				w.fail(err)
			}
			return true
		}
	}
	return false
}

func (w *World) nextFaultTime() (int64, bool) {
	next, ok := int64(0), false
	for _, f := range w.faults {
		if f.AtStep == 0 && (!ok || int64(f.AtTime) < next) {
			next, ok = int64(f.AtTime), true
		}
	}
	return next, ok
}

// Inject applies a fault now. It may be called from a task, or between
// runs. It returns an error for a fault that names no client of the world
// or has a negative duration.
func (w *World) Inject(f Fault) error {
	if f.Duration < 0 {
		return fmt.Errorf("sim: fault %s: negative duration", f)
	}
	if isServerFault(f.Kind) {
		return w.injectServerFault(f)
	}
	var c *Client
	if f.Kind != FaultRestart {
		if f.Client < 1 || f.Client > len(w.clients) {
			return fmt.Errorf("sim: fault %s: no client %d (the world has %d)", f, f.Client, len(w.clients))
		}
		c = w.clients[f.Client-1]
	}
	w.emit(Event{Kind: "fault", Client: f.Client, Session: c.session(), Detail: f.String()})
	switch f.Kind {
	case FaultDropRequest:
		c.dropRequests++
	case FaultDropReply:
		c.dropReplies++
	case FaultDisconnect:
		c.dialBlockedUntilNs = w.nowNs + int64(f.Duration)
		if c.conn != nil {
			w.reset(c.conn, "disconnected by a fault")
		}
	case FaultPartition:
		c.partitionedUntilNs = max(c.partitionedUntilNs, w.nowNs+int64(f.Duration))
		w.after(int64(f.Duration), nil, fmt.Sprintf("c%d partition heals", c.id), func() {
			w.emit(Event{Kind: "fault", Client: c.id, Detail: "partition healed"})
		})
	case FaultPause:
		if c.crashed {
			return nil
		}
		c.pausedUntilNs = max(c.pausedUntilNs, w.nowNs+int64(f.Duration))
		w.freeze(c)
		w.after(int64(f.Duration), nil, fmt.Sprintf("c%d resumes", c.id), func() {
			if c.paused() {
				return // a longer pause came later
			}
			w.emit(Event{Kind: "fault", Client: c.id, Detail: "pause ended"})
			w.thaw(c)
		})
	case FaultCrash:
		c.crash()
	case FaultExpire:
		if !w.serverUp {
			// A server that is down expires nothing.
			w.emit(Event{Kind: "fault", Client: c.id, Detail: "the server is down: nothing to expire"})
			return nil
		}
		if c.sessionID != 0 && w.expireSession(c.sessionID) && c.conn != nil {
			w.reset(c.conn, "the server expired the session")
		}
	case FaultRestart:
		if w.ens != nil {
			w.restartEnsemble(f.Duration)
			return nil
		}
		// A restart while the server is already down extends the downtime:
		// the server comes up once, when the last restart ends.
		w.serverUp = false
		w.serverDownUntilNs = max(w.serverDownUntilNs, w.nowNs+int64(f.Duration))
		for _, conn := range slices.Clone(w.conns) {
			w.reset(conn, "server restarting")
		}
		w.after(int64(f.Duration), nil, "server restarted", func() {
			if w.serverUp || w.nowNs < w.serverDownUntilNs {
				return // a later restart is still under way
			}
			w.serverUp = true
			w.server.Restart(w.nowMs())
			w.emit(Event{Kind: "fault", Detail: "server up again"})
		})
	default:
		return fmt.Errorf("sim: unknown fault kind %q", f.Kind)
	}
	return nil
}
