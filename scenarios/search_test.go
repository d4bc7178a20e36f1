package scenarios

import (
	"os"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

// TestExploreSameOnEveryCore: for one seed and budget in runs, the
// schedules explored, the first violation and the shrunk file are the
// same whatever the number of workers.
func TestExploreSameOnEveryCore(t *testing.T) {
	type outcome struct {
		runs  int
		steps uint64
		found string
		file  string
		cov   string
	}
	explore := func(parallel int, recipe string, runs int) outcome {
		res, err := Explore(ExploreOptions{Recipe: recipe, Runs: runs, Seed: 11, Parallel: parallel, Dir: t.TempDir(), ShrinkTime: 2 * time.Minute})
		if err != nil {
			t.Fatalf("%s on %d workers: %v", recipe, parallel, err)
		}
		out := outcome{runs: res.Runs, steps: res.Steps, cov: res.Coverage.Text(sim.FaultKinds)}
		if res.Found != nil {
			out.found = Format(res.Found.Scenario)
			data, err := os.ReadFile(res.File)
			if err != nil {
				t.Fatal(err)
			}
			out.file = string(data)
		}
		return out
	}
	for _, tc := range []struct {
		recipe string
		runs   int
		fails  bool
	}{{"unprotected-lock", 300, true}, {"fair-lock", 60, false}} {
		one := explore(1, tc.recipe, tc.runs)
		if (one.found != "") != tc.fails {
			t.Fatalf("%s: found %q, want a violation: %v", tc.recipe, one.found, tc.fails)
		}
		if !tc.fails && one.runs != tc.runs {
			t.Errorf("%s: %d schedules explored of a budget of %d", tc.recipe, one.runs, tc.runs)
		}
		for _, parallel := range []int{2, 5} {
			got := explore(parallel, tc.recipe, tc.runs)
			if got.runs != one.runs || got.steps != one.steps {
				t.Errorf("%s on %d workers: %d schedules, %d steps; on one: %d, %d", tc.recipe, parallel, got.runs, got.steps, one.runs, one.steps)
			}
			if got.cov != one.cov {
				t.Errorf("%s on %d workers covered:\n%s\non one:\n%s", tc.recipe, parallel, got.cov, one.cov)
			}
			if got.found != one.found {
				t.Errorf("%s on %d workers found another first violation:\n%s\non one worker:\n%s", tc.recipe, parallel, got.found, one.found)
			}
			if got.file != one.file {
				t.Errorf("%s on %d workers shrank to another file:\n%s\non one worker:\n%s", tc.recipe, parallel, got.file, one.file)
			}
		}
	}
}

// TestExploreTimeBudgetIsAPrefix: with a budget in time, the schedules
// run are the first ones of the sequence a budget in runs explores, and
// a violation is the first of them by index.
func TestExploreTimeBudgetIsAPrefix(t *testing.T) {
	byRuns, err := Explore(ExploreOptions{Recipe: "unprotected-lock", Runs: 400, Time: time.Hour, Seed: 3, Parallel: 1, Dir: t.TempDir(), ShrinkTime: time.Millisecond})
	if err != nil || byRuns.Found == nil {
		t.Fatalf("explore by runs: %v, %+v", err, byRuns)
	}
	byTime, err := Explore(ExploreOptions{Recipe: "unprotected-lock", Time: time.Minute, Seed: 3, Parallel: 3, Dir: t.TempDir(), ShrinkTime: time.Millisecond})
	if err != nil || byTime.Found == nil {
		t.Fatalf("explore by time: %v, %+v", err, byTime)
	}
	if byTime.Runs != byRuns.Runs || Format(byTime.Found.Scenario) != Format(byRuns.Found.Scenario) {
		t.Errorf("by time on 3 workers the first violation is schedule %d:\n%s\nby runs on one, schedule %d:\n%s",
			byTime.Runs, Format(byTime.Found.Scenario), byRuns.Runs, Format(byRuns.Found.Scenario))
	}
}
