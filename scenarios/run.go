package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// LockRoot is the path of the lock every workload contends for.
const LockRoot = "/zklab/lock"

// A Lease is a lock held: what the workload needs of it. *recipes.Lease
// is one; NodeLease makes one for a user's lock that stands on one node.
type Lease interface {
	// Token is the fencing token the store checks.
	Token() int64
	// SessionID is the session the lease was granted in.
	SessionID() int64
	// Nodes are the lock nodes the lease stands on; the checks see the
	// lease end in ZooKeeper's view when one is deleted (or, for an
	// ephemeral, when its session ends).
	Nodes() []string
	// Release gives the lock back.
	Release(ctx context.Context) error
}

// A Lock is one client's handle on a lock: a user's own recipe
// implements it (recipes.Lock does with FromRecipe).
type Lock interface {
	Acquire(ctx context.Context) (Lease, error)
}

// Constructor builds one client's handle on the lock at path.
type Constructor func(c recipes.Conn, path string, o recipes.Options) Lock

// FromRecipe adapts a constructor of the recipes package (Recipe.New).
func FromRecipe(newLock func(c recipes.Conn, path string, o recipes.Options) recipes.Lock) Constructor {
	return func(c recipes.Conn, path string, o recipes.Options) Lock { return &recipeLock{newLock(c, path, o)} }
}

type recipeLock struct{ l recipes.Lock }

func (r *recipeLock) Acquire(ctx context.Context) (Lease, error) {
	l, err := r.l.Acquire(ctx)
	if l == nil {
		return nil, err
	}
	return l, err
}

// RunOptions tune a run.
type RunOptions struct {
	// Recipe builds the lock when the scenario names a recipe the
	// registry does not have: a user's own.
	Recipe Constructor
	// Lock is the lock's model for the checks: "mutex" (the default),
	// "rwlock" or "semaphore". Recipes of the registry pick their own.
	Lock string
	// Trace keeps the simulator's text trace (Result.Trace).
	Trace bool
	// Report keeps what a report of the run draws (Result.Report): the
	// trace's events, the holding intervals and porcupine's views.
	Report bool
	// Znodes keeps the simulator's operation history and checks it
	// against model.Znode (the "zk-linearizable" check): slower.
	Znodes bool
	// CheckTimeout bounds each porcupine check; 0 means 2 s. A check that
	// runs out is reported Unknown.
	CheckTimeout time.Duration
	// Workload is the program every client runs when the scenario's
	// workload line names none of the built-in ones (a user's own);
	// see Workload.
	Workload Workload
	// Model is the porcupine model of a user's own operations, which
	// the workload records with Worker.Begin; the user-linearizable
	// check runs it on them. Nil: no such check.
	Model *porcupine.Model
	// Strategy makes the scheduling decisions instead of the scenario's
	// schedule (exploration); the decisions it makes are recorded in
	// Result.Scenario.Schedule.
	Strategy sim.Strategy
	// MaxSteps bounds the run; 0 means MaxSteps (limits.go). A run that
	// reaches it, or MaxVirtualTime, ends with the "run" check's outcome
	// Limit: not a violation.
	MaxSteps uint64
	// MaxWallTime bounds the run's wall time; 0 means MaxWallTime
	// (limits.go). A run stopped by it ends with the outcome Limit, and
	// is the one run that does not replay the same on another machine.
	MaxWallTime time.Duration
	// ZK, when set, runs the scenario on the real ZooKeeper at these
	// servers (HOST:PORT) instead of the simulator; see runOnZK for what
	// carries over and what cannot.
	ZK []string
	// Coverage records what the run reached (Result.Coverage): the
	// phase of the client each fault struck, the events that matter.
	// Simulator only.
	Coverage bool
	// phaseFaults are faults aimed at phases (fault-directed
	// exploration): the run's scenario lists them at the steps they
	// struck.
	phaseFaults []phaseFault
	// lookAtEverything makes an ensemble's tree observer look at every
	// directory and life after each change (serverTree.lookAtEverything).
	lookAtEverything bool
	// everyEvent has the observer read every kind of event
	// (observer.everyEvent).
	everyEvent bool
	// lendSchedule says the caller gives the result back (recycle)
	// unless it keeps it whole, and keeps nothing of its scenario: the
	// scenario's schedule is then the buffer the choices were recorded
	// in, which goes back with the result.
	lendSchedule bool
	// ownScenario says the caller hands the scenario over: it was drawn
	// for the run (explorer.runDrawn) and is not read again, so Run takes
	// it as its own rather than a copy.
	ownScenario bool
	// ZKLog, if set, hears what a run on a real server does as it goes
	// (the faults it injects), one line at a time.
	ZKLog func(line string)
}

// Result is what a run gives: the scenario as run (its schedule the
// decisions actually made), the verdict, and the trace if asked for.
type Result struct {
	Scenario *Scenario
	Verdict  *Verdict
	// Trace is the simulator's text trace (RunOptions.Trace).
	Trace string
	Steps uint64
	Time  time.Duration
	// Report holds what a report draws (RunOptions.Report).
	Report *Report
	// Coverage is what the run reached (RunOptions.Coverage).
	Coverage *Coverage
	// Notes say how a run on a real server went: when each fault was
	// injected, and which were not.
	Notes []string

	hist *history
	// run is the runner, whose arrays recycle gives back; nil on a real
	// server.
	run *runner
}

// History renders the workload's history, one event a line, stamped with
// the simulator's step: acquires (with tokens), releases, the store's
// reads and writes, failures.
func (r *Result) History() string { return r.hist.text() }

// firstStrategy takes the first enabled step: what a schedule means past
// its end.
type firstStrategy struct{}

func (firstStrategy) Choose(*sim.World, []sim.Step) int { return 0 }

// lockModelFor names the model a registry recipe is checked against.
func lockModelFor(recipe string, sc *Scenario) string {
	switch recipe {
	case "rw-lock", "herd-rw-lock":
		return "rwlock"
	case "semaphore":
		if sc.Leases > 1 {
			return "semaphore"
		}
	}
	return "mutex"
}

// Run runs a scenario and checks it. It returns an error only for a
// scenario it cannot run (an unknown recipe, a bad fault); whatever goes
// wrong inside the run is in the verdict.
func Run(sc *Scenario, o RunOptions) (*Result, error) {
	if !o.ownScenario {
		sc = sc.clone()
	}
	sc.fillDefaults()
	ctor := o.Recipe
	lockKind := cmpOr(o.Lock, sc.Lock)
	var recipeNew func(c recipes.Conn, path string, o recipes.Options) recipes.Lock
	if r, ok := recipes.Lookup(sc.Recipe); ok && ctor == nil {
		ctor, recipeNew = FromRecipe(r.New), r.New
		if lockKind == "" {
			lockKind = lockModelFor(r.Name, sc)
		}
	} else if ctor != nil {
		// A user's recipe: the file records the model it was held to.
		sc.Lock = cmpOr(lockKind, "mutex")
	}
	if ctor == nil {
		return nil, fmt.Errorf("scenario: unknown recipe %q (known: %s); %s", sc.Recipe, strings.Join(recipes.Names(), ", "), UserRecipe(sc, ""))
	}
	if lockKind == "" {
		lockKind = "mutex"
	}
	if err := sc.checkLimits(); err != nil {
		return nil, err
	}
	for _, f := range sc.Faults {
		if namesClient(f.Kind) && (f.Client < 1 || f.Client > sc.Clients) {
			return nil, fmt.Errorf("scenario: fault %s names no client of %d", formatFault(f), sc.Clients)
		}
	}
	if err := sc.checkEnsemble(); err != nil {
		return nil, err
	}
	program, err := workloadFor(sc, o)
	if err != nil {
		return nil, err
	}
	if o.Workload == nil {
		if err := checkWorkload(sc, lockKind, o.Recipe != nil); err != nil {
			return nil, err
		}
	}
	if len(o.ZK) > 0 {
		return runOnZK(sc, o, ctor, lockKind, program)
	}
	r := newRunner(sc, o, ctor, lockKind, program)
	r.recipeNew = recipeNew
	return r.run(), nil
}

// step is the runner's clock of events: the simulator's step, or on a
// real server a counter every reading advances, so that what one task
// noted after another's note has the larger number.
func (r *runner) step() uint64 {
	if r.real != nil {
		return r.real.events.Add(1)
	}
	return r.w.StepCount()
}

// now is the time since the run began: virtual in the simulator.
func (r *runner) now() time.Duration {
	if r.real != nil {
		return time.Since(r.real.start)
	}
	return r.w.Now()
}

// runner holds one run: on the simulator (w), or on a real ZooKeeper
// (real).
type runner struct {
	sc   *Scenario
	opts RunOptions
	ctor Constructor
	// recipeNew is the registry's constructor that ctor adapts, for a
	// recipe of the registry (nil for a user's).
	recipeNew func(c recipes.Conn, path string, o recipes.Options) recipes.Lock
	program   Workload
	lockKind  string
	// shared is the user's value of the run (Worker.Shared).
	shared   any
	lockPath string
	w        *sim.World
	real     *zkRun
	endTime  time.Duration // when the run ended
	// mu guards the history, the store and the observer: on a real
	// server the clients' tasks run at once. In the simulator one task
	// runs at a time, and lock and unlock leave it alone.
	mu      sync.Mutex
	obs     *observer
	rec     *sim.Record
	store   *store
	last    storeLast
	clients []*sim.Client
	hist    history
	done    []bool // per client: its task ended
	runErr  error
	probe   []probeNode
	probed  bool
	cov     *coverageRecorder // nil unless RunOptions.Coverage
	bufs    *runBuffers       // taken from runPool (newRunner), given back by Result.recycle
	verdict *verdictAndChecks // the result's Verdict, given back with bufs
	parts   []clientPart      // the clients' connections, workers and tasks (run)
	// record and ownStore are rec and store on the simulator (newRunner).
	record   sim.Record
	ownStore store
	// doneAtClose is done as it was when the world was closed (run).
	doneAtClose []bool
}

func newRunner(sc *Scenario, o RunOptions, ctor Constructor, lockKind string, program Workload) *runner {
	b := takeRunBuffers()
	r := b.takeRunner()
	*r = runner{sc: sc, opts: o, ctor: ctor, program: program, lockKind: lockKind, lockPath: LockRoot, bufs: b, clients: r.clients}
	// The record and the store are the runner's own, as the runner is
	// the last run's (takeRunner): three allocations a run fewer, with
	// the replay made only when there is no strategy (an exploration has
	// one).
	inner := o.Strategy
	if inner == nil {
		inner = &sim.Replay{Choices: sc.Schedule, Next: firstStrategy{}}
	}
	r.record = sim.Record{Inner: inner, Choices: b.takeChoices()}
	r.rec = &r.record
	r.obs = b.takeObserver(o.Trace, sc.Clients)
	r.obs.report = o.Report
	r.obs.everyEvent = o.everyEvent
	if o.Coverage || len(o.phaseFaults) > 0 {
		r.cov = b.coverageRecorder(sc.Clients)
		r.cov.reserve(sc.Clients * sc.Cycles)
		r.obs.cov = r.cov
	}
	maxSteps := o.MaxSteps
	if maxSteps == 0 {
		maxSteps = MaxSteps
	}
	faults := slices.Clone(sc.Faults)
	r.w = sim.New(sim.Config{
		Seed:        sc.Seed,
		Servers:     sc.Servers,
		Strategy:    r.rec,
		Trace:       r.obs,
		KeepHistory: o.Znodes,
		Faults:      faults,
		MaxSteps:    maxSteps,
		MaxTime:     MaxVirtualTime,
	})
	r.obs.w = r.w
	r.obs.hist = &r.hist
	r.obs.tree.server = r.w.Server()
	r.obs.tree.lookAtEverything = o.lookAtEverything
	if sc.Servers > 1 {
		r.obs.followEnsemble(r.w)
	}
	if len(o.phaseFaults) > 0 {
		r.cov.aim(r.w, o.phaseFaults)
	}
	r.ownStore = store{fenced: sc.Store == StoreFenced}
	r.store = &r.ownStore
	// done and the copy of it that run keeps as the world closes, in one
	// array, not three (two copies were made at the close).
	n := sc.Clients + 1
	done := make([]bool, 2*n)
	r.done, r.doneAtClose = done[:n:n], done[n:]
	r.hist.reserve(sc.Clients*sc.Cycles, b)
	r.obs.tree.reserve(sc.Clients*sc.Cycles, b)
	// A lock cycle makes a create, and a client's first create may fail
	// for want of the lock's directory, retries aside.
	r.obs.creates = takeSlice(r.obs.creates, min(sc.Clients*(sc.Cycles+1), MaxLockCycles))
	return r
}

// lock takes mu where tasks run at once: on a real server. The simulator
// runs one task at a time, and its switches from task to task order what
// they read and write (for the race detector too): there the lock, taken
// a dozen times a lock cycle, was never contended.
func (r *runner) lock() {
	if r.real != nil {
		r.mu.Lock()
	}
}

// unlock releases what lock took.
func (r *runner) unlock() {
	if r.real != nil {
		r.unlockReal()
	}
}

// unlockReal is unlock on a real server, out of line so that unlock
// stays within the inliner's budget: with Unlock's fast path in line it
// did not, and was called a dozen times a lock cycle for nothing.
//
//go:noinline
func (r *runner) unlockReal() { r.mu.Unlock() }

// quietPeriod is how long after the last fault the world is left alone
// before a waiter that has not acquired counts as stuck: long enough for
// a crashed holder's session to expire (one session timeout) and for a
// client whose handshake was lost to give up on it (go-zookeeper waits
// ten read timeouts, 10 × 2/3 of the session timeout), plus the
// reconnect backoff.
func (r *runner) quietPeriod() time.Duration {
	return 8*r.sc.SessionTimeout + 3*time.Second
}

// bound is the virtual time the workload needs without faults, with room
// to spare.
func (r *runner) bound() time.Duration {
	sc := r.sc
	perHold := sc.Hold + 2*storeLatencyMs*time.Millisecond + 10*time.Millisecond
	return time.Duration(sc.Clients*sc.Cycles)*perHold + time.Duration(sc.Cycles)*sc.Think + 10*time.Second
}

// runChunk is the virtual time between the runner's looks at whether the
// workload is over.
const runChunk = time.Second

func (r *runner) run() *Result {
	r.clients = takeSlice(r.clients, r.sc.Clients)
	for i := 1; i <= r.sc.Clients; i++ {
		c, err := r.w.NewClient(sim.ClientConfig{SessionTimeout: r.sc.SessionTimeout, Addr: r.sc.Access.clientAddr(i)})
		if err != nil {
			panic(err) // the timeout was checked positive
		}
		r.clients = append(r.clients, c)
	}
	if err := r.setupAccess(); err != nil {
		r.runErr = fmt.Errorf("access setup: %w", err)
	}
	r.parts = r.buffers().takeParts(r.sc.Clients)
	for i := 1; i <= r.sc.Clients; i++ {
		c, p := r.clients[i-1], &r.parts[i-1]
		p.conn = observedConn{Conn: c, r: r, client: i}
		var lock Lock
		if r.recipeNew != nil {
			p.lock = recipeLock{r.recipeNew(&p.conn, r.lockPath, r.sc.options(i))}
			lock = &p.lock
		} else {
			lock = r.ctor(&p.conn, r.lockPath, r.sc.options(i))
		}
		p.worker = Worker{r: r, client: i, conn: &p.conn, lock: lock}
		r.w.Go(c, taskName(i), p.task)
	}
	maxWall := cmpOr(r.opts.MaxWallTime, MaxWallTime)
	start := time.Now() // the wall-time limit's only reading of the clock
	for {
		deadline := r.obs.lastFaultEnd + r.quietPeriod() + r.bound()
		now := r.w.Now()
		if r.allDone() || now >= deadline {
			break
		}
		if time.Since(start) > maxWall {
			r.runErr = fmt.Errorf("%w %v reached at step %d, virtual time %v", ErrWallTime, maxWall, r.w.StepCount(), now)
			break
		}
		chunk := runChunk
		if next, ok := r.w.NextEventTime(); !ok || next-now > runChunk {
			// Nothing happens before next: the chunks up to it would
			// each find the world as it is. Skip them in one, ending
			// where the last of them would have.
			idle := deadline - now
			if ok {
				idle = min(idle, next-now)
			}
			chunk = max(runChunk, idle/runChunk*runChunk)
		}
		if err := r.w.RunFor(min(chunk, deadline-now)); err != nil {
			r.runErr = err
			break
		}
	}
	if r.runErr == nil && !r.allDone() {
		r.probeTree()
	}
	r.obs.tree.flush()
	steps, now := r.w.StepCount(), r.w.Now()
	r.endTime = now
	// Closing the world ends the tasks still blocked; what had finished
	// is decided now.
	doneBefore := r.doneAtClose
	copy(doneBefore, r.done)
	var ops []sim.Operation
	if r.opts.Znodes {
		ops = r.w.History()
	}
	r.w.Close()
	r.done = doneBefore
	res := &Result{Steps: steps, Time: now}
	out := r.sc.cloneInto(r.bufs.takeScenario())
	if r.opts.lendSchedule {
		// The schedule is the record's buffer, trimmed, not a copy (the
		// copies were 4% of an exploration's bytes): the buffer goes with
		// the run's others when the caller gives the result back.
		choices := r.rec.Choices
		n := scheduleLen(choices)
		out.Schedule = choices[:n:n]
		r.bufs.choices = choices
	} else {
		out.Schedule = trimSchedule(r.rec.Choices)
		putChoices(r.rec.Choices)
	}
	if r.cov != nil && len(r.cov.fired) > 0 {
		out.Faults = append(out.Faults, r.cov.fired...)
		sortFaults(out.Faults)
	}
	r.rec.Choices = nil
	res.Scenario = out
	res.Verdict = r.check(ops, steps)
	r.markLimit(res.Verdict)
	res.hist = &r.hist
	if r.opts.Trace {
		res.Trace = r.obs.text.String()
	}
	if r.opts.Report {
		res.Report = r.report(steps)
	}
	if r.opts.Coverage {
		res.Coverage = r.cov.result()
	}
	res.run = r
	return res
}

// recycle gives the run's arrays to runPool for a later run (runBuffers),
// for a caller that is done with the result but for its Scenario (unless
// RunOptions.lendSchedule), Coverage and figures, which are the result's
// own: its history (History) and Verdict are gone, and its Scenario too
// with lendSchedule.
func (res *Result) recycle() {
	r := res.run
	if r == nil || r.bufs == nil {
		return
	}
	res.run, res.hist, res.Verdict = nil, nil, nil
	b := r.bufs
	var sc *Scenario
	if r.opts.lendSchedule {
		// The caller keeps nothing of the scenario: it is the next run's
		// copy's, and its schedule's array the next run's record's.
		sc, res.Scenario = res.Scenario, nil
		sc.Schedule = nil
	}
	if r.opts.lendSchedule && r.opts.ownScenario {
		// The scenario the caller drew and handed over: the next draw's
		// (drawWorkload).
		*r.sc = Scenario{}
		drawnPool.Put(r.sc)
	}
	b.keep(r) // r too, emptied
	if sc != nil {
		clear(sc.Faults[:cap(sc.Faults)])
		b.scenario = sc
	}
	b.put()
}

// choicesPool keeps the buffers that record a run's choices, for the next
// run: a run copies out the schedule it keeps (trimSchedule).
var choicesPool sync.Pool

func takeChoices() []int {
	if b, ok := choicesPool.Get().(*[]int); ok {
		return (*b)[:0]
	}
	return nil
}

func putChoices(b []int) {
	if cap(b) > 0 {
		choicesPool.Put(&b)
	}
}

// trimSchedule drops the trailing zeros: past its end a schedule takes
// the first enabled step anyway.
func trimSchedule(choices []int) []int {
	return slices.Clone(choices[:scheduleLen(choices)])
}

// scheduleLen is the length of choices without its trailing zeros.
func scheduleLen(choices []int) int {
	n := len(choices)
	for n > 0 && choices[n-1] == 0 {
		n--
	}
	return n
}

func (r *runner) allDone() bool {
	for i := 1; i <= r.sc.Clients; i++ {
		if !r.done[i] && !r.obs.crashed(i) {
			return false
		}
	}
	return true
}

// taskNames are the names of the clients' tasks, "c1" and on, written
// once for every run: fmt wrote each client's at every run.
var taskNames = func() (names [MaxClients + 1]string) {
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return names
}()

// taskName is the name of client i's task.
func taskName(i int) string {
	if i >= 0 && i < len(taskNames) {
		return taskNames[i]
	}
	return fmt.Sprintf("c%d", i)
}

// A clientPart is what a run makes for one client: its connection, its
// worker, a registry recipe's adapted handle (ctor allocates its
// recipeLock on its own), and its task, in one array for all the
// clients, which later runs take again (runBuffers.takeParts).
type clientPart struct {
	conn   observedConn
	worker Worker
	lock   recipeLock
	// task is workload bound to the part once, when its array is made:
	// the array never moves, and a closure made for every client of
	// every run was the harness's most frequent allocation.
	task func(ctx context.Context)
}

// workload is the part's client's task: the scenario's workload program
// (the default, cycles: acquire, update the store, release, think), then
// close the session.
func (p *clientPart) workload(ctx context.Context) {
	w := &p.worker
	r, i := w.r, w.client
	defer func() {
		r.lock()
		r.done[i] = true
		r.unlock()
	}()
	if r.program(ctx, w) == nil {
		w.conn.Close()
	}
}

// probeNode is a node of the lock's tree as a probe client saw it after
// the run.
type probeNode struct {
	path    string
	owner   int64 // ephemeral owner session; 0 for a persistent node
	czxid   int64
	isQueue bool // a sequential lock node
}

// probeLimit bounds the nodes a probe looks at.
const probeLimit = 256

// probeTree lists the lock's tree with a fresh client, after the run,
// to name what the waiters are stuck behind.
func (r *runner) probeTree() {
	c, err := r.w.NewClient(sim.ClientConfig{SessionTimeout: r.sc.SessionTimeout})
	if err != nil {
		return
	}
	r.probed = true
	r.w.Go(c, "probe", func(ctx context.Context) {
		queue := []string{r.lockPath}
		for len(queue) > 0 && len(r.probe) < probeLimit {
			p := queue[0]
			queue = queue[1:]
			names, _, err := c.Children(ctx, p)
			if err != nil {
				continue
			}
			slices.Sort(names)
			for _, n := range names {
				child := p + "/" + n
				ok, st, err := c.Exists(ctx, child)
				if err != nil || !ok {
					continue
				}
				r.probe = append(r.probe, probeNode{path: child, owner: st.EphemeralOwner, czxid: st.Czxid, isQueue: sequentialName(n)})
				if st.NumChildren > 0 {
					queue = append(queue, child)
				}
			}
		}
		c.Close()
	})
	if err := r.w.RunFor(5 * time.Second); err != nil && !errors.Is(err, sim.ErrDeadlock) {
		r.runErr = err
	}
}

// Replay runs a scenario as its file says, with the simulator's trace
// kept (Result.Trace) and the simulator's own history checked: two
// replays of one scenario give the same trace, byte for byte.
func Replay(sc *Scenario, o RunOptions) (*Result, error) {
	o.Trace, o.Znodes, o.Strategy = true, true, nil
	return Run(sc, o)
}

// ReplayFile parses a scenario file and replays it.
func ReplayFile(path string, o RunOptions) (*Result, error) {
	sc, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return Replay(sc, o)
}
