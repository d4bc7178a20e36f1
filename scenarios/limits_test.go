package scenarios

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

// A run that reaches its step limit ends with the outcome "limit": not a
// violation, and not a pass; liveness, which needs the workload to have
// ended, is not judged.
func TestStepLimitIsItsOwnOutcome(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 3, Cycles: 20}
	res, err := Run(sc, RunOptions{MaxSteps: 500})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdict
	if got := v.Check(CheckRun); got.Outcome != Limit || !strings.Contains(got.Detail, "step 500") {
		t.Errorf("run check: %+v, want the outcome limit at step 500", got)
	}
	if v.Failed() || !v.LimitReached() {
		t.Errorf("Failed() = %v, LimitReached() = %v: want a run that is no violation and reached its limit", v.Failed(), v.LimitReached())
	}
	if got := v.Check(CheckLiveness).Outcome; got != Skipped {
		t.Errorf("liveness: %s, want n/a", got)
	}
	if !strings.HasPrefix(v.String(), "verdict: LIMIT ") {
		t.Errorf("verdict line: %q", strings.SplitN(v.String(), "\n", 2)[0])
	}
	if unmet := v.Expectations([]Expectation{{Check: CheckRun, Outcome: Limit}}); len(unmet) != 0 {
		t.Errorf("expect run limit: %v", unmet)
	}
}

// The wall-time limit ends a run the same way.
func TestWallTimeLimitIsItsOwnOutcome(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 2, Cycles: 2, Think: time.Hour}
	res, err := Run(sc, RunOptions{MaxWallTime: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Verdict.Check(CheckRun); got.Outcome != Limit || !strings.Contains(got.Detail, "wall time") {
		t.Errorf("run check: %+v, want the outcome limit, naming the wall time", got)
	}
}

// Long idle stretches cost no wall time: a day's pause and a day's think
// run in a moment, and end where the runner's one-second slices would.
func TestIdleTimeIsSkipped(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 2, Cycles: 2, Think: MaxDuration,
		Faults: []sim.ScheduledFault{{AtTime: time.Millisecond, Fault: sim.Fault{Kind: sim.FaultPause, Client: 1, Duration: MaxDuration}}}}
	start := time.Now()
	res, err := Run(sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Failed() || res.Verdict.LimitReached() {
		t.Errorf("verdict:\n%s", res.Verdict)
	}
	if res.Time < 2*MaxDuration || res.Time%time.Second != 0 {
		t.Errorf("the run ended at %v, want past two days, on a whole second", res.Time)
	}
	// Not a timed assertion of speed: 170,000 one-second slices took
	// minutes before the skip; this only catches their return.
	if el := time.Since(start); el > time.Minute {
		t.Errorf("two idle days took %v of wall time", el)
	}
}

// A scenario built in code is held to the limits a file is.
func TestRunRefusesScenariosPastTheLimits(t *testing.T) {
	for _, sc := range []*Scenario{
		{Recipe: "fair-lock", Clients: MaxClients + 1},
		{Recipe: "fair-lock", Clients: 64, Cycles: 1000},
		{Recipe: "fair-lock", Clients: 1, Hold: MaxDuration + 1},
		{Recipe: "fair-lock", Clients: 1, Faults: []sim.ScheduledFault{{AtTime: time.Millisecond, Fault: sim.Fault{Kind: sim.FaultPause, Client: 1, Duration: 1<<63 - 1}}}},
	} {
		if _, err := Run(sc, RunOptions{}); err == nil {
			t.Errorf("Run(%+v) ran; want an error naming the limit", sc)
		}
	}
}

// Partitions that begin early and last past the read timeout once made
// the simulator panic (issue 16: "server received unknown op op(0)"): the
// request on the cut connection pointed into a record the failed call had
// cleared. Every partition of this grid runs to a verdict.
func TestEarlyPartitionsRunToAVerdict(t *testing.T) {
	for _, at := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		for _, d := range []time.Duration{time.Second, 7 * time.Second, 10 * time.Second, 30 * time.Second} {
			for _, clients := range []int{1, 2} {
				text := fmt.Sprintf("recipe fair-lock\nclients %d\nfault at=%v partition c1 for=%v\n", clients, at, d)
				sc, err := Parse("p.scenario", text)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Replay(sc, RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Verdict.Check(CheckRun); got.Outcome != Pass {
					t.Errorf("%s: run check %s %s", text, got.Outcome, got.Detail)
				}
			}
		}
	}
}
