package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// Lock is the lock's model: mutex (default), rwlock or semaphore
	// (with Leases).
	Lock   string
	Leases int
	// Violations are the checks that fail the test (DefaultViolations if
	// nil).
	Violations []string
	// Dir is where a failure's scenario file goes (default
	// testdata/zklab, next to the test).
	Dir string
	// Parallel is the number of runs at once (default GOMAXPROCS); the
	// runs, the failure and its file do not depend on it.
	Parallel int
}

// Test explores a lock recipe inside go test: newLock builds one
// client's handle on the lock. It draws workloads, fault schedules and
// scheduling decisions through rapid, and on the first run that fails a
// check it shrinks the run, writes it as a scenario file and fails t
// with the verdict, the file's path and how to replay it.
func Test(t TB, name string, newLock Constructor, o Options) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = "testdata/zklab"
	}
	res, err := Explore(ExploreOptions{
		Recipe: name, New: newLock, Lock: o.Lock, Leases: o.Leases,
		Clients: o.Clients, Cycles: o.Cycles, Faults: o.Faults, MaxFaults: o.MaxFaults,
		Runs: o.Runs, Time: o.Time, Strategy: o.Strategy, Depth: o.Depth, Seed: o.Seed,
		Store: o.Store, Violations: o.Violations, Dir: o.Dir, Parallel: o.Parallel,
	})
	if err != nil && (res == nil || res.Failure == nil) {
		t.Fatalf("zklab: %v", err)
	}
	if res.Failure == nil {
		t.Logf("zklab: %s: no violation in %d runs (%d steps, %v)", name, res.Runs, res.Steps, res.Elapsed.Round(time.Millisecond))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "zklab: %s failed after %d runs (%v); shrunk to %d clients, %d faults, %d scheduling decisions\n",
		name, res.Runs, res.ToFailure.Round(time.Millisecond), res.Failure.Scenario.Clients, len(res.Failure.Scenario.Faults), len(res.Failure.Scenario.Schedule))
	b.WriteString(res.Failure.Verdict.String())
	fmt.Fprintf(&b, "scenario file: %s\n", res.File)
	if _, known := recipes.Lookup(name); known {
		fmt.Fprintf(&b, "replay: %s\n", res.Command)
	} else {
		fmt.Fprintf(&b, "replay: scenarios.ReplayFile(%q, scenarios.RunOptions{Recipe: newLock})\n", res.File)
	}
	if err != nil {
		fmt.Fprintf(&b, "warning: %v\n", err)
	}
	t.Fatalf("%s", b.String())
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
