package scenarios

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zklab/zklab/sim"
)

// Exploring on a real ZooKeeper (ExploreOptions.ZK): each run draws a
// workload and faults from the seed, as on the simulator, and runs them on
// the server (see runOnZK: each fault strikes during the operation of its
// client's where it strikes on the simulator). The server and the network
// make the scheduling decisions, so none are drawn and a run is not
// replayed byte for byte; a server restart is not among the faults. A failing run is shrunk by dropping faults and cycles
// while the failure still shows within zkShrinkAttempts runs, and written
// as a scenario file that `zklab run --zk` runs again.

// zkShrinkAttempts is how many runs a shrinking candidate gets to fail
// again: on a real server a failure is not certain to recur.
const zkShrinkAttempts = 3

// zkFaultKinds are the fault kinds a run on a real server draws from: all
// but a server restart when none are named; naming a restart is an
// error.
func zkFaultKinds(kinds []sim.FaultKind) ([]sim.FaultKind, error) {
	if kinds == nil {
		return slices.DeleteFunc(slices.Clone(sim.FaultKinds), func(k sim.FaultKind) bool { return k == sim.FaultRestart }), nil
	}
	if slices.Contains(kinds, sim.FaultRestart) {
		return nil, fmt.Errorf("explore: fault %s cannot be injected on a real server (zklab does not run it)", sim.FaultRestart)
	}
	if i := slices.IndexFunc(kinds, serverFault); i >= 0 {
		return nil, fmt.Errorf("explore: fault %s cannot be injected on a real ensemble (zklab does not run its servers)", kinds[i])
	}
	return kinds, nil
}

// drawZKScenario draws a workload and faults, at virtual times.
func drawZKScenario(rng *rand.Rand, o *ExploreOptions, kinds []sim.FaultKind) *Scenario {
	between := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	minClients := min(2, o.Clients)
	sc := &Scenario{
		Recipe:         o.Recipe,
		Leases:         o.Leases,
		Clients:        between(minClients, o.Clients),
		Cycles:         between(1, o.Cycles),
		Hold:           time.Duration(between(0, 50)) * time.Millisecond,
		Store:          o.Store,
		SessionTimeout: o.SessionTimeout,
		Seed:           rng.Uint64N(1 << 16),
	}
	if o.Recipe == "rw-lock" || o.Recipe == "herd-rw-lock" {
		for c := 1; c <= sc.Clients; c++ {
			if rng.IntN(2) == 0 {
				sc.Readers = append(sc.Readers, c)
			}
		}
	}
	if len(kinds) == 0 {
		return sc
	}
	for range between(0, o.MaxFaults) {
		f := sim.ScheduledFault{AtTime: time.Duration(between(1, faultTimeMaxMs)) * time.Millisecond}
		f.Kind = kinds[rng.IntN(len(kinds))]
		f.Client = between(1, sc.Clients)
		switch f.Kind {
		case sim.FaultDisconnect, sim.FaultPartition, sim.FaultPause:
			f.Duration = faultDurations[rng.IntN(len(faultDurations))]
		}
		sc.Faults = append(sc.Faults, f)
	}
	sortFaults(sc.Faults)
	return sc
}

// exploreOnZK explores on the real server; o is filled, with its faults
// from zkFaultKinds.
func exploreOnZK(o ExploreOptions) (*ExploreResult, error) {
	kinds := o.Faults
	rng := rand.New(rand.NewPCG(o.Seed, 0x7a6b6c6162))
	run := func(sc *Scenario) (*Result, error) {
		return Run(sc, RunOptions{ZK: o.ZK, Recipe: o.New, Lock: o.Lock, CheckTimeout: o.CheckTimeout, Workload: o.Program, Model: o.Model})
	}
	res := &ExploreResult{}
	start := time.Now()
	for {
		if (o.Runs > 0 && res.Runs >= o.Runs) || (o.Time > 0 && time.Since(start) >= o.Time) {
			break
		}
		sc := drawZKScenario(rng, &o, kinds)
		r, err := run(sc)
		if err != nil {
			return nil, err
		}
		if v := r.Verdict.Violations(o.Violations); len(v) > 0 {
			res.ToFailure = time.Since(start)
			res.Found = r
			break
		}
		res.Runs++
		res.Steps += r.Steps
		if o.Progress != nil {
			o.Progress(ExploreProgress{Stage: StageExploring, Runs: res.Runs, Budget: o.Runs, Elapsed: time.Since(start), TimeBudget: o.Time, Workers: 1})
		}
	}
	if res.Found == nil {
		res.Elapsed = time.Since(start)
		return res, nil
	}
	res.Failure = shrinkOnZK(&o, res.Found, run)
	res.Elapsed = time.Since(start)
	file, err := writeZKFailure(&o, res.Failure)
	if err != nil {
		return res, err
	}
	res.File = file
	res.Command = "zklab run --zk " + strings.Join(o.ZK, ",") + " " + file
	return res, nil
}

// shrinkOnZK drops faults, then cycles, while the failure still shows
// within zkShrinkAttempts runs, and within o.ShrinkTime.
func shrinkOnZK(o *ExploreOptions, found *Result, run func(*Scenario) (*Result, error)) *Result {
	deadline := time.Now().Add(o.ShrinkTime)
	best := found
	stillFails := func(sc *Scenario) *Result {
		for range zkShrinkAttempts {
			if time.Now().After(deadline) {
				return nil
			}
			r, err := run(sc)
			if err == nil && len(r.Verdict.Violations(o.Violations)) > 0 {
				return r
			}
		}
		return nil
	}
	for i := len(best.Scenario.Faults) - 1; i >= 0; i-- {
		sc := best.Scenario.clone()
		sc.Faults = slices.Delete(sc.Faults, i, i+1)
		if r := stillFails(sc); r != nil {
			best = r
		}
	}
	for best.Scenario.Cycles > 1 {
		sc := best.Scenario.clone()
		sc.Cycles--
		r := stillFails(sc)
		if r == nil {
			break
		}
		best = r
	}
	return best
}

// writeZKFailure writes a failure found on a real server as a scenario
// file: the workload and the faults, with no schedule.
func writeZKFailure(o *ExploreOptions, r *Result) (string, error) {
	sc := r.Scenario.clone()
	sc.layout, sc.Schedule = nil, nil
	violations := r.Verdict.Violations(o.Violations)
	var head strings.Builder
	fmt.Fprintf(&head, "# zklab scenario: a failure found on a real ZooKeeper (%s) by exploration.\n", strings.Join(o.ZK, ","))
	fmt.Fprintf(&head, "# explore: recipe %s, seed %d. The server's schedule is not recorded: run it there\n", o.Recipe, o.Seed)
	fmt.Fprintf(&head, "# again with zklab run --zk (it may take more than one run to strike), or on the\n# simulator with zklab run, under the simulator's default schedule.\n")
	for _, v := range violations {
		fmt.Fprintf(&head, "# %s: %s\n", v.Name, oneLine(v.Detail))
		sc.Expect = append(sc.Expect, Expectation{Check: v.Name, Outcome: Fail})
	}
	head.WriteString("#\n")
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(o.Dir, fmt.Sprintf("%s-%s-zk-seed%d.scenario", o.Recipe, violations[0].Name, o.Seed))
	if err := os.WriteFile(file, []byte(head.String()+Format(sc)), 0o644); err != nil {
		return "", err
	}
	return file, nil
}
