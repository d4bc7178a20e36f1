package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
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
story runs on a real ZooKeeper, sized for it: 4 s sessions (the least a
default server grants) and a 12 s pause, which blackholes c1's local
proxy and holds its task; it takes about 13 seconds.

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
	var servers []string
	if *zkServers != "" {
		var err error
		if servers, err = zkList(*zkServers); err != nil {
			return err
		}
	}
	name := "split-brain-unfenced"
	if *fencing {
		name = "split-brain-fenced"
	}
	res, file, err := splitBrain(stdout, name, *htmlOut != "", servers)
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

// The split-brain story on a real server is sized for it: the least
// session timeout a default server grants, and a pause of three.
const (
	zkSplitSessionTimeout = 4 * time.Second
	zkSplitPause          = 3 * zkSplitSessionTimeout
)

// splitBrain replays the library's split-brain scenario and tells it: on
// the simulator, or on the real ZooKeeper at servers.
func splitBrain(out io.Writer, name string, report bool, servers []string) (*scenarios.Result, string, error) {
	sc, entry, err := scenarios.LookupLibrary(name)
	if err != nil {
		return nil, "", err
	}
	var res *scenarios.Result
	if servers == nil {
		res, err = scenarios.Replay(sc, scenarios.RunOptions{Report: report})
	} else {
		sc.SessionTimeout = zkSplitSessionTimeout
		for i := range sc.Faults {
			if sc.Faults[i].Kind == sim.FaultPause {
				sc.Faults[i].Duration = zkSplitPause
			}
		}
		res, err = scenarios.Run(sc, scenarios.RunOptions{Report: report, ZK: servers})
	}
	if err != nil {
		return nil, "", usagef("%v", err)
	}
	sc = res.Scenario // with its defaults filled in
	pause := time.Duration(0)
	for _, f := range sc.Faults {
		if f.Kind == sim.FaultPause {
			pause = f.Duration
		}
	}
	store := "a store that trusts whoever writes"
	if sc.Store == scenarios.StoreFenced {
		store = "a store that refuses a write whose fencing token is older than one it has seen"
	}
	where := ""
	if servers != nil {
		where = fmt.Sprintf(" on ZooKeeper at %s (sized for it)", strings.Join(servers, ","))
	}
	say(out, "%s%s: two clients of fair-lock, each reading a counter in the store and writing it", entry.File, where)
	say(out, "back plus one while it holds the lock; %s.", store)
	say(out, "fault: c1's process stops for %v (a long GC pause), longer than its %v session.", pause, sc.SessionTimeout)
	say(out, "")
	for _, line := range strings.Split(strings.TrimRight(res.History(), "\n"), "\n") {
		say(out, "%s", line)
	}
	say(out, "")
	for _, note := range res.Notes {
		say(out, "on the server: %s", note)
	}
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
