package scenarios

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// TB is the part of *testing.T that Test uses.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// replayFile is the scenario file Test replays instead of exploring:
// go test -run '^TestMyLock$' -zklab.replay testdata/zklab/FILE.
var replayFile = flag.String("zklab.replay", "", "zklab: replay this scenario file with the recipe of the scenarios.Test that found it, instead of exploring")

// Options tune Test. The zero value explores 100 runs of up to 5 clients
// and 3 cycles each, with up to 3 faults of every kind, a fenced store,
// the mix of strategies, on every core.
type Options struct {
	// Clients and Cycles bound the workload (defaults 5 and 3).
	Clients, Cycles int
	// Faults are the fault kinds drawn (nil: all; empty: none);
	// MaxFaults bounds how many a run has (default 3).
	Faults    []sim.FaultKind
	MaxFaults int
	// Runs and Time are the budget (default 100 runs).
	Runs int
	Time time.Duration
	// Strategy is "random", "pct", "directed" or "mix" (the default);
	// Depth is PCT's bug depth.
	Strategy string
	Depth    int
	// Seed makes the exploration repeatable.
	Seed uint64
	// Store is the protected store, fenced by default.
	Store StoreKind
	// SessionTimeout is every client's session timeout (default 10 s).
	SessionTimeout time.Duration
	// Lock is the lock's model: mutex (default), rwlock or semaphore
	// (with Leases).
	Lock   string
	Leases int
	// Violations are the checks that fail the test (DefaultViolations if
	// nil).
	Violations []string
	// Dir is where a failure's scenario file goes (default
	// testdata/zklab, next to the test, where it is kept to be committed
	// as a regression scenario).
	Dir string
	// ShrinkTime bounds each of the two shrinkings of a failure (rapid's
	// and zklab's own; default 5 s).
	ShrinkTime time.Duration
	// Parallel is the number of runs at once (default GOMAXPROCS); the
	// runs, the failure and its file do not depend on it.
	Parallel int
	// Workload names the clients' program, which the scenario file
	// records: a built-in one, or the user's own that Program supplies
	// (a replay with -zklab.replay runs Program again). Model is the
	// porcupine model of the user's own operations (Worker.Begin),
	// checked as user-linearizable.
	Workload string
	Program  Workload
	Model    *porcupine.Model
}

// TestResult is what Test found.
type TestResult struct {
	// Runs is the number of runs explored (before the first failure, if
	// one failed); Elapsed the wall time of the search, ToFailure the
	// wall time to the first failing run.
	Runs               int
	Elapsed, ToFailure time.Duration
	// Failure is the shrunk failing run, nil if none failed (with
	// -zklab.replay: the replayed run, if it failed).
	Failure *Result
	// File is the failure's scenario file, and Command the go test
	// command that replays it with the test's own constructor.
	File, Command string
}

// Test explores a lock recipe inside go test: newLock builds one
// client's handle on the lock. It draws workloads, fault schedules and
// scheduling decisions through rapid, and on the first run that fails a
// check it shrinks the run, writes it as a scenario file (kept in
// testdata/zklab by default) and fails t with the verdict, the file's
// path and the go test command that replays it. With -zklab.replay FILE
// it replays that file with newLock instead, and fails t if the run
// fails a check.
func Test(t TB, name string, newLock Constructor, o Options) *TestResult {
	t.Helper()
	goTest := "" // the package and test that call, as a go-test line says
	if pkg := callerPackage(1); pkg != "" && strings.HasPrefix(t.Name(), "Test") && !strings.ContainsAny(t.Name(), " \t") {
		goTest = pkg + " " + t.Name()
	}
	if *replayFile != "" {
		return replayInTest(t, name, newLock, o, *replayFile)
	}
	if o.Dir == "" {
		o.Dir = "testdata/zklab"
	}
	res, err := Explore(ExploreOptions{
		Recipe: name, New: newLock, Lock: o.Lock, Leases: o.Leases,
		Clients: o.Clients, Cycles: o.Cycles, Faults: o.Faults, MaxFaults: o.MaxFaults,
		Runs: o.Runs, Time: o.Time, Strategy: o.Strategy, Depth: o.Depth, Seed: o.Seed,
		Store: o.Store, SessionTimeout: o.SessionTimeout, Violations: o.Violations, Dir: o.Dir,
		ShrinkTime: o.ShrinkTime, Parallel: o.Parallel,
		Workload: o.Workload, Program: o.Program, Model: o.Model,
	})
	if err != nil && (res == nil || res.Failure == nil) {
		t.Fatalf("zklab: %v", err)
		return nil
	}
	out := &TestResult{Runs: res.Runs, Elapsed: res.Elapsed, ToFailure: res.ToFailure, Failure: res.Failure, File: res.File}
	if res.Failure == nil {
		t.Logf("zklab: %s: no violation in %d runs (%d steps, %v)", name, res.Runs, res.Steps, res.Elapsed.Round(time.Millisecond))
		return out
	}
	out.Command = res.Command
	if _, known := recipes.Lookup(name); goTest != "" && (!known || newLock != nil) {
		if werr := noteGoTest(res.File, goTest); werr != nil && err == nil {
			err = werr
		}
		sc := res.Failure.Scenario.clone()
		sc.GoTest = goTest
		out.Command = ReplayCommand(sc, res.File)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "zklab: %s failed after %s (%v); shrunk to %s, %s, %s\n",
		name, Plural(res.Runs, "run"), res.ToFailure.Round(time.Millisecond), Plural(res.Failure.Scenario.Clients, "client"), Plural(len(res.Failure.Scenario.Faults), "fault"), Plural(len(res.Failure.Scenario.Schedule), "scheduling decision"))
	b.WriteString(res.Failure.Verdict.String())
	fmt.Fprintf(&b, "scenario file: %s\n", res.File)
	fmt.Fprintf(&b, "replay: %s\n", out.Command)
	if err != nil {
		fmt.Fprintf(&b, "warning: %v\n", err)
	}
	t.Fatalf("%s", b.String())
	return out
}

// noteGoTest writes into a scenario file which test found it: the file
// then says how it replays (zklab run points there).
func noteGoTest(file, goTest string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	sc, err := Parse(file, string(data))
	if err != nil {
		return err
	}
	sc.GoTest = goTest
	text := Format(sc)
	if cmd := ReplayCommand(sc, file); cmd != "" {
		text = "# replay: " + cmd + "\n" + text
	}
	return os.WriteFile(file, []byte(text), 0o644)
}

// replayInTest replays file with the test's constructor.
func replayInTest(t TB, name string, newLock Constructor, o Options, file string) *TestResult {
	t.Helper()
	sc, err := ParseFile(file)
	if err != nil {
		t.Fatalf("zklab: -zklab.replay: %v", err)
		return nil
	}
	if sc.Recipe != name {
		t.Logf("zklab: -zklab.replay %s: the file is a scenario of %q, not of %q: not replayed here", file, sc.Recipe, name)
		return &TestResult{File: file}
	}
	res, err := Replay(sc, RunOptions{Recipe: newLock, Lock: o.Lock, Workload: o.Program, Model: o.Model})
	if err != nil {
		t.Fatalf("zklab: -zklab.replay %s: %v", file, err)
		return nil
	}
	out := &TestResult{Runs: 1, File: file, Failure: res}
	var b strings.Builder
	fmt.Fprintf(&b, "zklab: %s replayed from %s\n", name, file)
	b.WriteString(res.Verdict.String())
	fmt.Fprintf(&b, "history (step, client, what):\n%s", res.History())
	unmet := res.Verdict.Expectations(sc.Expect)
	for _, u := range unmet {
		fmt.Fprintf(&b, "unmet: %s\n", u)
	}
	if len(res.Verdict.Violations(o.Violations)) > 0 || len(unmet) > 0 {
		t.Fatalf("%s", b.String())
		return out
	}
	out.Failure = nil
	t.Logf("%s", b.String())
	return out
}

// nodeLease is a lease standing on one node.
type nodeLease struct {
	c       recipes.Conn
	path    string
	token   int64
	session int64
}

// NodeLease makes the lease of a user's lock that stands on one node:
// its token is the node's czxid (read now), its session the client's,
// and its release deletes the node (a node already gone is released).
func NodeLease(ctx context.Context, c recipes.Conn, path string) (Lease, error) {
	ok, st, err := c.Exists(ctx, path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("scenarios: lock node %s is gone: %w", path, zk.ErrNoNode)
	}
	return &nodeLease{c: c, path: path, token: st.Czxid, session: c.Session().ID}, nil
}

func (l *nodeLease) Token() int64     { return l.token }
func (l *nodeLease) SessionID() int64 { return l.session }
func (l *nodeLease) Nodes() []string  { return []string{l.path} }
func (l *nodeLease) Release(ctx context.Context) error {
	err := l.c.Delete(ctx, l.path, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
