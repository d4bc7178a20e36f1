package scenarios

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// stepSpy records, for each choice, whether a read deadline was enabled
// and whether it was the step taken beside others.
type stepSpy struct {
	inner             sim.Strategy
	deadlines, beside int
}

func (s *stepSpy) Choose(w *sim.World, enabled []sim.Step) int {
	i := s.inner.Choose(w, enabled)
	if slices.ContainsFunc(enabled, func(st sim.Step) bool { return st.Timer() == sim.TimerReadDeadline }) {
		s.deadlines++
		if enabled[i].Timer() == sim.TimerReadDeadline && slices.ContainsFunc(enabled, func(st sim.Step) bool { return st.Timer() != sim.TimerReadDeadline }) {
			s.beside++
		}
	}
	return i
}

// A stale session's pair strikes the client's own follower, and the
// client that wakes from its pause past the session reads on its old
// connection before its read deadline fires: deadlineLast never takes a
// read deadline while another step can run.
func TestStaleSessionWakesOnItsFollower(t *testing.T) {
	opened := 0
	for seed := uint64(1); seed <= 20; seed++ {
		sc := &Scenario{Recipe: "fair-lock", Clients: 2, Cycles: 2, Hold: 3 * time.Second, Seed: seed, Servers: 3}
		aimed := []phaseFault{
			{Fault: sim.Fault{Kind: sim.FaultLag, Client: 1, Duration: 20 * time.Second}, Phase: PhaseHolding, Nth: 1, OnClientFollower: true},
			{Fault: sim.Fault{Kind: sim.FaultPause, Client: 1, Duration: 13 * time.Second}, Phase: PhaseHolding, Nth: 1},
		}
		spy := &stepSpy{inner: &deadlineLast{inner: sim.RandomWalk{}}}
		r, err := Run(sc, RunOptions{Coverage: true, Strategy: spy, phaseFaults: aimed, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		if spy.beside > 0 {
			t.Fatalf("seed %d: a read deadline taken %d times while other steps could run", seed, spy.beside)
		}
		if len(r.Scenario.Faults) != 2 {
			continue // c1 was on the leader: no follower of its to lag
		}
		lag := r.Scenario.Faults[0]
		if lag.Kind != sim.FaultLag || lag.Server == 0 {
			t.Fatalf("seed %d: the first fault is %s, want a lag naming a server", seed, lag.Fault)
		}
		// The client's server when the pair struck, the leader, and the
		// client's first request after it woke.
		before, after, ok := strings.Cut(r.Trace, "c1 fault pause ended")
		if !ok {
			t.Fatalf("seed %d: c1 never woke:\n%s", seed, r.Trace)
		}
		on := lastMatch(before, regexp.MustCompile(`c1 session conn\d+ to s(\d)`))
		leader := lastMatch(r.Trace, regexp.MustCompile(`s(\d) proposes closeSession`))
		if on != strconv.Itoa(lag.Server) || on == leader {
			t.Fatalf("seed %d: lag on s%d, c1 on s%s, leader s%s", seed, lag.Server, on, leader)
		}
		woke := regexp.MustCompile(`c1 s=\S+ (apply \S+ xid=\d+ .* s\d|session connection lost: .*)`).FindString(after)
		if !strings.HasSuffix(woke, " s"+on) {
			t.Fatalf("seed %d: c1's first step on waking: %q, want a request on s%s", seed, woke, on)
		}
		opened++
	}
	t.Logf("%d of 20 runs struck a follower of c1's", opened)
	if opened == 0 {
		t.Error("no run struck a follower of c1's")
	}
}

// lastMatch is the first group of re's last match in text, "" if none.
func lastMatch(text string, re *regexp.Regexp) string {
	all := re.FindAllStringSubmatch(text, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1][1]
}

// A stale session's pause ends PastExpiry after the leader expires the
// client's session, and its lag outlasts the pause by its Duration.
func TestStaleSessionWakesJustAfterExpiry(t *testing.T) {
	past := 300 * time.Millisecond
	checked := 0
	for seed := uint64(1); seed <= 10; seed++ {
		sc := &Scenario{Recipe: "fair-lock", Clients: 2, Cycles: 2, Hold: 20 * time.Millisecond, Seed: seed, Servers: 3}
		aimed := []phaseFault{
			{Fault: sim.Fault{Kind: sim.FaultLag, Client: 1, Duration: 5 * time.Second}, Phase: PhaseHolding, Nth: 1, OnClientFollower: true, PastExpiry: past, SessionTimeout: defaultSessionTimeout},
			{Fault: sim.Fault{Kind: sim.FaultPause, Client: 1}, Phase: PhaseHolding, Nth: 1, PastExpiry: past, SessionTimeout: defaultSessionTimeout},
		}
		r, err := Run(sc, RunOptions{Coverage: true, Strategy: &deadlineLast{inner: sim.RandomWalk{}}, phaseFaults: aimed, Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Scenario.Faults) != 2 {
			continue // c1 was on the leader
		}
		lag, pause := r.Scenario.Faults[0], r.Scenario.Faults[1]
		if lag.Duration != pause.Duration+5*time.Second {
			t.Errorf("seed %d: lag for %v, pause for %v: want the lag 5s longer", seed, lag.Duration, pause.Duration)
		}
		expired := traceTime(t, r.Trace, regexp.MustCompile(`(\d+\.\d+)s -- s=\S+ server zxid=\S+ s\d proposes closeSession: session expired`))
		woke := traceTime(t, r.Trace, regexp.MustCompile(`(\d+\.\d+)s c1 fault pause ended`))
		if woke-expired != past {
			t.Errorf("seed %d: c1's session expired at %v, c1 woke at %v: want %v after", seed, expired, woke, past)
		}
		checked++
	}
	if checked == 0 {
		t.Error("no run struck a follower of c1's")
	}
}

// traceTime is the virtual time of re's first match in a trace.
func traceTime(t *testing.T, trace string, re *regexp.Regexp) time.Duration {
	t.Helper()
	m := re.FindStringSubmatch(trace)
	if m == nil {
		t.Fatalf("no %q in the trace:\n%s", re, trace)
	}
	d, err := time.ParseDuration(m[1] + "s")
	if err != nil {
		t.Fatal(err)
	}
	return d
}
