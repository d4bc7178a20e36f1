package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Config sets up a World. The zero value is a usable world with seed 0.
type Config struct {
	// Seed feeds the one random source every choice of the run comes from.
	Seed uint64
	// Strategy picks each step among the enabled ones; nil is a random walk
	// over the seeded source.
	Strategy Strategy
	// Server configures the simulated ZooKeeper server (every member of
	// an ensemble alike).
	Server ServerConfig
	// Servers is the number of ZooKeeper servers: 0 or 1 runs the
	// standalone server, 3 or 5 an ensemble of a leader and followers
	// (see Ensemble). Validate rejects any other number.
	Servers int
	// Ensemble is an ensemble's configuration beyond its servers'
	// settings: server.N lines and reconfigEnabled (ensemble_reconfig.go).
	Ensemble EnsembleConfig
	// Trace receives every event of the run as it happens (a KindFilter
	// the kinds it reads); nil keeps the trace in memory only when
	// KeepTrace is set.
	Trace TraceSink
	// KeepTrace keeps the trace in memory (World.Trace).
	KeepTrace bool
	// KeepHistory records every client call in the operation history
	// (World.History), for a checker.
	KeepHistory bool
	// MaxSteps and MaxTime bound a run; Run fails with ErrLimit past them.
	// Zero means 10,000,000 steps and 24 hours of virtual time.
	MaxSteps uint64
	MaxTime  time.Duration
	// Faults are injected when their step or time comes.
	Faults []ScheduledFault
	// CheckEveryStep checks every invariant of the tree after every
	// transaction, not only those of the nodes it touched: slow, for tests.
	CheckEveryStep bool
}

// ErrLimit is returned by Run when a run exceeds its step or time limit.
var ErrLimit = errors.New("sim: run limit reached")

// ErrDeadlock is returned by Run when tasks are blocked and nothing in the
// world can ever wake them.
var ErrDeadlock = errors.New("sim: deadlock")

// World is a deterministic simulation: one ZooKeeper server, its clients,
// the network between them, virtual time, and the tasks (ordinary
// blocking Go functions) that use the clients. Exactly one goroutine runs
// at a time: the scheduler hands a baton from task to task, and every
// choice (which task runs, which message is delivered, which due timer
// fires) is made by the Strategy from one seeded source. Virtual time
// moves only when nothing else can happen, to the next timer.
type World struct {
	cfg       Config
	rng       *rand.Rand
	strategy  Strategy
	server    *Server
	ens       *Ensemble // nil for the standalone server
	textBuf   []byte    // scratch for the ensemble's trace details
	ensFaults *ensembleFaults

	nowNs     int64
	horizonNs int64 // RunFor's end: time does not jump past it
	step      uint64
	// stepLimit is the step count from which the scheduler must look
	// past its common case: the run fails with ErrLimit at cfg.MaxSteps,
	// or 0 once virtual time is past cfg.MaxTime, and a fault comes due
	// before step AtStep, or once the time reaches a time fault's
	// AtTime (0 then). The scheduler tests the limits and the faults at
	// every step with this one comparison; setNow and every change of
	// the faults keep it, and checkUnwoken asserts it.
	stepLimit uint64
	timers    timerHeap
	timerSeq  uint64

	tasks []*task // live tasks, in creation order: a task leaves when it ends
	// woken is how many of tasks have wake set: enumerate looks at no
	// task when it is 0 and stops at the last woken, rather than look
	// at every task at every step. Every write of a task's wake keeps it,
	// and checkUnwoken asserts it.
	woken       int
	clients     []*Client
	conns       []*netConn // open connections, in creation order
	connsClosed bool       // some connection may be ready to forget
	// queued is how many messages are on the queues of conns, both ways:
	// enumerate looks at no connection when it is 0 (it does not stop at
	// the last with messages: measuring the queues for that cost more
	// than it saved). Every push, drop and clear of a queue keeps it, and
	// checkUnwoken asserts it.
	queued  int
	connSeq ConnID
	// spareQueues holds the queues' storage of connections forgotten,
	// for new ones (newConn, keepQueues), nil until the first.
	spareQueues *spares[spareQueues]
	// sparePendings holds request records of worlds closed, for the
	// clients' first calls (takePending), nil until the first.
	sparePendings *spares[*pending]
	// spareTasks holds tasks of worlds closed, for Go (newTask), nil
	// until the first; lastMade is the last task Go made, the head of
	// the list of them all (task.madeBefore).
	spareTasks *spares[*task]
	lastMade   *task

	// channelChanges counts the moments a channel a task waits on in
	// Wait may have been sent on or closed: the simulation's deliveries to
	// watch channels, and every return of user code (a task, or the Run
	// caller) to the scheduler, since that code may send on channels of
	// its own. A waiter that found none of its channels ready need not
	// look at them again until it moves (watchWait.ready).
	channelChanges uint64

	current *task // the task holding the baton, nil for the Run caller
	main    *task // the Run caller, as a pseudo-task
	run     runWait
	// askMain says the scheduler must ask main's waiter whether the Run
	// caller may go on: set wherever that may have changed (a run starts
	// or fails, virtual time moves, a task ends, the world closes), and
	// for good while the waiter is not run (Close's). Asking it at every
	// step was some 12 instructions of each.
	askMain           bool
	baton             *task // whom a task that gave control back to the driver hands the baton to
	stopErr           error
	running           bool
	closed            bool
	faults            []ScheduledFault
	serverDownUntilNs int64 // a restarting server comes up at this time

	trace    *tracer
	history  history
	enabled  []Step
	dueBuf   []*timer
	walkBuf  []int
	serverUp bool
	freeOps  []*Operation // records of traced calls, for reuse (KeepHistory off)
	// scratch is the record of the calls in progress when no history is
	// kept: Client.begin hands it to every call, which writes it, and
	// end ignores it. It is the world's rather than each client's, so a
	// client is some 260 bytes smaller.
	scratch Operation
	stats   []zk.Stat       // the rest of the block Client.newStat carves the Stats it returns from
	guids   strings.Builder // the block Client.GUID cuts its strings from

	// recordCalls is whether client calls are recorded (recordsCalls):
	// kept in the history, or traced. Fixed at New, it is one load where
	// every call asks it twice.
	recordCalls bool

	// inline is the first storage of the lists above that every run
	// grows, sized for a run of a few clients: grown from nothing, they
	// were some 4% of the allocations of an exploration, which makes a
	// world for each schedule. A run of five clients lists more than 8
	// steps at some step of most schedules (tasks, each connection's two
	// queues, timers): with room for 8, the list grew to 16 (1,280 bytes)
	// in most of them; with 12 it seldom does, and the world, 2,416
	// bytes, fits the allocator's class of 2,688 where it used that of
	// 2,304 (BenchmarkExplore5x10: 1,020 bytes a schedule fewer).
	inline struct {
		enabled [12]Step
		tasks   [8]*task
		clients [8]*Client
		conns   [8]*netConn
		timers  [16]*timer
		due     [4]*timer
		walk    [8]int
	}
}

// New returns a world with a fresh server and no clients.
func New(cfg Config) *World {
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 10_000_000
	}
	if cfg.MaxTime == 0 {
		cfg.MaxTime = 24 * time.Hour
	}
	w := &World{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(cfg.Seed, 0x7a6b6c6162)),
		serverUp: true,
	}
	in := &w.inline
	w.enabled, w.tasks, w.clients, w.conns = in.enabled[:0], in.tasks[:0], in.clients[:0], in.conns[:0]
	w.timers, w.dueBuf, w.walkBuf = in.timers[:0], in.due[:0], in.walk[:0]
	if cfg.Servers > 1 {
		w.newEnsemble()
	} else {
		w.server = NewServer(cfg.Server)
		w.server.checkEvery = cfg.CheckEveryStep
	}
	w.takeBlockTails()
	w.strategy = cfg.Strategy
	if w.strategy == nil {
		w.strategy = RandomWalk{}
	}
	w.faults = append([]ScheduledFault(nil), cfg.Faults...)
	w.stepLimit = w.stepLimitNow()
	w.trace = newTracer(cfg.Trace, cfg.KeepTrace)
	w.recordCalls = cfg.KeepHistory || w.trace.wants(kindCall) || w.trace.wants(kindReturn)
	w.main = &task{w: w, name: "main"}
	return w
}

// Server returns the simulated server, for inspection between runs. In an
// ensemble it is the replica that stands for ZooKeeper's committed view:
// the leader's applied state, or, while there is no leader, the member
// that has applied the most.
func (w *World) Server() *Server {
	if w.ens != nil {
		return w.ens.View()
	}
	return w.server
}

// Now is the virtual time since the world began.
func (w *World) Now() time.Duration { return time.Duration(w.nowNs) }

// StepCount is the number of steps taken so far.
func (w *World) StepCount() uint64 { return w.step }

// Rand is the world's seeded source. Draw from it only inside the
// simulation (tasks and strategies), never from another goroutine.
func (w *World) Rand() *rand.Rand { return w.rng }

func (w *World) nowMs() int64 { return w.nowNs / int64(time.Millisecond) }

// setNow moves virtual time to ns, and the step limit with it.
func (w *World) setNow(ns int64) {
	w.nowNs = ns
	w.stepLimit = w.stepLimitNow()
	w.askMain = true
}

// stepLimitNow is what stepLimit should be.
func (w *World) stepLimitNow() uint64 {
	if w.nowNs > int64(w.cfg.MaxTime) {
		return 0
	}
	limit := w.cfg.MaxSteps
	for _, f := range w.faults {
		switch {
		case f.AtStep != 0:
			limit = min(limit, f.AtStep-1) // due when w.step+1 >= f.AtStep
		case w.nowNs >= int64(f.AtTime):
			return 0
		}
	}
	return limit
}

// SessionExpiry is when the server (on an ensemble, the leader) expires a
// session of timeout last heard from at t, as its tracker reckons it:
// at the tick boundary after t+timeout.
func (w *World) SessionExpiry(t, timeout time.Duration) time.Duration {
	tickMs := w.cfg.Server.withDefaults().TickTimeMs
	return time.Duration(sessionExpiresMs(t.Milliseconds(), timeout.Milliseconds(), tickMs)) * time.Millisecond
}

// task is a coroutine the world schedules, run by a worker. Only the
// driver (the goroutine that called Run or Close) resumes it; it gives
// control back when it blocks and the scheduler picks another, or when it
// ends.
type task struct {
	w      *World
	name   string
	client *Client // the client whose process it belongs to; nil for none
	fn     func(ctx context.Context)
	worker *worker // the coroutine it runs on, from its first step to its end
	ready  waiter  // nil while runnable or running
	// wake says the scheduler must ask ready whether the task may run:
	// set by whatever may make its waiter ready (see await), and always
	// with pollAlways, for a waiter that may turn ready with nothing in
	// the simulation to say so (a function's condition, a context user
	// code may cancel, a channel user code may send on). A waiter found
	// not ready clears it, unless pollAlways, and so does the scheduler
	// when it runs the task. Every write of it keeps World.woken (wakeUp,
	// unwake, and the scheduler's).
	wake       bool
	pollAlways bool
	done       bool
	killed     bool
	finished   bool // fn returned normally
	parked     bool // exited with runtime.Goexit: its worker stays parked for good

	// What it waits for in Sleep and Wait, kept to be reused call after call.
	sleep       sleep
	watchWait   watchWait
	sessionWait sessionWait
	// replyZxid is the zxid of the reply to the task's call under way, 0
	// before one came: the history's Operation.Zxid (a task makes one
	// call at a time).
	replyZxid int64
	// madeBefore is the task the world started before this one, nil for
	// its first: the world's tasks, from World.lastMade, ended or not,
	// which it gives back to taskStores as it closes (releaseTasks).
	madeBefore *task
}

// newTask returns a zero task, one a world closed before gave back
// (taskStores) if there is one, listed among the world's tasks made.
func (w *World) newTask() *task {
	t := taskStores.take(&w.spareTasks).pop()
	if t == nil {
		t = new(task)
	}
	t.madeBefore, w.lastMade = w.lastMade, t
	return t
}

// taskStores holds tasks of worlds closed, zeroed, 32 to a list: a world
// takes a list at its first task and gives it back, with its own tasks,
// when it closes: a task of some 370 bytes for each of every world's was
// 2% of the bytes of an exploration.
var taskStores = sparePool[*task]{max: 32}

// releaseTasks gives the world's tasks back to taskStores as it closes:
// each has ended (Close ended those that had not), and nothing of the
// world runs or reads one after. A task parked for good (parked) is left
// alone: its worker still holds it.
func (w *World) releaseTasks() {
	sp := taskStores.take(&w.spareTasks)
	for t := w.lastMade; t != nil; {
		before := t.madeBefore
		if t.done && !t.parked && t.worker == nil && !sp.full() {
			*t = task{}
			sp.keep(t)
		}
		t = before
	}
	w.lastMade = nil
	taskStores.give(&w.spareTasks)
}

// Go starts fn as a task of client c's process (c may be nil for a task
// that belongs to no client, like a test driver). It runs when the
// scheduler first picks it.
func (w *World) Go(c *Client, name string, fn func(ctx context.Context)) {
	if w.closed {
		panic("sim: Go on a closed world")
	}
	t := w.newTask()
	t.w, t.name, t.client, t.fn = w, name, c, fn
	t.await(always, true)
	w.tasks = append(w.tasks, t)
	if c != nil {
		c.tasks = append(c.tasks, t)
	}
	if w.trace.wants(kindTask) {
		w.emit(Event{Kind: "task", Client: c.number(), Detail: "start " + name})
	}
}

// errTaskKilled ends a killed task where it stands. It is a panic rather
// than runtime.Goexit because a Goexit inside an iter.Pull coroutine goes
// on into the goroutine that resumed it, the driver; runTask recovers it.
// Deferred calls run as they would on Goexit.
var errTaskKilled = errors.New("sim: task killed")

// exitKilled ends the running task, which has been killed.
func exitKilled() { panic(errTaskKilled) }

func (w *World) runTask(t *task, fn func(ctx context.Context)) {
	defer func() {
		r := recover()
		goexit := false
		t.done = true
		t.ready = nil
		t.unwake() // it leaves w.tasks
		w.tasks = slices.DeleteFunc(w.tasks, func(o *task) bool { return o == t })
		w.askMain = true
		if t.client != nil {
			t.client.tasks = slices.DeleteFunc(t.client.tasks, func(o *task) bool { return o == t })
		}
		switch {
		case t.killed:
		case r != nil:
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			w.fail(fmt.Errorf("sim: task %q panicked: %v\n%s", t.name, r, buf))
		case !t.finished:
			w.fail(fmt.Errorf("sim: task %q exited with runtime.Goexit (a t.FailNow inside a task?)", t.name))
			goexit = true
		case w.trace.wants(kindTask):
			w.emit(Event{Kind: "task", Client: t.client.number(), Detail: "end " + t.name})
		}
		w.current = nil
		w.schedule(nil)
		if goexit {
			// The Goexit would go on into the driver's goroutine: give the
			// baton back and stay parked for good instead.
			t.parked = true
			t.worker.yield(struct{}{})
			panic("sim: a task that exited with runtime.Goexit was resumed")
		}
	}()
	if t.killed {
		return
	}
	fn(taskCtx)
	t.finished = true
}

func (w *World) fail(err error) {
	if w.stopErr == nil {
		w.stopErr = err
	}
	w.askMain = true
}

// A waiter says whether a blocked task may run again.
type waiter interface{ ready() bool }

// cond is a waiter from a function.
type cond func() bool

func (f cond) ready() bool { return f() }

// always is the waiter of a task that may run at once.
var always = cond(func() bool { return true })

// await makes ready the waiter of blocked task t. The scheduler asked
// every blocked task's waiter at every step (enumerate was 7% of an
// exploration); now it asks one with pollAlways false only when it is
// woken (t.wake), and such a waiter turns ready only by what wakes it:
//   - a call's record (pending): its completion, by reply or failure;
//   - a task's sleep, with a context that cannot end: its timer;
//   - a Wait on the client's own watches alone, with such a context: the
//     simulation's delivery to a watch (wakeWatchers);
//   - a WaitSession with such a context: its client's change of state or
//     its close (wakeSessionWaiters);
//   - any of them: the crash of a client (its tasks are killed, and a
//     waiter of another task may look at the client), and the kill of
//     the task itself.
//
// Any other waiter (pollAlways) is asked at every step as before, from
// the next on. One the simulation wakes has just been found not ready
// (block), so it is not asked before it is woken: the scheduler cleared
// the task's wake when it ran it, and a wake since, if any, only has the
// waiter asked once more. enumerate asserts, every 64 steps, that no
// task left unasked was ready.
func (t *task) await(ready waiter, pollAlways bool) {
	t.ready, t.pollAlways = ready, pollAlways
	if pollAlways {
		t.wakeUp()
	}
}

// unwake clears t's wake, counting the tasks woken (World.woken). A
// task is counted while it is in w.tasks, from its start (Go) to its end
// (runTask).
func (t *task) unwake() {
	if t.wake {
		t.wake = false
		t.w.woken--
	}
}

// wakeUp has the scheduler ask t's waiter again, unless t has ended: a
// call's completion or a timer may come after its task.
func (t *task) wakeUp() {
	if !t.wake && !t.done {
		t.wake = true
		t.w.woken++
	}
}

// wakeAll has the scheduler ask every blocked task.
func (w *World) wakeAll() {
	for _, t := range w.tasks {
		t.wakeUp()
	}
}

// wakeWatchers has the scheduler ask every task blocked in Wait on c: a
// watch of c's was delivered. A Wait the simulation wakes waits on its
// client's own watches alone (watchWait.simOnly), so a delivery to
// another client's cannot have made it ready; any other Wait is asked at
// every step (task.await). Waking the Waits on every client, each to
// look at its channels again, was 0.4% of BenchmarkExplore5x10.
func (w *World) wakeWatchers(c *Client) {
	for _, t := range w.tasks {
		if ww, ok := t.ready.(*watchWait); ok && ww.c == c {
			t.wakeUp()
		}
	}
}

// wakeSessionWaiters has the scheduler ask every task blocked in
// WaitSession on c: its state changed (a new generation), or it closed.
func (w *World) wakeSessionWaiters(c *Client) {
	for _, t := range w.tasks {
		if sw, ok := t.ready.(*sessionWait); ok && sw.c == c {
			t.wakeUp()
		}
	}
}

// block parks the running task until ready reports true, running the
// scheduler on this goroutine in the meantime. The scheduler asks ready at
// every step; blockWoken is for waiters the simulation wakes.
func (w *World) block(ready waiter) { w.blockWoken(ready, true) }

// blockWoken is block for a waiter that, with pollAlways false, turns
// ready only by something that wakes the task (task.await).
func (w *World) blockWoken(ready waiter, pollAlways bool) {
	t := w.current
	if t == nil {
		panic("sim: a blocking call outside a simulated task (use World.Go)")
	}
	if t.killed {
		exitKilled()
	}
	if ready.ready() {
		return
	}
	t.await(ready, pollAlways)
	w.schedule(t)
	if t.killed {
		exitKilled()
	}
}

// Run runs the world until every task has finished. It returns ErrLimit
// past the step or time limit, ErrDeadlock when tasks wait for what can
// never come, and the error of a task that panicked.
func (w *World) Run() error {
	return w.runUntil(false, 0)
}

// RunFor runs the world for exactly d of virtual time: time stops at the
// end even if the next timer is later.
func (w *World) RunFor(d time.Duration) error {
	until := w.nowNs + int64(d)
	w.horizonNs = until
	defer func() { w.horizonNs = 0 }()
	err := w.runUntil(true, until)
	if errors.Is(err, ErrDeadlock) {
		w.setNow(until)
		return nil
	}
	return err
}

// runWait is the waiter of the Run caller: it may go on once the run has
// failed, or, for RunFor (timed), once virtual time has reached untilNs,
// or, for Run, once no live task is left. The scheduler asks it only when
// World.askMain says one of those may have come, and asks it inline
// (mainReady): its stop condition is two fields, not a function, so that
// it takes no call.
type runWait struct {
	w       *World
	timed   bool
	untilNs int64
}

func (r *runWait) ready() bool {
	w := r.w
	return w.stopErr != nil || (r.timed && w.nowNs >= r.untilNs) || (!r.timed && len(w.tasks) == 0)
}

// runUntil runs the world until virtual time reaches untilNs if timed,
// else until no task is left.
func (w *World) runUntil(timed bool, untilNs int64) error {
	if w.running {
		panic("sim: Run called from inside the simulation")
	}
	if w.closed {
		return errors.New("sim: run on a closed world")
	}
	w.running = true
	w.stopErr = nil
	w.run = runWait{w: w, timed: timed, untilNs: untilNs}
	w.main.ready = &w.run
	w.askMain = true
	w.current = nil
	w.schedule(w.main)
	w.running = false
	w.main.ready = nil
	if w.stopErr == nil {
		if err := w.checkServerInvariants(); err != nil {
			return err
		}
	}
	return w.stopErr
}

// schedule is the scheduler loop. It runs on the goroutine of self, the
// task that just blocked (nil for a task that finished), and returns when
// the strategy picks self to run again. Picking another task hands it the
// baton and parks this goroutine; a goroutine never runs while another
// does.
func (w *World) schedule(self *task) {
	w.channelChanges++ // user code ran up to here
	for {
		if w.askMain && w.mainReady() {
			w.handoff(self, w.main)
			return
		}
		if w.step >= w.stepLimit { // past MaxSteps or MaxTime, or a fault is due
			if w.step >= w.cfg.MaxSteps || w.nowNs > int64(w.cfg.MaxTime) {
				w.fail(fmt.Errorf("%w: step %d, virtual time %v; blocked: %s", ErrLimit, w.step, w.Now(), w.blockedTasks()))
				continue
			}
			if w.injectDueFaults() {
				continue
			}
		}
		enabled := w.enumerate()
		if len(enabled) == 0 {
			if !w.advanceTime() {
				w.fail(fmt.Errorf("%w at %v: blocked: %s", ErrDeadlock, w.Now(), w.blockedTasks()))
			}
			continue
		}
		i := 0
		if len(enabled) > 1 {
			i = w.strategy.Choose(w, enabled)
			if i < 0 || i >= len(enabled) {
				panic(fmt.Sprintf("sim: strategy chose step %d of %d", i, len(enabled)))
			}
		}
		st := &enabled[i] // not a copy: a step is some 80 bytes, three times an op
		w.step++
		if w.step%goschedSteps == 0 {
			runtime.Gosched()
		}
		if st.Kind == StepRunTask {
			// The task runs: its wake, set as enumerate listed it, is
			// cleared until it blocks again (await), here rather than
			// in await.
			st.task.ready = nil
			st.task.unwake()
			if st.task == self {
				w.current = self
				return
			}
			w.handoff(self, st.task)
			return
		}
		w.take(st)
	}
}

// goschedSteps is how often, in steps, the world yields its thread to
// the Go scheduler. Tasks hand the baton on by coroutine switches
// (iter.Pull), which never enter the scheduler, so on one P a garbage
// collection's background mark worker runs only when sysmon preempts the
// world, every 10 ms: a mark phase that needs 0.3 ms of CPU lasted 15 ms,
// and BenchmarkSimThroughput ran with write barriers on for a quarter of
// its time (GODEBUG=gctrace=1; runtime.bulkBarrierPreWrite was 8% of its
// profile). A yield every 1,024 steps, some 300 operations, ends a mark
// phase in about 1 ms. The yield changes nothing in the world: no other
// task can run, only goroutines outside it.
const goschedSteps = 1024

// mainReady asks main's waiter whether the Run caller may go on, and
// clears askMain if the waiter is Run's own, which need not be asked
// again until it is set. Run's waiter is asked inline, rather than
// through the interface: the call was some 30 instructions of each step
// of BenchmarkSimThroughput, which takes about 110 in all.
func (w *World) mainReady() bool {
	if w.main.ready == &w.run {
		w.askMain = false
		return w.run.ready()
	}
	return w.main.ready != nil && w.main.ready.ready()
}

// handoff passes the baton from self to next and parks self until it is
// handed back (self nil: the calling task is ending). A task gives control
// back to the driver, naming next; the driver (self is main) resumes
// tasks in turn until one names main.
func (w *World) handoff(self, next *task) {
	if next == self {
		w.current = next
		return
	}
	switch self {
	case nil:
		w.baton = next // the task's coroutine ends and the driver goes on
	case w.main:
		w.drive(next)
		w.current = nil
	default:
		w.baton = next
		self.worker.yield(struct{}{})
		w.current = self
	}
}

// drive runs on the driver's goroutine: it resumes next, and then whomever
// each task hands the baton to, until the baton comes back to main.
func (w *World) drive(next *task) {
	for next != w.main {
		w.current = next
		w.baton = nil
		t := next
		if t.worker == nil {
			t.worker = takeWorker(w, t)
		}
		t.worker.resume()
		if t.done && !t.parked {
			putWorker(t.worker)
			t.worker = nil
		}
		next = w.baton
		if next == nil {
			panic("sim: a task gave control back without handing the baton on")
		}
	}
	w.baton = nil
}

func (w *World) blockedTasks() string {
	var names []string
	for _, t := range w.tasks {
		names = append(names, t.name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// advanceTime moves virtual time to the next timer or server deadline and
// lets the server see it. It reports false if there is nothing to wait for.
// NextEventTime is the virtual time at which something next happens in
// the world: now when a step is enabled, else the earliest timer, server
// deadline or fault due at a time. It reports false when nothing ever
// will. A driver that runs the world in slices of time skips the slices
// before it at once: they would each find the world as it is.
func (w *World) NextEventTime() (time.Duration, bool) {
	if w.closed {
		return 0, false
	}
	if len(w.enumerate()) > 0 {
		return time.Duration(w.nowNs), true
	}
	next := int64(-1)
	if len(w.timers) > 0 {
		next = w.timers[0].atNs
	}
	if d := w.serverDeadlineMs(); d != 1<<63-1 && w.serverUp {
		if dNs := d * int64(time.Millisecond); next < 0 || dNs < next {
			next = dNs
		}
	}
	if nf, ok := w.nextFaultTime(); ok && (next < 0 || nf < next) {
		next = nf
	}
	if next < 0 {
		return 0, false
	}
	return time.Duration(max(next, w.nowNs)), true
}

func (w *World) advanceTime() bool {
	next := int64(-1)
	if len(w.timers) > 0 {
		next = w.timers[0].atNs
	}
	if d := w.serverDeadlineMs(); d != 1<<63-1 && w.serverUp {
		dNs := d * int64(time.Millisecond)
		if next < 0 || dNs < next {
			next = dNs
		}
	}
	if nf, ok := w.nextFaultTime(); ok && (next < 0 || nf < next) {
		next = nf
	}
	if w.horizonNs > w.nowNs && (next < 0 || w.horizonNs < next) {
		next = w.horizonNs // RunFor ends here
	}
	if next < 0 {
		return false
	}
	if next > w.nowNs {
		w.setNow(next)
	}
	if w.serverUp {
		if w.ens != nil {
			w.ens.Tick(w.nowMs())
		} else {
			w.server.Tick(w.nowMs())
		}
		w.drainServer()
	}
	return true
}

// Close ends every task still blocked: each is resumed in turn and exits
// where it stands (its deferred calls run, and any client call they make
// fails at once), then the world is closed.
func (w *World) Close() {
	if w.closed {
		return
	}
	w.closed = true
	// Any goroutine that enters the scheduler from now on hands the baton
	// straight back to the caller of Close.
	w.main.ready = always
	w.askMain = true
	w.running = true
	for _, t := range slices.Clone(w.tasks) {
		if t.done {
			continue
		}
		t.killed = true
		w.handoff(w.main, t)
	}
	w.running = false
	w.releaseQueues()
	w.releasePendings()
	w.releaseTasks()
	w.releaseBlockTails()
}

// blockTails is the unused rest of a world's last block of Stats
// (Client.newStat) and of its server's last block of child names
// (Server.childList): slots never handed out, which a world closed
// leaves to the next (takeBlockTails), through blockTailPool. A world's
// last blocks were left, on average, half unused: some 1.6 KB of each
// schedule of an exploration.
type blockTails struct {
	stats []zk.Stat
	names []string
}

// blockTailPool is the pool of blockTails the worlds of the process share.
var blockTailPool = sync.Pool{New: func() any { return new(blockTails) }}

// takeBlockTails starts the world's blocks with the rest of a closed
// world's, if there is one.
func (w *World) takeBlockTails() {
	bt := blockTailPool.Get().(*blockTails)
	w.stats, bt.stats = bt.stats, nil
	if w.server != nil {
		w.server.names, bt.names = bt.names, nil
	}
	blockTailPool.Put(bt)
}

// releaseBlockTails leaves the rest of the world's blocks to the next
// world, keeping, of the two, the longer. Nothing of the closed world
// takes from them after: its clients' calls end at once, and its server's
// child names are taken from the world's own again should it be asked
// for a list (a block of its own).
func (w *World) releaseBlockTails() {
	bt := blockTailPool.Get().(*blockTails)
	if len(w.stats) > len(bt.stats) {
		bt.stats = w.stats
	}
	w.stats = nil
	if w.server != nil {
		if len(w.server.names) > len(bt.names) {
			bt.names = w.server.names
		}
		w.server.names = nil
	}
	blockTailPool.Put(bt)
}
