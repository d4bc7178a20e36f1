package scenarios

import (
	"slices"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

// TestShrinkNeverAddsFaults hands the shrinker a "rapid result" with a
// fault more than the run found (what a deleted draw can do to rapid's
// stream): what comes out has no more faults than the run found, fewer
// decisions that are not the first enabled step, and still fails the
// same check when its scenario is run again.
func TestShrinkNeverAddsFaults(t *testing.T) {
	o := ExploreOptions{Recipe: "unprotected-lock", Seed: 1, Runs: 200, Dir: t.TempDir()}
	res, err := Explore(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Found == nil {
		t.Fatalf("unprotected-lock: no failure in %d runs", res.Runs)
	}
	if err := o.fill(); err != nil {
		t.Fatal(err)
	}
	found := res.Found
	check := found.Verdict.Violations(nil)[0].Name
	more := found.Scenario.clone()
	more.Faults = append(more.Faults, sim.ScheduledFault{AtTime: time.Millisecond, Fault: sim.Fault{Kind: sim.FaultDropRequest, Client: 1}})
	bigger, err := Run(more, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := shrinkFailure(&o, found, bigger)
	if n, m := len(got.Scenario.Faults), len(found.Scenario.Faults); n > m {
		t.Errorf("shrunk to %d faults from a run with %d", n, m)
	}
	if n, m := nonzero(got.Scenario.Schedule), nonzero(found.Scenario.Schedule); n >= m && m > 0 {
		t.Errorf("shrunk to %d decisions that are not the first enabled step, from %d", n, m)
	}
	again, err := Run(got.Scenario, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Verdict.Check(check).Outcome != Fail {
		t.Errorf("the shrunk scenario does not fail %s again:\n%s\n%s", check, Format(got.Scenario), again.Verdict)
	}
	// The file written is the shrunk run.
	written, err := ParseFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if len(written.Faults) != len(res.Failure.Scenario.Faults) || !slices.Equal(written.Schedule, res.Failure.Scenario.Schedule) || written.Clients != res.Failure.Scenario.Clients {
		t.Errorf("the file written is not the shrunk run:\n%s\nshrunk:\n%s", Format(written), Format(res.Failure.Scenario))
	}
	if len(res.Failure.Scenario.Faults) > len(found.Scenario.Faults) {
		t.Errorf("Explore shrunk to %d faults from a run with %d", len(res.Failure.Scenario.Faults), len(found.Scenario.Faults))
	}
}
