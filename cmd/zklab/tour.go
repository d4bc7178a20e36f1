package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

func init() {
	register(command{
		name:    "tour",
		summary: "a guided tour on the simulator: lost replies, the herd effect, split-brain, a bug hunt",
		usage: `Usage: zklab tour

Walks through what goes wrong with ZooKeeper locks, each demonstration a
deterministic run on the simulator, explained step by step. Exits 0 when
every demonstration showed what it should.

`,
		run: runTour,
	})
}

// A demonstration runs on the simulator and reports whether it showed
// what it is meant to show.
type demonstration struct {
	title string
	run   func(out io.Writer) (bool, error)
}

var tourDemos = []demonstration{
	{"A write applied while its reply was lost", demoLostReply},
	{"A lost reply orphans a lock node, unless the name is protected", demoOrphan},
	{"The herd effect", demoHerd},
	{"Split-brain: a lock is not a lock for a paused holder", demoSplitBrain},
	{"Fencing tokens make the store safe anyway", demoFencing},
	{"A bug hunt: exploration finds a flawed recipe and replays the failure", demoBugHunt},
}

func runTour(args []string, stdout, stderr io.Writer) error {
	c := find("tour")
	fs := newFlags(c)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	failed := 0
	for i, d := range tourDemos {
		fmt.Fprintf(stdout, "\n== %d. %s ==\n\n", i+1, d.title)
		ok, err := d.run(stdout)
		if err != nil {
			return fmt.Errorf("demonstration %q: %w", d.title, err)
		}
		if ok {
			fmt.Fprintln(stdout, "\n   -> shown as expected.")
		} else {
			failed++
			fmt.Fprintln(stdout, "\n   -> NOT shown: the simulator or a recipe did not behave as described.")
		}
	}
	if failed > 0 {
		return violationError{fmt.Sprintf("%d of %d demonstrations did not show what they should", failed, len(tourDemos))}
	}
	fmt.Fprintf(stdout, "\nAll %d demonstrations showed what they should.\n", len(tourDemos))
	return nil
}

var worldACL = zk.WorldACL(zk.PermAll)

func say(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "   "+format+"\n", args...)
}

// demoLostReply shows the failure that breaks lock recipes: the server
// applies a create, the reply is lost, and the client is told only that
// the connection closed.
func demoLostReply(out io.Writer) (bool, error) {
	w := sim.New(sim.Config{Seed: 1})
	defer w.Close()
	c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
	if err != nil {
		return false, err
	}
	var createErr error
	var exists bool
	var owner int64
	w.Go(c, "client", func(ctx context.Context) {
		c.Create(ctx, "/locks", nil, 0, worldACL)
		say(out, "client 1 connected with session %#x and sends: create /locks/lock EPHEMERAL", c.SessionID())
		w.Inject(sim.Fault{Kind: sim.FaultDropReply, Client: 1})
		say(out, "fault: the server applies the create, and the reply is lost on the way back.")
		_, createErr = c.Create(ctx, "/locks/lock", nil, zk.FlagEphemeral, worldACL)
		say(out, "the client's call returns: %v", createErr)
		var stat *zk.Stat
		exists, stat, _ = c.Exists(ctx, "/locks/lock")
		if stat != nil {
			owner = stat.EphemeralOwner
		}
		say(out, "after reconnecting (same session %#x) it asks: does /locks/lock exist? %v, owner %#x", c.SessionID(), exists, owner)
	})
	if err := w.Run(); err != nil {
		return false, err
	}
	say(out, "An error does not mean the write failed. A lock recipe that retries the create")
	say(out, "blindly makes a second node; one that gives up leaves the first behind.")
	return errors.Is(createErr, zk.ErrConnectionClosed) && exists && owner == c.SessionID(), nil
}

// demoOrphan runs unprotected-lock and fair-lock through the same lost
// reply.
func demoOrphan(out io.Writer) (bool, error) {
	results := map[string]string{}
	for _, name := range []string{"unprotected-lock", "fair-lock"} {
		r, _ := recipes.Lookup(name)
		w := sim.New(sim.Config{Seed: 2})
		c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			return false, err
		}
		lock := r.New(c, "/locks/job", recipes.Options{})
		var outcome string
		w.Go(c, "client", func(ctx context.Context) {
			c.Create(ctx, "/locks", nil, 0, worldACL)
			c.Create(ctx, "/locks/job", nil, 0, worldACL)
			w.Inject(sim.Fault{Kind: sim.FaultDropReply, Client: 1})
			actx, cancel := c.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			lease, err := lock.Acquire(actx)
			kids, _, _ := c.Children(ctx, "/locks/job")
			if err != nil {
				outcome = fmt.Sprintf("acquire failed after 30s: %v; lock nodes left: %s", err, strings.Join(kids, ", "))
				return
			}
			outcome = fmt.Sprintf("acquired (token %d); lock nodes: %s", lease.Token(), strings.Join(kids, ", "))
			lease.Release(ctx)
		})
		err = w.Run()
		w.Close()
		if err != nil {
			return false, err
		}
		results[name] = outcome
		say(out, "%-16s the reply to its create is lost -> %s", name+":", outcome)
	}
	say(out, "unprotected-lock created a second node and now waits behind its own first one.")
	say(out, "fair-lock names its node with a GUID and its session, lists the children after")
	say(out, "the error, finds its node and goes on (ZooKeeper's lock recipe, \"GUID\" note).")
	return strings.HasPrefix(results["unprotected-lock"], "acquire failed") && strings.HasPrefix(results["fair-lock"], "acquired"), nil
}

// demoHerd compares the watch notifications of herd-lock and fair-lock.
func demoHerd(out io.Writer) (bool, error) {
	herd, err := herdOnSim("herd-lock", 10, 1)
	if err != nil {
		return false, err
	}
	fair, err := herdOnSim("fair-lock", 10, 1)
	if err != nil {
		return false, err
	}
	say(out, "10 clients queue on one lock; each release comes once every waiter waits again.")
	say(out, "herd-lock: every waiter watches the lock's children, so every release wakes all of")
	say(out, "them: %d notifications and %d getChildren calls for 9 releases (n(n-1)/2 = 45).", herd.Notifications, herd.GetChildren)
	say(out, "fair-lock: each waiter watches only its predecessor: %d notifications (n-1 = 9).", fair.Notifications)
	return herd.Notifications == 45 && fair.Notifications == 9, nil
}

// demoSplitBrain replays the library's unfenced split-brain scenario.
func demoSplitBrain(out io.Writer) (bool, error) {
	res, _, err := splitBrain(out, "split-brain-unfenced", false, nil)
	if err != nil {
		return false, err
	}
	v := res.Verdict
	return v.Check(scenarios.CheckSplitBrain).Outcome == scenarios.Fail &&
		v.Check(scenarios.CheckStore).Outcome == scenarios.Fail &&
		v.Check(scenarios.CheckZKHolders).Outcome == scenarios.Pass, nil
}

// demoFencing replays the same pause with a fenced store.
func demoFencing(out io.Writer) (bool, error) {
	res, _, err := splitBrain(out, "split-brain-fenced", false, nil)
	if err != nil {
		return false, err
	}
	v := res.Verdict
	return v.Check(scenarios.CheckSplitBrain).Outcome == scenarios.Fail &&
		v.Check(scenarios.CheckStore).Outcome == scenarios.Pass, nil
}

// demoBugHunt explores unprotected-lock until a check fails, then replays
// the shrunk scenario file it wrote. Its shrinking ends by itself well
// within the bound, so the tour prints the same file on every machine.
func demoBugHunt(out io.Writer) (bool, error) {
	dir, err := os.MkdirTemp("", "zklab-tour-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	say(out, "zklab explore --recipe unprotected-lock: schedules and faults drawn through rapid,")
	say(out, "every run checked; the first failing run is shrunk and written as a scenario file.")
	res, err := scenarios.Explore(scenarios.ExploreOptions{Recipe: "unprotected-lock", Runs: 2000, Seed: 1, Dir: dir, ShrinkTime: shrinkTimeDefault})
	if err != nil {
		return false, err
	}
	if res.Failure == nil {
		say(out, "no violation in %d schedules", res.Runs)
		return false, nil
	}
	found := res.Failure.Verdict.Violations(nil)
	say(out, "found after %d schedules: %s: %s", res.Runs+1, found[0].Name, oneLineText(found[0].Detail))
	say(out, "(demonstration 2 built this failure by hand; exploration finds it unaided.)")
	text, err := os.ReadFile(res.File)
	if err != nil {
		return false, err
	}
	say(out, "the shrunk scenario file, %d lines:", strings.Count(string(text), "\n"))
	for _, line := range strings.Split(strings.TrimRight(string(text), "\n"), "\n") {
		say(out, "  | %s", line)
	}
	replayed, err := scenarios.ReplayFile(res.File, scenarios.RunOptions{})
	if err != nil {
		return false, err
	}
	again := replayed.Verdict.Violations(nil)
	say(out, "zklab run FILE replays it: %s fails again.", again[0].Name)
	return len(again) > 0 && again[0].Name == found[0].Name, nil
}
