package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// re-enter on reentrant-mutex: each client takes the lock, takes it
// again on the same node with the same token, and the checks count the
// inner grant as part of the hold: every check passes.
func TestReEnterWorkloadOnAReentrantRecipe(t *testing.T) {
	for _, recipe := range reentrantRecipes {
		t.Run(recipe, func(t *testing.T) {
			sc := &Scenario{Recipe: recipe, Clients: 3, Cycles: 2, Hold: 20 * time.Millisecond, Seed: 3}
			sc.Workload = "re-enter"
			res, err := Run(sc, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict.Failed() {
				t.Fatalf("verdict:\n%s\n%s", res.Verdict, res.History())
			}
			if n := strings.Count(res.History(), " acquired token="); n != 12 {
				t.Errorf("%d grants, want 12 (3 clients × 2 cycles × 2):\n%s", n, res.History())
			}
			if got := res.Verdict.Check(CheckLock).Detail; got != "12 operations" {
				t.Errorf("lock-linearizable judged %s, want 12 operations (6 holds: an acquire and a release each)", got)
			}
		})
	}
}

// re-enter on a recipe that is not reentrant is refused before the run,
// and read-then-write on a lock that is not a read/write lock.
func TestWorkloadsRefuseLocksThatCannot(t *testing.T) {
	for _, c := range []struct{ recipe, workload, want string }{
		{"fair-lock", "re-enter", "workload re-enter needs a reentrant recipe (reentrant-mutex, multi-lock, leader-selector); fair-lock's handle would queue behind its own node"},
		{"fair-lock", "read-then-write", "workload read-then-write needs a read/write lock (rw-lock, herd-rw-lock, or a user's recipe with lock rwlock), not \"fair-lock\" (mutex model)"},
	} {
		sc := &Scenario{Recipe: c.recipe, Clients: 2}
		sc.Workload = c.workload
		if _, err := Run(sc, RunOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %s: %v, want %q", c.workload, c.recipe, err, c.want)
		}
	}
}

// read-then-write on rw-lock: the write node queues behind the client's
// own read node, and the liveness verdict says so.
func TestReadThenWriteDeadlocksOnItself(t *testing.T) {
	sc := &Scenario{Recipe: "rw-lock", Clients: 1, Cycles: 1, Seed: 1}
	sc.Workload = "read-then-write"
	res, err := Run(sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := res.Verdict.Check(CheckLiveness)
	if live.Outcome != Fail || !strings.Contains(live.Detail, "c1 waited for the lock from step") ||
		!strings.Contains(live.Detail, "c1 holds it (its lease from step") || !strings.Contains(live.Detail, "the waiter waits on itself (a self-deadlock)") {
		t.Fatalf("liveness: %v %s", live.Outcome, live.Detail)
	}
	for _, name := range []string{CheckLock, CheckZKHolders, CheckStore} {
		if c := res.Verdict.Check(name); c.Outcome != Pass {
			t.Errorf("%s: %v %s", name, c.Outcome, c.Detail)
		}
	}
}

// A user's counter, incremented in the critical section: the workload
// reads it, holds, and writes it plus one, recording each increment as
// an operation of its own; the user's model says an increment reads the
// value the last one wrote.
type counterInc struct{}

type counterResult struct{ Read, Wrote int }

var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, _, output any) (bool, any) {
		if output == nil {
			return true, state // never ended: the write may not have happened
		}
		out := output.(counterResult)
		return out.Read == state.(int), out.Wrote
	},
	DescribeOperation: func(_, output any) string { return fmt.Sprintf("increment %v", output) },
}

// counterWorkload increments the run's counter (Worker.Shared), or the
// one given.
func counterWorkload(given *int) Workload {
	return func(ctx context.Context, w *Worker) error {
		counter := given
		if counter == nil {
			counter = w.Shared(func() any { return new(int) }).(*int)
		}
		for range w.Cycles() {
			held, err := w.Acquire(ctx)
			if err != nil {
				if err := w.Sleep(ctx, acquireBackoff); err != nil {
					return err
				}
				continue
			}
			op := w.Begin(counterInc{})
			n := *counter
			if err := w.Sleep(ctx, w.Hold()); err != nil {
				return err
			}
			*counter = n + 1
			op.End(counterResult{Read: n, Wrote: n + 1})
			w.Release(ctx, held)
		}
		return nil
	}
}

// The user's model catches what the lock let happen: in the split-brain
// story (a holder paused past its session) the user's own counter, which
// takes no fencing token, loses an increment; the same workload on a
// run without faults passes.
func TestUserModelCatchesAnUnfencedCounter(t *testing.T) {
	sc, err := ParseFile("testdata/split-brain-unfenced.scenario")
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload = "counter"
	sc.Expect = nil
	var counter int
	res, err := Run(sc, RunOptions{Workload: counterWorkload(&counter), Model: &counterModel})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Verdict.Check(CheckUser); u.Outcome != Fail || u.Detail != "2 operations" {
		t.Fatalf("user-linearizable: %v %s\n%s", u.Outcome, u.Detail, res.History())
	}
	if !res.Verdict.Failed() {
		t.Error("a failed user-linearizable is not a violation")
	}
	if got := Format(res.Scenario); !strings.Contains(got, "workload counter\n") {
		t.Errorf("the scenario does not name the user's workload:\n%s", got)
	}

	calm := &Scenario{Recipe: "fair-lock", Clients: 3, Cycles: 2, Hold: 10 * time.Millisecond, Seed: 2}
	calm.Workload = "counter"
	counter = 0
	res, err = Run(calm, RunOptions{Workload: counterWorkload(&counter), Model: &counterModel})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Verdict.Check(CheckUser); u.Outcome != Pass || u.Detail != "6 operations" || counter != 6 {
		t.Fatalf("user-linearizable without faults: %v %s, counter %d", u.Outcome, u.Detail, counter)
	}
}

// Test explores a user's workload with the user's model, writes a file
// that names the workload, and replays it (-zklab.replay) with the same
// program: pauses longer than the session make two holders increment
// the counter at once, which only the user's model sees (the built-in
// store is fenced).
func TestUserWorkloadExploresAndReplays(t *testing.T) {
	fair, _ := recipes.Lookup("fair-lock")
	o := Options{Runs: 2000, Seed: 1, Faults: []sim.FaultKind{sim.FaultPause}, Dir: t.TempDir(), ShrinkTime: time.Second,
		Workload: "counter", Program: counterWorkload(nil), Model: &counterModel}
	tb := &quietTB{}
	res := Test(tb, "fair-lock", FromRecipe(fair.New), o)
	if res == nil || res.Failure == nil {
		t.Fatalf("the user's model caught nothing: %+v", res)
	}
	if v := res.Failure.Verdict.Violations(nil); len(v) != 1 || v[0].Name != CheckUser {
		t.Fatalf("violations %v, want user-linearizable alone", v)
	}
	sc, err := ParseFile(res.File)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload != "counter" {
		t.Fatalf("the file names workload %q:\n%s", sc.Workload, Format(sc))
	}
	*replayFile = res.File
	defer func() { *replayFile = "" }()
	again := Test(&quietTB{}, "fair-lock", FromRecipe(fair.New), o)
	if again == nil || again.Failure == nil || again.Failure.Verdict.Check(CheckUser).Outcome != Fail {
		t.Fatalf("the replay with the user's program did not fail user-linearizable: %+v", again)
	}
	t.Logf("found after %d runs (%v), shrunk to %d faults", res.Runs, res.ToFailure, len(sc.Faults))
}
