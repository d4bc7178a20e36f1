package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/zklab/zklab/scenarios"
)

// staleSplitBrain tells the stale-read story of a 3-server ensemble
// (zklab splitbrain --stale): the library's stale-resume-ensemble, or
// with sync its twin sync-resume-ensemble, replayed on the simulator.
func staleSplitBrain(out io.Writer, withSync bool) error {
	name := "stale-resume-ensemble"
	if withSync {
		name = "sync-resume-ensemble"
	}
	sc, entry, err := scenarios.LookupLibrary(name)
	if err != nil {
		return err
	}
	res, err := scenarios.Replay(sc, scenarios.RunOptions{})
	if err != nil {
		return usagef("%v", err)
	}
	say(out, "%s: two clients of %s on a 3-server ensemble (s1, s2, s3; the leader is s3).", entry.File, sc.Recipe)
	if withSync {
		say(out, "sync-resume-lock syncs before each listing it decides on: the follower it is")
		say(out, "connected to first catches up with what the leader has committed.")
	} else {
		say(out, "stale-resume-lock keeps its node when it releases alone, and resumes it at its next")
		say(out, "acquire if a plain exists finds it and a plain listing shows it alone.")
	}
	say(out, "faults: follower s2, c1's server, stops applying what the leader commits for 30 s;")
	say(out, "then c1's process stops for 15 s while it holds, longer than its 10 s session.")
	say(out, "")
	for _, line := range strings.Split(strings.TrimRight(res.History(), "\n"), "\n") {
		say(out, "%s", line)
	}
	say(out, "")
	lock := res.Verdict.Check(scenarios.CheckLock)
	zkh := res.Verdict.Check(scenarios.CheckZKHolders)
	sb := res.Verdict.Check(scenarios.CheckSplitBrain)
	seq := res.Verdict.Check(scenarios.CheckSequential)
	say(out, "the lock's history (%s): %s %s", lock.Name, lock.Outcome, lock.Detail)
	say(out, "ZooKeeper's view (%s): %s %s", zkh.Name, zkh.Outcome, zkh.Detail)
	say(out, "the clients' belief (%s): %s", sb.Name, sb.Outcome)
	say(out, "each session's reads (%s): %s %s", seq.Name, seq.Outcome, seq.Detail)
	if withSync {
		say(out, "When c1 woke, its sync made s2 apply the expiry of c1's session, which closed c1's")
		say(out, "connection: c1 learned that its lease was lost. One holder at a time; c1's belief")
		say(out, "while it was paused is split-brain's, which the fenced store made harmless.")
	} else {
		say(out, "When c1 woke, the leader had expired its session, deleted its node and granted c2.")
		say(out, "s2 had applied none of it and still answered c1's old session: its node alone in")
		say(out, "the lock. c1 kept it and resumed it, and held beside c2. No read broke ZooKeeper's")
		say(out, "promise (each session's reads move forward): a read from a follower may be stale.")
		say(out, "Run 'zklab splitbrain --stale --sync' for the twin that syncs first.")
	}
	if v := res.Verdict.Violations(nil); len(v) > 0 {
		return violationError{fmt.Sprintf("%s failed: %s", v[0].Name, v[0].Detail)}
	}
	return nil
}
