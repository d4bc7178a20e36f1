package sim

import "fmt"

// StepKind says what a step does.
type StepKind int

const (
	StepRunTask        StepKind = iota + 1 // resume a task whose wait is over
	StepToServer                           // deliver the next message a client sent
	StepToClient                           // deliver the next message the server sent
	StepTimer                              // fire a timer whose time has come
	StepServerInternal                     // the server applies its own queued work (an expired session's close)
	StepApply                              // an ensemble member applies its next committed transaction
	StepPeer                               // deliver the next message between two ensemble members
)

func (k StepKind) String() string {
	switch k {
	case StepRunTask:
		return "run"
	case StepToServer:
		return "to-server"
	case StepToClient:
		return "to-client"
	case StepTimer:
		return "timer"
	case StepServerInternal:
		return "server"
	case StepApply:
		return "apply"
	case StepPeer:
		return "peer"
	}
	return fmt.Sprintf("step(%d)", int(k))
}

// Step is one thing the world could do next.
type Step struct {
	Kind StepKind
	// Client is the number of the client the step belongs to (its task, its
	// connection, its timer), 0 for the server's own.
	Client int
	// Task is the task's name for StepRunTask.
	Task string
	// Conn is the connection for message steps.
	Conn ConnID
	// Server is the ensemble member that applies (StepApply), sends
	// (StepPeer) or expires a session (StepServerInternal), 1 for s1; To
	// is a StepPeer's receiver. Both are 0 for a standalone server.
	Server, To int

	task  *task
	conn  *netConn
	timer *timer
}

func (s Step) String() string {
	switch s.Kind {
	case StepRunTask:
		return fmt.Sprintf("run c%d %s", s.Client, s.Task)
	case StepToServer, StepToClient:
		return fmt.Sprintf("%v c%d conn%d", s.Kind, s.Client, s.Conn)
	case StepTimer:
		return fmt.Sprintf("timer c%d %s", s.Client, s.timer.what)
	case StepApply:
		return fmt.Sprintf("apply s%d", s.Server)
	case StepPeer:
		return fmt.Sprintf("peer s%d->s%d", s.Server, s.To)
	}
	return s.Kind.String()
}

// TimerReadDeadline names a client's read deadline (zk.Conn's recvLoop
// read timeout): the connection is given up when nothing came for two
// thirds of the session timeout.
const TimerReadDeadline = "read deadline"

// Timer is a timer step's name (TimerReadDeadline, "ping", a sleep's...),
// "" for a step of another kind: a strategy may order what is due at one
// time by what it is.
func (s Step) Timer() string {
	if s.Kind != StepTimer || s.timer == nil {
		return ""
	}
	return s.timer.what
}

// A Strategy picks the next step among the enabled ones, which the world
// lists in a deterministic order. It is asked only when there are two or
// more. It must draw any randomness from w.Rand() (or from a source the
// caller controls, such as *rapid.T), so that a seed replays a run.
type Strategy interface {
	Choose(w *World, enabled []Step) int
}

// RandomWalk picks uniformly among the enabled steps.
type RandomWalk struct{}

func (RandomWalk) Choose(w *World, enabled []Step) int { return w.rng.IntN(len(enabled)) }

// Replay replays recorded choices, and falls back to Next (a random walk if
// nil) when they run out. Record captures the choices of a run.
type Replay struct {
	Choices []int
	Next    Strategy
	pos     int
}

func (r *Replay) Choose(w *World, enabled []Step) int {
	if r.pos < len(r.Choices) {
		c := r.Choices[r.pos]
		r.pos++
		if c < len(enabled) {
			return c
		}
		return c % len(enabled)
	}
	if r.Next == nil {
		return RandomWalk{}.Choose(w, enabled)
	}
	return r.Next.Choose(w, enabled)
}

// Record wraps a strategy and keeps every choice it makes.
type Record struct {
	Inner   Strategy
	Choices []int
}

func (r *Record) Choose(w *World, enabled []Step) int {
	inner := r.Inner
	if inner == nil {
		inner = RandomWalk{}
	}
	c := inner.Choose(w, enabled)
	r.Choices = append(r.Choices, c)
	return c
}

// ScheduleFault adds a fault to inject before step f.AtStep, which must
// be past the current step. It takes its place among the faults to come
// in the order a scenario file lists them (faults at steps by step, the
// latest added last among equals, then faults at times), so a replay of
// the same faults at the same steps injects them at the same points. A
// driver that aims faults at what a run is doing (scenarios' fault-
// directed exploration) schedules them this way for the next step; it may
// do so from a task or from a trace sink.
func (w *World) ScheduleFault(f ScheduledFault) error {
	if f.AtStep <= w.step {
		return fmt.Errorf("sim: fault %s scheduled at step %d, and the world is at step %d", f.Fault, f.AtStep, w.step)
	}
	i := 0
	for i < len(w.faults) && w.faults[i].AtStep != 0 && w.faults[i].AtStep <= f.AtStep {
		i++
	}
	w.faults = append(w.faults, ScheduledFault{})
	copy(w.faults[i+1:], w.faults[i:])
	w.faults[i] = f
	w.stepLimit = w.stepLimitNow()
	return nil
}
