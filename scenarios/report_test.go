package scenarios_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

// The text timeline tells what happened to the clients as well as what
// they did: the fault, its end, and the expiry of the paused holder's
// session, each at its step, in order.
func TestTimelineShowsFaultsAndExpiries(t *testing.T) {
	sc, _, err := scenarios.LookupLibrary("split-brain-unfenced")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := res.History()
	at := -1
	for _, want := range []string{
		" c1 fault: pause c1 for=30s",
		" c1 session 0x19b76daa8000000 expired: the server closed it",
		" c2 acquired",
		" c1 fault: pause ended",
		" c1 store write 1",
	} {
		i := strings.Index(h, want)
		if i < 0 {
			t.Fatalf("the timeline has no %q:\n%s", want, h)
		}
		if i < at {
			t.Errorf("%q comes before what precedes it:\n%s", want, h)
		}
		at = i
	}
}

// A report's data of the split-brain run: the pause from its step to the
// step it ended, the server's expiry of c1's session with when it last
// heard from it, the store's reads and writes with the lost update, and
// the holds and waits, each with its time.
func TestReportOfSplitBrain(t *testing.T) {
	sc, _, err := scenarios.LookupLibrary("split-brain-unfenced")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{Report: true})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report
	if len(rep.Faults) != 1 {
		t.Fatalf("faults: %+v", rep.Faults)
	}
	f := rep.Faults[0]
	if f.Kind != sim.FaultPause || f.Client != 1 || f.Duration != 30*time.Second || f.Step != 47 || f.EndStep != 80 || f.End != f.Time+30*time.Second {
		t.Errorf("the pause: %+v", f)
	}
	if len(rep.Expiries) != 1 {
		t.Fatalf("expiries: %+v", rep.Expiries)
	}
	x := rep.Expiries[0]
	if x.Client != 1 || x.Step != 59 || x.Time != 12*time.Second || x.Time-x.LastHeard < sc.SessionTimeout || x.LastHeardStep >= f.Step {
		t.Errorf("the expiry: %+v (session timeout %v)", x, sc.SessionTimeout)
	}
	var lost, writes int
	for _, op := range rep.Store {
		if op.Write {
			writes++
		}
		if op.Overwrote != 0 {
			lost++
			if op.Client != 1 || op.Overwrote != 2 || op.Value != 1 || op.Over != 1 || op.CallTime < f.End {
				t.Errorf("the lost update: %+v", op)
			}
		}
		if op.Return < op.Call || op.ReturnTime < op.CallTime {
			t.Errorf("a store operation returns before its call: %+v", op)
		}
	}
	if writes != 2 || lost != 1 {
		t.Errorf("%d writes, %d lost, want 2 and 1: %+v", writes, lost, rep.Store)
	}
	if len(rep.Holds) != 2 || rep.Holds[0].ToTime < f.End || rep.Holds[1].FromTime != 12*time.Second {
		t.Errorf("holds: %+v", rep.Holds)
	}
	if len(rep.Waits) != 2 || rep.Waits[1].Outcome != "granted" || rep.Waits[1].To != rep.Holds[1].From {
		t.Errorf("waits: %+v", rep.Waits)
	}
}

// A crashed holder believes nothing: its hold ends where it crashed.
func TestReportHoldEndsAtCrash(t *testing.T) {
	sc, _, err := scenarios.LookupLibrary("holder-crash-fair")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{Report: true})
	if err != nil {
		t.Fatal(err)
	}
	var crash *scenarios.FaultSpan
	for i, f := range res.Report.Faults {
		if f.Kind == sim.FaultCrash {
			crash = &res.Report.Faults[i]
		}
	}
	if crash == nil {
		t.Fatalf("no crash among %+v", res.Report.Faults)
	}
	for _, h := range res.Report.Holds {
		if h.Client == crash.Client && (h.To != crash.Step || h.ToTime != crash.Time) {
			t.Errorf("c%d's hold %+v does not end at its crash, step %d", h.Client, h, crash.Step)
		}
	}
}

// On a real server too, without a trace asked for, the timeline shows
// the faults injected.
func TestZKTimelineShowsFaults(t *testing.T) {
	t.Parallel()
	srv := zktest.Shared(t)
	sc, err := scenarios.Parse("test.scenario", "recipe fair-lock\nclients 2\nhold 300ms\nsession-timeout 4s\nfault at=100ms crash c1\n")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(sc, scenarios.RunOptions{ZK: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.History(), " c1 fault: crash c1\n") {
		t.Errorf("the timeline does not show c1's crash:\n%s", res.History())
	}
}
