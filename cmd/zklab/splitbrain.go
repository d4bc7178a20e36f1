package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/zklab/zklab/scenarios"
)

func init() {
	register(command{
		name:    "splitbrain",
		summary: "the split-brain story: a paused holder, an expired session, a corrupted (or fenced) store",
		usage: `Usage: zklab splitbrain [--fencing] [--html OUT] [--zk HOST:PORT]

Tells, step by step on the simulator, how a lock holder whose process
pauses for longer than its session timeout comes back still believing it
holds the lock while another client holds it too, and writes over the
other's update. With --fencing the store checks the lease's fencing token
(the lock node's czxid) and refuses the stale write. With --zk the same
story runs on a real ZooKeeper (c1's pause is a local proxy
blackholing its connection); it takes about 15 seconds.

Exit 1 without --fencing (the store was corrupted: a violation), 0 with it.

`,
		run: runSplitBrain,
	})
}

func runSplitBrain(args []string, stdout, stderr io.Writer) error {
	c := find("splitbrain")
	fs := newFlags(c)
	fencing := fs.Bool("fencing", false, "the store checks fencing tokens")
	htmlOut := fs.String("html", "", "write a self-contained HTML report to this file")
	zkServers := fs.String("zk", "", "run on a real ZooKeeper at HOST:PORT instead of the simulator")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *zkServers != "" {
		if *htmlOut != "" {
			return usagef("--html draws a simulator run; it does not go with --zk")
		}
		corrupted, err := splitBrainOnZK(stdout, *zkServers, *fencing)
		if err != nil {
			return err
		}
		if corrupted {
			return violationError{"the store lost an update: two clients held the lock at once"}
		}
		return nil
	}
	name := "split-brain-unfenced"
	if *fencing {
		name = "split-brain-fenced"
	}
	res, file, err := splitBrain(stdout, name, *htmlOut != "")
	if err != nil {
		return err
	}
	if *htmlOut != "" {
		if err := writeRunReport(*htmlOut, file, res); err != nil {
			return err
		}
	}
	if v := res.Verdict.Violations(nil); len(v) > 0 {
		return violationError{fmt.Sprintf("%s failed: %s", v[0].Name, v[0].Detail)}
	}
	return nil
}

// splitBrain replays the library's split-brain scenario and tells it.
func splitBrain(out io.Writer, name string, report bool) (*scenarios.Result, string, error) {
	sc, entry, err := scenarios.LookupLibrary(name)
	if err != nil {
		return nil, "", err
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{Report: report})
	if err != nil {
		return nil, "", err
	}
	sc = res.Scenario // with its defaults filled in
	store := "a store that trusts whoever writes"
	if sc.Store == scenarios.StoreFenced {
		store = "a store that refuses a write whose fencing token is older than one it has seen"
	}
	say(out, "%s: two clients of fair-lock, each reading a counter in the store and writing it", entry.File)
	say(out, "back plus one while it holds the lock; %s.", store)
	say(out, "fault: c1's process stops for 30s (a long GC pause), longer than its %v session.", sc.SessionTimeout)
	say(out, "")
	for _, line := range strings.Split(strings.TrimRight(res.History(), "\n"), "\n") {
		say(out, "%s", line)
	}
	say(out, "")
	sb := res.Verdict.Check(scenarios.CheckSplitBrain)
	st := res.Verdict.Check(scenarios.CheckStore)
	zkh := res.Verdict.Check(scenarios.CheckZKHolders)
	say(out, "ZooKeeper's view (%s): %s %s", zkh.Name, zkh.Outcome, zkh.Detail)
	say(out, "  ZooKeeper never had two holders: it deleted c1's node when c1's session expired.")
	say(out, "the clients' belief (%s): %s", sb.Name, sb.Outcome)
	say(out, "  %s", sb.Detail)
	say(out, "the store (%s): %s", st.Name, st.Outcome)
	say(out, "  %s", st.Detail)
	if sc.Store == scenarios.StoreFenced {
		say(out, "With fencing, c1's late write carried an older token than c2's and was refused: the")
		say(out, "lock is still not a lock while c1 is paused, but the store is safe.")
	} else {
		say(out, "Without fencing, c1's late write went through and c2's update is lost. A ZooKeeper")
		say(out, "lock cannot stop a paused holder; only the resource can, by checking tokens.")
	}
	return res, entry.File, nil
}
