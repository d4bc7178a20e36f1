package scenarios

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// BenchmarkRun5x10 measures one complete schedule of 5 clients × 10 lock
// cycles of fair-lock with a random walk and a fault, checks included.
func BenchmarkRun5x10(b *testing.B) {
	b.ReportAllocs()
	steps := uint64(0)
	for i := range b.N {
		sc := &Scenario{Recipe: "fair-lock", Clients: 5, Cycles: 10, Hold: time.Millisecond, Seed: uint64(i),
			Faults: []sim.ScheduledFault{{AtStep: 200, Fault: sim.Fault{Kind: sim.FaultDropReply, Client: 2}}}}
		res, err := Run(sc, RunOptions{Strategy: sim.RandomWalk{}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict.Failed() {
			b.Fatal(res.Verdict)
		}
		steps += res.Steps
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/run")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkExplore5x10 measures exploration throughput: complete
// schedules of 5 clients × 10 lock cycles of fair-lock with a fenced
// store and up to 3 faults of every kind, scheduling drawn through rapid,
// checks included. Run with -cpu 1 for one core.
func BenchmarkExplore5x10(b *testing.B) {
	runs, steps := 0, uint64(0)
	for i := range b.N {
		res, err := Explore(ExploreOptions{Recipe: "fair-lock", Strategy: StrategyRandom, Runs: 100, Seed: uint64(i), exactShape: true, Clients: 5, Cycles: 10})
		if err != nil {
			b.Fatal(err)
		}
		if res.Failure != nil {
			b.Fatalf("%s", res.Failure.Verdict)
		}
		runs += res.Runs
		steps += res.Steps
	}
	b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "schedules/s")
	b.ReportMetric(float64(steps)/float64(runs), "steps/schedule")
}

// BenchmarkFirstViolation measures the wall time to the first violation
// of each flawed variant and of the unfenced store.
func BenchmarkFirstViolation(b *testing.B) {
	for _, tg := range []struct {
		recipe string
		store  StoreKind
	}{{"persistent-lock", StoreFenced}, {"unprotected-lock", StoreFenced}, {"lost-wakeup-lock", StoreFenced}, {"fair-lock", StoreUnfenced}} {
		b.Run(tg.recipe+"-"+string(tg.store), func(b *testing.B) {
			var total time.Duration
			for i := range b.N {
				res, err := Explore(ExploreOptions{Recipe: tg.recipe, Store: tg.store, Time: 30 * time.Second, Seed: uint64(i), Dir: b.TempDir(), ShrinkTime: time.Millisecond})
				if err != nil || res.Failure == nil {
					b.Fatalf("not found: %v", err)
				}
				total += res.ToFailure
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-violation")
		})
	}
}

// BenchmarkFirstViolationByStrategy measures, for every flawed recipe of
// the library and for fair-lock over the unfenced store, how soon each
// strategy finds the violation (issue 15 item 4): the schedules run up
// to and including the first failing one (schedules-to-violation, the
// same on every machine and for every --parallel) and the wall time to
// it on one core (ms-to-violation; Parallel is 1 so that the strategies
// are timed alike). Each iteration explores one seed (0, 1, ...) with
// the shape the flaw needs (shapeFor; stale-resume-lock on its 3
// servers), for at most 20 seconds; found is the share of seeds whose
// violation was found in that time, and the means are over those.
//
//	go test ./scenarios -run '^$' -bench FirstViolationByStrategy -benchtime 10x -cpu 1
func BenchmarkFirstViolationByStrategy(b *testing.B) {
	type target struct {
		recipe  recipes.Recipe
		store   StoreKind
		servers int
	}
	var targets []target
	for _, r := range recipes.Recipes() {
		if r.Flawed() {
			// The store the flaw's shape explores (old-session-latch's is
			// unfenced), for the benchmark's name.
			store := shapeFor(r.Name, ExploreOptions{Store: StoreFenced}).Store
			targets = append(targets, target{r, store, max(r.Servers, 1)})
		}
	}
	fair, _ := recipes.Lookup("fair-lock")
	targets = append(targets, target{fair, StoreUnfenced, 1})
	for _, tg := range targets {
		for _, strategy := range Strategies {
			b.Run(fmt.Sprintf("%s-%s/%s", tg.recipe.Name, tg.store, strategy), func(b *testing.B) {
				var found, schedules int
				var toFailure time.Duration
				for i := range b.N {
					o := shapeFor(tg.recipe.Name, ExploreOptions{Recipe: tg.recipe.Name, Store: tg.store, Strategy: strategy, Parallel: 1,
						Time: 20 * time.Second, Seed: uint64(i), Dir: b.TempDir(), ShrinkTime: time.Millisecond})
					if tg.servers > 1 {
						o.Servers = []int{tg.servers}
					}
					res, err := Explore(o)
					if err != nil {
						b.Fatal(err)
					}
					if res.Failure == nil {
						b.Logf("seed %d: no violation in %d schedules (%v)", i, res.Runs, res.Elapsed.Round(time.Millisecond))
						continue
					}
					found++
					schedules += res.Runs
					toFailure += res.ToFailure
				}
				b.ReportMetric(float64(found)/float64(b.N), "found")
				if found > 0 {
					b.ReportMetric(float64(toFailure.Microseconds())/1000/float64(found), "ms-to-violation")
					b.ReportMetric(float64(schedules)/float64(found), "schedules-to-violation")
				}
			})
		}
	}
}

// BenchmarkExploreParallel measures exploration on one core and on every
// core (GOMAXPROCS, set by -cpu) in one run (issue 15 item 1):
// BenchmarkExplore5x10's workload, 200 schedules an exploration, with
// Parallel 1 and Parallel GOMAXPROCS taken in turn in every iteration and
// each timed on its own, so that a shared machine's drift over seconds
// falls on both alike. It reports both rates and speedup, their ratio
// (the issue asks for at least 1.8 on this 2-core machine). Both explore
// the same schedules: the outcome does not depend on Parallel.
//
//	go test ./scenarios -run '^$' -bench ExploreParallel -benchtime 20x -cpu 2
func BenchmarkExploreParallel(b *testing.B) {
	cores := runtime.GOMAXPROCS(0)
	t := inTurn(b, 2, func(i, k int) ExploreOptions {
		return ExploreOptions{Recipe: "fair-lock", Strategy: StrategyRandom, Runs: 200, Seed: uint64(i), exactShape: true, Clients: 5, Cycles: 10, Parallel: []int{1, cores}[k]}
	})
	if t.runs[0] != t.runs[1] || t.steps[0] != t.steps[1] {
		b.Fatalf("parallel 1 ran %d schedules of %d steps, parallel %d ran %d of %d", t.runs[0], t.steps[0], cores, t.runs[1], t.steps[1])
	}
	one, all := t.rate(0), t.rate(1)
	b.ReportMetric(one, "schedules/s-1")
	b.ReportMetric(all, fmt.Sprintf("schedules/s-%d", cores))
	b.ReportMetric(all/one, "speedup")
}

// turns are the explorations of inTurn, by variant: their wall time,
// schedules and steps.
type turns struct {
	elapsed []time.Duration
	runs    []int
	steps   []uint64
}

// rate is variant k's schedules per second.
func (t turns) rate(k int) float64 { return float64(t.runs[k]) / t.elapsed[k].Seconds() }

// inTurn runs, in every iteration i, the explorations of variants
// options(i, 0) ... options(i, variants-1) one after the other, each timed
// on its own, so that a shared machine's drift over seconds falls on
// every variant alike. An exploration that fails or finds a violation
// stops the benchmark.
func inTurn(b *testing.B, variants int, options func(i, k int) ExploreOptions) turns {
	t := turns{elapsed: make([]time.Duration, variants), runs: make([]int, variants), steps: make([]uint64, variants)}
	for i := range b.N {
		for k := range variants {
			start := time.Now()
			res, err := Explore(options(i, k))
			t.elapsed[k] += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if res.Failure != nil {
				b.Fatalf("%s", res.Failure.Verdict)
			}
			t.runs[k] += res.Runs
			t.steps[k] += res.Steps
		}
	}
	return t
}

// BenchmarkExplore5x10Servers measures exploration throughput on one
// server and on an ensemble of 3, side by side in one run (issue 13 item
// 7): BenchmarkExplore5x10's workload (fair-lock, 5 clients × 10 cycles,
// fenced store, up to 3 faults, random scheduling, checks included),
// with every fault kind the size allows (on 3 servers the ensemble's
// too). Only the "run" check stops an exploration, so that every
// sub-benchmark runs its 100 schedules whatever the recipe does on an
// ensemble. Compare the schedules/s of servers=1 and servers=3.
func BenchmarkExplore5x10Servers(b *testing.B) {
	for _, servers := range []int{1, 3} {
		b.Run(fmt.Sprintf("servers=%d", servers), func(b *testing.B) {
			runs, steps := 0, uint64(0)
			for i := range b.N {
				res, err := Explore(ExploreOptions{Recipe: "fair-lock", Strategy: StrategyRandom, Runs: 100, Seed: uint64(i), exactShape: true, Clients: 5, Cycles: 10,
					Servers: []int{servers}, Violations: []string{CheckRun}, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if res.Failure != nil {
					b.Fatalf("%s", res.Failure.Verdict)
				}
				runs += res.Runs
				steps += res.Steps
			}
			b.ReportMetric(float64(runs)/b.Elapsed().Seconds(), "schedules/s")
			b.ReportMetric(float64(steps)/float64(runs), "steps/schedule")
		})
	}
}

// BenchmarkExplore5x10ServersRatio is BenchmarkExplore5x10Servers with the
// two sizes taken in turn, one exploration of 100 schedules each per
// iteration, each timed on its own: on a machine whose speed drifts over
// seconds (a shared virtual machine's does, by a third), the ratio of two
// sub-benchmarks run one after the other measures the drift as much as
// the ensemble. It reports both rates and their ratio (ratio3to1, issue
// 13 item 7 asks for at least 0.5).
func BenchmarkExplore5x10ServersRatio(b *testing.B) {
	t := inTurn(b, 2, func(i, k int) ExploreOptions {
		return ExploreOptions{Recipe: "fair-lock", Strategy: StrategyRandom, Runs: 100, Seed: uint64(i), exactShape: true, Clients: 5, Cycles: 10,
			Servers: []int{[]int{1, 3}[k]}, Violations: []string{CheckRun}, Dir: b.TempDir()}
	})
	one, three := t.rate(0), t.rate(1)
	b.ReportMetric(one, "schedules/s-1")
	b.ReportMetric(three, "schedules/s-3")
	b.ReportMetric(three/one, "ratio3to1")
}
