package scenarios

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
)

// TestEnsembleLong is outside make test (ZKLAB_ENSEMBLE_LONG=1): on 3
// servers with every fault kind, each correct recipe over
// ZKLAB_LONG_RUNS explored schedules (default 2,000; issue 13 asks for
// 100,000), and stale-resume-lock's time to its first violation and to
// its shrunk file over 15 seeds, with the shrunk size.
// Figures go to the test log (go test -v).
func TestEnsembleLong(t *testing.T) {
	if os.Getenv("ZKLAB_ENSEMBLE_LONG") == "" {
		t.Skip("set ZKLAB_ENSEMBLE_LONG=1")
	}
	runs := 2000
	if v := os.Getenv("ZKLAB_LONG_RUNS"); v != "" {
		if _, err := parseIntInto(v, &runs); err != nil {
			t.Fatal(err)
		}
	}
	// stale-resume-lock with its shape (flaw_shapes_test.go) and every
	// fault kind, as 'zklab explore --recipe stale-resume-lock --servers 3
	// --hold 10s --clients 2 --seed N --parallel 1' explores it.
	var times, shrunk []time.Duration
	var sizes []int
	const seeds = 15
	for seed := uint64(1); seed <= seeds; seed++ {
		start := time.Now()
		res, err := Explore(shapeFor("stale-resume-lock", ExploreOptions{Recipe: "stale-resume-lock", Servers: []int{3},
			Runs: 20000, Seed: seed, Parallel: 1, Dir: t.TempDir(), ShrinkTime: 10 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure == nil {
			t.Errorf("stale-resume-lock seed %d: no violation in %d runs", seed, res.Runs)
			continue
		}
		if v := res.Failure.Verdict.Violations(nil)[0]; v.Name != CheckLock {
			// Not the flaw (two holders) but something else: a bug of the
			// core the variant shares with fair-lock.
			t.Errorf("stale-resume-lock seed %d: %s after %d runs, not its flaw: %s\n%s", seed, v.Name, res.Runs, v.Detail, Format(res.Failure.Scenario))
			continue
		}
		times = append(times, res.ToFailure)
		shrunk = append(shrunk, time.Since(start))
		sizes = append(sizes, len(res.Failure.Scenario.Faults))
		t.Logf("stale-resume-lock seed %d: %s after %d runs (%v, shrunk file after %v); shrunk to %d faults, %d scheduling decisions", seed,
			res.Failure.Verdict.Violations(nil)[0].Name, res.Runs, res.ToFailure.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), len(res.Failure.Scenario.Faults), len(res.Failure.Scenario.Schedule))
	}
	if len(times) > 0 {
		slices.Sort(times)
		slices.Sort(shrunk)
		slices.Sort(sizes)
		t.Logf("stale-resume-lock on 3 servers: found %d/%d, median %v to the first violation (%v to %v), median %v to the shrunk file, median %d faults shrunk",
			len(times), seeds, times[len(times)/2], times[0], times[len(times)-1], shrunk[len(shrunk)/2], sizes[len(sizes)/2])
	}
	for _, r := range recipes.Recipes() {
		if r.Flawed() {
			continue
		}
		o := ExploreOptions{Recipe: r.Name, Servers: []int{3}, Runs: runs, Seed: 42, Dir: t.TempDir(), ShrinkTime: 5 * time.Second}
		if r.Name == "semaphore" {
			o.Leases = 2
		}
		res, err := Explore(o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			t.Errorf("%s on 3 servers: %s after %d runs:\n%s", r.Name, res.Failure.Verdict.Violations(nil)[0].Name, res.Runs, Format(res.Failure.Scenario))
			continue
		}
		t.Logf("%-16s 3 servers: %d schedules, no violation (%.0f schedules/s)", r.Name, res.Runs, float64(res.Runs)/res.Elapsed.Seconds())
	}
}
