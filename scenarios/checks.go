package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
)

// The checks, by name.
const (
	// CheckRun fails when the run itself went wrong: a task panicked. Its
	// outcome is Limit when the run reached its step, virtual-time or
	// wall-time limit (limits.go).
	CheckRun = "run"
	// CheckLock is the linearizability of the lock (porcupine, against
	// the mutex, read/write or semaphore model): acquires as the clients
	// saw them, each lease ending where ZooKeeper removed it (its release
	// or its session's end).
	CheckLock = "lock-linearizable"
	// CheckStore is the linearizability of the protected store (porcupine,
	// against model.Store or model.FencedStore).
	CheckStore = "store-linearizable"
	// CheckZKHolders is at most one holder (N for a semaphore, readers
	// together for a read/write lock) in ZooKeeper's view at any step: a
	// lease counts from its acquire's return to the end of its lock node
	// in the server's tree, however the node went (a delete, a multi, its
	// session's close or expiry). On the simulator the node, its owner
	// session and its end are the server's own (serverTree), not what the
	// lease reports; leases that stand on one node are one holder. On a
	// real server, which zklab cannot look inside, the lease's nodes and
	// session are the lease's, and an end is bounded by what the clients
	// saw (see zk.go).
	CheckZKHolders = "zk-holders"
	// CheckSplitBrain is at most one client believing it holds the lock
	// at any step: a belief lasts from the acquire's return to the
	// release's call (or the client's crash); one client's beliefs on one
	// node are one holder. Pauses and partitions
	// longer than the session timeout make it fail even for a correct
	// recipe; a fenced store stays safe. It is reported, and by default
	// not counted as a violation.
	CheckSplitBrain = "split-brain"
	// CheckLiveness fails when a client has not finished its cycles a
	// quiet period after the last fault plus the time the workload
	// needs; it names the node the waiter is stuck behind, its owner, and
	// the history that left it there (blame.go).
	CheckLiveness = "liveness"
	// CheckDeadWatches fails when a client set an exists watch on a
	// sequential node that was gone: it can never fire.
	CheckDeadWatches = "dead-watches"
	// CheckZnodes is the linearizability of the simulator's own history
	// against model.Znode (RunOptions.Znodes). On an ensemble, where a
	// read may be stale, it checks the writes alone.
	CheckZnodes = "zk-linearizable"
	// CheckSequential is, on an ensemble, each session's reads in the
	// simulator's own history against model.SessionReads: stale reads
	// allowed, as long as each session's move forward and see its own
	// writes (RunOptions.Znodes; a run of one server does not list it).
	CheckSequential = "zk-sequential"
	// CheckUser is the linearizability of a user's own operations,
	// recorded by the workload (Worker.Begin) and checked against the
	// user's porcupine model (RunOptions.Model). A run without a model
	// has no such check.
	CheckUser = "user-linearizable"
)

// CheckNames lists every check, in the order a verdict shows them.
var CheckNames = []string{CheckRun, CheckLock, CheckStore, CheckZKHolders, CheckSplitBrain, CheckLiveness, CheckDeadWatches, CheckZnodes, CheckSequential, CheckUser}

// DefaultViolations are the checks whose failure makes a run a failure
// for exploration and for Test: all but split-brain, which a correct
// recipe shows under long pauses (the fenced store is what must stay
// safe then).
var DefaultViolations = []string{CheckRun, CheckLock, CheckStore, CheckZKHolders, CheckLiveness, CheckDeadWatches, CheckZnodes, CheckSequential, CheckUser}

// herdFigureNames are the herd figures, as "expect herd.NAME N" names
// them.
var herdFigureNames = []string{"notifications", "releases", "children-calls", "bytes-returned"}

// CheckResult is the outcome of one check, with what a person needs to
// see why.
type CheckResult struct {
	Name    string
	Outcome Outcome
	Detail  string
}

// Herd holds the herd figures of a run.
type Herd struct {
	// Notifications counts the watch notifications the clients received
	// (not counting NotWatching).
	Notifications int64
	// Releases counts the leases that ended (released or lost).
	Releases int64
	// ChildrenCalls counts getChildren calls of the recipe.
	ChildrenCalls int64
	// BytesReturned counts the bytes of names and data the recipe's reads
	// returned.
	BytesReturned int64
}

// PerRelease is the notifications per release.
func (h Herd) PerRelease() float64 {
	if h.Releases == 0 {
		return 0
	}
	return float64(h.Notifications) / float64(h.Releases)
}

func (h Herd) figure(name string) int64 {
	switch name {
	case "notifications":
		return h.Notifications
	case "releases":
		return h.Releases
	case "children-calls":
		return h.ChildrenCalls
	case "bytes-returned":
		return h.BytesReturned
	}
	return -1
}

// Verdict is the checks of one run.
type Verdict struct {
	// Title says what ran: the recipe, clients, cycles and store.
	Title  string
	Checks []CheckResult
	Herd   Herd
	Steps  uint64
	Time   time.Duration
	// Real is set for a run on a real ZooKeeper: Steps counts the events
	// the workload noted and Time is wall time.
	Real bool
}

// Check returns the result of the named check.
func (v *Verdict) Check(name string) CheckResult {
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	return CheckResult{Name: name, Outcome: Skipped}
}

// Violations returns the failed checks among names (DefaultViolations
// if nil).
func (v *Verdict) Violations(names []string) []CheckResult {
	if names == nil {
		names = DefaultViolations
	}
	var out []CheckResult
	for _, c := range v.Checks {
		if c.Outcome == Fail && slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// Failed reports whether a check of DefaultViolations failed.
func (v *Verdict) Failed() bool { return len(v.Violations(nil)) > 0 }

// String renders the verdict for a person: one line per check.
func (v *Verdict) String() string {
	var b strings.Builder
	status := "PASS"
	switch {
	case v.Failed():
		status = "FAIL"
	case v.LimitReached():
		status = "LIMIT" // limits.go: neither a pass nor a violation
	case slices.ContainsFunc(v.Checks, func(c CheckResult) bool { return c.Outcome == Unknown }):
		status = "UNKNOWN"
	}
	if v.Real {
		fmt.Fprintf(&b, "verdict: %s  %s; %d events, %v wall time\n", status, v.Title, v.Steps, v.Time.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "verdict: %s  %s; %d steps, %v virtual\n", status, v.Title, v.Steps, v.Time.Round(time.Millisecond))
	}
	for _, c := range v.Checks {
		line := fmt.Sprintf("  %-19s %-7s", c.Name, c.Outcome)
		if c.Detail != "" {
			line += " " + strings.ReplaceAll(c.Detail, "\n", "\n"+strings.Repeat(" ", 30))
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	h := v.Herd
	fmt.Fprintf(&b, "  %-19s notifications=%d releases=%d (%.1f per release) children-calls=%d bytes-returned=%d\n",
		"herd", h.Notifications, h.Releases, h.PerRelease(), h.ChildrenCalls, h.BytesReturned)
	return b.String()
}

// Applies reports whether an expectation can be checked against the
// verdict: on a real server the herd figures (counted as the recipe's
// waits return, in the server's own order) and the checks that do not
// apply there are not held to a file's expectations.
func (v *Verdict) Applies(e Expectation) bool {
	if !v.Real {
		return true
	}
	if strings.HasPrefix(e.Check, "herd.") {
		return false
	}
	return v.Check(e.Check).Outcome != Skipped
}

// Expectations compares the verdict with the expected outcomes that
// apply (Applies) and returns one line per mismatch.
func (v *Verdict) Expectations(exp []Expectation) []string {
	var bad []string
	for _, e := range exp {
		if !v.Applies(e) {
			continue
		}
		if name, ok := strings.CutPrefix(e.Check, "herd."); ok {
			if got := v.Herd.figure(name); got != e.Figure {
				bad = append(bad, fmt.Sprintf("expect %s: got %d", e, got))
			}
			continue
		}
		if got := v.Check(e.Check); got.Outcome != e.Outcome {
			bad = append(bad, fmt.Sprintf("expect %s: got %s %s", e, got.Outcome, got.Detail))
		}
	}
	return bad
}

func (r *runner) check(znodeOps []sim.Operation, lastStep uint64) *Verdict {
	// The verdict comes in one allocation with room for every check, and
	// its title is built on the stack and allocated once: every run
	// makes a verdict, and fmt's title (its arguments boxed, the counts
	// written by Plural first) and the growing list of checks were a
	// dozen allocations a run. The verdict of a run whose result was
	// given back is taken again (runBuffers.verdict): at 640 bytes it was
	// most of what the harness itself allocated a run.
	vc := r.buffers().takeVerdict()
	r.verdict = vc
	v := &vc.v
	*v = Verdict{Title: r.title(), Steps: lastStep, Time: r.endTime, Checks: vc.checks[:0]}
	if r.real != nil {
		v.Title += " on ZooKeeper at " + strings.Join(r.opts.ZK, ",")
		v.Real = true
	}
	timeout := r.opts.CheckTimeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	runRes := CheckResult{Name: CheckRun, Outcome: Pass}
	if r.runErr != nil {
		runRes = CheckResult{Name: CheckRun, Outcome: Fail, Detail: firstLines(r.runErr.Error(), 12)}
	}
	v.Checks = append(v.Checks, runRes, r.checkLock(timeout), r.checkStore(timeout))
	v.Checks = append(v.Checks, r.checkOverlap(CheckZKHolders, lastStep), r.checkOverlap(CheckSplitBrain, lastStep))
	v.Checks = append(v.Checks, r.checkLiveness(), r.checkDeadWatches())
	if r.opts.Model != nil {
		v.Checks = append(v.Checks, r.checkUser(timeout))
	}
	switch {
	case r.real != nil:
		v.Checks = append(v.Checks, CheckResult{Name: CheckZnodes, Outcome: Skipped, Detail: "needs the simulator's own history of the server"})
	case r.sc.Servers > 1:
		v.Checks = append(v.Checks, r.checkEnsembleZnodes(znodeOps, lastStep, timeout)...)
	case r.opts.Znodes:
		v.Checks = append(v.Checks, checkZnodes(znodeOps, r.obs, lastStep, timeout))
	default:
		v.Checks = append(v.Checks, CheckResult{Name: CheckZnodes, Outcome: Skipped})
	}
	v.Herd = Herd{
		Notifications: r.obs.notifications,
		ChildrenCalls: r.obs.childrenCalls,
		BytesReturned: r.obs.bytesReturned,
	}
	for _, l := range r.hist.locks {
		if l.granted {
			if _, _, ok := r.leaseEnd(l); ok {
				v.Herd.Releases++
			}
		}
	}
	return v
}

// verdictAndChecks is a verdict with the array of its checks: room for
// every check a verdict lists (CheckNames; a verdict with more would
// simply grow its list).
type verdictAndChecks struct {
	v      Verdict
	checks [10]CheckResult
}

// title says what ran: "fair-lock, 5 clients × 10 cycles, fenced store".
func (r *runner) title() string {
	sc := r.sc
	var buf [128]byte
	b := append(buf[:0], sc.Recipe...)
	b = append(b, ", "...)
	b = appendPlural(b, sc.Clients, "client")
	b = append(b, " × "...)
	b = appendPlural(b, sc.Cycles, "cycle")
	b = append(b, ", "...)
	b = append(b, sc.Store...)
	b = append(b, " store"...)
	return r.buffers().text(textTitle, b)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}

func porcupineOutcome(res porcupine.CheckResult) Outcome {
	switch res {
	case porcupine.Ok:
		return Pass
	case porcupine.Illegal:
		return Fail
	}
	return Unknown
}

func (r *runner) lockModel() porcupine.Model {
	switch r.lockKind {
	case "rwlock":
		return model.RWLock()
	case "semaphore":
		return model.Semaphore(max(r.sc.Leases, 1))
	}
	return model.Mutex()
}

// checkLock checks the lock's history with porcupine. A lease's release
// ends where ZooKeeper deleted its node or ended its session, which the
// trace tells: a lost lease is not left open to infinity.
//
// The model first takes the operations in return order on plain values
// (typedLegalInReturnOrder): when every step is legal the history is
// linearizable, porcupine's answer, and no operation is boxed for it.
func (r *runner) checkLock(timeout time.Duration) CheckResult {
	typed := r.lockOps()
	res := porcupine.Ok
	if !typedLegalInReturnOrder(typed, model.LockStep(r.lockKind, max(r.sc.Leases, 1))) {
		res = checkLinearizable(r.lockModel(), boxOps(typed), timeout)
	}
	var buf [64]byte
	out := CheckResult{Name: CheckLock, Outcome: porcupineOutcome(res), Detail: r.buffers().text(textLock, appendPlural(buf[:0], len(typed), "operation"))}
	if res == porcupine.Unknown {
		out.Detail += fmt.Sprintf("; no answer within %v", timeout)
	}
	return out
}

// lockOperations is the lock's history as porcupine operations.
func (r *runner) lockOperations() []porcupine.Operation { return boxOps(r.lockOps()) }

// lockOps is the lock's history, before porcupine boxes it.
func (r *runner) lockOps() []typedOp[model.LockInput, model.LockOutput] {
	b := r.buffers()
	ops := takeSlice(b.lockOps, 2*len(r.hist.locks)) // an acquire and a release each, at most
	for _, l := range r.hist.locks {
		if !l.returned {
			continue // never answered: it changed nothing anyone saw
		}
		if l.reentered {
			continue // inside its client's own hold: the hold is the operation
		}
		ops = append(ops, typedOp[model.LockInput, model.LockOutput]{
			client: l.client,
			in:     model.LockInput{Kind: model.Acquire, Client: l.client, Shared: l.shared},
			out:    model.LockOutput{OK: l.granted, Token: l.token},
			call:   int64(l.acquireCall),
			ret:    int64(l.acquireReturn),
		})
		if !l.granted {
			continue
		}
		from, end, ok := r.leaseEnd(l)
		if next := r.resumedBy(l); next != nil {
			// The client's next lease stands on the same life of the
			// same node (a release that kept it, an acquire that resumed
			// it): the hold went on, and this lease ends where the next
			// one began.
			from, end, ok = l.releaseCall, next.acquireCall, true
		}
		if !ok {
			continue // held to the end of the run
		}
		call := from
		if l.releaseCalled && l.releaseCall < call {
			call = l.releaseCall
		}
		ops = append(ops, typedOp[model.LockInput, model.LockOutput]{
			client: l.client,
			in:     model.LockInput{Kind: model.Release, Client: l.client, Shared: l.shared},
			out:    model.LockOutput{OK: true},
			call:   int64(call),
			ret:    int64(end),
		})
	}
	b.lockOps = ops // the next call's, or the next run's: ops are read and dropped before
	return ops
}

// checkStore checks the store's history with porcupine: each critical
// section is one update, from its read's call to its write's return. As
// checkLock, it tries the return order on plain values first.
func (r *runner) checkStore(timeout time.Duration) CheckResult {
	typed := r.storeOps()
	res := porcupine.Ok
	if !typedLegalInReturnOrder(typed, model.StoreStep(r.store.fenced)) {
		m := model.Store()
		if r.store.fenced {
			m = model.FencedStore()
		}
		res = checkLinearizable(m, boxOps(typed), timeout)
	}
	out := CheckResult{Name: CheckStore, Outcome: porcupineOutcome(res)}
	// "value N after M writes", in one allocation (fmt boxed the value
	// and Plural's text).
	var buf [64]byte
	b := strconv.AppendInt(append(buf[:0], "value "...), r.store.value, 10)
	out.Detail = r.buffers().text(textStore, appendPlural(append(b, " after "...), int(r.store.writes), "write"))
	if len(r.store.lost) > 0 {
		lu := r.store.lost[0]
		out.Detail += fmt.Sprintf("; %s, the first at step %d: c%d (token %#x) wrote %d over %d, having read %d (c%d's update lost)",
			Plural(len(r.store.lost), "lost update"), lu.step, lu.client, lu.token, lu.read+1, lu.current, lu.read, lu.previous)
	}
	if res == porcupine.Unknown {
		out.Detail += fmt.Sprintf("; no answer within %v", timeout)
	}
	return out
}

// storeOperations is the store's history as porcupine operations.
func (r *runner) storeOperations() []porcupine.Operation { return boxOps(r.storeOps()) }

// storeOps is the store's history, before porcupine boxes it.
func (r *runner) storeOps() []typedOp[model.StoreInput, model.StoreOutput] {
	b := r.buffers()
	ops := takeSlice(b.storeOps, len(r.hist.updates))
	for _, u := range r.hist.updates {
		if !u.readDone {
			continue // the read never happened
		}
		ret := u.readReturn
		if u.wrote {
			ret = u.writeReturn
		}
		ops = append(ops, typedOp[model.StoreInput, model.StoreOutput]{
			client: u.client,
			in:     model.StoreInput{Client: u.client, Token: u.token, Wrote: u.wrote},
			out:    model.StoreOutput{Read: u.read, ReadOK: u.readOK, WriteOK: u.writeOK},
			call:   int64(u.readCall),
			ret:    int64(ret),
		})
	}
	b.storeOps = ops // as lockOps'
	return ops
}

type span struct {
	rec        *lockRec
	start, end uint64 // [start, end)
	// holder says who holds: on the simulator, in ZooKeeper's view, the
	// lives of the lease's nodes (two leases on one node are one holder,
	// whoever took them); for a belief, and on a real server, the client
	// and its nodes. It is named only once the span overlaps another
	// (checkOverlap): "" before.
	holder string
}

// admits says whether the holders of a set may hold together; spans of
// one holder count once.
func (r *runner) admits(holders []span) bool {
	writers, readers := 0, 0
	for i, h := range holders {
		// The holders that overlap are a few: a look back beats a map.
		if slices.ContainsFunc(holders[:i], func(o span) bool { return o.holder == h.holder }) {
			continue
		}
		if h.rec.shared {
			readers++
		} else {
			writers++
		}
	}
	switch r.lockKind {
	case "rwlock":
		return writers == 0 || (writers == 1 && readers == 0)
	case "semaphore":
		return writers <= max(r.sc.Leases, 1)
	}
	return writers+readers <= 1
}

// holderOf names who holds with lease l: in ZooKeeper's view on the
// simulator, the server's lives of its nodes; otherwise (and for a lease
// that names no node) the client and the nodes it names.
//
// The name is built in a stack buffer and allocated once: it was built
// for every lease of every run, twice (zk-holders and split-brain), and
// the concatenations were 7% of an exploration's allocations; now only
// for the leases whose spans overlap.
func (r *runner) holderOf(l *lockRec, zkView bool) string {
	var buf [128]byte
	b := buf[:0]
	if zkView && r.real == nil && len(l.lives) > 0 {
		for i, z := range l.lives {
			if z == nil {
				b = append(append(b, l.nodes[i]...), "(gone);"...)
				continue
			}
			b = append(append(b, z.path...), '@')
			b = append(strconv.AppendInt(b, z.czxid, 16), ';')
		}
		return string(b)
	}
	b = append(strconv.AppendInt(append(b, 'c'), int64(l.client), 10), ':')
	for _, n := range l.nodes {
		b = append(append(b, n...), ',')
	}
	return string(b)
}

// describeHolder says who holds with lease l, for a person: the client,
// its token, the session that owns its node in the server's tree (and
// the session the lease claimed, where it differs), and since when.
func (r *runner) describeHolder(s span) string {
	l := s.rec
	session := l.session
	claim := ""
	if owner, ok := r.serverOwner(l); ok {
		if owner != l.session {
			claim = fmt.Sprintf(", the lease said %#x", l.session)
		}
		session = owner
	}
	who := fmt.Sprintf("session %#x", session)
	if session == 0 {
		who = "no session (a persistent node)"
	} else if c, ok := r.obs.sessionClient[session]; ok && c != l.client {
		who += fmt.Sprintf(" of c%d", c)
	}
	nodes := ""
	if len(l.nodes) > 0 {
		nodes = ", node " + strings.Join(l.nodes, ",")
	}
	return fmt.Sprintf("c%d (token %#x, %s%s%s, from step %d)", l.client, l.token, who, claim, nodes, s.start)
}

// serverOwner is the owner session the server had for the first node of
// lease l at the acquire's return (the simulator only).
func (r *runner) serverOwner(l *lockRec) (int64, bool) {
	for _, z := range l.lives {
		if z != nil {
			return z.owner, true
		}
	}
	return 0, false
}

// checkOverlap sweeps the leases' spans (ZooKeeper's view, or the
// clients' belief) step by step and reports the first step at which the
// holders are more than the lock admits.
func (r *runner) checkOverlap(name string, lastStep uint64) CheckResult {
	b := r.buffers()
	spans := takeSlice(b.spans, len(r.hist.locks))
	active := takeSlice(b.active, 0)
	// The arrays serve both calls of a run and the next run's: what they
	// point to is let go with the buffers (runBuffers.put).
	defer func() { b.spans, b.active = spans, active }()
	for _, l := range r.hist.locks {
		if !l.granted {
			continue
		}
		end, ok := uint64(0), false
		if name == CheckZKHolders {
			// The earliest the lease can have ended: on a real server a
			// deletion is known only within bounds, and an overlap is
			// reported only when it is certain.
			end, _, ok = r.leaseEnd(l)
		} else {
			if l.releaseCalled {
				end, ok = l.releaseCall, true
			} else if st, crashed := r.obs.crashStep[l.client]; crashed && st >= l.acquireReturn {
				end, ok = st, true
			}
		}
		if !ok {
			end = lastStep + 1
		}
		if end <= l.acquireReturn {
			// Gone before the grant was seen: a client that acted on a
			// stale read (its session expired between its getChildren and
			// its return) never held in ZooKeeper's view. Its belief is
			// split-brain's business.
			if name == CheckZKHolders {
				continue
			}
			end = l.acquireReturn
		}
		spans = append(spans, span{rec: l, start: l.acquireReturn, end: end})
	}
	sortSpansByStart(spans) // in the order of the acquires' calls, nearly that of their starts
	for _, s := range spans {
		// The spans that ended by s's start leave, the others keep their
		// order: DeleteFunc's, without its closure's call for each span
		// and its clearing of the array's tail at each step.
		kept := active[:0]
		for _, a := range active {
			if a.end > s.start {
				kept = append(kept, a)
			}
		}
		active = append(kept, s)
		if len(active) > 1 {
			// Who holds matters only to spans that overlap: one span
			// is one holder, whoever it is.
			for i := range active {
				if active[i].holder == "" {
					active[i].holder = r.holderOf(active[i].rec, name == CheckZKHolders)
				}
			}
		}
		// One holder alone is always admitted (a writer, a reader, a
		// lease of a semaphore): admits is asked only of two or more,
		// where it was asked at every span.
		if len(active) > 1 && !r.admits(active) {
			var who []string
			seen := map[string]bool{}
			for _, a := range active {
				if !seen[a.holder] {
					seen[a.holder] = true
					who = append(who, r.describeHolder(a))
				}
			}
			what := "hold in ZooKeeper's view"
			switch {
			case name == CheckSplitBrain && r.sc.Election():
				what = "believe they lead at once"
			case name == CheckSplitBrain:
				what = "believe they hold the lock"
			case r.sc.Election():
				what = "lead at once in ZooKeeper's view"
			}
			return CheckResult{Name: name, Outcome: Fail, Detail: fmt.Sprintf("at step %d, %s %s", s.start, strings.Join(who, " and "), what)}
		}
	}
	noun, slot := "lease", textHolders
	if r.sc.Election() {
		noun = "term"
	}
	if name == CheckSplitBrain {
		slot = textSplitBrain
	}
	var buf [64]byte
	return CheckResult{Name: name, Outcome: Pass, Detail: r.buffers().text(slot, appendPlural(buf[:0], len(spans), noun))}
}

// waitedFor is what a client stuck in its acquire did: waited for the
// lock, or campaigned for leadership in an election.
func (r *runner) waitedFor() string {
	if r.sc.Election() {
		return "campaigned for leadership"
	}
	return "waited for the lock"
}

// releaseWord names a release: an abdication in an election.
func (r *runner) releaseWord() string {
	if r.sc.Election() {
		return "abdication"
	}
	return "release"
}

// checkLiveness names every client that did not finish its cycles in
// time, what it was doing, and the node at the head of the lock's queue
// with its owner.
func (r *runner) checkLiveness() CheckResult {
	var stuck []string
	var waiters []int
	for i := 1; i <= r.sc.Clients; i++ {
		if r.done[i] || r.obs.crashed(i) {
			continue
		}
		var last *lockRec
		for _, l := range r.hist.locks {
			if l.client == i {
				last = l
			}
		}
		switch {
		case last != nil && !last.returned:
			stuck = append(stuck, fmt.Sprintf("c%d %s from step %d (%v) to the end (%v)", i, r.waitedFor(), last.acquireCall, last.acquireCallTime.Round(time.Millisecond), r.endTime.Round(time.Millisecond)))
			waiters = append(waiters, i)
		case last != nil && last.releaseCalled && !last.releaseReturned:
			stuck = append(stuck, fmt.Sprintf("c%d's %s from step %d never returned", i, r.releaseWord(), last.releaseCall))
		default:
			stuck = append(stuck, fmt.Sprintf("c%d did not finish its cycles", i))
		}
	}
	if len(stuck) == 0 {
		return CheckResult{Name: CheckLiveness, Outcome: Pass}
	}
	detail := strings.Join(stuck, "; ")
	if blame := r.blame(waiters); blame != "" {
		detail += "; " + blame
	}
	detail += fmt.Sprintf(" (the last fault ended at %v; quiet period %v, bound %v)", r.obs.lastFaultEnd.Round(time.Millisecond), r.quietPeriod(), r.bound())
	return CheckResult{Name: CheckLiveness, Outcome: Fail, Detail: detail}
}

func (r *runner) checkDeadWatches() CheckResult {
	d := r.obs.deadWatches
	if len(d) == 0 {
		return CheckResult{Name: CheckDeadWatches, Outcome: Pass}
	}
	return CheckResult{Name: CheckDeadWatches, Outcome: Fail, Detail: fmt.Sprintf("%d exists watches on sequential nodes already gone, the first by c%d on %s at step %d (%v)",
		len(d), d[0].client, d[0].path, d[0].step, d[0].time.Round(time.Millisecond))}
}

func checkZnodes(ops []sim.Operation, obs *observer, lastStep uint64, timeout time.Duration) CheckResult {
	return checkZnodeModel(CheckZnodes, model.Znode(), nil, ops, obs, lastStep, timeout)
}

// checkZnodeModel checks the simulator's history, turned into Znode
// operations and kept by keep (all if nil), against m.
func checkZnodeModel(name string, m porcupine.Model, keep func([]porcupine.Operation) []porcupine.Operation, ops []sim.Operation, obs *observer, lastStep uint64, timeout time.Duration) CheckResult {
	hist := znodeHistory(ops, obs, lastStep)
	if keep != nil {
		hist = keep(hist)
	}
	return checkZnodeHistory(name, m, hist, timeout)
}

// znodeHistory is the run's history of znode operations, as the models
// take it.
func znodeHistory(ops []sim.Operation, obs *observer, lastStep uint64) []porcupine.Operation {
	// The observer keeps no trace events; give the FIN and crash steps
	// through a synthetic trace.
	var trace []sim.Event
	for _, f := range obs.fins {
		trace = append(trace, sim.Event{Kind: "server", Client: f.client, Step: f.step, Detail: "closed by the client"})
	}
	for client := 1; client < len(obs.ops); client++ {
		if step, ok := obs.crashStep[client]; ok {
			trace = append(trace, sim.Event{Kind: "fault", Client: client, Step: step, Detail: fmt.Sprintf("%s c%d", sim.FaultCrash, client)})
		}
	}
	return model.ZnodeOperations(ops, trace, lastStep)
}

// checkZnodeHistory checks a history of znode operations against m.
func checkZnodeHistory(name string, m porcupine.Model, hist []porcupine.Operation, timeout time.Duration) CheckResult {
	res := porcupine.CheckOperationsTimeout(m, hist, timeout)
	out := CheckResult{Name: name, Outcome: porcupineOutcome(res), Detail: Plural(len(hist), "operation")}
	if res == porcupine.Unknown {
		out.Detail += fmt.Sprintf("; no answer within %v", timeout)
	}
	return out
}

// resumedBy is the client's next granted lease when it stands on the
// same life of the same node as l (l's release kept the node and the
// next acquire resumed it), nil otherwise. Simulator only.
func (r *runner) resumedBy(l *lockRec) *lockRec {
	if !l.releaseCalled || len(l.lives) == 0 || l.lives[0] == nil {
		return nil
	}
	// The leases after l, from its place in the history: a look from the
	// history's start, for every lease, was 0.3% of an exploration.
	for _, n := range r.hist.locks[l.index+1:] {
		// A re-entered grant is inside this hold, not a resumption after
		// it (lockOps skips it).
		if n.client == l.client && n.granted && !n.reentered {
			if len(n.lives) > 0 && n.lives[0] == l.lives[0] {
				return n
			}
			return nil
		}
	}
	return nil
}
