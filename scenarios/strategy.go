package scenarios

import (
	"slices"
	"sync"
	"time"

	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// The strategies of an exploration. Random walks the schedule, drawing
// every decision and the faults' steps and times; PCT gives threads
// priorities with a few change points; directed aims each fault at a
// phase of a client's (creating its node, holding, ...), those the
// exploration has seen least struck by that kind most often, and walks
// the schedule at random; on an ensemble one of its schedules in
// staleSessionOdds is a stale session instead (drawStaleSession). Mix,
// the default, takes turns: schedule g uses mixOrder[g mod 3].
const (
	StrategyRandom   = "random"
	StrategyPCT      = "pct"
	StrategyDirected = "directed"
	StrategyMix      = "mix"
)

// Strategies lists them.
var Strategies = []string{StrategyRandom, StrategyPCT, StrategyDirected, StrategyMix}

var mixOrder = []string{StrategyRandom, StrategyPCT, StrategyDirected}

// strategyOf is the strategy of schedule g of an exploration with
// strategy s.
func strategyOf(s string, g int) string {
	if s == StrategyMix {
		return mixOrder[g%len(mixOrder)]
	}
	return s
}

// aimWeightMax is the weight of the phases a kind struck least; one
// struck n times as often weighs about 1/n of it.
const aimWeightMax = 8

// aimEvidenceRuns is the number of runs seen after which a dropped request
// or reply is no longer aimed at a phase in which no request went out
// (Coverage.silent). Aimed there, it strikes the client's next request,
// in the phase after (fair-lock's release, after holding), and the phase
// it was aimed at, never struck, kept the greatest weight: by the
// weights, more than half of the dropped requests and replies of
// directed schedules of fair-lock were aimed at holding.
const aimEvidenceRuns = 50

// aimPhases are the phases a fault of kind k may be aimed at.
func aimPhases(seen *Coverage, k sim.FaultKind) []string {
	phases := append(slices.Clone(CoveredPhases), PhaseAcquiring, PhaseIdle)
	for _, p := range seen.phasesOf() {
		if !slices.Contains(Phases, p) {
			phases = append(phases, p)
		}
	}
	phases = slices.DeleteFunc(phases, func(p string) bool { return unreachable(k, p) })
	if seen.Runs < aimEvidenceRuns {
		return phases
	}
	// With requests in none of them (a workload of the user's that never
	// calls ZooKeeper), every phase stays: there must be one to aim at.
	if loud := slices.DeleteFunc(slices.Clone(phases), func(p string) bool { return seen.silent(k, p) }); len(loud) > 0 {
		return loud
	}
	return phases
}

// drawAimedFaults draws the faults of a fault-directed run through t:
// each a kind, a client, and a phase of that client's it strikes the
// Nth time the client enters it. Phases are drawn with weights that
// favour those seen (the coverage of the exploration so far) least
// struck by the kind. On an ensemble that may draw lag and pause, one
// run in staleSessionOdds is a stale session (drawStaleSession).
func drawAimedFaults(t *rapid.T, o *ExploreOptions, sc *Scenario, seen *Coverage) []phaseFault {
	if o.MaxFaults == 0 {
		return nil
	}
	kinds := faultKindsFor(o, sc)
	if len(kinds) == 0 {
		return nil
	}
	if staleSessionDrawable(o, sc, kinds) && intRange(0, staleSessionOdds-1).Draw(t, "stale_session") == staleSessionOdds-1 {
		return drawStaleSession(t, sc, seen)
	}
	n := intRange(1, o.MaxFaults).Draw(t, "faults")
	restarted := false
	var out []phaseFault
	for range n {
		var f phaseFault
		f.Kind = rapid.SampledFrom(kinds).Draw(t, "fault_kind")
		if f.Kind == sim.FaultRestart && restarted {
			f.Kind = sim.FaultDisconnect // one restart a run, as drawFaults says
		}
		restarted = restarted || f.Kind == sim.FaultRestart
		// A server fault too is aimed at a phase of a client's.
		f.Client = intRange(1, sc.Clients).Draw(t, "fault_client")
		drawServerOf(t, sc, &f.Fault)
		if lasts(f.Kind) {
			f.Duration = faultDurationGen.Draw(t, "fault_for")
		}
		f.Phase, f.Nth = drawAimedPhase(t, sc, seen, f.Kind)
		out = append(out, f)
	}
	return out
}

// drawAimedPhase draws the phase a fault of kind k is aimed at, and the
// time the client enters it that the fault strikes.
func drawAimedPhase(t *rapid.T, sc *Scenario, seen *Coverage, k sim.FaultKind) (phase string, nth int) {
	// Each phase weighs from 1 to aimWeightMax, in inverse proportion
	// to the faults of the kind that struck it, least struck first:
	// rapid draws small numbers from a small range about as often as
	// large ones, and shrinks towards them.
	phases := aimPhases(seen, k)
	struck := func(p string) int { return seen.Faults[k][p] }
	slices.SortStableFunc(phases, func(a, b string) int { return struck(a) - struck(b) })
	var slots []string
	for _, p := range phases {
		w := aimWeightMax * (1 + struck(phases[0])) / (1 + struck(p))
		for range max(1, w) {
			slots = append(slots, p)
		}
	}
	phase = slots[intRange(0, len(slots)-1).Draw(t, "fault_phase")]
	nth = 1
	if phase != PhaseConnecting {
		nth = intRange(1, sc.Cycles).Draw(t, "fault_nth")
	}
	return phase, nth
}

// staleSessionOdds: one fault-directed schedule of an ensemble in
// staleSessionOdds, when lag and pause may both be drawn, is a stale
// session (drawStaleSession).
const staleSessionOdds = 2

// staleSessionDrawable reports whether run sc may draw a stale session:
// it has an ensemble, and both lag and pause are among its kinds.
func staleSessionDrawable(o *ExploreOptions, sc *Scenario, kinds []sim.FaultKind) bool {
	return sc.Servers > 1 && o.MaxFaults >= 2 && slices.Contains(kinds, sim.FaultLag) && slices.Contains(kinds, sim.FaultPause)
}

// drawStaleSession draws a stale session: when a client enters a phase,
// the follower it is connected to starts to lag and the client's process
// stops for longer than its session timeout, the lag outlasting the
// pause. The leader expires the session, deletes its ephemeral nodes
// and lets the other clients act on it; the lagging follower applies
// none of it and so keeps the client's connection open (a server closes
// a session's connections when it applies the session's close). The
// client wakes on that connection into the view it had when it stopped:
// its session alive, its nodes there, the others' writes since missing.
// A recipe that decides on plain reads then decides on a world that is
// gone (stale-resume-lock resumes a node ZooKeeper deleted); one that
// syncs first makes the follower catch up, apply the expiry and close
// the connection. It is the one window ZooKeeper leaves for a decision
// on a previous session's node: a client that reconnects is revalidated
// through the leader, and a new session is ordered after the old one's
// close.
//
// Why exploration missed it before (5,542 schedules in a minute on 3
// servers found nothing; the library's stale-resume-ensemble opens it by
// hand), each ingredient by itself, measured on runs aimed at it:
//   - independent draws rarely pair a lag and a pause on one client at
//     one moment, the lag on that client's own server, a follower (one
//     of three, and not the leader), the pause past the session and the
//     lag past the pause;
//   - the client wakes with its read deadline (two thirds of the session
//     timeout) long past. That timer is due at once, and a random walk
//     fired it before the client's next request had its reply in nearly
//     every run (125 of the 129 runs of a pair aimed at a holder of two
//     clients that struck a follower): the client gave the connection
//     up, reconnected, and the leader's revalidation told it its session
//     had expired. The library
//     scenario's schedule, shrunk towards the first enabled step, ran
//     the client's task first. deadlineLast orders the wake that way: the
//     simulator allows it (the timers of a resumed client are due at
//     once, in an order the schedule picks), though a real go-zookeeper
//     client most often sees its deadline first;
//   - the other clients must still act on the lock when the client wakes:
//     a pause of a drawn length (15 s, 30 s) ends seconds after the
//     expiry, when, with explored holds of at most 50 ms, they have
//     finished their cycles, and there are never two holders. The pause
//     of a stale session ends instead a drawn moment (1 ms to 1 s) after
//     the tick the leader expires the session at (PastExpiry);
//   - the lag must freeze the follower's view while no other client's
//     node is in it (contending clients nearly always have one there):
//     aimed at a phase, the pair strikes the Nth time the client enters
//     it, and a holding entered just after the last holder's release, or
//     a listing, often finds the next waiter's node not yet applied.
func drawStaleSession(t *rapid.T, sc *Scenario, seen *Coverage) []phaseFault {
	timeout := sc.SessionTimeout
	if timeout <= 0 {
		timeout = defaultSessionTimeout
	}
	client := intRange(1, sc.Clients).Draw(t, "fault_client")
	// The phase is drawn uniformly, not by how often a pause struck it:
	// the pair looks for a decision taken on a stale view, which the
	// least struck phases (a recipe's own, entered seldom) rarely hold.
	phases := slices.DeleteFunc(aimPhases(seen, sim.FaultPause), func(p string) bool { return !connectedPhase(p) })
	phase := rapid.SampledFrom(phases).Draw(t, "fault_phase")
	nth := intRange(1, sc.Cycles).Draw(t, "fault_nth")
	// The pause ends a little after the leader expires the session, at
	// the tick boundary after its timeout counted from the fault (a client
	// last heard from a tick earlier expires a tick earlier, and wakes
	// later after it): the client wakes while the others still act on
	// the expiry, even with holds of milliseconds (a pause of a fixed
	// length often wakes it into a run the others have finished). The lag
	// outlasts the pause by a quarter of a timeout or more, so that the
	// client wakes, reads and decides before the follower catches up.
	past := time.Duration(intRange(1, 1000).Draw(t, "wake_ms")) * time.Millisecond
	lag := time.Duration(intRange(1, 4).Draw(t, "lag_quarters")) * timeout / 4
	return []phaseFault{
		{Fault: sim.Fault{Kind: sim.FaultLag, Client: client, Duration: lag}, Phase: phase, Nth: nth, OnClientFollower: true, PastExpiry: past, SessionTimeout: timeout},
		{Fault: sim.Fault{Kind: sim.FaultPause, Client: client}, Phase: phase, Nth: nth, PastExpiry: past, SessionTimeout: timeout},
	}
}

// A Source draws the random choices of a strategy: n > 0 choices, one
// returned. Draw every choice of an exploration through one (RapidSource)
// so that rapid can shrink it.
type Source interface {
	Draw(n int) int
}

// RapidSource draws through a *rapid.T. A draw that fails (rapid ran out
// of recorded choices while shrinking) is kept and the source answers 0
// from then on; the property re-raises it after the run with Rethrow, on
// its own goroutine, where rapid expects it.
type RapidSource struct {
	T       *rapid.T
	Label   string
	failure any
	// unguarded is set by an exploration's own runs, which draw from
	// rapid's random stream: a draw from it cannot fail (only a recorded
	// stream, replayed while rapid shrinks, runs out), so Draw does not
	// defer a recover around it, which was two thirds of Draw's own
	// cost. Should one panic all the same, the panic ends the run, and
	// the schedule's recover (explorer.runSchedule) reports it, as
	// Rethrow's would have been.
	unguarded bool
}

// sourceSmallN bounds the choices smallGens holds generators for: the
// enabled steps of a decision are fewer.
const sourceSmallN = 32

// smallGens[n] draws an index below n. A rapid generator is an immutable
// value (rapid keeps the state of a draw in the *rapid.T), so one table
// serves every source and every goroutine; each source built its own,
// nine generators and eighteen allocations a run.
var smallGens = func() (gens [sourceSmallN]*rapid.Generator[int]) {
	for n := 1; n < sourceSmallN; n++ {
		gens[n] = rapid.IntRange(0, n-1)
	}
	return gens
}()

// intRanges holds the generators intRange made, by range, for every
// exploration of the process: as smallGens, for the ranges a run's
// scenario and faults are drawn from, which each run built afresh (a
// dozen generators, two allocations each).
var intRanges struct {
	sync.Mutex
	gens map[[2]int]*rapid.Generator[int]
}

// intRangesMax bounds the generators intRanges keeps: the ranges an
// exploration draws from are a few, set by its options; past the bound
// a generator is made for each draw, as rapid.IntRange is.
const intRangesMax = 1024

// intRange is rapid.IntRange(lo, hi): a generator drawing from it is the
// same whoever made it, so one is made for each range.
func intRange(lo, hi int) *rapid.Generator[int] {
	if hi-lo < sourceSmallN-1 && lo == 0 && hi >= 0 {
		return smallGens[hi+1]
	}
	key := [2]int{lo, hi}
	intRanges.Lock()
	g := intRanges.gens[key]
	intRanges.Unlock()
	if g != nil {
		return g
	}
	g = rapid.IntRange(lo, hi) // outside the lock: a bad range panics
	intRanges.Lock()
	if intRanges.gens == nil {
		intRanges.gens = map[[2]int]*rapid.Generator[int]{}
	}
	if len(intRanges.gens) < intRangesMax {
		intRanges.gens[key] = g
	}
	intRanges.Unlock()
	return g
}

// The generators of the draws that take no range, one each for every
// run, as smallGens.
var (
	boolGen          = rapid.Bool()
	seedGen          = rapid.Uint64Range(0, 1<<16)
	faultDurationGen = rapid.SampledFrom(faultDurations)
)

// Draw draws an index below n.
func (s *RapidSource) Draw(n int) int {
	if s.failure != nil || n <= 1 {
		return 0
	}
	var g *rapid.Generator[int]
	if n < sourceSmallN {
		g = smallGens[n]
	} else {
		g = intRange(0, n-1)
	}
	if s.unguarded {
		return g.Draw(s.T, s.Label)
	}
	return s.drawGuarded(g)
}

// drawGuarded is Draw from g for a draw that may fail.
func (s *RapidSource) drawGuarded(g *rapid.Generator[int]) (v int) {
	// The deferred closure recovers only when the draw did not return:
	// a draw that fails panics, and one of a run's 570 that succeeds
	// neither calls a closure inside a closure nor asks the runtime for
	// a panic. A failed draw leaves v at 0.
	drawn := false
	defer func() {
		if !drawn {
			s.failure = recover()
		}
	}()
	v = g.Draw(s.T, s.Label)
	drawn = true
	return v
}

// Rethrow re-raises a failed draw.
func (s *RapidSource) Rethrow() {
	if s.failure != nil {
		panic(s.failure)
	}
}

// WalkStrategy is a random walk whose every choice comes from a Source:
// with a RapidSource, rapid shrinks the schedule itself, towards taking
// the first enabled step.
type WalkStrategy struct{ Source Source }

// Choose picks uniformly among the enabled steps.
func (s WalkStrategy) Choose(_ *sim.World, enabled []sim.Step) int {
	return s.Source.Draw(len(enabled))
}

// PCT is probabilistic concurrency testing (Burckhardt et al., ASPLOS
// 2010): every thread of the run (a client's task, its messages, its
// timers) gets a random priority when first seen; the highest-priority
// enabled step always runs; at Depth−1 change points, drawn among the
// first Steps decisions, the running thread drops below every other. A
// bug of depth d among n threads and k steps is found in one run with
// probability at least 1/(n·k^(d−1)).
type PCT struct {
	// Depth is the bug depth d (≥ 1); Steps the number of decisions the
	// change points are drawn among (default 2,000).
	Depth, Steps int
	Source       Source

	prio    map[pctThread]int
	changes []int
	count   int
	started bool
}

type pctThread struct {
	kind   sim.StepKind
	client int
	task   string
}

// pctPriorities is the range initial priorities are drawn from, above
// every change point's.
const pctPriorities = 1 << 16

func (p *PCT) start() {
	p.started = true
	p.prio = map[pctThread]int{}
	if p.Depth < 1 {
		p.Depth = 1
	}
	if p.Steps < 1 {
		p.Steps = 2000
	}
	for range p.Depth - 1 {
		p.changes = append(p.changes, 1+p.Source.Draw(p.Steps))
	}
}

// Choose runs the highest-priority enabled thread.
func (p *PCT) Choose(_ *sim.World, enabled []sim.Step) int {
	if !p.started {
		p.start()
	}
	p.count++
	best, bestPrio := 0, -1
	for i, st := range enabled {
		th := pctThread{kind: st.Kind, client: st.Client, task: st.Task}
		if st.Kind != sim.StepRunTask {
			th.task = ""
		}
		pr, ok := p.prio[th]
		if !ok {
			pr = p.Depth + p.Source.Draw(pctPriorities)
			p.prio[th] = pr
		}
		if pr > bestPrio {
			best, bestPrio = i, pr
		}
	}
	for i, c := range p.changes {
		if c == p.count {
			st := enabled[best]
			th := pctThread{kind: st.Kind, client: st.Client, task: st.Task}
			if st.Kind != sim.StepRunTask {
				th.task = ""
			}
			p.prio[th] = p.Depth - 1 - i
		}
	}
	return best
}

// connectedPhase reports whether a client in phase p may be connected:
// a stale session needs the client's connection to a follower.
func connectedPhase(p string) bool {
	return p != PhaseConnecting && p != PhaseReconnecting && p != PhaseCrashed
}

// staleSession reports whether aimed faults are a stale session's
// (drawStaleSession).
func staleSession(aimed []phaseFault) bool {
	return slices.ContainsFunc(aimed, func(f phaseFault) bool { return f.OnClientFollower })
}

// deadlineLast walks the schedule as inner does, but fires a client's
// read deadline only when nothing else can happen at that time: a stale
// session's schedule, where the client that wakes from its pause finds
// its read deadline long past (see drawStaleSession).
type deadlineLast struct {
	inner sim.Strategy
	steps []sim.Step
	index []int
}

func (s *deadlineLast) Choose(w *sim.World, enabled []sim.Step) int {
	s.steps, s.index = s.steps[:0], s.index[:0]
	for i, st := range enabled {
		if st.Timer() != sim.TimerReadDeadline {
			s.steps = append(s.steps, st)
			s.index = append(s.index, i)
		}
	}
	if len(s.steps) == 0 || len(s.steps) == len(enabled) {
		return s.inner.Choose(w, enabled)
	}
	return s.index[s.inner.Choose(w, s.steps)]
}
