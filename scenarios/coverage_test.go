package scenarios

import (
	"context"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// The library's scenarios reach the events they are named for, and the
// coverage says so.
func TestCoverageOfLibraryScenarios(t *testing.T) {
	for _, tc := range []struct {
		file  string
		event string
		fault sim.FaultKind
		phase string
	}{
		{"testdata/lost-reply-fair.scenario", EventLostCreateReply, sim.FaultDropReply, PhaseCreating},
		{"testdata/expiry-while-waiting.scenario", EventExpiryWaiting, sim.FaultExpire, PhaseWaiting},
		{"testdata/split-brain-unfenced.scenario", EventExpiryHolding, sim.FaultPause, PhaseHolding},
	} {
		sc, err := ParseFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(sc, RunOptions{Coverage: true})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Coverage
		if c == nil || c.Runs != 1 {
			t.Fatalf("%s: coverage %+v", tc.file, c)
		}
		if c.Events[tc.event] == 0 {
			t.Errorf("%s: %q not reached: %v", tc.file, tc.event, c.Events)
		}
		if c.Faults[tc.fault][tc.phase] != 1 {
			t.Errorf("%s: %s struck %v, want once while %s", tc.file, tc.fault, c.Faults[tc.fault], tc.phase)
		}
	}
}

// A fault-free run of fair-lock strikes nothing and reaches no herd
// wake-up; one of herd-lock, whose waiters all watch the holder's node,
// does.
func TestCoverageHerd(t *testing.T) {
	for _, tc := range []struct {
		recipe string
		herd   bool
	}{{"fair-lock", false}, {"herd-lock", true}} {
		r, err := Run(&Scenario{Recipe: tc.recipe, Clients: 4, Cycles: 2}, RunOptions{Coverage: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Coverage.Faults) != 0 {
			t.Errorf("%s: faults struck in a run without faults: %v", tc.recipe, r.Coverage.Faults)
		}
		if got := r.Coverage.Events[EventHerdWakeUp] > 0; got != tc.herd {
			t.Errorf("%s: herd wake-ups %d, want some: %v", tc.recipe, r.Coverage.Events[EventHerdWakeUp], tc.herd)
		}
	}
}

// phaseLock is fair-lock with a phase of its own around Acquire.
type phaseLock struct {
	c     recipes.Conn
	inner recipes.Lock
}

func (l phaseLock) Acquire(ctx context.Context) (Lease, error) {
	recipes.EnterPhase(l.c, "my-queue")
	lease, err := l.inner.Acquire(ctx)
	if lease == nil {
		return nil, err
	}
	return lease, err
}

// A recipe names phases of its own through the recorder: faults count
// in them, and the report flags the kinds that never struck them.
func TestCoverageOwnPhase(t *testing.T) {
	fair, _ := recipes.Lookup("fair-lock")
	newLock := func(c recipes.Conn, path string, o recipes.Options) Lock {
		return phaseLock{c: c, inner: fair.New(c, path, o)}
	}
	res, err := Explore(ExploreOptions{Recipe: "my-lock", New: newLock, Runs: 60, Seed: 2})
	if err != nil || res.Failure != nil {
		t.Fatalf("explore: %v %+v", err, res)
	}
	struck := 0
	for _, phases := range res.Coverage.Faults {
		struck += phases["my-queue"]
		if phases[PhaseCreating]+phases[PhaseListing]+phases[PhaseWaiting] != 0 {
			t.Errorf("a fault struck a phase the recipe's own replaces: %v", phases)
		}
	}
	if struck == 0 {
		t.Errorf("no fault struck the recipe's own phase: %v", res.Coverage.Faults)
	}
	text := res.Coverage.Text(sim.FaultKinds)
	if !strings.Contains(text, "my-queue") {
		t.Errorf("the report does not show the recipe's phase:\n%s", text)
	}
	for _, k := range sim.FaultKinds {
		if res.Coverage.Faults[k]["my-queue"] == 0 && !slices.Contains(res.Coverage.Never(sim.FaultKinds), string(k)+" while my-queue") {
			t.Errorf("%s never struck my-queue and the report does not say so:\n%s", k, text)
		}
	}
}

// On an ensemble only the leader expires sessions: the expiry is its
// proposal of the session's close, which the coverage counts in the
// phase its client was in, and the report lists, as on one server.
func TestCoverageCountsExpiriesOnAnEnsemble(t *testing.T) {
	for _, tc := range []struct {
		file  string
		event string
	}{
		{"testdata/expiry-while-waiting.scenario", EventExpiryWaiting},
		{"testdata/split-brain-unfenced.scenario", EventExpiryHolding},
	} {
		sc, err := ParseFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		sc.Servers = 3
		sc.Expect = nil
		r, err := Run(sc, RunOptions{Coverage: true, Report: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Coverage.Events[tc.event]; got != 1 {
			t.Errorf("%s on 3 servers: %q counted %d times, want once: %v", tc.file, tc.event, got, r.Coverage.Events)
		}
		// The report lists the expiry too, with the client it struck.
		if n := len(r.Report.Expiries); n != 1 || r.Report.Expiries[0].Client == 0 {
			t.Errorf("%s on 3 servers: the report's expiries %+v, want one of a client", tc.file, r.Report.Expiries)
		}
	}
}

// The herd wake-ups counted with the changes noted and the groups they
// void found on lookup (herdVoid) are those of each change deleting the
// groups of its path and its directory at once.
func TestHerdVoidIsDeleteOnChange(t *testing.T) {
	paths := []string{"", "/", "/a", "/a/b", "/a/b/c", "/a/bc", "/ab", "a", "a/b", "/a/", "//a"}
	rapid.Check(t, func(t *rapid.T) {
		r := newCoverageRecorder(4)
		eager := map[string][]herdGroup{}
		wakeUps := 0
		for i := range rapid.IntRange(0, 60).Draw(t, "events") {
			p := rapid.SampledFrom(paths).Draw(t, "path")
			if rapid.Bool().Draw(t, "change") {
				op := rapid.SampledFrom([]string{"create", "delete", "multi", "setData", "getData"}).Draw(t, "op")
				r.follow(&sim.Event{Kind: "apply", Op: op, Path: p, Client: 1, Xid: int32(i)})
				if len(eager) > 0 && op != "getData" {
					if p == "" {
						clear(eager)
					} else {
						delete(eager, p)
						delete(eager, changeDir(p))
					}
				}
				continue
			}
			op := rapid.SampledFrom([]string{"EventNodeDeleted", "EventNodeChildrenChanged", "EventNodeDataChanged"}).Draw(t, "watch")
			client := rapid.IntRange(1, 4).Draw(t, "client")
			r.follow(&sim.Event{Kind: "watch", Op: op, Path: p, Client: client})
			groups := eager[p]
			j := slices.IndexFunc(groups, func(g herdGroup) bool { return g.op == op })
			if j < 0 {
				groups = append(groups, herdGroup{op: op})
				j = len(groups) - 1
				eager[p] = groups
			}
			if g := &groups[j]; g.woken&(1<<client) == 0 {
				g.woken |= 1 << client
				if bits.OnesCount64(g.woken) == 2 {
					wakeUps++
				}
			}
			if got := r.cov.Events[EventHerdWakeUp]; got != wakeUps {
				t.Fatalf("after event %d (%s %s by c%d): %d herd wake-ups, deleting on change %d", i, op, p, client, got, wakeUps)
			}
		}
	})
}

// Fair-lock holds the lock without a word to ZooKeeper: no request goes
// out while holding, so a dropped request or reply has nothing to strike
// there. The report marks the cell x and does not list it as never
// reached; a phase in which a request went out and no fault struck is
// listed.
func TestCoverageSilentPhase(t *testing.T) {
	res, err := Explore(ExploreOptions{Recipe: "fair-lock", Strategy: StrategyRandom, Runs: 100, Seed: 1, Clients: 3})
	if err != nil || res.Failure != nil {
		t.Fatalf("explore: %v %+v", err, res)
	}
	c := res.Coverage
	if c.Requests[PhaseHolding] != 0 {
		t.Errorf("%d requests went out while holding, want none: %v", c.Requests[PhaseHolding], c.Requests)
	}
	for _, p := range []string{PhaseCreating, PhaseListing, PhaseReleasing} {
		if c.Requests[p] == 0 {
			t.Errorf("no request went out while %s: %v", p, c.Requests)
		}
	}
	never := c.Never(sim.FaultKinds)
	for _, k := range []sim.FaultKind{sim.FaultDropRequest, sim.FaultDropReply} {
		if !c.silent(k, PhaseHolding) || slices.Contains(never, string(k)+" while holding") {
			t.Errorf("%s while holding: silent %v, listed as never reached in %v", k, c.silent(k, PhaseHolding), never)
		}
	}
	if c.silent(sim.FaultPause, PhaseHolding) {
		t.Error("a pause has something to strike in every phase")
	}
	text := c.Text(sim.FaultKinds)
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "drop-request" || f[0] == "drop-reply") && !slices.Contains(f, "x") {
			t.Errorf("the report does not mark holding x for %s:\n%s", f[0], text)
		}
	}

	// Once a request went out while holding and no drop struck it, the
	// report lists the gap.
	c.Requests[PhaseHolding] = 1
	if c.silent(sim.FaultDropRequest, PhaseHolding) || !slices.Contains(c.Never(sim.FaultKinds), "drop-request while holding") {
		t.Errorf("with a request while holding, drop-request while holding is not listed: %v", c.Never(sim.FaultKinds))
	}
}

// The fault-directed strategy stops aiming a dropped request or reply at
// a phase in which no request went out once it has seen aimEvidenceRuns
// runs, and aims every other kind there still.
func TestAimSkipsSilentPhases(t *testing.T) {
	seen := newCoverage()
	for _, p := range []string{PhaseCreating, PhaseListing, PhaseWaiting, PhaseAcquiring, PhaseReleasing, PhaseIdle} {
		seen.Requests[p] = 10
	}
	for _, tc := range []struct {
		runs, holdingRequests int
		kind                  sim.FaultKind
		aimed                 bool
	}{
		{aimEvidenceRuns - 1, 0, sim.FaultDropRequest, true},
		{aimEvidenceRuns, 0, sim.FaultDropRequest, false},
		{aimEvidenceRuns, 0, sim.FaultDropReply, false},
		{aimEvidenceRuns, 0, sim.FaultPause, true},
		{aimEvidenceRuns, 1, sim.FaultDropRequest, true},
	} {
		seen.Runs, seen.Requests[PhaseHolding] = tc.runs, tc.holdingRequests
		phases := aimPhases(seen, tc.kind)
		if got := slices.Contains(phases, PhaseHolding); got != tc.aimed {
			t.Errorf("%d runs, %d requests while holding: %s aimed at holding %v, want %v (%v)", tc.runs, tc.holdingRequests, tc.kind, got, tc.aimed, phases)
		}
		if !slices.Contains(phases, PhaseCreating) {
			t.Errorf("%s not aimed at creating: %v", tc.kind, phases)
		}
	}

	// Runs in which no request went out at all leave every phase a
	// dropped request may strike: drawAimedPhase needs one.
	quiet := newCoverage()
	quiet.Runs = aimEvidenceRuns
	if phases := aimPhases(quiet, sim.FaultDropRequest); !slices.Contains(phases, PhaseHolding) || slices.Contains(phases, PhaseConnecting) {
		t.Errorf("no request in any phase: drop-request aimed at %v", phases)
	}
}

// follow is followKind of an event whose kind and op it reads, as
// observer.Event does.
func (r *coverageRecorder) follow(e *sim.Event) {
	k, op := traceCodes(e)
	r.followKind(e, k, op)
}
