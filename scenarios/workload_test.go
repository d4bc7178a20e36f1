package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestWorkloadLineRoundTrips(t *testing.T) {
	text := "recipe fair-lock\nclients 3\nworkload try-cycles\n"
	sc, err := Parse("w.scenario", text)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload != "try-cycles" {
		t.Fatalf("Workload = %q, want try-cycles", sc.Workload)
	}
	if got := Format(sc); got != text {
		t.Fatalf("Format = %q, want %q", got, text)
	}
	if _, err := Parse("w.scenario", "recipe fair-lock\nclients 3\nworkload two words\n"); err == nil || !strings.Contains(err.Error(), "w.scenario:3: workload: want one name") {
		t.Fatalf("Parse of a bad workload line: %v", err)
	}
}

func TestUnknownWorkloadIsAnError(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 2}
	sc.Workload = "juggle"
	_, err := Run(sc, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `unknown workload "juggle"`) {
		t.Fatalf("Run with an unknown workload: %v", err)
	}
}

// try-cycles tries the lock and backs off while it is taken: with three
// clients contending, some tries fail, none uses up a cycle, and every
// client updates the store Cycles times.
func TestTryCyclesWorkloadHoldsEveryCycle(t *testing.T) {
	sc := &Scenario{Recipe: "fair-lock", Clients: 3, Cycles: 2, Hold: 50 * time.Millisecond, Seed: 7}
	sc.Workload = "try-cycles"
	res, err := Run(sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Failed() {
		t.Fatalf("verdict:\n%s", res.Verdict)
	}
	h := res.History()
	if !strings.Contains(h, "acquire failed: recipes: not acquired") {
		t.Errorf("no failed try in the history:\n%s", h)
	}
	if n := strings.Count(h, " acquired token="); n != 6 {
		t.Errorf("%d grants, want 6 (3 clients × 2 cycles):\n%s", n, h)
	}
	if got := Format(res.Scenario); !strings.Contains(got, "workload try-cycles\n") {
		t.Errorf("the scenario as run does not name its workload:\n%s", got)
	}
}

// A user's own program: it acquires and, holding the lock, skips the
// store's update and releases without a critical section. The checks see
// what it recorded: a lock cycle and no update.
func TestUsersOwnWorkloadIsRecorded(t *testing.T) {
	var clients []int
	own := func(ctx context.Context, w *Worker) error {
		clients = append(clients, w.Client())
		held, err := w.Acquire(ctx)
		if err != nil {
			return nil
		}
		return w.Release(ctx, held)
	}
	sc := &Scenario{Recipe: "fair-lock", Clients: 2}
	sc.Workload = "acquire-release"
	res, err := Run(sc, RunOptions{Workload: own})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Failed() {
		t.Fatalf("verdict:\n%s", res.Verdict)
	}
	h := res.History()
	if strings.Count(h, " acquired token=") != 2 || strings.Contains(h, "read") {
		t.Errorf("history of acquire-release:\n%s", h)
	}
	if len(clients) != 2 {
		t.Errorf("the program ran for clients %v, want both", clients)
	}
}
