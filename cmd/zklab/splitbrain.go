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
       zklab splitbrain --election
       zklab splitbrain --stale [--sync]

Tells, step by step on the simulator, how a lock holder whose process
pauses for longer than its session timeout comes back still believing it
holds the lock while another client holds it too, and writes over the
other's update. With --fencing the store checks the lease's fencing token
(the lock node's czxid) and refuses the stale write. With --zk the same
story runs on a real ZooKeeper, sized for it: 4 s sessions (the least a
default server grants) and a 12 s pause, which blackholes c1's local
proxy and holds its task; it takes about 13 seconds.

With --election the story is leader election's (leader-latch): a leader
paused past its session timeout, before a resource that trusts whoever
writes and before one that checks the term's epoch; exit 1 (the first
resource was corrupted). Simulator only.

With --stale the story is a 3-server ensemble's: a holder paused past its
session timeout wakes on a follower that has not applied its expiry,
reads its node as still there, and resumes it beside the new holder
(stale-resume-lock; exit 1). With --sync too, the same run with
sync-resume-lock, which syncs before it decides (exit 0). Simulator only.

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
	election := fs.Bool("election", false, "tell leader election's story, a fenced and an unfenced resource")
	stale := fs.Bool("stale", false, "tell the stale-read story of a 3-server ensemble")
	withSync := fs.Bool("sync", false, "with --stale: the recipe that syncs before it decides")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *withSync && !*stale {
		return usagef("--sync is for --stale")
	}
	if *stale {
		if *fencing || *htmlOut != "" || *zkServers != "" || *election {
			return usagef("--stale tells its story on the simulator: it takes no --fencing, --html, --zk or --election")
		}
		return staleSplitBrain(stdout, *withSync)
	}
	if *election {
		if *fencing || *htmlOut != "" || *zkServers != "" {
			return usagef("--election tells both resources' stories on the simulator: it takes no --fencing, --html or --zk")
		}
		res, err := electionSplitBrain(stdout)
		if err != nil {
			return err
		}
		return electionSplitBrainResult(res)
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
		replay := "zklab splitbrain"
		if *fencing {
			replay += " --fencing"
		}
		if err := writeStoryReport(*htmlOut, file, res, splitBrainStory(res, replay)); err != nil {
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

// splitBrainStory tells the split-brain story in the words of a report,
// each step at its place on the timeline, from what the run recorded: on
// a real server, a step the run could not see (the server's expiry) is
// left out.
func splitBrainStory(res *scenarios.Result, replay string) report {
	sc, rep := res.Scenario, res.Report
	r := report{Title: replay, Replay: replay}
	if sc.Store == scenarios.StoreFenced {
		r.Intro = append(r.Intro, "Two clients of fair-lock each read a counter in the store and write it back plus one while they hold the lock. The store checks fencing tokens: it refuses a read or a write whose token (the lock node's czxid) is older than one it has seen.")
	} else {
		r.Intro = append(r.Intro, "Two clients of fair-lock each read a counter in the store and write it back plus one while they hold the lock. The store trusts whoever writes.")
	}
	var pause scenarios.FaultSpan
	for _, f := range rep.Faults {
		if f.Kind == sim.FaultPause && f.Client == 1 {
			pause = f
			break
		}
	}
	r.Intro = append(r.Intro, fmt.Sprintf("The fault: c1's process stops for %s, longer than its %s session timeout. Follow the numbers on the timeline.", seconds(pause.Duration), seconds(sc.SessionTimeout)))
	holdOf := func(c int) (scenarios.Hold, bool) {
		for _, h := range rep.Holds {
			if h.Client == c {
				return h, true
			}
		}
		return scenarios.Hold{}, false
	}
	storeOp := func(c int, write bool) (scenarios.StoreOp, bool) {
		for _, op := range rep.Store {
			if op.Client == c && op.Write == write {
				return op, true
			}
		}
		return scenarios.StoreOp{}, false
	}
	add := func(c int, step uint64, format string, args ...any) {
		r.Story = append(r.Story, storyStep{Client: c, Step: step, Text: fmt.Sprintf(format, args...)})
	}
	top := func() { r.Story[len(r.Story)-1].Top = true }
	h1, ok1 := holdOf(1)
	if ok1 {
		read := ""
		if op, ok := storeOp(1, false); ok && !op.Refused {
			read = fmt.Sprintf(" and reads the store: %d", op.Value)
		}
		add(1, h1.From, "c1 acquires the lock (fencing token %#x) at %s%s.", h1.Token, seconds(h1.FromTime), read)
	}
	if pause.Kind != "" {
		add(1, pause.Step, "At %s c1's process stops for %s, a long garbage-collection pause. Its heartbeats stop with it; it still believes it holds the lock.", seconds(pause.Time), seconds(pause.Duration))
		top()
	}
	for _, e := range rep.Expiries {
		if e.Client == 1 {
			add(1, e.Step, "The server last heard from c1 at %s. Its %s session timeout runs out, and at %s the server expires the session and deletes c1's lock node. Paused, c1 knows nothing of it.", seconds(e.LastHeard), seconds(sc.SessionTimeout), seconds(e.Time))
			top()
			break
		}
	}
	h2, ok2 := holdOf(2)
	if ok2 {
		add(2, h2.From, "c2's watch fires and it acquires the lock (token %#x) at %s. From here both c1 and c2 believe they hold it: the split-brain window, in red.", h2.Token, seconds(h2.FromTime))
	}
	if op, ok := storeOp(2, true); ok {
		if op.Refused {
			add(2, op.Call, "c2 writes %d: the store refuses it.", op.Value)
		} else {
			add(2, op.Call, "c2 reads %d, writes %d and releases the lock.", op.Value-1, op.Value)
		}
	}
	if op, ok := storeOp(1, true); ok {
		switch {
		case op.Refused:
			add(1, op.Call, "At %s c1 wakes and writes %d, what it read plus one, with token %#x. The store has seen c2's newer token and refuses the write: c2's update is safe.", seconds(pause.End), op.Value, op.Token)
		case op.Overwrote != 0:
			add(1, op.Call, "At %s c1 wakes and writes %d, what it read plus one, over %d. The store takes it: c%d's update is lost.", seconds(pause.End), op.Value, op.Over, op.Overwrote)
		default:
			add(1, op.Call, "At %s c1 wakes and writes %d.", seconds(pause.End), op.Value)
		}
	}
	for _, e := range rep.Events {
		if e.Client == 1 && e.Kind == "session" && e.State == "StateExpired" {
			add(1, e.Step, "Only when it reconnects, at %s, does c1 learn that its session expired; its release fails: the lease was lost.", seconds(e.Time))
			break
		}
	}
	if sc.Store == scenarios.StoreFenced {
		r.Moral = []string{"With fencing, c1's late write carried an older token than c2's and was refused: the lock is still not a lock while c1 is paused, but the store is safe."}
	} else {
		r.Moral = []string{"ZooKeeper never had two holders: it deleted c1's node when c1's session expired. But a ZooKeeper lock cannot stop a paused holder; only the resource can, by checking tokens (zklab splitbrain --fencing)."}
	}
	return r
}
