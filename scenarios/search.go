package scenarios

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// How an exploration spreads over cores and stays the same whatever their
// number.
//
// Schedule g of an exploration is a rapid test case: the g-th test case
// of a rapid.Check whose base seed is fixed by the exploration's seed and
// by g's chunk (one chunk for a budget in runs, exploreChunk schedules a
// chunk for a budget in time). rapid draws the k-th test case of a check
// from the seed base + k(k+1)/2 (its findBug adds the iteration number
// to the seed before each one), so what schedule g draws depends on g
// alone. Every worker walks the chunk's rapid.Check, runs the schedules
// it claimed and skips the others (a skipped test case draws nothing);
// claims go out in index order, so the schedules run are always the
// prefix 0..n-1 of one sequence. The first violation by index wins: once
// schedule g fails nothing past g is claimed, and every schedule before g
// was claimed already and runs to its end. The failing schedule is then
// shrunk alone, by a rapid.Check of one test case started from g's seed,
// exactly as a single-core exploration would shrink it.
//
// rapid reads its seed and its number of checks from process-wide flags
// when a check starts: a worker holds flagMu from setting them until its
// property is first called, after rapid has read them.

// explorer is one exploration on the simulator.
type explorer struct {
	o         *ExploreOptions
	chunkRuns int // schedules per chunk: all of a budget in runs, else exploreChunk
	workers   int
	start     time.Time

	flagMu sync.Mutex

	mu       sync.Mutex
	next     int // the next schedule to claim
	limit    int // no schedule at or past it is claimed (-1: none)
	stopped  bool
	done     int // schedules run, in any order
	failing  int // the first failing schedule, -1 if none yet
	found    *Result
	foundAt  time.Duration // wall time to the first failing schedule
	err      error
	pending  map[int]runRecord // run but not yet merged
	merged   int               // the schedules merged into the totals: a prefix
	steps    uint64
	shrunk   int // runs tried while shrinking
	shrinkOn bool
	// shrinkStart is when shrinking began.
	shrinkStart time.Time
	cov         *Coverage // of the merged schedules
	// snaps are the coverage of the first k schedules, k a multiple of
	// seenEpoch; mergedCond signals when more are merged.
	snaps      map[int]*Coverage
	mergedCond *sync.Cond
	kept       int // runs added to the corpus
}

// runRecord is what the totals keep of one schedule.
type runRecord struct {
	steps  uint64
	failed bool
	cov    *Coverage
	sc     *Scenario // for the corpus
}

func newExplorer(o *ExploreOptions) *explorer {
	e := &explorer{o: o, limit: -1, failing: -1, pending: map[int]runRecord{}, workers: o.Parallel, cov: newCoverage(), snaps: map[int]*Coverage{0: newCoverage()}}
	e.mergedCond = sync.NewCond(&e.mu)
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	e.chunkRuns = exploreChunk
	if o.Time == 0 {
		e.chunkRuns = o.Runs
	}
	if o.Runs > 0 {
		e.limit = o.Runs
	}
	return e
}

// chunkSeed is the base seed of chunk c's rapid.Check.
func (e *explorer) chunkSeed(c int) uint64 {
	return e.o.Seed*1_000_003 + uint64(c)*100_003 + 1
}

// seedOf is the seed rapid draws schedule g from.
func (e *explorer) seedOf(g int) uint64 {
	c := g / e.chunkRuns
	k := uint64(g - c*e.chunkRuns)
	return e.chunkSeed(c) + k*(k+1)/2
}

// chunkLen is the number of schedules of chunk c within the budget.
func (e *explorer) chunkLen(c int) int {
	first := c * e.chunkRuns
	if e.o.Runs > 0 {
		return min(e.chunkRuns, e.o.Runs-first)
	}
	return e.chunkRuns
}

// claim hands out the next schedule, or -1 when the budget is spent or a
// schedule failed.
func (e *explorer) claim() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil || e.stopped || (e.limit >= 0 && e.next >= e.limit) {
		return -1
	}
	if e.o.Time > 0 && time.Since(e.start) >= e.o.Time {
		e.stopped = true
		return -1
	}
	g := e.next
	e.next++
	return g
}

// finish records schedule g's run.
func (e *explorer) finish(g int, r *Result, failed bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if e.err == nil {
			e.err = err
		}
		e.mergedCond.Broadcast()
		return
	}
	e.done++
	if failed && (e.failing < 0 || g < e.failing) {
		if e.failing < 0 {
			e.foundAt = time.Since(e.start)
		}
		e.failing, e.found = g, r
		e.limit = g + 1
	}
	rec := runRecord{steps: r.Steps, failed: failed, cov: r.Coverage}
	if e.o.Corpus != "" {
		rec.sc = r.Scenario // without a corpus a passing run's schedule goes back with it (lendSchedule)
	}
	e.pending[g] = rec
	for {
		rec, ok := e.pending[e.merged]
		if !ok || (e.failing >= 0 && e.merged > e.failing) {
			break
		}
		delete(e.pending, e.merged)
		if e.o.Corpus != "" && !rec.failed && e.err == nil {
			if novel := e.cov.novelties(rec.cov); len(novel) > 0 {
				if err := writeCorpus(e.o.Corpus, e.o, e.merged, rec.sc, novel); err != nil {
					e.err = fmt.Errorf("explore: corpus: %w", err)
				}
				e.kept++
			}
		}
		e.merged++
		e.steps += rec.steps
		e.cov.Add(rec.cov)
		if !rec.failed && rec.cov != nil {
			// Counted in, and nothing else has it: a failing run's
			// result, which keeps its coverage, is e.found.
			putCoverage(rec.cov)
		}
		if e.merged%seenEpoch == 0 && e.o.Strategy != StrategyRandom && e.o.Strategy != StrategyPCT {
			e.snaps[e.merged] = e.cov.Clone()
		}
		e.mergedCond.Broadcast()
	}
	e.progressLocked()
}

func (e *explorer) progressLocked() {
	if e.o.Progress == nil {
		return
	}
	p := ExploreProgress{Stage: StageExploring, Runs: e.done, Budget: e.o.Runs, Elapsed: time.Since(e.start), TimeBudget: e.o.Time, Workers: e.workers}
	if e.shrinkOn {
		p.Stage, p.Runs, p.ShrinkRuns = StageShrinking, e.merged, e.shrunk
		p.ShrinkLeft = max(0, e.o.ShrinkTime-time.Since(e.shrinkStart))
	}
	e.o.Progress(p)
}

// search runs the schedules on every worker until the budget is spent or
// one fails.
func (e *explorer) search() (*ExploreResult, error) {
	e.start = time.Now()
	var wg sync.WaitGroup
	for range e.workers {
		wg.Go(e.work)
	}
	wg.Wait()
	res := &ExploreResult{Elapsed: time.Since(e.start), Runs: e.merged, Steps: e.steps, Found: e.found, Coverage: e.cov, CorpusKept: e.kept}
	if e.err != nil {
		return res, e.err
	}
	if want := e.next; e.failing < 0 && e.merged != want {
		return res, fmt.Errorf("explore: %d schedules claimed, %d merged", want, e.merged)
	}
	if e.failing >= 0 && e.merged != e.failing+1 {
		return res, fmt.Errorf("explore: schedule %d failed, %d merged", e.failing, e.merged)
	}
	if e.found != nil {
		res.ToFailure = e.foundAt
	}
	return res, nil
}

// work is one worker: it walks the rapid.Check of the chunk of each
// schedule it claims, running its own schedules and skipping the others.
func (e *explorer) work() {
	target := e.claim()
	for target >= 0 {
		c := target / e.chunkRuns
		first, n := c*e.chunkRuns, e.chunkLen(c)
		e.flagMu.Lock()
		released := false
		release := func() {
			if !released {
				released = true
				e.flagMu.Unlock()
			}
		}
		if err := setRapidFlag("rapid.seed", strconv.FormatUint(e.chunkSeed(c), 10)); err != nil {
			release()
			e.finish(target, nil, false, err)
			return
		}
		if err := setRapidFlag("rapid.checks", strconv.Itoa(n)); err != nil {
			release()
			e.finish(target, nil, false, err)
			return
		}
		k := 0
		tb := &exploreTB{name: "zklab-explore-" + e.o.Recipe}
		rapid.Check(tb, func(t *rapid.T) {
			release()
			g := first + k
			k++
			if g != target {
				return
			}
			e.runSchedule(t, g)
			target = e.claim()
		})
		release()
		if tb.failed {
			e.finish(target, nil, false, fmt.Errorf("explore: rapid: %v", tb.report))
			return
		}
		if target >= first && target < first+n {
			e.finish(target, nil, false, fmt.Errorf("explore: rapid ended chunk %d before schedule %d", c, target))
			return
		}
	}
}

// runSchedule draws and runs schedule g through t and records it.
func (e *explorer) runSchedule(t *rapid.T, g int) {
	var (
		r      *Result
		failed bool
		err    error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("explore: schedule %d (rapid seed %d): %v", g, e.seedOf(g), p)
			}
		}()
		r, failed, err = e.runDrawn(t, g, false)
	}()
	e.finish(g, r, failed, err)
	if r != nil && !failed {
		r.recycle() // finish kept only its scenario and coverage
	}
}

// runDrawn draws schedule g through t, runs it and says whether it
// failed a check. While rapid shrinks, a draw may fail (RapidSource).
func (e *explorer) runDrawn(t *rapid.T, g int, shrinking bool) (*Result, bool, error) {
	o := e.o
	strategy := strategyOf(o.Strategy, g)
	sc := drawWorkload(t, o)
	var aimed []phaseFault
	if strategy == StrategyDirected {
		aimed = drawAimedFaults(t, o, sc, e.seen(g))
	} else {
		drawFaults(t, o, sc)
	}
	// The source and the walk over it, in one allocation: a WalkStrategy
	// (an interface in a struct) put in a sim.Strategy was one more.
	drawn := &struct {
		src  RapidSource
		walk WalkStrategy
	}{src: RapidSource{T: t, Label: "sched", unguarded: !shrinking}}
	src := &drawn.src
	drawn.walk.Source = src
	var sched sim.Strategy = &drawn.walk
	if strategy == StrategyPCT {
		sched = &PCT{Depth: o.Depth, Source: src}
	}
	if staleSession(aimed) {
		sched = &deadlineLast{inner: sched}
	}
	r, err := Run(sc, RunOptions{Recipe: o.New, Lock: o.Lock, Strategy: sched, CheckTimeout: o.CheckTimeout, Coverage: true, phaseFaults: aimed, Znodes: o.Znodes, Workload: o.Program, Model: o.Model,
		lendSchedule: o.Corpus == "", // runSchedule and shrink give back the results they do not keep whole
		ownScenario:  true})
	src.Rethrow()
	if err != nil {
		return nil, false, err
	}
	return r, len(r.Verdict.Violations(o.Violations)) > 0, nil
}

// seenEpoch is how far behind the exploration the coverage a
// fault-directed schedule aims by is: schedule g aims by the coverage of
// the schedules before the start of the epoch before g's, whatever the
// number of workers and the order they finish in.
const seenEpoch = 64

// seen is the coverage schedule g aims by: it waits until the schedules
// it counts have run.
func (e *explorer) seen(g int) *Coverage {
	need := max(0, (g/seenEpoch-1)*seenEpoch)
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.merged < need && e.err == nil {
		e.mergedCond.Wait()
	}
	if c, ok := e.snaps[need]; ok {
		return c
	}
	return newCoverage() // an error ended the search
}

// shrink runs the failing schedule g alone in a rapid.Check of one test
// case from its seed, which rapid shrinks; it returns the last failing
// run rapid saw, the shrunk one.
func (e *explorer) shrink(runs int) (*Result, error) {
	g := runs - 1
	if err := setRapidFlag("rapid.seed", strconv.FormatUint(e.seedOf(g), 10)); err != nil {
		return nil, err
	}
	if err := setRapidFlag("rapid.checks", "1"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.shrinkOn, e.shrinkStart = true, time.Now()
	e.mu.Unlock()
	var last *Result
	tb := &exploreTB{name: "zklab-explore-" + e.o.Recipe}
	rapid.Check(tb, func(t *rapid.T) {
		r, failed, err := e.runDrawn(t, g, true)
		e.mu.Lock()
		e.shrunk++
		e.progressLocked()
		e.mu.Unlock()
		if err != nil {
			t.Fatalf("%v", err)
		}
		if failed {
			last = r
			v := r.Verdict.Violations(e.o.Violations)
			t.Fatalf("%s: %s", v[0].Name, v[0].Detail)
		}
		r.recycle()
	})
	if last == nil {
		return nil, fmt.Errorf("explore: schedule %d (rapid seed %d) failed, then passed when run again", g, e.seedOf(g))
	}
	return last, nil
}

func setRapidFlag(name, value string) error {
	_, err := setRapidFlags(map[string]string{name: value})
	return err
}
