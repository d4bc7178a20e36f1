package scenarios_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

// runOnZK runs a scenario's text on the package's real server and checks
// its expectations.
func runOnZK(t *testing.T, text string) *scenarios.Result {
	t.Helper()
	srv := zktest.Shared(t)
	sc, err := scenarios.Parse("test.scenario", text)
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.Run(sc, scenarios.RunOptions{ZK: []string{srv.Addr}, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("history:\n%s\n%s\nnotes:\n%s", res.History(), res.Verdict, strings.Join(res.Notes, "\n"))
	if bad := res.Verdict.Expectations(sc.Expect); len(bad) > 0 {
		t.Errorf("on a real server:\n%s", strings.Join(bad, "\n"))
	}
	if !res.Verdict.Real {
		t.Error("the verdict does not say it is of a real server")
	}
	return res
}

func noteWith(t *testing.T, res *scenarios.Result, want string) {
	t.Helper()
	for _, n := range res.Notes {
		if strings.Contains(n, want) {
			return
		}
	}
	t.Errorf("no note says %q; notes:\n%s", want, strings.Join(res.Notes, "\n"))
}

// The split-brain story on a real server: c1 holds when its process
// stops for longer than its session; ZooKeeper expires the session and
// c2 takes the lock; c1 wakes believing it holds. ZooKeeper's view stays
// safe, the unfenced store loses c2's update, the fenced one refuses c1.
func TestZKSplitBrain(t *testing.T) {
	for _, tc := range []struct{ store, storeCheck string }{
		{"unfenced", "fail"},
		{"fenced", "pass"},
	} {
		t.Run(tc.store, func(t *testing.T) {
			t.Parallel()
			res := runOnZK(t, `recipe fair-lock
clients 2
hold 300ms
store `+tc.store+`
session-timeout 4s
fault at=100ms pause c1 for=8s
expect lock-linearizable pass
expect store-linearizable `+tc.storeCheck+`
expect zk-holders pass
expect split-brain fail
expect liveness pass
expect dead-watches pass
expect zk-linearizable n/a
`)
			noteWith(t, res, "fault at=100ms pause c1 for=8s: injected at")
			if !strings.Contains(res.Trace, " c1 fault pause c1 for=8s") || !strings.Contains(res.Trace, "state=StateExpired") {
				t.Errorf("the trace shows no pause of c1 or no expiry:\n%s", res.Trace)
			}
		})
	}
}

// A fault given by step strikes where its client was on the simulator:
// before its first call here. fair-lock settles the lost reply.
func TestZKLostReplyAnchoredByStep(t *testing.T) {
	t.Parallel()
	res := runOnZK(t, `recipe fair-lock
clients 2
hold 50ms
fault step=1 drop-reply c2
expect lock-linearizable pass
expect store-linearizable pass
expect zk-holders pass
expect split-brain pass
expect liveness pass
`)
	noteWith(t, res, "before c2's first operation, where it struck on the simulator")
}

// A crashed holder's session expires on the server, and the lock passes
// on; the crashed client's task ends, as in the simulator.
func TestZKHolderCrash(t *testing.T) {
	t.Parallel()
	res := runOnZK(t, `recipe fair-lock
clients 2
hold 300ms
session-timeout 4s
fault at=100ms crash c1
expect lock-linearizable pass
expect store-linearizable pass
expect zk-holders pass
expect split-brain pass
expect liveness pass
`)
	if !strings.Contains(res.History(), "c2 acquired") {
		t.Errorf("c2 never acquired after c1 crashed")
	}
}

// An expired session while waiting: the recipe sees the expiry and
// queues again in a new session.
func TestZKExpireWhileWaiting(t *testing.T) {
	t.Parallel()
	runOnZK(t, `recipe fair-lock
clients 3
hold 300ms
fault at=100ms expire c2
expect lock-linearizable pass
expect store-linearizable pass
expect zk-holders pass
expect split-brain pass
expect liveness pass
`)
}

func TestZKRefusesRestart(t *testing.T) {
	sc, err := scenarios.Parse("restart.scenario", "recipe fair-lock\nclients 2\nfault at=10ms restart for=1s\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = scenarios.Run(sc, scenarios.RunOptions{ZK: []string{"127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("a restart on a real server: err = %v, want a refusal naming it", err)
	}
}

func TestZKUnreachable(t *testing.T) {
	sc, err := scenarios.Parse("plain.scenario", "recipe fair-lock\nclients 2\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = scenarios.Run(sc, scenarios.RunOptions{ZK: []string{"127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("an unreachable server: err = %v, want an error naming it", err)
	}
}

// noLock grants every acquire at once: every client holds together.
type noLock struct{ c recipes.Conn }

func (l noLock) Acquire(ctx context.Context) (scenarios.Lease, error) {
	return noLease{session: l.c.Session().ID}, nil
}

type noLease struct{ session int64 }

func (noLease) Token() int64                      { return 1 }
func (l noLease) SessionID() int64                { return l.session }
func (noLease) Nodes() []string                   { return nil }
func (noLease) Release(ctx context.Context) error { return nil }

// Exploring on a real server finds a lock that is none, shrinks the run and
// writes a file that runs again there.
func TestZKExploreFindsNoLock(t *testing.T) {
	srv := zktest.Shared(t)
	dir := t.TempDir()
	res, err := scenarios.Explore(scenarios.ExploreOptions{
		ZK:     []string{srv.Addr},
		Recipe: "no-lock",
		New: func(c recipes.Conn, _ string, _ recipes.Options) scenarios.Lock {
			return noLock{c}
		},
		Clients: 3, Cycles: 2, Runs: 5, Seed: 3,
		Faults:     []sim.FaultKind{sim.FaultDropReply, sim.FaultExpire},
		Dir:        dir,
		ShrinkTime: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failure == nil {
		t.Fatalf("%d runs on a real server found no violation of a lock that grants every acquire", res.Runs)
	}
	if want := "zklab run --zk " + srv.Addr + " "; !strings.HasPrefix(res.Command, want) {
		t.Errorf("command %q, want it to start %q", res.Command, want)
	}
	sc, err := scenarios.ParseFile(res.File)
	if err != nil {
		t.Fatalf("the file written does not parse: %v", err)
	}
	if len(sc.Schedule) != 0 || len(sc.Expect) == 0 {
		t.Errorf("a real server's failure file: %d schedule entries (want none), %d expectations (want some)", len(sc.Schedule), len(sc.Expect))
	}
	for _, f := range sc.Faults {
		if f.AtStep != 0 || f.Kind == sim.FaultRestart {
			t.Errorf("fault %v: a real server's faults come at times, never a restart", f)
		}
	}
}

func TestZKExploreRefusesRestart(t *testing.T) {
	_, err := scenarios.Explore(scenarios.ExploreOptions{ZK: []string{"127.0.0.1:1"}, Recipe: "fair-lock", Faults: []sim.FaultKind{sim.FaultRestart}})
	if err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("explore on a real server with restarts: err = %v, want a refusal naming restart", err)
	}
}

// The library's stories on a real server: the scenarios whose outcome
// does not hang on the simulator's exact schedule meet every expectation
// that applies there. Left out: the findings of exploration (lost-wakeup,
// semaphore-mutex-expiry, stale-grant-after-expiry), whose failure needs
// the interleaving the file's schedule pins down. The runs mostly wait
// (a 30 s pause, a liveness deadline of 83 s), so they run all at once
// rather than -parallel at a time.
func TestZKLibraryStories(t *testing.T) {
	srv := zktest.Shared(t)
	names := []string{
		"expiry-while-waiting", "fair-lock-10", "herd-lock-10",
		"holder-crash-fair", "holder-crash-persistent",
		"lost-reply-fair", "lost-reply-unprotected",
		"split-brain-fenced", "split-brain-unfenced",
		"acl-keeps-out",
		"leader-split-brain-unfenced", "herd-election-10",
	}
	type outcome struct {
		sc  *scenarios.Scenario
		res *scenarios.Result
		err error
	}
	outcomes := make([]outcome, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outcomes[i]
			if o.sc, _, o.err = scenarios.LookupLibrary(name); o.err == nil {
				o.res, o.err = scenarios.Run(o.sc, scenarios.RunOptions{ZK: []string{srv.Addr}})
			}
		}()
	}
	wg.Wait()
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			o := outcomes[i]
			if o.err != nil {
				t.Fatal(o.err)
			}
			if bad := o.res.Verdict.Expectations(o.sc.Expect); len(bad) > 0 {
				t.Errorf("on a real server:\n%s\n%s\n%s", strings.Join(bad, "\n"), o.res.History(), o.res.Verdict)
			}
			// The liveness verdict's cause comes from the probe and the
			// clients' own calls, which a real server has too.
			if name == "lost-reply-unprotected" {
				if d := o.res.Verdict.Check(scenarios.CheckLiveness).Detail; !strings.Contains(d, "is owned by session") || !strings.Contains(d, "of c2: c2's create at step") || !strings.Contains(d, "(a lost create reply)") {
					t.Errorf("on a real server the liveness verdict does not name the lost create reply:\n%s", d)
				}
			}
		})
	}
}
