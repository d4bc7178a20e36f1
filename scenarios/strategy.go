package scenarios

import (
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

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
	gens    map[int]*rapid.Generator[int] // by n; looked up, never ranged over
	failure any
}

// Draw draws an index below n.
func (s *RapidSource) Draw(n int) int {
	if s.failure != nil || n <= 1 {
		return 0
	}
	if s.gens == nil {
		s.gens = map[int]*rapid.Generator[int]{}
	}
	g, ok := s.gens[n]
	if !ok {
		g = rapid.IntRange(0, n-1)
		s.gens[n] = g
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
