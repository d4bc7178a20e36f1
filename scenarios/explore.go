package scenarios

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// ExploreOptions say what to explore and for how long.
type ExploreOptions struct {
	// Recipe names the recipe; New builds it when it is a user's own
	// (Recipe is then only its name in the scenario file).
	Recipe string
	New    Constructor
	// Lock is the lock's model for a user's recipe: mutex (default),
	// rwlock or semaphore.
	Lock string
	// Leases is a semaphore's number of leases.
	Leases int
	// Clients and Cycles bound the workload's shape; each run draws
	// from 2 (1 if Clients is 1) to Clients clients and from 1 to Cycles
	// cycles. Defaults 5 and 3.
	Clients, Cycles int
	// Store is the protected store; default fenced.
	Store StoreKind
	// SessionTimeout for every client; default 10 s.
	SessionTimeout time.Duration
	// Workload names the program every client runs (a scenario's
	// workload line): a built-in one, or the user's own, which
	// Program then supplies; empty: cycles. Model is the porcupine model
	// of the user's own operations (RunOptions.Model).
	Workload string
	Program  Workload
	Model    *porcupine.Model
	// Hold bounds the time a holder holds, between the store's read and
	// write: each run draws from 0 to it, by milliseconds; default 50 ms.
	// A leader's term is long: an election's flaws that show only while
	// the leader still acts (old-session-latch) need holds of seconds.
	Hold time.Duration
	// Faults are the fault kinds a run may draw (nil: all of them, the
	// ensemble's too when Servers has a size above 1; an empty non-nil
	// slice: none); MaxFaults bounds how many (default 3). A run of one
	// server draws from the kinds that strike a client or the server.
	Faults    []sim.FaultKind
	MaxFaults int
	// Servers are the ensemble sizes a run draws from (ensemble.go):
	// nil or {1} is the standalone server, drawn exactly as before
	// ensembles were; {3} runs every schedule on 3 servers; {1, 3} draws
	// the size for each run, shrinking towards the first.
	Servers []int
	// Strategy is "random" (each scheduling decision drawn through
	// rapid), "pct" (priorities and change points drawn through rapid),
	// "directed" (faults aimed at the phases the exploration has seen
	// least struck) or "mix" (the default: the three in turn, by
	// schedule); Depth is the PCT bug depth (default 3). See strategy.go.
	Strategy string
	Depth    int
	// Runs and Time are the budgets: stop after Runs runs (default 100
	// when Time is 0) or after Time of wall time, whichever comes first.
	Runs int
	Time time.Duration
	// Seed makes the exploration deterministic: the same seed, options
	// and budget in runs explore the same runs in the same order.
	Seed uint64
	// Violations are the checks that make a run a failure
	// (DefaultViolations if nil).
	Violations []string
	// Dir is where the shrunk failure's scenario file is written
	// (default: the system's temporary directory).
	Dir string
	// Corpus, if set, is a directory of runs kept from explorations
	// before: they run first and the exploration starts from what they
	// covered; the runs that reach something new are added (corpus.go).
	Corpus string
	// ShrinkTime bounds rapid's shrinking (default 5 s).
	ShrinkTime time.Duration
	// CheckTimeout bounds each porcupine check (default 2 s).
	CheckTimeout time.Duration
	// Znodes checks every run's server history against model.Znode (the
	// zk-linearizable check), as a replay does; off, the check is
	// skipped: it keeps every call of the run and costs time.
	Znodes bool
	// Parallel is the number of schedules run at once (default
	// GOMAXPROCS). The schedules explored, the violation reported and
	// the shrunk file do not depend on it (see search.go).
	Parallel int
	// Progress, if set, is called after every run (a CLI's progress
	// line), never by two goroutines at once.
	Progress func(ExploreProgress)

	// ZK, when set, explores on the real ZooKeeper at these servers
	// (HOST:PORT) instead of the simulator: see exploreOnZK.
	ZK []string

	// exactShape draws exactly Clients clients and Cycles cycles (the
	// throughput benchmark's fixed shape).
	exactShape bool
}

// ExploreProgress is where an exploration stands.
type ExploreProgress struct {
	// Stage is StageExploring, then StageShrinking once a schedule failed.
	Stage string
	// Runs are the schedules run so far (exploring) or up to the first
	// failing one (shrinking); Budget the budget in runs, 0 for none.
	Runs, Budget int
	// Elapsed is the wall time since the search began; TimeBudget the
	// budget in time, 0 for none.
	Elapsed, TimeBudget time.Duration
	// ShrinkRuns are the runs tried while shrinking, and ShrinkLeft what
	// is left of the shrinking's time bound (ShrinkTime).
	ShrinkRuns int
	ShrinkLeft time.Duration
	// Workers is the number of schedules run at once.
	Workers int
}

// The stages of an exploration.
const (
	StageExploring = "exploring"
	StageShrinking = "shrinking"
)

// ExploreResult is what an exploration found.
type ExploreResult struct {
	// Runs is the number of runs up to and including the first failing
	// one (all of them when none failed); Steps their simulator steps.
	Runs  int
	Steps uint64
	// Elapsed is the wall time of the search; ToFailure the wall time to
	// the first failing run.
	Elapsed, ToFailure time.Duration
	// Failure is the shrunk failing run, nil if none failed; Found the
	// first failing run before shrinking.
	Failure, Found *Result
	// File is the scenario file written for Failure, and Command the
	// command that replays it.
	File, Command string
	// Coverage is what the runs reached (those up to the first failing
	// one, and the corpus's): on the simulator only.
	Coverage *Coverage
	// CorpusRuns are the corpus's runs run first; CorpusKept the runs
	// added to it.
	CorpusRuns, CorpusKept int
}

// exploreMu serializes explorations: rapid reads its settings from
// process-wide flags.
var exploreMu sync.Mutex

// exploreChunk is the number of runs handed to one rapid.Check when the
// budget is in time.
const exploreChunk = 50

// faultDurations are the durations a fault draws from, shrinking towards
// the first: longer than the default session timeout, so a pause or a
// partition costs the session.
var faultDurations = []time.Duration{15 * time.Second, 2 * time.Second, 5 * time.Second, 30 * time.Second}

// faultStepsPerCycle bounds the step a fault is drawn at: about the steps
// a lock cycle of one client takes. faultTimeMaxMs bounds its time.
const (
	faultStepsPerCycle = 40
	faultTimeMaxMs     = 200
)

func (o *ExploreOptions) fill() error {
	if o.New == nil {
		if _, ok := recipes.Lookup(o.Recipe); !ok {
			return fmt.Errorf("explore: unknown recipe %q (known: %s)", o.Recipe, strings.Join(recipes.Names(), ", "))
		}
	}
	if o.Recipe == "" {
		o.Recipe = "custom"
	}
	if o.Clients == 0 {
		o.Clients = 5
	}
	if o.Clients < 1 || o.Clients > clientsMax {
		return fmt.Errorf("explore: %d clients, want 1 to %d", o.Clients, clientsMax)
	}
	if o.Cycles == 0 {
		o.Cycles = 3
	}
	if o.Store == "" {
		o.Store = StoreFenced
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = defaultSessionTimeout
	}
	for _, n := range o.Servers {
		if err := validServers(n); err != nil {
			return fmt.Errorf("explore: %v", err)
		}
	}
	if o.Faults == nil {
		o.Faults = sim.FaultKinds
		if o.ensemble() {
			o.Faults = allFaultKinds()
		}
	}
	if !o.ensemble() {
		for _, k := range o.Faults {
			if serverFault(k) {
				return fmt.Errorf("explore: fault %s strikes an ensemble, but every run has one server (explore with servers 3)", k)
			}
		}
	}
	if o.MaxFaults == 0 {
		o.MaxFaults = 3
	}
	if len(o.Faults) == 0 {
		o.MaxFaults = 0
	}
	if o.Strategy == "" {
		o.Strategy = StrategyMix
	}
	if !slices.Contains(Strategies, o.Strategy) {
		return fmt.Errorf("explore: unknown strategy %q (want %s)", o.Strategy, strings.Join(Strategies, ", "))
	}
	if o.Depth == 0 {
		o.Depth = 3
	}
	if o.Runs == 0 && o.Time == 0 {
		o.Runs = 100
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.ShrinkTime == 0 {
		o.ShrinkTime = 5 * time.Second
	}
	return nil
}

// drawScenario draws a workload and a fault schedule through t.
func drawScenario(t *rapid.T, o *ExploreOptions) *Scenario {
	sc := drawWorkload(t, o)
	drawFaults(t, o, sc)
	return sc
}

// holdDefault is the default bound of a run's hold.
const holdDefault = 50 * time.Millisecond

// holdMaxMs is the bound of a run's hold in milliseconds.
func holdMaxMs(hold time.Duration) int {
	if hold <= 0 {
		hold = holdDefault
	}
	return int(hold / time.Millisecond)
}

// drawnPool keeps the drawn scenarios of runs whose results were given
// back (Result.recycle): such a run took its scenario as its own
// (RunOptions.ownScenario), and nothing else points to it.
var drawnPool sync.Pool

// takeDrawn is a scenario to draw into: one given back, or a new one.
func takeDrawn() *Scenario {
	if sc, ok := drawnPool.Get().(*Scenario); ok {
		return sc
	}
	return new(Scenario)
}

// drawWorkload draws the workload: clients, cycles, hold, seed, readers.
func drawWorkload(t *rapid.T, o *ExploreOptions) *Scenario {
	minClients, minCycles := min(2, o.Clients), 1
	if o.exactShape {
		minClients, minCycles = o.Clients, o.Cycles
	}
	sc := takeDrawn()
	*sc = Scenario{
		Recipe:         o.Recipe,
		Leases:         o.Leases,
		Clients:        intRange(minClients, o.Clients).Draw(t, "clients"),
		Cycles:         intRange(minCycles, o.Cycles).Draw(t, "cycles"),
		Hold:           time.Duration(intRange(0, holdMaxMs(o.Hold)).Draw(t, "hold_ms")) * time.Millisecond,
		Store:          o.Store,
		SessionTimeout: o.SessionTimeout,
		Seed:           seedGen.Draw(t, "seed"),
	}
	sc.Workload = o.Workload
	if o.Leases > 1 || o.Recipe == "rw-lock" || o.Recipe == "herd-rw-lock" {
		for c := 1; c <= sc.Clients; c++ {
			if (o.Recipe == "rw-lock" || o.Recipe == "herd-rw-lock") && boolGen.Draw(t, "reader") {
				sc.Readers = append(sc.Readers, c)
			}
		}
	}
	sc.Servers = drawServers(t, o)
	return sc
}

// drawFaults draws the faults of a run at steps and times.
func drawFaults(t *rapid.T, o *ExploreOptions, sc *Scenario) {
	n := intRange(0, o.MaxFaults).Draw(t, "faults")
	restarted := false
	kinds := faultKindsFor(o, sc)
	if len(kinds) == 0 {
		n = 0
	}
	for range n {
		// A fault comes at a step, or at a virtual time: time passes only
		// while clients hold, think or wait, so a time lands in someone's
		// critical section more often than a step does.
		var f sim.ScheduledFault
		if boolGen.Draw(t, "fault_at_time") {
			f.AtTime = time.Duration(intRange(1, faultTimeMaxMs).Draw(t, "fault_ms")) * time.Millisecond
		} else {
			f.AtStep = uint64(intRange(1, faultStepsPerCycle*sc.Clients*sc.Cycles).Draw(t, "fault_step"))
		}
		f.Kind = rapid.SampledFrom(kinds).Draw(t, "fault_kind")
		if f.Kind == sim.FaultRestart && restarted {
			// Two server restarts that overlap make the simulator drop a
			// connection opened between their ends without telling its
			// client (reported to sim's owners); one restart a run.
			f.Kind = sim.FaultDisconnect
		}
		restarted = restarted || f.Kind == sim.FaultRestart
		if namesClient(f.Kind) {
			f.Client = intRange(1, sc.Clients).Draw(t, "fault_client")
		}
		drawServerOf(t, sc, &f.Fault)
		if lasts(f.Kind) {
			f.Duration = faultDurationGen.Draw(t, "fault_for")
		}
		sc.Faults = append(sc.Faults, f)
	}
	// Faults are kept in step order, as a file lists them.
	sortFaults(sc.Faults)
}

func sortFaults(fs []sim.ScheduledFault) {
	less := func(a, b sim.ScheduledFault) bool {
		if (a.AtStep == 0) != (b.AtStep == 0) {
			return a.AtStep != 0 // steps first, then times
		}
		return a.AtStep < b.AtStep || a.AtTime < b.AtTime
	}
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && less(fs[j], fs[j-1]); j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// exploreTB is the testing.TB rapid reports to: it keeps the failure and
// stays quiet otherwise.
type exploreTB struct {
	name   string
	failed bool
	report []string
}

func (tb *exploreTB) Helper()                   {}
func (tb *exploreTB) Name() string              { return tb.name }
func (tb *exploreTB) Logf(string, ...any)       {}
func (tb *exploreTB) Log(...any)                {}
func (tb *exploreTB) Skipf(string, ...any)      {}
func (tb *exploreTB) Skip(...any)               {}
func (tb *exploreTB) SkipNow()                  {}
func (tb *exploreTB) Fail()                     { tb.failed = true }
func (tb *exploreTB) FailNow()                  { tb.failed = true }
func (tb *exploreTB) Failed() bool              { return tb.failed }
func (tb *exploreTB) Error(args ...any)         { tb.Errorf("%s", fmt.Sprint(args...)) }
func (tb *exploreTB) Fatal(args ...any)         { tb.Errorf("%s", fmt.Sprint(args...)) }
func (tb *exploreTB) Fatalf(f string, a ...any) { tb.Errorf(f, a...) }
func (tb *exploreTB) Errorf(f string, a ...any) {
	tb.failed = true
	tb.report = append(tb.report, fmt.Sprintf(f, a...))
}

// setRapidFlags sets rapid's process-wide settings and returns a function
// that restores them.
func setRapidFlags(values map[string]string) (restore func(), err error) {
	old := map[string]string{}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			return func() {}, fmt.Errorf("explore: rapid flag %s not registered", name)
		}
		old[name] = f.Value.String()
		if err := f.Value.Set(v); err != nil {
			return func() {}, err
		}
	}
	return func() {
		for name, v := range old {
			flag.Lookup(name).Value.Set(v)
		}
	}, nil
}

// Explore runs the recipe under drawn workloads, fault schedules and
// scheduling decisions, all drawn through rapid, until a run fails a
// check or the budget is spent. A failure is shrunk by rapid, written as
// a scenario file in o.Dir, and replayed from that file to make sure it
// fails the same way. With o.ZK it explores on a real server instead
// (exploreOnZK).
func Explore(o ExploreOptions) (*ExploreResult, error) {
	if len(o.ZK) > 0 {
		kinds, err := zkFaultKinds(o.Faults)
		if err != nil {
			return nil, err
		}
		o.Faults = kinds
		if err := o.fill(); err != nil {
			return nil, err
		}
		return exploreOnZK(o)
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	exploreMu.Lock()
	defer exploreMu.Unlock()
	defer raiseGCPercent()()
	// rapid asks testing.Short, which needs the testing flags registered
	// and parsed: outside a test binary (the CLI), register them.
	if flag.Lookup("test.short") == nil {
		testing.Init()
	}
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}

	e := newExplorer(&o)
	restore, err := setRapidFlags(map[string]string{
		"rapid.seed":       "1",
		"rapid.checks":     "1",
		"rapid.nofailfile": "true",
		"rapid.shrinktime": o.ShrinkTime.String(),
		"rapid.v":          "false",
		"rapid.log":        "false",
		"rapid.debug":      "false",
		// rapid runs a fifth of its checks under -short: the budget is
		// the budget.
		"test.short": "false",
	})
	defer restore()
	if err != nil {
		return nil, err
	}
	corpusRuns := 0
	if o.Corpus != "" {
		entries, err := readCorpus(o.Corpus)
		if err != nil {
			return nil, err
		}
		cov, failed, file, err := runCorpus(&o, entries)
		if err != nil {
			return nil, err
		}
		corpusRuns = cov.Runs
		if failed != nil {
			// A run the corpus kept fails now: the recipe changed, or
			// a check did. Its file is the replay.
			return &ExploreResult{Found: failed, Failure: failed, File: file, Command: "zklab run " + file, Coverage: cov, CorpusRuns: corpusRuns}, nil
		}
		e.cov, e.snaps[0] = cov, cov.Clone()
	}
	res, err := e.search()
	if res != nil {
		res.CorpusRuns = corpusRuns
	}
	if err != nil || res.Found == nil {
		return res, err
	}
	last, err := e.shrink(res.Runs)
	if err != nil {
		return res, err
	}
	res.Failure = shrinkFailure(&o, res.Found, last)
	file, err := writeFailure(&o, res.Failure)
	if err != nil {
		return res, err
	}
	res.File = file
	res.Command = "zklab run " + file
	// The file must replay the failure: parse it back and run it.
	sc, err := ParseFile(file)
	if err != nil {
		return res, fmt.Errorf("explore: the scenario file written does not parse: %w", err)
	}
	again, err := Run(sc, RunOptions{Recipe: o.New, Lock: o.Lock, CheckTimeout: o.CheckTimeout, Znodes: o.Znodes, Workload: o.Program, Model: o.Model})
	if err != nil {
		return res, err
	}
	if len(again.Verdict.Violations(o.Violations)) == 0 {
		return res, errors.New("explore: the shrunk scenario does not fail when replayed from " + file)
	}
	return res, nil
}

// writeFailure writes the shrunk failure as a commented scenario file.
func writeFailure(o *ExploreOptions, r *Result) (string, error) {
	sc := r.Scenario.clone()
	sc.layout = nil
	var head strings.Builder
	fmt.Fprintf(&head, "# zklab scenario: a failure found by exploration and shrunk by rapid.\n")
	fmt.Fprintf(&head, "# explore: recipe %s, strategy %s, seed %d.\n", o.Recipe, o.Strategy, o.Seed)
	for _, v := range r.Verdict.Violations(o.Violations) {
		fmt.Fprintf(&head, "# %s: %s\n", v.Name, oneLine(v.Detail))
	}
	for _, v := range r.Verdict.Violations(o.Violations) {
		sc.Expect = append(sc.Expect, Expectation{Check: v.Name, Outcome: Fail})
	}
	head.WriteString("#\n")
	text := head.String() + Format(sc)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%s-seed%d.scenario", o.Recipe, r.Verdict.Violations(o.Violations)[0].Name, o.Seed)
	file := filepath.Join(o.Dir, name)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return "", err
	}
	return file, nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
