package scenarios

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TestLong is outside make test (ZKLAB_LONG=1): time to first violation
// of every flawed variant and of the unfenced store over seeds, and the
// correct recipes with the fenced store over ZKLAB_LONG_RUNS schedules
// each (default 10,000) with every fault kind.
func TestLong(t *testing.T) {
	if os.Getenv("ZKLAB_LONG") == "" {
		t.Skip("set ZKLAB_LONG=1")
	}
	targets := violationTargets()
	const seeds = 9
	for _, tg := range targets {
		var times []time.Duration
		var lines []int
		for seed := uint64(1); seed <= seeds; seed++ {
			res, err := Explore(shapeFor(tg.recipe, ExploreOptions{Recipe: tg.recipe, Store: tg.store, Time: 30 * time.Second, Seed: seed, Dir: t.TempDir(), ShrinkTime: 5 * time.Second}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure == nil {
				t.Errorf("%s/%s seed %d: not found in 30 s (%d runs)", tg.recipe, tg.store, seed, res.Runs)
				continue
			}
			times = append(times, res.ToFailure)
			lines = append(lines, strings.Count(Format(res.Failure.Scenario), "\n"))
		}
		slices.Sort(times)
		slices.Sort(lines)
		if len(times) > 0 {
			t.Logf("%-17s %-8s found %d/%d: median %v, max %v; shrunk scenario median %d lines (max %d)",
				tg.recipe, tg.store, len(times), seeds, times[len(times)/2], times[len(times)-1], lines[len(lines)/2], lines[len(lines)-1])
		}
	}
	runs := 10_000
	if v := os.Getenv("ZKLAB_LONG_RUNS"); v != "" {
		if _, err := parseIntInto(v, &runs); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recipes.Recipes() {
		if r.Flawed() {
			continue
		}
		for _, strategy := range []string{"random", "pct"} {
			o := ExploreOptions{Recipe: r.Name, Runs: runs, Seed: 42, Strategy: strategy, Faults: sim.FaultKinds, Dir: t.TempDir(), ShrinkTime: 5 * time.Second}
			if r.Name == "semaphore" {
				o.Leases = 2
			}
			res, err := Explore(o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure != nil {
				t.Errorf("%s (%s): violation after %d runs:\n%s\n%s", r.Name, strategy, res.Runs, res.Failure.Verdict, Format(res.Failure.Scenario))
				continue
			}
			t.Logf("%-16s %-6s %d schedules, %d steps, no violation (%v, %.0f schedules/s)", r.Name, strategy, res.Runs, res.Steps, res.Elapsed.Round(time.Millisecond), float64(res.Runs)/res.Elapsed.Seconds())
		}
	}
}

func parseIntInto(s string, out *int) (int, error) {
	return *out, parseInt(s, 1, 100_000_000, out)
}

// TestFirstViolationByStrategy is outside make test (ZKLAB_LONG=1): for
// every flawed variant and the unfenced store, and every strategy, the
// schedules and the wall time to the first violation over
// ZKLAB_LONG_SEEDS seeds (default 5), each exploration on one worker so
// that the strategies are compared on equal terms.
func TestFirstViolationByStrategy(t *testing.T) {
	if os.Getenv("ZKLAB_LONG") == "" {
		t.Skip("set ZKLAB_LONG=1")
	}
	seeds := 5
	if v := os.Getenv("ZKLAB_LONG_SEEDS"); v != "" {
		if _, err := parseIntInto(v, &seeds); err != nil {
			t.Fatal(err)
		}
	}
	targets := violationTargets()
	for _, tg := range targets {
		for _, strategy := range Strategies {
			var runs []int
			var times []time.Duration
			missed := 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				res, err := Explore(shapeFor(tg.recipe, ExploreOptions{Recipe: tg.recipe, Store: tg.store, Strategy: strategy, Time: 30 * time.Second, Seed: seed, Parallel: 1, Dir: t.TempDir(), ShrinkTime: time.Millisecond}))
				if err != nil {
					t.Fatal(err)
				}
				if res.Found == nil {
					missed++
					continue
				}
				runs = append(runs, res.Runs)
				times = append(times, res.ToFailure)
			}
			slices.Sort(runs)
			slices.Sort(times)
			if len(runs) == 0 {
				t.Logf("%-17s %-8s %-8s found 0/%d in 30 s", tg.recipe, tg.store, strategy, seeds)
				continue
			}
			t.Logf("%-17s %-8s %-8s found %d/%d: schedules to the first violation median %d (max %d), wall median %v (max %v)",
				tg.recipe, tg.store, strategy, len(runs), seeds, runs[len(runs)/2], runs[len(runs)-1], times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
		}
	}
}

// violationTarget is a recipe and a store exploration must find a
// violation of.
type violationTarget struct {
	recipe string
	store  StoreKind
}

// violationTargets is every flawed recipe with the fenced store, and
// fair-lock with the unfenced one: what the long measurements time.
func violationTargets() []violationTarget {
	var targets []violationTarget
	for _, r := range recipes.Recipes() {
		if r.Flawed() {
			targets = append(targets, violationTarget{r.Name, StoreFenced})
		}
	}
	return append(targets, violationTarget{"fair-lock", StoreUnfenced})
}
