package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// creates runs one client that creates ten nodes, calling mid after the
// third, and returns the trace.
func creates(faults []ScheduledFault, mid func(w *World)) string {
	w := New(Config{Seed: 3, KeepTrace: true, Faults: faults})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	w.Go(c, "creator", func(ctx context.Context) {
		for i := range 10 {
			c.Create(ctx, fmt.Sprintf("/n%d", i), nil, 0, acl)
			if i == 2 && mid != nil {
				mid(w)
			}
		}
	})
	w.RunFor(time.Minute)
	var b strings.Builder
	for _, e := range w.Trace() {
		b.WriteString(e.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// A fault scheduled from inside a run for the next step strikes where the
// same fault listed in the configuration at that step does: a run aimed
// at a moment replays from its scenario file.
func TestScheduleFaultReplaysAsConfigured(t *testing.T) {
	var at ScheduledFault
	aimed := creates([]ScheduledFault{{AtTime: 30 * time.Second, Fault: Fault{Kind: FaultPause, Client: 1, Duration: time.Second}}}, func(w *World) {
		at = ScheduledFault{AtStep: w.StepCount() + 1, Fault: Fault{Kind: FaultDisconnect, Client: 1, Duration: 2 * time.Second}}
		if err := w.ScheduleFault(at); err != nil {
			t.Fatal(err)
		}
		if len(w.faults) != 2 || w.faults[0] != at {
			t.Errorf("faults to come %v: a fault at a step goes before those at a time", w.faults)
		}
		if err := w.ScheduleFault(ScheduledFault{AtStep: w.StepCount(), Fault: at.Fault}); err == nil {
			t.Error("a fault scheduled at the current step was taken")
		}
	})
	if !strings.Contains(aimed, "fault disconnect c1") {
		t.Fatalf("the aimed fault never struck:\n%s", aimed)
	}
	replayed := creates([]ScheduledFault{at, {AtTime: 30 * time.Second, Fault: Fault{Kind: FaultPause, Client: 1, Duration: time.Second}}}, nil)
	if aimed != replayed {
		t.Errorf("aimed:\n%s\nreplayed with the fault at step %d:\n%s", aimed, at.AtStep, replayed)
	}
}
