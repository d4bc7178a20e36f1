package sim

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A task that exits with runtime.Goexit fails the run with its reason, and
// the rest of the world, and the caller of Run, go on.
func TestTaskGoexitFailsRun(t *testing.T) {
	w := New(Config{Seed: 1})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	otherDone := false
	w.Go(c, "quitter", func(ctx context.Context) {
		c.Sleep(ctx, time.Millisecond)
		runtime.Goexit()
	})
	w.Go(c, "other", func(ctx context.Context) {
		c.Sleep(ctx, 2*time.Millisecond)
		otherDone = true
	})
	err = w.Run()
	if err == nil || !strings.Contains(err.Error(), `task "quitter" exited with runtime.Goexit`) {
		t.Fatalf("Run: %v, want the Goexit reported", err)
	}
	if err := w.Run(); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if !otherDone {
		t.Fatal("the other task did not finish")
	}
}

// A panicking task fails the run with its panic.
func TestTaskPanicFailsRun(t *testing.T) {
	w := New(Config{Seed: 1})
	defer w.Close()
	w.Go(nil, "boom", func(ctx context.Context) { panic("boom") })
	if err := w.Run(); err == nil || !strings.Contains(err.Error(), `task "boom" panicked: boom`) {
		t.Fatalf("Run: %v, want the panic reported", err)
	}
}

// Close ends a blocked task where it stands: its deferred calls run, a
// client call they make ends them too, and the code after the blocking
// call never runs.
func TestCloseRunsDeferredCallsOfBlockedTasks(t *testing.T) {
	w := New(Config{Seed: 1})
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"a", "b"} {
		w.Go(c, name, func(ctx context.Context) {
			defer func() { got = append(got, name+" outer defer") }()
			defer func() {
				got = append(got, name+" defer")
				c.Sleep(ctx, time.Second) // the process is dead: this ends the deferred call
				got = append(got, name+" after sleep in defer")
			}()
			c.Sleep(ctx, time.Hour)
			got = append(got, name+" woke")
		})
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := "a defer, a outer defer, b defer, b outer defer"
	if s := strings.Join(got, ", "); s != want {
		t.Fatalf("got %s, want %s", s, want)
	}
}
