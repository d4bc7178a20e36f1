package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

// electionSplitBrain tells the split-brain story of leader election
// (zklab splitbrain --election): the library's two leader stories, one
// leader paused past its session timeout, first before a resource that
// trusts whoever writes, then before one that checks the term's epoch.
// It returns the unfenced run's result: its store is the violation.
func electionSplitBrain(out io.Writer) (*scenarios.Result, error) {
	var unfenced *scenarios.Result
	for k, name := range []string{"leader-split-brain-unfenced", "leader-split-brain-fenced"} {
		sc, entry, err := scenarios.LookupLibrary(name)
		if err != nil {
			return nil, err
		}
		res, err := scenarios.Replay(sc, scenarios.RunOptions{})
		if err != nil {
			return nil, usagef("%v", err)
		}
		sc = res.Scenario
		if k == 0 {
			unfenced = res
			var pause sim.ScheduledFault
			for _, f := range sc.Faults {
				if f.Kind == sim.FaultPause {
					pause = f
				}
			}
			say(out, "Two candidates of %s (Curator's LeaderLatch); the leader reads a counter in a", sc.Recipe)
			say(out, "resource and writes it back plus one, after checking that its term is neither")
			say(out, "SUSPENDED nor LOST. fault: c1's process stops for %v, longer than its %v session.", pause.Duration, sc.SessionTimeout)
		}
		say(out, "")
		if sc.Store == scenarios.StoreFenced {
			say(out, "== %s: a resource that refuses a write whose epoch is older than one it has seen ==", entry.File)
		} else {
			say(out, "== %s: a resource that trusts whoever writes ==", entry.File)
		}
		say(out, "")
		for _, line := range strings.Split(strings.TrimRight(res.History(), "\n"), "\n") {
			say(out, "%s", line)
		}
		say(out, "")
		zkh := res.Verdict.Check(scenarios.CheckZKHolders)
		sb := res.Verdict.Check(scenarios.CheckSplitBrain)
		st := res.Verdict.Check(scenarios.CheckStore)
		say(out, "ZooKeeper's view (%s): %s %s", zkh.Name, zkh.Outcome, zkh.Detail)
		say(out, "  one leader at a time: the lowest candidate node went with c1's session.")
		say(out, "the candidates' belief (%s): %s", sb.Name, sb.Outcome)
		say(out, "  %s", sb.Detail)
		say(out, "the resource (%s): %s", st.Name, st.Outcome)
		say(out, "  %s", st.Detail)
	}
	say(out, "")
	say(out, "Both runs had two leaders in the candidates' belief, never in ZooKeeper's. c1 looked")
	say(out, "at its term before acting, and the pause came after the look. Only the epoch (the")
	say(out, "czxid of the leader's candidate node), checked at the resource, refused c1's write.")
	return unfenced, nil
}

// electionSplitBrainResult turns the story's unfenced run into the exit
// status: 1 for its corrupted resource.
func electionSplitBrainResult(res *scenarios.Result) error {
	if v := res.Verdict.Violations(nil); len(v) > 0 {
		return violationError{fmt.Sprintf("%s failed: %s", v[0].Name, v[0].Detail)}
	}
	return nil
}
