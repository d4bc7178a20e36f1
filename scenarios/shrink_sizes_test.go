package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestShrinkSizes is outside make test (ZKLAB_SHRINK_SIZES=1): for every
// flawed recipe, and fair-lock with an unfenced store, over seeds 1 to 5,
// the sizes of the failing run found and of the scenario shrunk from it:
// faults, scheduling decisions (those that are not the first enabled
// step), and the file's lines.
//
//	ZKLAB_SHRINK_SIZES=1 go test ./scenarios -run TestShrinkSizes -v
func TestShrinkSizes(t *testing.T) {
	if os.Getenv("ZKLAB_SHRINK_SIZES") == "" {
		t.Skip("set ZKLAB_SHRINK_SIZES=1")
	}
	targets := violationTargets()
	for _, tg := range targets {
		for seed := uint64(1); seed <= 5; seed++ {
			res, err := Explore(shapeFor(tg.recipe, ExploreOptions{Recipe: tg.recipe, Store: tg.store, Time: 30 * time.Second, Seed: seed, Dir: t.TempDir()}))
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure == nil {
				t.Logf("%-17s %-8s seed %d: not found", tg.recipe, tg.store, seed)
				continue
			}
			f, s := res.Found.Scenario, res.Failure.Scenario
			if len(s.Faults) > len(f.Faults) {
				t.Errorf("%s seed %d: shrunk to %d faults from %d", tg.recipe, seed, len(s.Faults), len(f.Faults))
			}
			t.Logf("%-17s %-8s seed %d: %s: found %s; shrunk %s, %d lines", tg.recipe, tg.store, seed,
				res.Failure.Verdict.Violations(nil)[0].Name, sizes(f), sizes(s), strings.Count(Format(s), "\n"))
		}
	}
}

func sizes(sc *Scenario) string {
	nonzero := 0
	for _, c := range sc.Schedule {
		if c != 0 {
			nonzero++
		}
	}
	return fmt.Sprintf("%d clients × %d cycles, %d faults, %d decisions (%d not the first)", sc.Clients, sc.Cycles, len(sc.Faults), len(sc.Schedule), nonzero)
}
