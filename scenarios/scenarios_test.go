package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"recipe fair-lock\n", "f.scenario:1: no clients line"},
		{"recipe fair-lock\nclients 2\nclients 3\n", "f.scenario:3: clients given twice (first on line 2)"},
		{"recipe fair-lock\nclients two\n", "f.scenario:2: want an integer from 1 to 64"},
		{"recipe fair-lock\nclients 2\nfrobnicate 1\n", `f.scenario:3: unknown directive "frobnicate"`},
		{"recipe fair-lock\nclients 2\nhold 100000us\n", `f.scenario:3: write this line as "hold 100ms"`},
		{"recipe fair-lock\nclients 2\nfault at=1s pause c1\n", "f.scenario:3: fault: pause needs for=DURATION"},
		{"recipe fair-lock\nclients 2\nfault at=1s melt c1\n", `f.scenario:3: fault: unknown fault kind "melt"`},
		{"recipe fair-lock\nclients 2\nfault at=1s crash c3\n", "f.scenario:3: fault on c3, but there are 2 clients"},
		{"recipe fair-lock\nclients 2\nschedule 0 0 0 1\n", `f.scenario:3: write this schedule line as "schedule 0*3 1"`},
		// Issue 16's cases: each error names the line and the bad value,
		// cut short, on one line.
		{"recipe fair-lock\nclients 2\nschedule\n", "f.scenario:3: schedule: want choices like 0 2 1*5, got nothing"},
		{"recipe fair-lock\r\nclients 2\r\n", "f.scenario:1: the line ends with a carriage return (Windows line endings)"},
		{"recipe " + strings.Repeat("x", 1000) + "\nclients 2\n", `f.scenario:1: recipe: a name of 1000 bytes, longer than a recipe's name may be (64): "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"... (1000 bytes)`},
		{"recipe " + strings.Repeat("x", 1<<20) + "\nclients 2\n", "f.scenario:1: a line of 1048583 bytes, more than a line may have (4096)"},
		{"recipe fair-lock\nclients 2\nhold 2562047h47m16.854775807s\n", `f.scenario:3: "2562047h47m16.854775807s" is longer than a scenario's durations may be (24h0m0s)`},
		{"recipe fair-lock\nclients 2\nfault at=1ms pause c1 for=2562047h47m15.854775807s\n", `f.scenario:3: fault: "2562047h47m15.854775807s" is longer than`},
		{"recipe fair-lock\nclients 2\nfault at=9000h pause c1 for=1s\n", `f.scenario:3: fault: "9000h" is longer than`},
		{"recipe fair-lock\nclients 2\nhold 9223372036854775808ns\n", `f.scenario:3: want a duration like 1.5s or 200ms, got "9223372036854775808ns"`},
		{"recipe fair-lock\nclients 99999999999999999999\n", `f.scenario:2: want an integer from 1 to 64, got "99999999999999999999"`},
		{"recipe fair-lock\nclients 64\ncycles 1000000\n", "f.scenario:3: want an integer from 1 to 10000"},
		{"recipe fair-lock\nclients 64\ncycles 1000\n", "f.scenario:3: 64 clients × 1000 cycles is more lock cycles than a run may have (10000)"},
		{"recipe fair-lock\nclients 2\nfault step=99999999999999 crash c1\n", "f.scenario:3: fault: want step=N with N from 1 to 1000000"},
		{"recipe fair-lock\nclients 2\nschedule 0*2000000\n", "f.scenario:3: schedule: more choices than a schedule may have (1000000)"},
		{"recipe fair-lock\nclients 2\nexpect liveness limit\n", "f.scenario:3: expect: want pass, fail, unknown or n/a (or limit, for run)"},
		{"recipe fair-lock\nclients 2\nschedule 1\nschedule 2\n", `f.scenario:3: write this schedule line as "schedule 1 2"`},
		{"recipe fair-lock\nclients 2\nschedule 1 x\n", `f.scenario:3: schedule: want a choice`},
		{"recipe fair-lock\nclients 2\nexpect liveness maybe\n", "f.scenario:3: expect: want pass, fail, unknown or n/a"},
		{"recipe fair-lock\nclients 2\n  # indented\n", "f.scenario:3: comments and blank lines start in the first column"},
		{"recipe fair-lock\nclients 2", "f.scenario:2: the file must end with a newline"},
	} {
		_, err := Parse("f.scenario", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.text, err, tc.want)
		}
		var pe *ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Errorf("Parse(%q): %v is not a *ParseError", tc.text, err)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	sc := &Scenario{Recipe: "rw-lock", Readers: []int{1, 3}, Clients: 3, Cycles: 4, Hold: 1500 * time.Microsecond, Think: time.Second,
		Store: StoreUnfenced, SessionTimeout: 4 * time.Second, Seed: 9,
		Faults: []sim.ScheduledFault{
			{AtStep: 12, Fault: sim.Fault{Kind: sim.FaultDropReply, Client: 2}},
			{AtTime: 2500 * time.Millisecond, Fault: sim.Fault{Kind: sim.FaultRestart, Duration: time.Second}},
		},
		Schedule: []int{0, 0, 0, 0, 3, 1, 1, 0, 2},
		Expect:   []Expectation{{Check: CheckLiveness, Outcome: Pass}, {Check: "herd.notifications", Figure: 4}},
	}
	text := Format(sc)
	back, err := Parse("x", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if again := Format(back); again != text {
		t.Errorf("round trip:\n%s\nvs\n%s", text, again)
	}
	// Comments stay where they are, and a changed value is rewritten in
	// place.
	src := "# head\nrecipe fair-lock\n\n# the clients\nclients 2\nfault step=3 crash c1\n# tail\n"
	s, err := Parse("y", src)
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(s); got != src {
		t.Errorf("round trip:\n%q\nvs\n%q", got, src)
	}
	s.Clients = 5
	s.Faults = append(s.Faults, sim.ScheduledFault{AtStep: 9, Fault: sim.Fault{Kind: sim.FaultExpire, Client: 2}})
	want := "# head\nrecipe fair-lock\n\n# the clients\nclients 5\nfault step=3 crash c1\n# tail\nfault step=9 expire c2\n"
	if got := Format(s); got != want {
		t.Errorf("edited:\n%q\nwant\n%q", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	if _, err := Run(&Scenario{Recipe: "no-such-lock", Clients: 1}, RunOptions{}); err == nil || !strings.Contains(err.Error(), "unknown recipe") {
		t.Errorf("unknown recipe: %v", err)
	}
	if _, err := Run(&Scenario{Recipe: "fair-lock", Clients: 1, Faults: []sim.ScheduledFault{{AtStep: 1, Fault: sim.Fault{Kind: sim.FaultCrash, Client: 4}}}}, RunOptions{}); err == nil {
		t.Error("a fault on a missing client ran")
	}
	if _, err := Explore(ExploreOptions{Recipe: "fair-lock", Strategy: "dfs"}); err == nil {
		t.Error("an unknown strategy explored")
	}
}

// TestExploreDeterministic: the same seed explores the same runs and
// finds the same shrunk failure.
func TestExploreDeterministic(t *testing.T) {
	var files []string
	var runs []int
	for range 2 {
		// Shrinking is bounded by wall time; this one ends by itself well
		// within the bound, so the two shrunk files must be the same.
		res, err := Explore(ExploreOptions{Recipe: "unprotected-lock", Runs: 100, Seed: 5, Dir: t.TempDir(), ShrinkTime: 2 * time.Minute})
		if err != nil || res.Failure == nil || res.Found == nil {
			t.Fatalf("explore: %v, %+v", err, res)
		}
		data, err := os.ReadFile(res.File)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, string(data))
		runs = append(runs, res.Runs)
	}
	if runs[0] != runs[1] {
		t.Errorf("one seed found its first failure after %d runs, then after %d", runs[0], runs[1])
	}
	if files[0] != files[1] {
		t.Errorf("one seed shrank to two different files:\n%s\n%s", files[0], files[1])
	}
	a, _ := Explore(ExploreOptions{Recipe: "fair-lock", Runs: 30, Seed: 8, Strategy: "pct"})
	b, _ := Explore(ExploreOptions{Recipe: "fair-lock", Runs: 30, Seed: 8, Strategy: "pct"})
	if a.Steps != b.Steps || a.Runs != b.Runs {
		t.Errorf("two explorations with one seed differ: %d/%d vs %d/%d steps/runs", a.Steps, a.Runs, b.Steps, b.Runs)
	}
}

// knownFindings are correct recipes exploration finds failing, reported
// to their owners, each with a scenario file of the library. None is open:
// semaphore-mutex's (testdata/semaphore-mutex-expiry.scenario) is fixed.
var knownFindings = map[string]string{}

// flawChecks name, for a flawed variant whose exploration could find a
// failure of the core it shares with a correct recipe instead of its
// flaw, the check its flaw fails: the finding must be that one.
// stale-resume-lock's flaw is two holders (lock-linearizable), in the
// window drawStaleSession opens; before it did, the 5,000 runs here
// reached no such window, and found a liveness failure of the shared core
// once (testdata/lost-reply-lagging-follower.scenario, since fixed).
var flawChecks = map[string]string{
	"stale-resume-lock": CheckLock,
}

// exploreRunsPerRecipe bounds make test's exploration of each recipe.
const exploreRunsPerRecipe = 200

// TestExploreEveryRecipe is the bounded exploration make test runs: every
// correct recipe survives it with a fenced store and every fault kind;
// every flawed variant is found, shrunk, written, and replays from its
// file with the same failure.
func TestExploreEveryRecipe(t *testing.T) {
	runs := exploreRunsPerRecipe
	if testing.Short() {
		runs = 10
	}
	for _, r := range recipes.Recipes() {
		t.Run(r.Name, func(t *testing.T) {
			o := ExploreOptions{Recipe: r.Name, Runs: runs, Seed: 1, Dir: t.TempDir(), ShrinkTime: time.Second, Clients: 4, Cycles: 2}
			if r.Name == "semaphore" {
				o.Leases = 2
			}
			if r.Flawed() {
				o.Runs = 2000
			}
			if r.Servers > 1 {
				// A flaw that shows on an ensemble only is looked for
				// there, with the faults that open its window: a pause
				// past the session timeout and a lagging follower.
				// Seed 1 finds stale-resume-lock's at schedule 255.
				o.Servers = []int{r.Servers}
				o.Faults = []sim.FaultKind{sim.FaultPause, sim.FaultLag}
				o.Runs = 1000
			}
			res, err := Explore(shapeFor(r.Name, o))
			if err != nil {
				t.Fatal(err)
			}
			if finding, ok := knownFindings[r.Name]; ok && res.Failure != nil && !r.Flawed() {
				t.Logf("open finding (%s): %s", finding, res.Failure.Verdict.Violations(nil)[0].Detail)
				return
			}
			if check, ok := flawChecks[r.Name]; ok && res.Failure != nil {
				for _, v := range res.Failure.Verdict.Violations(nil) {
					if v.Name != check {
						t.Fatalf("%s found after %d runs, not its flaw (%s): %s\n%s", v.Name, res.Runs, check, v.Detail, Format(res.Failure.Scenario))
					}
				}
			}
			if r.Flawed() != (res.Failure != nil) {
				msg := "no failure"
				if res.Failure != nil {
					msg = res.Failure.Verdict.String() + "\n" + Format(res.Failure.Scenario)
				}
				t.Fatalf("flawed=%v after %d runs: %s", r.Flawed(), res.Runs, msg)
			}
			if res.Failure != nil {
				if _, err := os.Stat(res.File); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(res.Command, "zklab run ") || filepath.Dir(res.File) != o.Dir {
					t.Errorf("command %q, file %q", res.Command, res.File)
				}
				t.Logf("%s found after %d runs (%v); shrunk file %d lines", r.Name, res.Runs, res.ToFailure, strings.Count(Format(res.Failure.Scenario), "\n"))
			}
		})
	}
}

// TestUnfencedStoreFound: exploration finds the unfenced store corrupted
// under fair-lock, and the fenced store never.
func TestUnfencedStoreFound(t *testing.T) {
	res, err := Explore(ExploreOptions{Recipe: "fair-lock", Store: StoreUnfenced, Runs: 2000, Seed: 1, Dir: t.TempDir(), ShrinkTime: time.Second})
	if err != nil || res.Failure == nil {
		t.Fatalf("unfenced store not found: %v", err)
	}
	if res.Failure.Verdict.Check(CheckStore).Outcome != Fail {
		t.Errorf("the failure is not the store's:\n%s", res.Failure.Verdict)
	}
}

func TestReplaySameTrace(t *testing.T) {
	sc, err := ParseFile("testdata/split-brain-unfenced.scenario")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Replay(sc, RunOptions{})
	b, _ := Replay(sc, RunOptions{})
	if a.Trace == "" || a.Trace != b.Trace || a.History() != b.History() {
		t.Error("replays differ")
	}
}

// TestHourOfVirtualTime: an hour of virtual time with 10 s sessions runs
// in well under a second of wall time.
func TestHourOfVirtualTime(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 5, Cycles: 60, Think: time.Minute, Hold: 10 * time.Millisecond}
	start := time.Now()
	res, err := Run(sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if res.Time < time.Hour || res.Verdict.Failed() {
		t.Fatalf("virtual %v:\n%s", res.Time, res.Verdict)
	}
	t.Logf("%v of virtual time, %d steps, in %v", res.Time, res.Steps, took)
}
