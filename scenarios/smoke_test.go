package scenarios

import (
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

func TestSmoke(t *testing.T) {
	for _, tc := range []struct {
		sc Scenario
	}{
		{Scenario{Recipe: "fair-lock", Clients: 3, Cycles: 3, Hold: 5 * time.Millisecond}},
		{Scenario{Recipe: "fair-lock", Clients: 2, Cycles: 1, Hold: 100 * time.Millisecond, Store: StoreUnfenced,
			Faults: []sim.ScheduledFault{{AtTime: 50 * time.Millisecond, Fault: sim.Fault{Kind: sim.FaultPause, Client: 1, Duration: 30 * time.Second}}}}},
		{Scenario{Recipe: "persistent-lock", Clients: 2, Cycles: 2, Hold: 100 * time.Millisecond,
			Faults: []sim.ScheduledFault{{AtTime: 50 * time.Millisecond, Fault: sim.Fault{Kind: sim.FaultCrash, Client: 1}}}}},
	} {
		start := time.Now()
		res, err := Run(&tc.sc, RunOptions{Znodes: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v\n%s\n%s\nschedule %d choices: %s", time.Since(start), res.Verdict, res.History(), len(res.Scenario.Schedule), Format(res.Scenario))
	}
}
