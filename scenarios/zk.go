package scenarios

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
)

// A run on a real ZooKeeper (RunOptions.ZK) runs the scenario's workload
// (the same recipe, clients, cycles, store and checks) against the
// server, each client in its own goroutine and through its own fault
// proxy (zktest.Proxy). What cannot carry over:
//
//   - The schedule: the server and the network decide the order; two runs
//     differ. The verdict is of this run.
//   - Steps and virtual time: a fault strikes where its client was when
//     it struck on the simulator, found by running the scenario there
//     first: during the same operation of the client's (its n-th call,
//     sleep or wait), as a sleep or a wait begins, or as a call returns,
//     before the task sees the result (a fault that strikes while a
//     request is in flight acts on the next one). So a story such as
//     "c1 pauses while it holds the lock" is the same story on the server,
//     however long its calls take there. A fault that never struck on the
//     simulator is not injected.
//   - A server restart: zklab does not run the server. A scenario with
//     one is refused.
//
// The faults, on a real server: drop-request and drop-reply arm the
// client's proxy for its next request; disconnect refuses its
// connections for the duration; partition blackholes them; pause
// blackholes them and holds the client's task at its next call, sleep or
// wait until the pause ends; crash kills the proxy for good and ends the
// task; expire expires the session on the server (the way ZooKeeper's own
// tests do: a second connection takes the session over and closes it) and
// drops the client's connection, so that it learns of the expiry when it
// reconnects.
//
// The checks see ZooKeeper's view only through what the clients saw: a
// lease ends between the call and the return of the delete that removed
// its node, or, when nobody saw that delete, between the acquire and the
// first sign that the node was gone (a release that returned, the
// client's session expiry or close, a delete that found no node, the probe
// after the run). The lock's history takes the whole window; zk-holders
// counts a lease to the window's start, so it reports only a certain
// overlap. zk-linearizable needs the simulator's history and is n/a.
//
// zklab cannot look inside a real server's tree as the run goes, so what
// the simulator takes from the server's own record (serverTree) comes
// from elsewhere here: a lease's nodes and session are what the lease
// reports (a lease that lies about its session is judged on the lie), and
// two leases are one holder when one client reports the same nodes. The
// liveness verdict's cause is told the same way on both: from the probe
// after the run (each node's owner session and czxid) and the clients'
// own record of their create calls, leases and releases; only the step
// at which the server made the node is the simulator's alone.

// zkConnectWait bounds the wait for a client's first session.
const zkConnectWait = 5 * time.Second

// zkTaskWait bounds the wait for the tasks to end once the run is over
// and their context is cancelled.
const zkTaskWait = 30 * time.Second

// zkStartStagger bounds the wait for a task to settle before the next
// task starts.
const zkStartStagger = 2 * time.Second

// zkFaultTimeout bounds the expiry of a session by a second connection.
const zkFaultTimeout = 10 * time.Second

// zkRun is the real server's side of a run.
type zkRun struct {
	r       *runner
	servers []string
	start   time.Time
	events  atomic.Uint64 // the runner's step on a real server

	admin   *zkconn.Conn
	root    string // the run's own tree: /zklab-run-<hex>
	proxies []*zktest.Proxy
	conns   []*zkconn.Conn
	ctx     context.Context
	cancel  context.CancelFunc
	tasks   sync.WaitGroup
	aux     sync.WaitGroup // the session watchers

	// Guarded by r.mu.
	pausedUntil []time.Time
	crashed     []bool
	deletes     map[string][]zkDelete
	gone        map[int64]uint64 // session -> the event at which its end was known (expiry seen, close returned)
	anchored    []anchoredFault  // the faults, each waiting for its client's operation
	settledCh   []chan struct{}  // closed when the client first holds or waits
	settleOnce  []sync.Once
	probeStep   uint64
	probeFound  map[string]int64 // node -> czxid, as the probe saw the lock's tree
	notes       []string
}

// zkDelete is a delete of a node seen by the client that made it: applied
// between call and ret, or (applied false) finding the node gone at call.
type zkDelete struct {
	client    int
	call, ret uint64
	applied   bool
}

// anchoredFault is a fault of the scenario, to strike during its client's
// operation number ops (none begun: before the workload starts).
type anchoredFault struct {
	f     sim.ScheduledFault
	ops   int64
	onSim injectedFault
	done  bool
}

// runOnZK runs sc on the real ZooKeeper at o.ZK. An error is a scenario it
// cannot run there (a restart) or a server it cannot reach.
func runOnZK(sc *Scenario, o RunOptions, ctor Constructor, lockKind string, program Workload) (*Result, error) {
	for _, f := range sc.Faults {
		if f.Kind == sim.FaultRestart {
			return nil, fmt.Errorf("scenario: fault %s: a real server's restart is not in zklab's hands; run it on the simulator", formatFault(f))
		}
		if serverFault(f.Kind) {
			return nil, fmt.Errorf("scenario: fault %s: a real ensemble's servers are not in zklab's hands; run it on the simulator", formatFault(f))
		}
	}
	if len(sc.Access.Addresses) > 0 {
		return nil, fmt.Errorf("scenario: addresses run on the simulator only: a real server sees every client of a run at the proxies' address")
	}
	anchors, notes := anchorFaults(sc, o, ctor, lockKind, program)
	r := &runner{sc: sc, opts: o, ctor: ctor, lockKind: lockKind, program: program}
	r.obs = newObserver(false, sc.Clients)
	r.obs.hist = &r.hist
	r.store = &store{fenced: sc.Store == StoreFenced}
	r.done = make([]bool, sc.Clients+1)
	z := &zkRun{
		r:           r,
		servers:     o.ZK,
		pausedUntil: make([]time.Time, sc.Clients+1),
		crashed:     make([]bool, sc.Clients+1),
		settledCh:   make([]chan struct{}, sc.Clients+1),
		settleOnce:  make([]sync.Once, sc.Clients+1),
		deletes:     map[string][]zkDelete{},
		gone:        map[int64]uint64{},
		anchored:    anchors,
		notes:       notes,
	}
	for i := range z.settledCh {
		z.settledCh[i] = make(chan struct{})
	}
	r.real = z
	if err := z.setup(); err != nil {
		z.teardown()
		return nil, err
	}
	z.run()
	z.teardown()

	r.mu.Lock()
	steps := z.events.Load()
	hist := r.hist.snapshot()
	done := slices.Clone(r.done)
	z.notes = append(z.notes, fmt.Sprintf("the run's tree was %s; it ran for %v", z.root, r.endTime.Round(time.Millisecond)))
	notes = slices.Clone(z.notes)
	r.mu.Unlock()
	r.hist = *hist
	r.done = done

	out := sc.clone()
	out.Schedule = nil
	res := &Result{Scenario: out, Steps: steps, Time: r.endTime, Notes: notes, hist: &r.hist}
	res.Verdict = r.check(nil, steps)
	// A task that outlived zkTaskWait may still note events: the trace and
	// the report take a copy.
	r.mu.Lock()
	if o.Trace {
		res.Trace = r.obs.text.String()
	}
	if o.Report {
		r.obs.events = slices.Clone(r.obs.events)
	}
	r.mu.Unlock()
	if o.Report {
		res.Report = r.report(steps)
	}
	return res, nil
}

// anchorFaults runs the scenario on the simulator and finds, for each
// fault, during which of its client's operations it struck there.
func anchorFaults(sc *Scenario, o RunOptions, ctor Constructor, lockKind string, program Workload) ([]anchoredFault, []string) {
	if len(sc.Faults) == 0 {
		return nil, nil
	}
	simOpts := o
	simOpts.ZK, simOpts.ZKLog, simOpts.Trace, simOpts.Report, simOpts.Znodes = nil, nil, false, false, false
	sr := newRunner(sc, simOpts, ctor, lockKind, program)
	// Only where the faults struck is wanted: the server's tree, which
	// the checks of this run would read, is not followed (it costs the
	// real runs going on at the same time their CPU).
	sr.obs.tree.server = nil
	sr.run()
	// The world injects the first due fault of its list each time, so an
	// injection is the first fault of that description not yet matched.
	found := make([]*injectedFault, len(sc.Faults))
	for k := range sr.obs.injected {
		in := &sr.obs.injected[k]
		for i, f := range sc.Faults {
			if found[i] == nil && f.Client == in.client && f.Fault.String() == in.detail {
				found[i] = in
				break
			}
		}
	}
	var anchors []anchoredFault
	var notes []string
	for i, f := range sc.Faults {
		if found[i] == nil {
			notes = append(notes, fmt.Sprintf("fault %s: never struck on the simulator; not injected", formatFault(f)))
			continue
		}
		anchors = append(anchors, anchoredFault{f: f, ops: found[i].ops, onSim: *found[i]})
	}
	return anchors, notes
}

// setup reaches the server, makes the run's tree and connects every
// client through its own proxy.
func (z *zkRun) setup() error {
	r := z.r
	admin, err := zkconn.Dial(z.servers, r.sc.SessionTimeout)
	if err != nil {
		return fmt.Errorf("zk %s: %w", strings.Join(z.servers, ","), err)
	}
	z.admin = admin
	ctx, cancel := context.WithTimeout(context.Background(), zkConnectWait)
	defer cancel()
	if err := admin.WaitConnected(ctx); err != nil {
		return fmt.Errorf("zk %s: cannot reach ZooKeeper: no session after %v", strings.Join(z.servers, ","), zkConnectWait)
	}
	// A container: what teardown cannot delete (a crashed client's
	// ephemeral nodes, until its session expires) the server removes
	// later with its parents.
	z.root = "/zklab-run-" + admin.GUID()[:16]
	if _, err := admin.CreateContainer(ctx, z.root, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("zk %s: create %s: %w", strings.Join(z.servers, ","), z.root, err)
	}
	// The lock stands where it stands on the simulator, under the run's own
	// tree: the recipe makes the same directories, with the same calls.
	r.lockPath = z.root + LockRoot
	z.ctx, z.cancel = context.WithCancel(context.Background())
	for i := 1; i <= r.sc.Clients; i++ {
		p, err := zktest.StartProxy(z.servers[0])
		if err != nil {
			return fmt.Errorf("zk %s: proxy for c%d: %w", z.servers[0], i, err)
		}
		z.proxies = append(z.proxies, p)
		c, err := zkconn.Dial([]string{p.Addr()}, r.sc.SessionTimeout, zkconn.WithDialer(p.Dialer()))
		if err != nil {
			return fmt.Errorf("zk %s: c%d: %w", z.servers[0], i, err)
		}
		z.conns = append(z.conns, c)
		if err := c.WaitConnected(ctx); err != nil {
			return fmt.Errorf("zk %s: c%d has no session after %v", z.servers[0], i, zkConnectWait)
		}
		r.obs.sessionClient[c.Session().ID] = i
	}
	return z.setupAccessZK(ctx)
}

// run starts the clock, the faults and the tasks, and waits for the
// workload to end or for its deadline.
func (z *zkRun) run() {
	r := z.r
	z.start = time.Now()
	for i, c := range z.conns {
		z.aux.Add(1)
		go z.watchSession(i+1, c)
	}
	for k := range z.anchored {
		if a := &z.anchored[k]; a.ops == 0 {
			a.done = true
			z.inject(a.f, fmt.Sprintf("before c%d's first operation, where it struck on the simulator", a.f.Client))
		}
	}
	// The tasks start in client order, each once the one before has
	// settled: it holds the lock, or waits on a watch, or has ended. The
	// simulator's default schedule (the first enabled step) runs them in
	// that order, and the library's stories assume it: c1 first.
	for i, c := range z.conns {
		p := &clientPart{conn: observedConn{Conn: c, r: r, client: i + 1}}
		lock := r.ctor(&p.conn, r.lockPath, r.sc.options(i+1))
		p.worker = Worker{r: r, client: i + 1, conn: &p.conn, lock: lock}
		work := p.workload
		z.tasks.Add(1)
		ended := make(chan struct{})
		go func() {
			defer z.tasks.Done()
			defer close(ended)
			work(z.ctx)
		}()
		t := time.NewTimer(zkStartStagger)
		select {
		case <-z.settledCh[i+1]:
		case <-ended:
		case <-t.C:
		}
		t.Stop()
	}
	const poll = 10 * time.Millisecond
	for {
		r.mu.Lock()
		over := r.allDone()
		deadline := r.obs.lastFaultEnd + r.quietPeriod() + r.bound()
		r.mu.Unlock()
		if over || r.now() >= deadline {
			break
		}
		time.Sleep(poll)
	}
	r.mu.Lock()
	r.endTime = r.now()
	for _, a := range z.anchored {
		if !a.done {
			z.notes = append(z.notes, fmt.Sprintf("fault %s: c%d began %d operations here, fewer than the %d during which it struck on the simulator; not injected",
				formatFault(a.f), a.f.Client, r.obs.ops[a.f.Client], a.ops))
		}
	}
	r.mu.Unlock()
	z.probe()
}

// teardown ends the tasks and closes everything; what the run made is
// deleted.
func (z *zkRun) teardown() {
	r := z.r
	// The tasks cancelled below do not count as done.
	r.mu.Lock()
	doneBefore := slices.Clone(r.done)
	r.mu.Unlock()
	if z.cancel != nil {
		z.cancel()
	}
	var closing sync.WaitGroup
	for _, c := range z.conns {
		closing.Add(1)
		go func() { defer closing.Done(); c.Close() }()
	}
	closing.Wait()
	waitGroup(&z.tasks, zkTaskWait)
	waitGroup(&z.aux, zkTaskWait)
	for _, p := range z.proxies {
		p.Close()
	}
	if z.admin != nil {
		if z.root != "" {
			ctx, cancel := context.WithTimeout(context.Background(), zkTaskWait)
			zkconn.DeleteTree(ctx, z.admin, z.root)
			cancel()
		}
		z.admin.Close()
	}
	r.mu.Lock()
	r.done = doneBefore
	r.mu.Unlock()
}

// waitGroup waits for wg, at most limit: a task stuck in a call that
// never returns is left behind rather than holding the run forever.
func waitGroup(wg *sync.WaitGroup, limit time.Duration) {
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	}
}

// watchSession follows client i's session: which session is whose (for
// the liveness check's blame), and when the client learned that one
// expired. The session view coalesces changes, so an expiry shows as
// StateExpired or as the session's id giving way (to none, or to a new
// session: go-zookeeper asks for a new one only after an expiry).
func (z *zkRun) watchSession(i int, c *zkconn.Conn) {
	defer z.aux.Done()
	r := z.r
	s := c.Session()
	last := s.ID
	for {
		next, err := c.WaitSession(z.ctx, s)
		if err != nil {
			return
		}
		s = next
		expired := last != 0 && (s.State == zk.StateExpired || s.ID != last)
		r.mu.Lock()
		if s.ID != 0 {
			r.obs.sessionClient[s.ID] = i
		}
		if expired {
			if _, ok := z.gone[last]; !ok {
				z.gone[last] = r.step()
			}
		}
		r.mu.Unlock()
		if expired {
			z.event(sim.Event{Kind: "session", Client: i, Session: last, State: zk.StateExpired.String()})
			last = 0
		}
		if s.State != zk.StateExpired {
			z.event(sim.Event{Kind: "session", Client: i, Session: s.ID, State: s.State.String()})
		}
		if s.ID != 0 {
			last = s.ID
		}
	}
}

// inject applies a fault now.
func (z *zkRun) inject(f sim.ScheduledFault, when string) {
	r := z.r
	at := r.now()
	p := z.proxies[f.Client-1]
	var err error
	switch f.Kind {
	case sim.FaultDropRequest:
		p.DropNextRequest()
	case sim.FaultDropReply:
		p.DropNextReply()
	case sim.FaultDisconnect:
		p.Refuse(f.Duration)
	case sim.FaultPartition:
		p.Blackhole(f.Duration)
	case sim.FaultPause:
		r.mu.Lock()
		z.pausedUntil[f.Client] = time.Now().Add(f.Duration)
		r.mu.Unlock()
		p.Blackhole(f.Duration)
	case sim.FaultCrash:
		r.mu.Lock()
		z.crashed[f.Client] = true
		if _, ok := r.obs.crashStep[f.Client]; !ok {
			r.obs.crashStep[f.Client] = r.step()
		}
		r.mu.Unlock()
		p.Kill()
	case sim.FaultExpire:
		err = p.Expire(zkFaultTimeout)
	default:
		err = fmt.Errorf("fault kind %q has no counterpart on a real server", f.Kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.lastFaultStep = r.step()
	r.obs.lastFaultEnd = max(r.obs.lastFaultEnd, at+f.Duration)
	note := fmt.Sprintf("fault %s: injected at %v, %s", formatFault(f), at.Round(time.Millisecond), when)
	if err != nil {
		note = fmt.Sprintf("fault %s: not injected at %v: %v", formatFault(f), at.Round(time.Millisecond), err)
	}
	z.notes = append(z.notes, note)
	if r.opts.ZKLog != nil {
		r.opts.ZKLog(note)
	}
	z.eventLocked(sim.Event{Kind: "fault", Client: f.Client, Detail: f.Fault.String(), Time: at})
}

// strike injects the faults anchored at client's operation n, on the
// client's own task: the task goes on only once they are in.
func (z *zkRun) strike(client int, n int64) {
	r := z.r
	var due []sim.ScheduledFault
	var onSim []injectedFault
	r.mu.Lock()
	for k := range z.anchored {
		a := &z.anchored[k]
		if !a.done && a.f.Client == client && a.ops == n {
			a.done = true
			due = append(due, a.f)
			onSim = append(onSim, a.onSim)
		}
	}
	r.mu.Unlock()
	for k, f := range due {
		z.inject(f, fmt.Sprintf("during c%d's operation %d, where it struck on the simulator (step %d, %v)", client, n, onSim[k].step, onSim[k].time.Round(time.Millisecond)))
	}
}

// event notes an event of the run for its trace and report, when they
// are asked for: what the clients sent and received, the watches they
// saw fire, the faults and the session changes.
func (z *zkRun) event(e sim.Event) {
	r := z.r
	if !r.opts.Trace && !r.opts.Report {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Time = r.now()
	z.eventLocked(e)
}

// eventLocked notes e, stamped with the next step, its time set; the
// caller holds r.mu.
func (z *zkRun) eventLocked(e sim.Event) {
	r := z.r
	if e.Kind != "fault" && !r.opts.Trace && !r.opts.Report {
		return
	}
	e.Step = r.step()
	if e.Kind == "fault" {
		// The history's timeline shows the faults, trace or not.
		r.obs.mark(e.Step, e.Client, faultText(e))
	}
	if r.opts.Trace {
		r.obs.text.WriteString(e.Text())
		r.obs.text.WriteByte('\n')
	}
	if r.opts.Report {
		r.obs.events = append(r.obs.events, e)
	}
}

// settled notes that client holds the lock or waits on a watch: the next
// client's task may start.
func (z *zkRun) settled(client int) {
	z.settleOnce[client].Do(func() { close(z.settledCh[client]) })
}

// gate holds a paused client's task until its pause ends, and ends a
// crashed client's task (runtime.Goexit: its deferred calls run, as a
// killed task's do in the simulator).
func (z *zkRun) gate(client int) {
	for {
		z.r.mu.Lock()
		crashed, until := z.crashed[client], z.pausedUntil[client]
		z.r.mu.Unlock()
		if crashed {
			runtime.Goexit()
		}
		wait := time.Until(until)
		if wait <= 0 {
			return
		}
		time.Sleep(wait)
	}
}

// closing closes client's session and notes when its end was certain.
func (z *zkRun) closing(client int, closeFn func()) {
	r := z.r
	session := z.conns[client-1].Session().ID
	closeFn()
	r.mu.Lock()
	if _, ok := z.gone[session]; !ok && session != 0 {
		z.gone[session] = r.step()
	}
	r.mu.Unlock()
}

// noteDelete notes a delete a client saw; the caller holds no lock.
func (z *zkRun) noteDelete(client int, p string, call, ret uint64, applied bool) {
	z.r.mu.Lock()
	z.deletes[p] = append(z.deletes[p], zkDelete{client: client, call: call, ret: ret, applied: applied})
	z.r.mu.Unlock()
}

// probe lists the lock's tree after the run with the admin client: what
// the liveness check blames, and which lease nodes were still there.
func (z *zkRun) probe() {
	r := z.r
	ctx, cancel := context.WithTimeout(context.Background(), zkTaskWait)
	defer cancel()
	var nodes []probeNode
	found := map[string]int64{}
	queue := []string{r.lockPath}
	ok := true
	for len(queue) > 0 && len(nodes) < probeLimit {
		p := queue[0]
		queue = queue[1:]
		names, _, err := z.admin.Children(ctx, p)
		if err != nil {
			if err != zk.ErrNoNode {
				ok = false
			}
			continue
		}
		slices.Sort(names)
		for _, n := range names {
			child := p + "/" + n
			exists, st, err := z.admin.Exists(ctx, child)
			if err != nil {
				ok = false
				continue
			}
			if !exists {
				continue
			}
			found[child] = st.Czxid
			nodes = append(nodes, probeNode{path: child, owner: st.EphemeralOwner, czxid: st.Czxid, isQueue: sequentialName(n)})
			if st.NumChildren > 0 {
				queue = append(queue, child)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probe, r.probed = nodes, true
	if ok && len(nodes) < probeLimit {
		z.probeFound, z.probeStep = found, r.step()
	}
}

// leaseEnd bounds where a lease ended in ZooKeeper's view (see the
// comment at the top of this file). It is called after the run.
func (z *zkRun) leaseEnd(l *lockRec) (from, to uint64, ok bool) {
	for _, n := range l.nodes {
		lo, hi, ended := z.nodeEnd(l, n)
		if !ended {
			continue
		}
		if !ok {
			from, to, ok = lo, hi, true
			continue
		}
		from, to = min(from, lo), min(to, hi)
	}
	return from, to, ok
}

func (z *zkRun) nodeEnd(l *lockRec, n string) (lo, hi uint64, ok bool) {
	for _, d := range z.deletes[n] {
		if d.applied && d.client == l.client && d.call >= l.acquireReturn {
			return d.call, d.ret, true
		}
	}
	goneBy := func(at uint64) {
		if at < l.acquireCall {
			return
		}
		if !ok || at < hi {
			hi, ok = at, true
		}
	}
	for _, d := range z.deletes[n] {
		if !d.applied && d.call >= l.acquireCall {
			goneBy(d.call)
		}
	}
	if l.releaseReturned && l.releaseErr == nil {
		goneBy(l.releaseReturn)
	}
	if !z.r.obs.persistentDirs[path.Dir(n)] {
		if at, seen := z.gone[l.session]; seen {
			goneBy(at)
		}
	}
	if z.probeFound != nil {
		if czxid, there := z.probeFound[n]; !there || (len(l.nodes) == 1 && czxid != l.token) {
			goneBy(z.probeStep)
		}
	}
	return l.acquireCall, hi, ok
}

// snapshot copies the history's records, so that the checks read them
// while a task that outlived the run cannot write them.
func (h *history) snapshot() *history {
	out := &history{}
	for _, l := range h.locks {
		c := *l
		c.nodes = slices.Clone(l.nodes)
		out.locks = append(out.locks, &c)
	}
	for _, u := range h.updates {
		c := *u
		out.updates = append(out.updates, &c)
	}
	out.marks = slices.Clone(h.marks)
	return out
}
