package scenarios

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

// shapeFor gives the exploration of a recipe what its flaw needs to show,
// beyond the defaults. old-session-latch leads on its old session's node
// only after a disconnect longer than a connection timeout (a quarter of
// the session timeout) and shorter than the session timeout, and the harm
// shows only if it still leads when the old session expires: a term of
// seconds, and a store that takes a stale leader's write. The faults are
// disconnects alone, so that a correct leader-latch explored the same way
// stays clean (a pause longer than the session would split any leader's
// brain).
//
// stale-resume-lock resumes a node ZooKeeper deleted only when it wakes
// from a pause past its session on a lagging follower (drawStaleSession)
// while another client still acts on the lock the expiry gave it, which
// holds of seconds make likelier; and its release must find its node
// alone in the follower's frozen view, which two clients leave more often
// than five. Exploration finds it without this shape too, in about four
// times the schedules. Its correct twin, sync-resume-lock, is explored
// the same way (TestStaleResumeShapeTwinClean).
func shapeFor(recipe string, o ExploreOptions) ExploreOptions {
	switch recipe {
	case "old-session-latch":
		o.Store = StoreUnfenced
		o.Faults = []sim.FaultKind{sim.FaultDisconnect}
		o.Hold = 5 * time.Second
	case "stale-resume-lock":
		o.Hold = 10 * time.Second
		o.Clients = 2
	}
	return o
}

// TestStaleResumeShapeTwinClean: sync-resume-lock, stale-resume-lock's
// correct twin, explored on 3 servers with stale-resume-lock's shape, the
// faults of its window and then every fault kind, stays clean, where
// TestExploreEveryRecipe finds the flaw with the same shape and seed in
// a few hundred schedules. Fair-lock, whose release deletes its node,
// is explored the same way. ZKLAB_ENSEMBLE_LONG runs 20,000 schedules of
// each (TestEnsembleLong explores every correct recipe on 3 servers, at
// ZKLAB_LONG_RUNS schedules, with the default shape).
func TestStaleResumeShapeTwinClean(t *testing.T) {
	runs := 500
	if testing.Short() {
		runs = 50
	}
	if os.Getenv("ZKLAB_ENSEMBLE_LONG") != "" {
		runs = 20000
	}
	for _, recipe := range []string{"sync-resume-lock", "fair-lock"} {
		for _, faults := range [][]sim.FaultKind{{sim.FaultPause, sim.FaultLag}, nil} {
			o := shapeFor("stale-resume-lock", ExploreOptions{Recipe: recipe, Runs: runs, Seed: 1, Dir: t.TempDir(), ShrinkTime: time.Second, Cycles: 2, Servers: []int{3}, Faults: faults})
			res, err := Explore(o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failure != nil {
				t.Fatalf("%s (faults %s) failed after %d runs:\n%s\n%s", recipe, faultsLabel(faults), res.Runs, res.Failure.Verdict, Format(res.Failure.Scenario))
			}
			t.Logf("%s on 3 servers, faults %s: %d schedules, no violation", recipe, faultsLabel(faults), res.Runs)
		}
	}
}

func faultsLabel(kinds []sim.FaultKind) string {
	if kinds == nil {
		return "every kind"
	}
	return fmt.Sprint(kinds)
}
