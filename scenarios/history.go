package scenarios

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zklab/zklab/sim"
)

// lockRec is one lock cycle of one client: the acquire (invoked and
// returned, with its token), and the release. Steps are the simulator's.
type lockRec struct {
	// index is the record's place in history.locks.
	index             int
	client            int
	shared            bool
	acquireCall       uint64
	acquireCallTime   time.Duration
	acquireReturn     uint64
	acquireReturnTime time.Duration
	returned          bool
	acquireErr        error
	granted           bool
	token             int64
	session           int64
	nodes             []string
	// lives are, on the simulator, the server's lives of nodes as they
	// stood at the acquire's return (nil for a node already gone): the
	// node's owner and end are the server's, whatever the lease says.
	lives           []*znodeLife
	releaseCall     uint64
	releaseCallTime time.Duration
	releaseCalled   bool
	releaseReturn   uint64
	releaseReturned bool
	releaseErr      error
	// reentered: granted again to a client that held the lock already,
	// on the same nodes with the same token (a reentrant recipe); it is
	// part of that hold, not a grant of its own.
	reentered bool
	// held is what the workload holds of the grant (Worker.Acquire's),
	// kept here rather than allocated for itself.
	held Held
}

// updateRec is one critical section's update of the store.
type updateRec struct {
	client      int
	token       int64
	readCall    uint64
	readReturn  uint64
	readDone    bool
	read        int64
	readOK      bool
	writeCall   uint64
	writeReturn uint64
	wrote       bool
	writeOK     bool
	// The times of the steps above, for a report's time axis.
	readCallTime, readReturnTime, writeCallTime, writeReturnTime time.Duration
}

// history is what the workload did, in chunks so that pointers to
// records stay valid while it grows.
type history struct {
	locks   []*lockRec
	updates []*updateRec
	// userOps are the user's own operations (Worker.Begin).
	userOps []*UserOp
	// marks are what happened to the clients rather than what they did:
	// the faults injected and ended, and the sessions the server expired.
	marks []markRec
	// lockChunk and updateChunk hold the records locks and updates point
	// to, many to an allocation.
	lockChunk   chunk[lockRec]
	updateChunk chunk[updateRec]
	// open counts the holds granted and not yet released (granted, not
	// reentered, no release called): with none, a grant falls inside no
	// hold, and holding need not walk every lock cycle of the run, as it
	// did at each grant.
	open int
}

// A chunk stores records in arrays that never move, so that a pointer to
// a record stays valid while more are added, and one allocation holds
// many records (one each was a tenth of a run's allocated bytes).
type chunk[T any] struct {
	free []T // the current array's room: length 0, capacity what is left
	next int // the size of the next array
	// first is the first array, and n the records added: what a later
	// run takes over (keep).
	first []T
	n     int
}

// add stores v and returns where.
func (c *chunk[T]) add(v T) *T {
	if cap(c.free) == 0 {
		c.next = max(c.next, chunkMin)
		c.free = make([]T, 0, c.next)
		if cap(c.first) == 0 {
			c.first = c.free
		}
		c.next *= 2
	}
	c.free = append(c.free, v)
	p := &c.free[0]
	c.free = c.free[1:]
	c.n++
	return p
}

// chunkBuffer is a chunk's first array kept for a later run (runBuffers),
// and the records the run that kept it added.
type chunkBuffer[T any] struct {
	array []T // empty, zeroed; nil if it did not hold the run's records
	added int
}

// start readies the empty chunk c for at least n records: its first
// array is b's if that has room for n and for the records of the run
// that kept it; if not, one that has.
func (c *chunk[T]) start(n int, b *chunkBuffer[T]) {
	c.next = max(n, b.added)
	if cap(b.array) >= c.next {
		c.free, c.first = b.array, b.array
	}
	*b = chunkBuffer[T]{}
}

// keep empties c into b for a later run: its first array, zeroed, if it
// held every record (an array that did not is dropped, and the next run
// takes one as large as the records were many), and the records added.
// No record may be read after.
func (c *chunk[T]) keep(b *chunkBuffer[T]) {
	clear(c.first[:min(c.n, cap(c.first))])
	*b = chunkBuffer[T]{added: c.n}
	if c.n <= cap(c.first) {
		b.array = c.first[:0]
	}
	*c = chunk[T]{}
}

// chunkMin is the least number of records an array holds.
const chunkMin = 8

// reserve makes room for the records of a run of n lock cycles, in one
// array of each kind: the arrays of b if they have the room.
func (h *history) reserve(n int, b *runBuffers) {
	n = min(n, MaxLockCycles)
	h.locks = takeSlice(b.locks, n)
	h.updates = takeSlice(b.updates, n)
	// The marks (a run's faults and expiries, a few dozen) grew by
	// append in every run: the last run's array is taken again.
	h.marks = b.marks[:0]
	b.locks, b.updates, b.marks = nil, nil, nil
	h.lockChunk.start(n, &b.lockRecs)
	h.updateChunk.start(n, &b.updateRecs)
}

// holding reports whether client's lease l, just granted, falls inside
// a hold the client already has: an earlier grant of its, not yet
// released, on the same nodes with the same token (a reentrant acquire).
func (h *history) holding(client int, l *lockRec) bool {
	if h.open == 0 {
		return false
	}
	for _, o := range h.locks {
		if o == l || o.client != client || !o.granted || o.releaseCalled || o.reentered {
			continue
		}
		if o.token == l.token && slices.Equal(o.nodes, l.nodes) {
			return true
		}
	}
	return false
}

// markRec is one line of the timeline the run's trace gives: a fault, or
// a session's expiry. Client 0 is the server (a restart).
type markRec struct {
	step   uint64
	client int
	text   string
	// A fault's mark keeps its event's op and detail, and its text
	// (faultText) is written only when the timeline is: it was allocated
	// for each fault of each run, and few runs' timelines are read.
	fault             bool
	faultOp, faultDet string
}

// line is what the timeline says of the mark.
func (m markRec) line() string {
	if m.fault {
		return faultTextOf(m.faultOp, m.faultDet)
	}
	return m.text
}

func (h *history) add(l lockRec) *lockRec {
	l.index = len(h.locks)
	p := h.lockChunk.add(l)
	h.locks = append(h.locks, p)
	return p
}

func (h *history) addUpdate(u updateRec) *updateRec {
	p := h.updateChunk.add(u)
	h.updates = append(h.updates, p)
	return p
}

// text renders the history, one event a line in step order.
func (h *history) text() string {
	type line struct {
		step uint64
		seq  int
		text string
	}
	var lines []line
	add := func(step uint64, client int, format string, args ...any) {
		who := fmt.Sprintf("c%d", client)
		if client == 0 {
			who = "--"
		}
		lines = append(lines, line{step, len(lines), fmt.Sprintf("%7d %s ", step, who) + fmt.Sprintf(format, args...)})
	}
	for _, l := range h.locks {
		side := ""
		if l.shared {
			side = " shared"
		}
		add(l.acquireCall, l.client, "acquire%s", side)
		switch {
		case !l.returned:
		case l.granted:
			add(l.acquireReturn, l.client, "acquired token=%#x session=%#x nodes=%s", l.token, l.session, strings.Join(l.nodes, ","))
		default:
			add(l.acquireReturn, l.client, "acquire failed: %v", l.acquireErr)
		}
		if l.releaseCalled {
			add(l.releaseCall, l.client, "release")
		}
		if l.releaseReturned {
			if l.releaseErr != nil {
				add(l.releaseReturn, l.client, "released: %v", l.releaseErr)
			} else {
				add(l.releaseReturn, l.client, "released")
			}
		}
	}
	for _, u := range h.updates {
		add(u.readCall, u.client, "store read token=%#x", u.token)
		if u.readDone {
			if u.readOK {
				add(u.readReturn, u.client, "store read -> %d", u.read)
			} else {
				add(u.readReturn, u.client, "store read refused")
			}
		}
		if u.wrote {
			add(u.writeCall, u.client, "store write %d token=%#x", u.read+1, u.token)
			if u.writeOK {
				add(u.writeReturn, u.client, "store write ok")
			} else {
				add(u.writeReturn, u.client, "store write refused")
			}
		}
	}
	for _, m := range h.marks {
		add(m.step, m.client, "%s", m.line())
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		if a.step != b.step {
			if a.step < b.step {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// observer is the trace sink of a run: it keeps what the checks need
// from the simulator's events (sessions, deletions of lock nodes, session
// closes, watch notifications, faults), and the text trace if asked.
type observer struct {
	w      *sim.World
	hist   *history          // the faults and expiries go to its marks
	cov    *coverageRecorder // nil unless the run records coverage
	keep   bool
	report bool // keep the events themselves, for a report
	// everyEvent has the observer read every kind of event, as it did
	// before it named the kinds it reads (TraceKinds): for the test that
	// holds the two to the same runs.
	everyEvent bool
	events     []sim.Event // when report is set
	text       strings.Builder

	sessionClient map[int64]int       // session -> client
	deletes       map[string][]uint64 // node -> steps a delete of it reached the server
	closes        map[int64]uint64    // session -> step its closeSession request reached the server
	expiries      map[int64]uint64    // the step of each session's expiry (the server's own closeSession)
	notifications int64               // watch notifications delivered (not NotWatching)
	crashStep     map[int]uint64      // client -> the step it crashed at
	lastFaultEnd  time.Duration       // when the last fault injected so far ends
	lastFaultStep uint64

	fins []fin // connections' FINs reaching the server
	// persistentDirs are the directories the recipe made persistent
	// (not ephemeral) nodes in: a session's end leaves those.
	persistentDirs map[string]bool

	childrenCalls int64
	bytesReturned int64
	deadWatches   []deadWatch

	// tree is the simulated server's tree as the run went (no server on
	// a real run: there its server is nil and it keeps nothing).
	tree *serverTree
	// creates are the clients' create calls, as they saw them.
	creates []createRec

	// ops counts each client's operations begun: calls, sleeps, waits
	// (index: the client's number); injected keeps, for each fault the
	// simulator injected, the count of its client then: where a run on a
	// real server, which has no steps, injects a fault given by step.
	ops      []int64
	injected []injectedFault
}

// injectedFault is a fault as the trace reported its injection.
type injectedFault struct {
	detail string // sim.Fault.String()
	client int
	ops    int64 // the client's operations begun: the fault struck during the last
	time   time.Duration
	step   uint64
}

func newObserver(keep bool, clients int) *observer {
	o := &observer{
		sessionClient:  map[int64]int{},
		deletes:        map[string][]uint64{},
		closes:         map[int64]uint64{},
		expiries:       map[int64]uint64{},
		crashStep:      map[int]uint64{},
		persistentDirs: map[string]bool{},
		tree:           newServerTree(),
	}
	o.begin(keep, clients)
	return o
}

// begin readies o for a run of clients: a new observer, or one a run
// emptied for a later one (empty), its maps and arrays taken over.
func (o *observer) begin(keep bool, clients int) {
	o.keep = keep
	o.ops = takeSlice(o.ops, clients+1)[:clients+1]
}

// empty clears o for a later run (runBuffers), keeping its maps, its
// tree and its arrays with their room, and nothing of the run.
func (o *observer) empty() {
	clear(o.sessionClient)
	clear(o.deletes)
	clear(o.closes)
	clear(o.expiries)
	clear(o.crashStep)
	clear(o.persistentDirs)
	clear(o.ops)
	o.tree.empty()
	*o = observer{
		sessionClient:  o.sessionClient,
		deletes:        o.deletes,
		closes:         o.closes,
		expiries:       o.expiries,
		crashStep:      o.crashStep,
		persistentDirs: o.persistentDirs,
		tree:           o.tree,
		ops:            o.ops[:0],
		fins:           emptied(o.fins),
		deadWatches:    emptied(o.deadWatches),
		creates:        emptied(o.creates),
		injected:       emptied(o.injected),
	}
}

// createRec is a create call of a client's, as the client saw it: the
// name it asked for, and the name or the error it got back.
type createRec struct {
	client     int
	session    int64 // the client's session when it called
	path, name string
	err        error
	call, ret  uint64
}

func (o *observer) crashed(client int) bool {
	_, ok := o.crashStep[client]
	return ok
}

// TraceKinds implements sim.KindFilter: the kinds Event reads, unless it
// keeps the trace or its events; then every kind. The world leaves out
// the calls' events, which the tree also took as a cue to look at the
// server (serverTree.event, ensembleEvent), and without them it looks at
// the same steps:
//   - On one server it looks, after a write's "apply" event, at the next
//     event it gets. Nothing changes the tree but a write, whose "apply"
//     comes first, or an expiry, whose "server" event does, so one event
//     later finds what the very next would have, and dates it by the
//     write's step.
//   - On an ensemble it looks at the committed view after every event,
//     and dates a change by the step of the first event after it. The
//     view changes only when a member applies a transaction or restarts,
//     and the world's next event, in the same step, is a "server" event:
//     the member's application, or the restart's note.
//
// TestTheKindFilterChangesNoRun holds runs with and without it to the
// same verdicts, histories and coverage.
func (o *observer) TraceKinds() []string {
	if o.keep || o.report || o.everyEvent {
		return nil
	}
	return observedKinds
}

// observedKinds are the kinds TraceKinds lists, one list for every run
// (the world only reads it).
var observedKinds = []string{"session", "apply", "server", "watch", "fault"}

// Event implements sim.TraceSink.
func (o *observer) Event(e sim.Event) {
	// The kind, and an apply's op, are read once here for the tree, the
	// recorder and the observer, which each compared the strings.
	k, op := traceCodes(&e)
	o.tree.event(&e, k, op)
	if o.cov != nil {
		o.cov.event(&e, k, op)
	}
	if o.report {
		o.events = append(o.events, e)
	}
	if o.keep {
		o.text.WriteString(e.Text())
		o.text.WriteByte('\n')
	}
	switch k {
	case traceSession:
		if e.Session != 0 && e.Client != 0 {
			if _, ok := o.sessionClient[e.Session]; !ok {
				o.sessionClient[e.Session] = e.Client
			}
		}
	case traceApply:
		switch op {
		case opDelete:
			if o.tree.server == nil { // only zkEnd without a server's tree reads them
				o.deletes[e.Path] = append(o.deletes[e.Path], e.Step)
			}
		case opCloseSession:
			if _, ok := o.closes[e.Session]; !ok {
				o.closes[e.Session] = e.Step
			}
		}
	case traceServer:
		if e.Session != 0 && expiryEvent(e.Detail) {
			if _, ok := o.expiries[e.Session]; !ok {
				o.expiries[e.Session] = e.Step
				o.mark(e.Step, o.sessionClient[e.Session], fmt.Sprintf("session %#x expired: the server closed it", e.Session))
			}
		} else if e.Client != 0 && strings.HasSuffix(e.Detail, "closed by the client") {
			o.fins = append(o.fins, fin{client: e.Client, step: e.Step})
		}
	case traceWatch:
		if e.Op != "EventNotWatching" {
			o.notifications++
		}
	case traceFault:
		o.markFault(&e)
		if strings.HasPrefix(e.Detail, "partition healed") || strings.HasPrefix(e.Detail, "pause ended") || strings.HasPrefix(e.Detail, "server up") {
			o.lastFaultEnd = max(o.lastFaultEnd, e.Time)
			return
		}
		if !strings.Contains(e.Detail, "dropped") { // a dropped request or reply is the same fault taking effect
			o.lastFaultStep = e.Step
			in := injectedFault{detail: e.Detail, client: e.Client, time: e.Time, step: e.Step}
			if e.Client > 0 && e.Client < len(o.ops) {
				in.ops = o.ops[e.Client]
			}
			o.injected = append(o.injected, in)
		}
		o.lastFaultEnd = max(o.lastFaultEnd, e.Time)
		if hasWord(e.Detail, string(sim.FaultCrash)) {
			if _, ok := o.crashStep[e.Client]; !ok {
				o.crashStep[e.Client] = e.Step
			}
		}
		for _, k := range []sim.FaultKind{sim.FaultPartition, sim.FaultPause, sim.FaultDisconnect, sim.FaultRestart} {
			if hasWord(e.Detail, string(k)) {
				if _, d, ok := strings.Cut(e.Detail, "for="); ok {
					if dur, err := time.ParseDuration(d); err == nil {
						o.lastFaultEnd = max(o.lastFaultEnd, e.Time+dur)
					}
				}
			}
		}
	}
}

// markFault adds the fault of event e to the history's timeline, as
// mark(e.Step, e.Client, faultText(e)) would.
func (o *observer) markFault(e *sim.Event) {
	if o.hist != nil {
		o.hist.marks = append(o.hist.marks, markRec{step: e.Step, client: e.Client, fault: true, faultOp: e.Op, faultDet: e.Detail})
	}
}

// traceKind is an event's kind, as the observer reads it (TraceKinds),
// found once for every reader of the event.
type traceKind uint8

const (
	traceOther traceKind = iota
	traceSession
	traceApply
	traceServer
	traceWatch
	traceFault
)

func traceKindOf(kind string) traceKind {
	switch kind {
	case "session":
		return traceSession
	case "apply":
		return traceApply
	case "server":
		return traceServer
	case "watch":
		return traceWatch
	case "fault":
		return traceFault
	}
	return traceOther
}

// applyOp is an applied request's op, as the readers of "apply" events
// tell them apart.
type applyOp uint8

const (
	opOther applyOp = iota
	opCreate
	opCreateContainer
	opCreateTTL
	opDelete
	opMulti
	opSetData
	opCloseSession
)

func applyOpOf(op string) applyOp {
	switch op {
	case "create":
		return opCreate
	case "createContainer":
		return opCreateContainer
	case "createTTL":
		return opCreateTTL
	case "delete":
		return opDelete
	case "multi":
		return opMulti
	case "setData":
		return opSetData
	case "closeSession":
		return opCloseSession
	}
	return opOther
}

// traceCodes are e's kind and, for an apply, its op.
func traceCodes(e *sim.Event) (traceKind, applyOp) {
	k := traceKindOf(e.Kind)
	if k != traceApply {
		return k, opOther
	}
	return k, applyOpOf(e.Op)
}

// treeWrite reports whether the op can create or remove nodes.
func (op applyOp) treeWrite() bool {
	switch op {
	case opCreate, opCreateContainer, opCreateTTL, opDelete, opMulti, opCloseSession:
		return true
	}
	return false
}

// mark adds a line to the history's timeline.
func (o *observer) mark(step uint64, client int, text string) {
	if o.hist != nil {
		o.hist.marks = append(o.hist.marks, markRec{step: step, client: client, text: text})
	}
}

// hasWord reports whether s begins with the word w and a space: what
// strings.HasPrefix(s, w+" ") says, without writing w+" " for every
// fault kind at every fault.
func hasWord(s, w string) bool {
	return len(s) > len(w) && s[len(w)] == ' ' && s[:len(w)] == w
}

// faultText is a fault's event as the timeline says it: the fault as the
// scenario writes it, or what it did (a request or reply dropped).
func faultText(e sim.Event) string { return faultTextOf(e.Op, e.Detail) }

// faultTextOf is faultText of an event with op and detail.
func faultTextOf(op, detail string) string {
	if op != "" {
		return fmt.Sprintf("fault: %s %s", op, detail)
	}
	return "fault: " + detail
}

// sessionEnd is the step at which the server ended session s: its
// closeSession request, or its expiry, whichever came first.
func (o *observer) sessionEnd(s int64) (uint64, bool) {
	closed, byClose := o.closes[s]
	expired, byExpiry := o.expiries[s]
	switch {
	case byClose && byExpiry:
		return min(closed, expired), true
	case byClose:
		return closed, true
	case byExpiry:
		return expired, true
	}
	return 0, false
}

// nodeGone is the first step at or after from at which a delete of node
// reached the server.
func (o *observer) nodeGone(node string, from uint64) (uint64, bool) {
	for _, st := range o.deletes[node] {
		if st >= from {
			return st, true
		}
	}
	return 0, false
}

// leaseEnd bounds where a granted lease ended in ZooKeeper's view: the
// simulator knows the step; a real server's clients know it only between
// two events of theirs.
func (r *runner) leaseEnd(l *lockRec) (from, to uint64, ok bool) {
	if r.real != nil {
		return r.real.leaseEnd(l)
	}
	end, ok := r.obs.zkEnd(l)
	return end, end, ok
}

// zkEnd is where a granted lease ended in ZooKeeper's view: the first
// end of the server's life of one of its nodes (however it went: a
// delete, a multi, its session's close or expiry). A node already gone at
// the acquire's return ended where its last life ended, or, if the server
// had no such node during the acquire, at its return: the lease never
// held.
func (o *observer) zkEnd(l *lockRec) (uint64, bool) {
	if o.tree.server != nil {
		return o.tree.leaseEnd(l)
	}
	end, ok := uint64(0), false
	take := func(st uint64, found bool) {
		if !found {
			return
		}
		// A node may be gone before the acquire returned: the client
		// acted on a stale read. The end stays where ZooKeeper put it; the
		// checks read such a lease as one that ended before its grant was
		// seen (an empty span for zk-holders, a release that precedes the
		// acquire's return for the lock's history).
		if !ok || st < end {
			end, ok = st, true
		}
	}
	for _, n := range l.nodes {
		// The node existed when the acquire returned; the delete that
		// removed it reached the server after the node's creation.
		take(o.nodeGone(n, l.acquireCall))
		if !o.persistentDirs[path.Dir(n)] {
			take(o.sessionEnd(l.session))
		}
	}
	return end, ok
}

type fin struct {
	client int
	step   uint64
}
