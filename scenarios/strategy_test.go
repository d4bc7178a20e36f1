package scenarios

import (
	"slices"
	"testing"

	"github.com/zklab/zklab/sim"
)

// A fault aimed at a phase strikes the client in that phase, and the run's
// scenario lists it at the step it struck: run again from the scenario,
// the run is the same, step for step.
func TestAimedFaultsReplay(t *testing.T) {
	for _, phase := range []string{PhaseCreating, PhaseListing, PhaseWaiting, PhaseHolding, PhaseReleasing} {
		for _, kind := range []sim.FaultKind{sim.FaultDropReply, sim.FaultPartition, sim.FaultExpire, sim.FaultCrash, sim.FaultRestart} {
			if unreachable(kind, phase) {
				continue
			}
			for seed := uint64(1); seed <= 3; seed++ {
				sc := &Scenario{Recipe: "fair-lock", Clients: 3, Cycles: 2, Hold: 20e6, Seed: seed}
				aimed := []phaseFault{{Fault: sim.Fault{Kind: kind, Client: 2, Duration: 5e9}, Phase: phase, Nth: 2}}
				first, err := Run(sc, RunOptions{Coverage: true, Strategy: sim.RandomWalk{}, phaseFaults: aimed})
				if err != nil {
					t.Fatal(err)
				}
				if len(first.Scenario.Faults) != 1 || first.Scenario.Faults[0].AtStep == 0 {
					// The client never entered the phase twice (a crash
					// or an expiry can end its cycles early): nothing to replay.
					continue
				}
				if kind != sim.FaultRestart && kind != sim.FaultDropReply && first.Coverage.Faults[kind][phase] != 1 {
					t.Errorf("%s aimed at %s struck %v", kind, phase, first.Coverage.Faults[kind])
				}
				again, err := Run(first.Scenario, RunOptions{Coverage: true})
				if err != nil {
					t.Fatal(err)
				}
				// The outcomes, not the details: a detail names lock nodes,
				// whose GUIDs come from the seeded source the first run's
				// random walk shared with its scheduling.
				if again.Steps != first.Steps || !slices.Equal(again.Scenario.Schedule, first.Scenario.Schedule) || !sameOutcomes(again.Verdict, first.Verdict) {
					t.Errorf("%s aimed at %s (seed %d): %d steps, replayed from its scenario %d steps\n%s", kind, phase, seed, first.Steps, again.Steps, Format(first.Scenario))
				}
				if again.Coverage.Text(sim.FaultKinds) != first.Coverage.Text(sim.FaultKinds) {
					t.Errorf("%s aimed at %s (seed %d): the replay covered something else", kind, phase, seed)
				}
			}
		}
	}
}

// The mix takes the strategies in turn, and every strategy explores the
// same runs whatever the number of workers (search_test.go); directed
// reaches an expiry while a client holds the lock in fewer runs than the
// random walk does (60 runs of fair-lock, seed 3).
func TestDirectedAimsAtHolding(t *testing.T) {
	if got := []string{strategyOf(StrategyMix, 0), strategyOf(StrategyMix, 1), strategyOf(StrategyMix, 5)}; !slices.Equal(got, []string{StrategyRandom, StrategyPCT, StrategyDirected}) {
		t.Errorf("mix takes %v", got)
	}
	count := func(strategy string) int {
		res, err := Explore(ExploreOptions{Recipe: "fair-lock", Runs: 200, Seed: 3, Strategy: strategy})
		if err != nil || res.Failure != nil {
			t.Fatalf("%s: %v %+v", strategy, err, res)
		}
		return res.Coverage.Events[EventExpiryHolding] + res.Coverage.Faults[sim.FaultCrash][PhaseHolding] + res.Coverage.Faults[sim.FaultPause][PhaseHolding]
	}
	random, directed := count(StrategyRandom), count(StrategyDirected)
	if directed <= random {
		t.Errorf("faults on a holder: directed %d, random %d", directed, random)
	}
}

// sameOutcomes reports whether two verdicts have the same checks with the
// same outcomes, and the same herd figures.
func sameOutcomes(a, b *Verdict) bool {
	if len(a.Checks) != len(b.Checks) || a.Herd != b.Herd {
		return false
	}
	for i := range a.Checks {
		if a.Checks[i].Name != b.Checks[i].Name || a.Checks[i].Outcome != b.Checks[i].Outcome {
			return false
		}
	}
	return true
}
