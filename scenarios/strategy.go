package scenarios

import (
	"slices"

	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// The strategies of an exploration. Random walks the schedule, drawing
// every decision and the faults' steps and times; PCT gives threads
// priorities with a few change points; directed aims each fault at a
// phase of a client's (creating its node, holding, ...), those the
// exploration has seen least struck by that kind most often, and walks
// the schedule at random. Mix, the default, takes turns: schedule g uses
// mixOrder[g mod 3].
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

// aimPhases are the phases a fault of kind k may be aimed at.
func aimPhases(seen *Coverage, k sim.FaultKind) []string {
	phases := append(slices.Clone(CoveredPhases), PhaseAcquiring, PhaseIdle)
	for _, p := range seen.phasesOf() {
		if !slices.Contains(Phases, p) {
			phases = append(phases, p)
		}
	}
	return slices.DeleteFunc(phases, func(p string) bool { return unreachable(k, p) })
}

// drawAimedFaults draws the faults of a fault-directed run through t:
// each a kind, a client, and a phase of that client's it strikes the
// Nth time the client enters it. Phases are drawn with weights that
// favour those seen (the coverage of the exploration so far) least
// struck by the kind.
func drawAimedFaults(t *rapid.T, o *ExploreOptions, sc *Scenario, seen *Coverage) []phaseFault {
	if o.MaxFaults == 0 {
		return nil
	}
	kinds := faultKindsFor(o, sc)
	if len(kinds) == 0 {
		return nil
	}
	n := rapid.IntRange(1, o.MaxFaults).Draw(t, "faults")
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
		f.Client = rapid.IntRange(1, sc.Clients).Draw(t, "fault_client")
		drawServerOf(t, sc, &f.Fault)
		if lasts(f.Kind) {
			f.Duration = rapid.SampledFrom(faultDurations).Draw(t, "fault_for")
		}
		// Each phase weighs from 1 to aimWeightMax, in inverse proportion
		// to the faults of the kind that struck it, least struck first:
		// rapid draws small numbers from a small range about as often as
		// large ones, and shrinks towards them.
		phases := aimPhases(seen, f.Kind)
		struck := func(p string) int { return seen.Faults[f.Kind][p] }
		slices.SortStableFunc(phases, func(a, b string) int { return struck(a) - struck(b) })
		var slots []string
		for _, p := range phases {
			w := aimWeightMax * (1 + struck(phases[0])) / (1 + struck(p))
			for range max(1, w) {
				slots = append(slots, p)
			}
		}
		f.Phase = slots[rapid.IntRange(0, len(slots)-1).Draw(t, "fault_phase")]
		f.Nth = 1
		if f.Phase != PhaseConnecting {
			f.Nth = rapid.IntRange(1, sc.Cycles).Draw(t, "fault_nth")
		}
		out = append(out, f)
	}
	return out
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
	gens    [sourceSmallN]*rapid.Generator[int] // by n, for small n
	bigGens map[int]*rapid.Generator[int]       // by n; looked up, never ranged over
	failure any
}

// sourceSmallN bounds the choices a RapidSource keeps its generators for
// in an array: the enabled steps of a decision are fewer.
const sourceSmallN = 32

// Draw draws an index below n.
func (s *RapidSource) Draw(n int) int {
	if s.failure != nil || n <= 1 {
		return 0
	}
	var g *rapid.Generator[int]
	if n < sourceSmallN {
		if g = s.gens[n]; g == nil {
			g = rapid.IntRange(0, n-1)
			s.gens[n] = g
		}
	} else {
		if s.bigGens == nil {
			s.bigGens = map[int]*rapid.Generator[int]{}
		}
		if g = s.bigGens[n]; g == nil {
			g = rapid.IntRange(0, n-1)
			s.bigGens[n] = g
		}
	}
	var v int
	func() {
		defer func() {
			if r := recover(); r != nil {
				s.failure = r
			}
		}()
		v = g.Draw(s.T, s.Label)
	}()
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
