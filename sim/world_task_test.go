package sim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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

// Wait wakes on a channel of the user's own that another task sends on,
// and on one the caller of Run closes between runs, as it does on a watch
// the simulation fires: a waiter that found its channels empty looks again
// after any user code has run, not only after the simulation delivered
// a watch.
func TestWaitWakesOnChannelsUserCodeSendsOnOrCloses(t *testing.T) {
	w := New(Config{Seed: 1})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sent, closed := make(chan zk.Event, 1), make(chan zk.Event)
	var gotSent, gotClosed zk.Event
	var sentErr, closedErr error
	var sentAt, closedAt time.Duration
	w.Go(c, "waits for a send", func(ctx context.Context) {
		gotSent, sentErr = c.Wait(ctx, sent)
		sentAt = w.Now()
	})
	w.Go(c, "waits for a close", func(ctx context.Context) {
		gotClosed, closedErr = c.Wait(ctx, closed)
		closedAt = w.Now()
	})
	w.Go(c, "sender", func(ctx context.Context) {
		c.Sleep(ctx, 3*time.Second) // the waiters look, and keep looking, meanwhile
		sent <- zk.Event{Type: zk.EventNodeCreated, Path: "/mine"}
	})
	if err := w.RunFor(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if sentErr != nil || gotSent.Path != "/mine" || sentAt != 3*time.Second {
		t.Fatalf("Wait on the sent channel: %+v, %v at %v; want /mine at 3s", gotSent, sentErr, sentAt)
	}
	if closedAt != 0 {
		t.Fatalf("Wait on the open channel returned at %v with %+v, %v", closedAt, gotClosed, closedErr)
	}
	close(closed)
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if closedErr != nil || closedAt != 5*time.Second || gotClosed != (zk.Event{}) {
		t.Fatalf("Wait on the closed channel: %+v, %v at %v; want the zero event at 5s", gotClosed, closedErr, closedAt)
	}
}

// A waiter on its client's own watch alone looks again only when the
// simulation delivers to a watch; one that also waits on a channel of its
// own must look whenever user code ran, or it misses the send.
func TestWaitOnAWatchAndAChannelOfItsOwnWakesOnEither(t *testing.T) {
	w := New(Config{Seed: 1})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mine := make(chan zk.Event, 1)
	var mixed, watchOnly zk.Event
	var mixedAt, watchOnlyAt time.Duration
	w.Go(c, "waits on a watch and its own channel", func(ctx context.Context) {
		watch := existsWatch(ctx, t, c, "/a")
		if watch == nil {
			return
		}
		mixed, _ = c.Wait(ctx, watch, mine)
		mixedAt = w.Now()
	})
	w.Go(c, "waits on a watch", func(ctx context.Context) {
		watch := existsWatch(ctx, t, c, "/b")
		if watch == nil {
			return
		}
		watchOnly, _ = c.Wait(ctx, watch)
		watchOnlyAt = w.Now()
	})
	w.Go(c, "sends, then creates", func(ctx context.Context) {
		c.Sleep(ctx, 3*time.Second)
		mine <- zk.Event{Type: zk.EventNodeCreated, Path: "/mine"}
		c.Sleep(ctx, time.Second)
		if _, err := c.Create(ctx, "/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Error(err)
		}
	})
	if err := w.RunFor(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if mixed.Path != "/mine" || mixedAt != 3*time.Second {
		t.Errorf("the waiter on a watch and its own channel got %+v at %v; want /mine at 3s", mixed, mixedAt)
	}
	if watchOnly.Type != zk.EventNodeCreated || watchOnly.Path != "/b" || watchOnlyAt < 4*time.Second {
		t.Errorf("the waiter on a watch got %+v at %v; want /b created after 4s", watchOnly, watchOnlyAt)
	}
}

// checkUnwoken holds World.woken, which enumerate trusts to skip the
// tasks, to the tasks woken: a count gone stale fails it, and the count
// follows the wakes of a run with blocked tasks (a sleep, and WaitSession
// with its client's changes of state) to its end.
func TestCheckUnwokenCountsWoken(t *testing.T) {
	w := New(Config{Seed: 1})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "sleeper", func(ctx context.Context) { c.Sleep(ctx, time.Second) })
	w.Go(c, "session", func(ctx context.Context) {
		if _, err := c.WaitSession(ctx, c.Session()); err != nil {
			t.Error(err)
		}
	})
	if err := w.RunFor(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w.checkUnwoken()
	if len(w.tasks) == 0 {
		t.Fatal("no task left blocked")
	}
	w.woken++
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "World.woken counts") {
				t.Errorf("checkUnwoken with a stale count: %v, want its panic", r)
			}
		}()
		w.checkUnwoken()
	}()
	w.woken--
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	w.checkUnwoken()
	if w.woken != 0 {
		t.Fatalf("woken %d after every task ended", w.woken)
	}
}

// checkUnwoken holds World.queued, which enumerate trusts to skip the
// connections, to the messages on their queues: a count gone stale fails
// it, and the count follows a run's requests, replies and close to none.
func TestCheckUnwokenCountsQueued(t *testing.T) {
	w, c := runCreate(t, "/n", nil)
	defer w.Close()
	w.checkUnwoken()
	w.queued++
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "World.queued counts") {
				t.Errorf("checkUnwoken with a stale count: %v, want its panic", r)
			}
		}()
		w.checkUnwoken()
	}()
	w.queued--
	c.Close()
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	w.checkUnwoken()
	if w.queued != 0 {
		t.Fatalf("queued %d after the client closed", w.queued)
	}
}

// A world that closes gives its tasks back to the pool (releaseTasks),
// zeroed: those that ended and those Close ended.
func TestClosedWorldGivesTasksBack(t *testing.T) {
	w := New(Config{Seed: 1})
	w.Go(nil, "ends", func(ctx context.Context) {})
	w.Go(nil, "blocks", func(ctx context.Context) { w.block(cond(func() bool { return false })) })
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	var made []*task
	for tk := w.lastMade; tk != nil; tk = tk.madeBefore {
		made = append(made, tk)
	}
	if len(made) != 2 {
		t.Fatalf("%d tasks listed as made, want 2", len(made))
	}
	w.Close()
	if w.lastMade != nil || w.spareTasks != nil {
		t.Fatalf("the closed world keeps its tasks' list or store")
	}
	for _, tk := range made {
		if tk.name != "" || tk.w != nil || tk.done {
			t.Fatalf("a task given back is not zero: %+v", tk)
		}
	}
}

// runCreate runs a world of one client that creates path and then, if
// then is not nil, calls then; it returns the world, not closed, and the
// client.
func runCreate(t *testing.T, path string, then func(c *Client)) (*World, *Client) {
	t.Helper()
	w := New(Config{Seed: 1})
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "create", func(ctx context.Context) {
		if _, err := c.Create(ctx, path, nil, 0, acl); err != nil {
			t.Error(err)
		}
		if then != nil {
			then(c)
		}
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	return w, c
}
