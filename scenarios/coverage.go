package scenarios

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklab/zklab/sim"
)

// Coverage says what an exploration reached, in a lock recipe's terms:
// for each fault kind, the phase of the client it struck, and the events
// that matter to lock recipes, with counts. "No violation" means no
// violation among what Coverage lists, and nothing about what it flags as
// never reached.
type Coverage struct {
	// Runs is the number of runs counted.
	Runs int `json:"runs"`
	// Faults counts, for each fault kind, the faults that struck a client
	// in each phase. A dropped request or reply counts where it was lost
	// (the fault takes effect then), a restart once for every client
	// still at work.
	Faults map[sim.FaultKind]map[string]int `json:"faults"`
	// Events counts the events of Events that runs reached.
	Events map[string]int `json:"events"`
	// Requests counts the clients' requests that reached a server, by the
	// phase of the client that sent them. A dropped request or reply
	// strikes a request: in a phase in which none went out (fair-lock's
	// holding: the lock is held without a word to ZooKeeper), it has
	// nothing to strike (silent).
	Requests map[string]int `json:"requests"`
}

// The phases of a client, as a lock recipe sees them. A recipe adds its
// own with recipes.EnterPhase.
const (
	PhaseConnecting   = "connecting"   // no session yet
	PhaseCreating     = "creating"     // Acquire: creating its lock node
	PhaseListing      = "listing"      // Acquire: listing the lock's children
	PhaseWaiting      = "waiting"      // Acquire: waiting on a watch
	PhaseAcquiring    = "acquiring"    // Acquire: any other call (exists, get, delete)
	PhaseHolding      = "holding"      // between Acquire and Release
	PhaseReleasing    = "releasing"    // in Release
	PhaseReconnecting = "reconnecting" // the connection is lost, the session may live
	PhaseIdle         = "idle"         // between cycles, backing off, done
	PhaseCrashed      = "crashed"      // the process is gone
)

// Phases are the phases of every recipe, in the order reports list them;
// CoveredPhases those a fault of every kind should strike for an
// exploration to say it covered the recipe.
var (
	Phases        = []string{PhaseConnecting, PhaseCreating, PhaseListing, PhaseWaiting, PhaseAcquiring, PhaseHolding, PhaseReleasing, PhaseReconnecting, PhaseIdle, PhaseCrashed}
	CoveredPhases = []string{PhaseConnecting, PhaseCreating, PhaseListing, PhaseWaiting, PhaseHolding, PhaseReleasing, PhaseReconnecting}
)

// The events that matter to lock recipes.
const (
	EventLostCreateReply     = "lost reply on a create"
	EventLostDeleteReply     = "lost reply on a delete"
	EventLostCreateRequest   = "lost request on a create"
	EventExpiryHolding       = "expiry while holding"
	EventExpiryWaiting       = "expiry while waiting"
	EventReconnectKept       = "reconnect that kept the session"
	EventWatchAfterReconnect = "watch fired after a reconnect"
	EventHerdWakeUp          = "herd wake-up"
)

// Events lists them in the order reports do.
var Events = []string{EventLostCreateReply, EventLostDeleteReply, EventLostCreateRequest, EventExpiryHolding, EventExpiryWaiting, EventReconnectKept, EventWatchAfterReconnect, EventHerdWakeUp}

func newCoverage() *Coverage {
	return &Coverage{Faults: map[sim.FaultKind]map[string]int{}, Events: map[string]int{}, Requests: map[string]int{}}
}

// coveragePool keeps the coverage of runs the explorer has counted in
// (explorer.finish), emptied, for the coverage of later runs
// (coverageRecorder.begin): a run's coverage was its struct and three
// maps made afresh, and the maps grown entry by entry, in every run.
var coveragePool sync.Pool

// takeCoverage is an empty coverage: one given back, or a new one.
func takeCoverage() *Coverage {
	if c, ok := coveragePool.Get().(*Coverage); ok {
		return c
	}
	return newCoverage()
}

// putCoverage empties c, which nothing else points to any more, and
// gives it back for a later run. Its maps keep their room; a fault kind's
// map of phases goes to phasesPool, so that c is as a new one would be.
func putCoverage(c *Coverage) {
	for _, m := range c.Faults {
		clear(m)
		phasesPool.Put(m)
	}
	clear(c.Faults)
	clear(c.Events)
	clear(c.Requests)
	c.Runs = 0
	coveragePool.Put(c)
}

// phasesPool keeps the maps of phases of the fault kinds of coverage
// given back (putCoverage), empty, for addFault: a run's coverage made
// one for every kind of fault that struck, and grew it phase by phase.
var phasesPool sync.Pool

func (c *Coverage) addFault(k sim.FaultKind, phase string, n int) {
	m := c.Faults[k]
	if m == nil {
		m, _ = phasesPool.Get().(map[string]int)
		if m == nil {
			m = map[string]int{}
		}
		c.Faults[k] = m
	}
	m[phase] += n
}

// Add counts o's runs into c; it says whether o reached something c had
// not (a fault kind in a phase, an event).
func (c *Coverage) Add(o *Coverage) (novel bool) {
	if o == nil {
		return false
	}
	c.Runs += o.Runs
	for k, phases := range o.Faults {
		for p, n := range phases {
			if n > 0 && c.Faults[k][p] == 0 {
				novel = true
			}
			c.addFault(k, p, n)
		}
	}
	for e, n := range o.Events {
		if n > 0 && c.Events[e] == 0 {
			novel = true
		}
		c.Events[e] += n
	}
	for p, n := range o.Requests {
		c.Requests[p] += n
	}
	return novel
}

// sortedKinds lists the fault kinds c has counts for, in sim.FaultKinds
// order.
func sortedKinds(c *Coverage) []sim.FaultKind {
	var out []sim.FaultKind
	for _, k := range allFaultKinds() {
		if len(c.Faults[k]) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// Clone copies c.
func (c *Coverage) Clone() *Coverage {
	out := newCoverage()
	out.Add(c)
	return out
}

// phasesOf lists the phases c has counts for: the recipe's own after
// Phases, sorted.
func (c *Coverage) phasesOf() []string {
	var own []string
	for _, m := range c.Faults {
		for p := range m {
			if !slices.Contains(Phases, p) && !slices.Contains(own, p) {
				own = append(own, p)
			}
		}
	}
	slices.Sort(own)
	return append(slices.Clone(Phases), own...)
}

// unreachable says a fault kind cannot strike a phase: a dropped request
// or reply is a request of the recipe's, and none goes out before the
// first session, while the connection is down (the handshake is not
// one) or from a crashed process.
func unreachable(k sim.FaultKind, phase string) bool {
	switch k {
	case sim.FaultDropRequest, sim.FaultDropReply:
		return phase == PhaseConnecting || phase == PhaseReconnecting || phase == PhaseCrashed
	}
	return false
}

// silent reports whether fault kind k had nothing to strike in phase p
// in c's runs: it drops a request or a reply, and no request went out
// in p. Unlike unreachable it is a fact of these runs, not a rule: a
// recipe may send requests in a phase another sends none in.
func (c *Coverage) silent(k sim.FaultKind, p string) bool {
	return (k == sim.FaultDropRequest || k == sim.FaultDropReply) && c.Runs > 0 && c.Requests[p] == 0
}

// Never lists what the runs never reached: every fault kind of kinds in
// every phase of CoveredPhases (and of the recipe's own phases) it can
// strike, and had something to strike (silent), and every event of
// Events, as "kind while phase" and event names.
func (c *Coverage) Never(kinds []sim.FaultKind) []string {
	var never []string
	own := slices.DeleteFunc(c.phasesOf(), func(p string) bool { return slices.Contains(Phases, p) })
	for _, k := range kinds {
		for _, p := range append(slices.Clone(CoveredPhases), own...) {
			if c.Faults[k][p] == 0 && !unreachable(k, p) && !c.silent(k, p) {
				never = append(never, fmt.Sprintf("%s while %s", k, p))
			}
		}
	}
	for _, e := range Events {
		if c.Events[e] == 0 {
			never = append(never, e)
		}
	}
	return never
}

// Text renders the coverage: a table of fault kinds by phase, the events
// with counts, and what was never reached, flagged.
func (c *Coverage) Text(kinds []sim.FaultKind) string {
	var b strings.Builder
	phases := c.phasesOf()
	used := slices.DeleteFunc(slices.Clone(phases), func(p string) bool {
		if slices.Contains(CoveredPhases, p) {
			return false
		}
		for _, m := range c.Faults {
			if m[p] > 0 {
				return false
			}
		}
		return true
	})
	fmt.Fprintf(&b, "coverage of %d runs: faults by the phase of the client they struck\n", c.Runs)
	// The kinds' column fits the longest kind's name (partition-server).
	kindWidth := 14
	for _, k := range kinds {
		kindWidth = max(kindWidth, len(k))
	}
	fmt.Fprintf(&b, "  %-*s", kindWidth, "")
	for _, p := range used {
		fmt.Fprintf(&b, " %*s", max(len(p), 6), p)
	}
	b.WriteString("\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-*s", kindWidth, k)
		for _, p := range used {
			n := c.Faults[k][p]
			cell := fmt.Sprint(n)
			switch {
			case n == 0 && unreachable(k, p):
				cell = "."
			case n == 0 && c.silent(k, p):
				cell = "x"
			case n == 0 && slices.Contains(CoveredPhases, p):
				cell = "-"
			}
			fmt.Fprintf(&b, " %*s", max(len(p), 6), cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("  (- never struck; . cannot strike; x no request went out in that phase to strike)\n")
	b.WriteString("events:\n")
	for _, e := range Events {
		n := c.Events[e]
		flag := ""
		if n == 0 {
			flag = "   <- never reached"
		}
		fmt.Fprintf(&b, "  %-32s %8d%s\n", e, n, flag)
	}
	if never := c.Never(kinds); len(never) > 0 {
		fmt.Fprintf(&b, "never reached (%d): %s\n", len(never), strings.Join(never, "; "))
	} else {
		b.WriteString("every fault kind struck every phase; every event was reached\n")
	}
	return b.String()
}

// clientTrack is what the coverage recorder knows of one client.
type clientTrack struct {
	section    string // PhaseAcquiring, PhaseHolding, PhaseReleasing or PhaseIdle
	op         string // the call in progress: create, getChildren, wait, ...
	own        string // the recipe's own phase (recipes.EnterPhase)
	hadSession bool
	session    int64
	lost       bool // the connection is lost and not back
	kept       bool // the current session outlived a lost connection
	crashed    bool
	closed     bool
	// sent are the client's last requests to reach a server (xid and
	// operation, from their "apply" events), a ring: a dropped reply
	// names its request by xid, and the request reached the server before
	// its reply was dropped. A client has few requests in flight; sentRing
	// covers them.
	sent    [sentRing]sentRequest
	sentPos int
}

const sentRing = 16

type sentRequest struct {
	xid int32
	op  string
}

// opOf is the operation of the request with xid, if the client sent it
// lately.
func (c *clientTrack) opOf(xid int32) string {
	for _, s := range c.sent {
		if s.xid == xid && s.op != "" {
			return s.op
		}
	}
	return ""
}

// herdGroup is the clients (a bit each: at most 64) notified of a
// watched change, named by the notification's type (op) and path (the
// key its path's newest group is kept under), since the change was last
// made.
type herdGroup struct {
	op    string
	woken uint64
	// since is the number of changes noted when the path's first group
	// was made; prev is the path's group made before this one, or -1.
	since, prev int
}

// herdGroupOf is the group of the notifications of type op on path p,
// made if the path has none since the last change that voids its groups.
// A path's groups are chained in one array, where a map of slices
// allocated one for each path.
func (r *coverageRecorder) herdGroupOf(p, op string) *herdGroup {
	since, prev := len(r.changes), -1
	word, bit := herdBit(p)
	if r.herdSeen[word]&bit == 0 {
		// No group has the path: most notifications are a deleted
		// predecessor's, one each, and the map's look was half their cost.
		r.herdSeen[word] |= bit
	} else if newest, ok := r.herd[p]; ok && !r.herdVoid(p, r.groups[newest].since) {
		for i := newest; i >= 0; i = r.groups[i].prev {
			if r.groups[i].op == op {
				return &r.groups[i]
			}
		}
		since, prev = r.groups[newest].since, newest
	}
	r.groups = append(r.groups, herdGroup{op: op, since: since, prev: prev})
	if r.herd == nil {
		r.herd = map[string]int{}
	}
	r.herd[p] = len(r.groups) - 1
	return &r.groups[len(r.groups)-1]
}

// herdSeenWords is the size of coverageRecorder.herdSeen, in words.
const herdSeenWords = 64

// herdBit is path p's bit in coverageRecorder.herdSeen: its word and
// the bit in it, from its length and its last eight bytes, where the
// paths notified differ (a lock node's sequence).
func herdBit(p string) (int, uint64) {
	h := uint64(len(p))
	if n := len(p); n >= 8 {
		h ^= uint64(p[n-8]) | uint64(p[n-7])<<8 | uint64(p[n-6])<<16 | uint64(p[n-5])<<24 |
			uint64(p[n-4])<<32 | uint64(p[n-3])<<40 | uint64(p[n-2])<<48 | uint64(p[n-1])<<56
	} else {
		for i := range n {
			h = h<<8 | uint64(p[i])
		}
	}
	h *= 0x9e3779b97f4a7c15 // Fibonacci hashing: the top bits mix them all
	h >>= 64 - 12           // herdSeenWords*64 = 1<<12 bits
	return int(h / 64), 1 << (h % 64)
}

// herdVoid reports whether a change since the since'th voids the groups
// of path p: a change of p, of a child of p, or of every path ("").
func (r *coverageRecorder) herdVoid(p string, since int) bool {
	for _, c := range slices.Backward(r.changes[since:]) {
		if c == "" || c == p || (len(c) > len(p) && strings.HasPrefix(c, p) && changeDir(c) == p) {
			return true
		}
	}
	return false
}

// changeDir is the directory whose herd a change of p ends, as
// sim.LastSlash finds it.
func changeDir(p string) string {
	if i := sim.LastSlash(p); i > 0 {
		return p[:i]
	} else if i == 0 {
		return "/"
	}
	return p
}

// coverageRecorder follows one simulated run: the phases of its clients
// (from the workload, the calls the recipe makes and the trace) and the
// events that matter, into a Coverage of one run.
type coverageRecorder struct {
	cov     *Coverage
	clients []clientTrack // by client number
	// herd is, per watched change, the clients notified since the change
	// was last made: two or more make a herd wake-up. It is kept by path:
	// a group whose path no change touches again (a sequential node's,
	// once deleted) stays to the end, and a list of them was searched at
	// every change and notification (2% of an exploration). It is looked
	// up, never ranged over. A change voids the groups of its path and of
	// its directory: an entry is checked against the changes made since
	// it was (changes) when it is looked up, which is rare, rather than
	// each change deleting what it voids (two deletes from the map, and
	// the path's directory to find, at every change).
	herd map[string]int // path -> its newest group in groups
	// herdSeen has the bit of every path herd holds set (herdBit): a
	// path whose bit is clear has no group, without a look in the map.
	herdSeen [herdSeenWords]uint64
	groups   []herdGroup
	changes  []string // the paths of the changes applied while herd had entries
	// sessions maps a session to its client.
	sessions map[int64]int
	// reqPhases and reqCounts count the requests that went out by phase,
	// for Coverage.Requests (countRequest): a short list searched by the
	// phase's name, one of a handful of strings, and folded into the map
	// when the run ends (result). A map's increment hashed the name at
	// every request (2% of an exploration).
	reqPhases []string
	reqCounts []int

	// Aimed faults (aim): the world, the triggers, each client's last
	// phase seen, and the faults fired as scheduled.
	w        *sim.World
	triggers []*trigger
	last     []string
	fired    []sim.ScheduledFault
}

func newCoverageRecorder(clients int) *coverageRecorder {
	r := &coverageRecorder{sessions: map[int64]int{}}
	r.begin(clients)
	return r
}

// begin readies r for a run of clients: a new recorder, or one a run
// emptied for a later one (empty), its arrays and maps taken over.
func (r *coverageRecorder) begin(clients int) {
	r.cov = takeCoverage()
	r.cov.Runs = 1
	r.clients = takeSlice(r.clients, clients+1)[:clients+1]
	for i := range r.clients {
		r.clients[i].section = PhaseIdle
	}
}

// reserve makes room for the herd of a run of n lock cycles: a
// notification and two changes (a create and a delete) each, mostly.
// An emptied recorder's map and arrays keep the room they had.
func (r *coverageRecorder) reserve(n int) {
	n = min(n, MaxLockCycles)
	if r.herd == nil {
		r.herd = make(map[string]int, n)
	}
	r.groups = takeSlice(r.groups, n)
	r.changes = takeSlice(r.changes, 2*n)
}

// empty clears r for a later run (runBuffers), keeping its arrays and
// maps with their room and nothing of the run: that run's Coverage is
// not r's any more.
func (r *coverageRecorder) empty() {
	clear(r.clients)
	clear(r.herd)
	clear(r.groups)
	clear(r.changes)
	clear(r.sessions)
	clear(r.reqPhases)
	*r = coverageRecorder{clients: r.clients[:0], herd: r.herd, groups: r.groups[:0], changes: r.changes[:0], sessions: r.sessions,
		reqPhases: r.reqPhases[:0], reqCounts: r.reqCounts[:0]}
}

// countRequest counts a request that went out in phase p.
func (r *coverageRecorder) countRequest(p string) {
	for k, q := range r.reqPhases {
		if q == p {
			r.reqCounts[k]++
			return
		}
	}
	r.reqPhases = append(r.reqPhases, p)
	r.reqCounts = append(r.reqCounts, 1)
}

// result is the run's Coverage, its requests counted in: the run is over.
func (r *coverageRecorder) result() *Coverage {
	for k, p := range r.reqPhases {
		r.cov.Requests[p] += r.reqCounts[k]
	}
	r.reqPhases, r.reqCounts = r.reqPhases[:0], r.reqCounts[:0]
	return r.cov
}

// phase is client i's phase now.
func (r *coverageRecorder) phase(i int) string {
	c := &r.clients[i]
	switch {
	case c.crashed:
		return PhaseCrashed
	case !c.hadSession:
		return PhaseConnecting
	case c.lost:
		return PhaseReconnecting
	case c.own != "":
		return c.own
	}
	if c.section != PhaseAcquiring {
		return c.section
	}
	switch c.op {
	case "create", "createContainer":
		return PhaseCreating
	case "getChildren":
		return PhaseListing
	case "wait":
		return PhaseWaiting
	}
	return PhaseAcquiring
}

// setSection moves client i to a section of its workload; the recipe's
// own phase ends with the section it began in.
func (r *coverageRecorder) setSection(i int, section string) {
	if r == nil {
		return
	}
	r.clients[i].section, r.clients[i].own = section, ""
	r.check(i)
}

// setOp notes the call client i makes ("" when it returns).
func (r *coverageRecorder) setOp(i int, op string) {
	if r != nil {
		r.clients[i].op = op
		if r.triggers != nil { // check(i), within the inliner's budget: every call of every client sets its op twice
			r.fire(i)
		}
	}
}

// setOwn notes the recipe's own phase for client i.
func (r *coverageRecorder) setOwn(i int, phase string) {
	if r == nil {
		return
	}
	r.clients[i].own = phase
	r.check(i)
}

func (r *coverageRecorder) valid(i int) bool { return i >= 1 && i < len(r.clients) }

// event follows the trace.
func (r *coverageRecorder) event(e *sim.Event, k traceKind, op applyOp) {
	r.followKind(e, k, op)
	if k == traceSession || k == traceFault {
		if e.Client == 0 {
			for i := 1; i < len(r.clients); i++ {
				r.check(i)
			}
		} else {
			r.check(e.Client)
		}
	}
}

// followKind follows event e of the trace, whose kind and op
// observer.Event has read.
func (r *coverageRecorder) followKind(e *sim.Event, k traceKind, op applyOp) {
	switch k {
	case traceSession:
		r.session(e)
	case traceServer:
		if e.Session != 0 && expiryEvent(e.Detail) {
			i, ok := r.sessions[e.Session]
			if !ok || r.clients[i].session != e.Session || r.clients[i].crashed {
				return
			}
			switch r.clients[i].section {
			case PhaseHolding:
				r.cov.Events[EventExpiryHolding]++
			case PhaseAcquiring:
				r.cov.Events[EventExpiryWaiting]++
			}
		}
	case traceApply:
		if r.valid(e.Client) && e.Xid >= 0 {
			c := &r.clients[e.Client]
			c.sent[c.sentPos] = sentRequest{e.Xid, e.Op}
			c.sentPos = (c.sentPos + 1) % sentRing
			r.countRequest(r.phase(e.Client))
		}
		// A change ends the herd of the notifications of the last one
		// (herdVoid).
		if len(r.herd) > 0 && (op == opCreate || op == opDelete || op == opMulti || op == opSetData) {
			r.changes = append(r.changes, e.Path)
		}
	case traceWatch:
		if !r.valid(e.Client) || e.Op == "EventNotWatching" {
			return
		}
		if r.clients[e.Client].kept {
			r.cov.Events[EventWatchAfterReconnect]++
		}
		bit := uint64(1) << (e.Client % 64)
		if g := r.herdGroupOf(e.Path, e.Op); g.woken&bit == 0 {
			g.woken |= bit
			if bits.OnesCount64(g.woken) == 2 {
				r.cov.Events[EventHerdWakeUp]++
			}
		}
	case traceFault:
		r.fault(e)
	}
}

// expiryEvent reports whether a server event's detail is a session's
// expiry: on one server its close applied; on an ensemble the leader's
// proposal of its close, made once, where only the leader's session
// tracker expires sessions (the members' applications of the close are
// three events, and name no cause). A proposal lost with its leader in a
// failover still counts: the leader had expired the session.
func expiryEvent(detail string) bool {
	return strings.HasPrefix(detail, "closeSession applied: session expired") ||
		strings.HasSuffix(detail, " proposes closeSession: session expired")
}

func (r *coverageRecorder) session(e *sim.Event) {
	if !r.valid(e.Client) {
		return
	}
	c := &r.clients[e.Client]
	switch {
	case e.State == "StateHasSession":
		if c.hadSession && c.lost && e.Session == c.session {
			r.cov.Events[EventReconnectKept]++
			c.kept = true
		} else if e.Session != c.session {
			c.kept = false
		}
		c.hadSession, c.session, c.lost = true, e.Session, false
		r.sessions[e.Session] = e.Client
	case strings.HasPrefix(e.Detail, "connection lost"):
		if c.hadSession {
			c.lost = true
		}
	case e.Detail == "closed":
		c.section, c.own, c.closed = PhaseIdle, "", true
	}
}

func (r *coverageRecorder) fault(e *sim.Event) {
	kind, rest, _ := strings.Cut(e.Detail, " ")
	if !strings.HasPrefix(rest, "c") && !strings.HasPrefix(rest, "for=") && !(serverFault(sim.FaultKind(kind)) && strings.HasPrefix(rest, "s")) {
		// The end of a partition or a pause, a server up again, an
		// expiry the server could not make: not a fault striking.
		if !strings.HasPrefix(e.Detail, "request dropped") && !strings.HasPrefix(e.Detail, "reply dropped") {
			return
		}
	}
	switch {
	case strings.HasPrefix(e.Detail, "request dropped"):
		if r.valid(e.Client) {
			r.cov.addFault(sim.FaultDropRequest, r.phase(e.Client), 1)
			if e.Op == "create" {
				r.cov.Events[EventLostCreateRequest]++
			}
		}
		return
	case strings.HasPrefix(e.Detail, "reply dropped"):
		if r.valid(e.Client) {
			r.cov.addFault(sim.FaultDropReply, r.phase(e.Client), 1)
			switch r.clients[e.Client].opOf(e.Xid) {
			case "create":
				r.cov.Events[EventLostCreateReply]++
			case "delete":
				r.cov.Events[EventLostDeleteReply]++
			}
		}
		return
	}
	k := sim.FaultKind(kind)
	switch k {
	case sim.FaultDropRequest, sim.FaultDropReply:
		return // armed: it strikes when a request or reply is lost
	case sim.FaultRestart:
		r.strikeAll(k)
		return
	}
	if serverFault(k) {
		// A server fault strikes the ensemble: it counts once for every
		// client still at work, as a restart does. Its end, a server
		// back, are other events: only KIND [sN] for=D is the fault.
		if strings.HasPrefix(rest, "for=") || strings.HasPrefix(rest, "s") && strings.Contains(rest, " for=") {
			r.strikeAll(k)
		}
		return
	}
	if !slices.Contains(sim.FaultKinds, k) || !r.valid(e.Client) {
		return // a fault's end, or an expiry the server could not make
	}
	r.cov.addFault(k, r.phase(e.Client), 1)
	if k == sim.FaultCrash {
		r.clients[e.Client].crashed = true
	}
}

// strikeAll counts a fault of kind k that strikes the server(s) once for
// every client still at work, in its phase.
func (r *coverageRecorder) strikeAll(k sim.FaultKind) {
	for i := 1; i < len(r.clients); i++ {
		if !r.clients[i].crashed && !r.clients[i].closed {
			r.cov.addFault(k, r.phase(i), 1)
		}
	}
}

// A phaseFault is a fault aimed at a phase: it strikes before the step
// after client Client enters Phase for the Nth time (a restart too,
// though it strikes the server). The run records it as a fault at that
// step, so its scenario replays it like any other.
type phaseFault struct {
	sim.Fault
	Phase string
	Nth   int
	// OnClientFollower aims a fault that names a server (lag, ...) at
	// the server Client is connected to when the fault strikes, if that
	// server is a follower; otherwise it strikes nowhere.
	OnClientFollower bool
	// PastExpiry, when set, makes the fault last until PastExpiry after
	// the session (of timeout SessionTimeout) would expire if it was last
	// heard from when the fault strikes (sim.World.SessionExpiry), plus
	// Duration.
	PastExpiry, SessionTimeout time.Duration
}

// trigger is a phaseFault under way in a run.
type trigger struct {
	phaseFault
	seen  int
	fired bool
}

// aim arms the phase faults of a run in the world w.
func (r *coverageRecorder) aim(w *sim.World, faults []phaseFault) {
	r.w = w
	for _, f := range faults {

		r.triggers = append(r.triggers, &trigger{phaseFault: f})
	}
	r.last = make([]string, len(r.clients))
}

// check fires the triggers of client i when it enters a phase: a call
// small enough to inline, for a run without triggers (most) follows
// every call of every client.
func (r *coverageRecorder) check(i int) {
	if len(r.triggers) > 0 {
		r.fire(i)
	}
}

// fire is check of a run with triggers.
func (r *coverageRecorder) fire(i int) {
	if !r.valid(i) {
		return
	}
	p := r.phase(i)
	if p == r.last[i] {
		return
	}
	r.last[i] = p
	for _, t := range r.triggers {
		if t.fired || t.Client != i || t.Phase != p {
			continue
		}
		t.seen++
		if t.seen < t.Nth {
			continue
		}
		t.fired = true
		f := sim.ScheduledFault{AtStep: r.w.StepCount() + 1, Fault: t.Fault}
		if t.OnClientFollower {
			f.Server = r.w.Clients()[i-1].ServerNumber()
			if f.Server == 0 || f.Server == r.w.Leader() {
				continue // no follower of the client's to strike
			}
		}
		if t.PastExpiry > 0 {
			now := r.w.Now()
			f.Duration += r.w.SessionExpiry(now, t.SessionTimeout) + t.PastExpiry - now
		}
		if !namesClient(f.Kind) {
			f.Client = 0
		}
		if err := r.w.ScheduleFault(f); err != nil {
			panic(err) // the step is the next one: always to come
		}
		r.fired = append(r.fired, f)
	}
}
