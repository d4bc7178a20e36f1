package scenarios

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// pcgSource is a Source of a seeded generator: a fixed random walk.
type pcgSource struct{ r *rand.Rand }

func (s pcgSource) Draw(n int) int { return s.r.IntN(n) }

// drawRecipeRun draws a run of a recipe of every kind on 1 or 3 servers
// with up to 4 faults of every kind, and the seed of a random walk
// through it.
func drawRecipeRun(rt *rapid.T) (*Scenario, uint64) {
	recipe := rapid.SampledFrom([]string{"fair-lock", "exclusive-lock", "stale-resume-lock", "rw-lock", "herd-lock", "semaphore", "leader-latch", "multi-lock"}).Draw(rt, "recipe")
	servers := rapid.SampledFrom([]int{1, 3}).Draw(rt, "servers")
	o := ExploreOptions{Recipe: recipe, Servers: []int{servers}, Hold: 2 * time.Second, MaxFaults: 4}
	if err := o.fill(); err != nil {
		rt.Fatal(err)
	}
	return drawScenario(rt, &o), rapid.Uint64().Draw(rt, "walk")
}

// The tree observer looks at just the nodes created and deleted since its
// last look when it can (lookAtChanges on an ensemble, lookAtCreated on
// the standalone server); that look finds what a look at every directory
// and every life finds. Runs on 1 and 3 servers with every fault kind,
// walked at random, end with the same verdict, history and report either
// way: the checks that rest on the nodes' lives (zk-holders, split-brain,
// the lock's) and the report's holds and views.
func TestTreeLookAtChangesIsALookAtEverything(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sc, walk := drawRecipeRun(rt)
		run := func(everything bool) string {
			res, err := Run(sc, RunOptions{Strategy: WalkStrategy{Source: pcgSource{rand.New(rand.NewPCG(walk, 1))}}, Report: true, Znodes: true, lookAtEverything: everything})
			if err != nil {
				rt.Fatal(err)
			}
			r := res.Report
			return fmt.Sprintf("%s\n%s\nholds %+v\nwaits %+v\nviews %+v\nexpiries %+v\n", res.Verdict, res.History(), r.Holds, r.Waits, r.Views, r.Expiries)
		}
		if changed, everything := run(false), run(true); changed != everything {
			rt.Fatalf("%s: looking at the changes:\n%s\nlooking at everything:\n%s", Format(sc), changed, everything)
		}
	})
}

// The observer names the kinds of event it reads (observer.TraceKinds),
// and the world leaves the calls' events out; the tree, which looked at
// the server at those events too, still looks at the same steps. Runs on
// 1 and 3 servers with every fault kind, walked at random, end with the
// same verdict, history, coverage and step count as when the observer
// reads every event.
func TestTheKindFilterChangesNoRun(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sc, walk := drawRecipeRun(rt)
		run := func(everyEvent bool) string {
			res, err := Run(sc, RunOptions{Strategy: WalkStrategy{Source: pcgSource{rand.New(rand.NewPCG(walk, 1))}}, Coverage: true, everyEvent: everyEvent})
			if err != nil {
				rt.Fatal(err)
			}
			return fmt.Sprintf("%s\n%s\nsteps %d\ncoverage %+v\n", res.Verdict, res.History(), res.Steps, *res.Coverage)
		}
		if filtered, every := run(false), run(true); filtered != every {
			rt.Fatalf("%s: with the kind filter:\n%s\nreading every event:\n%s", Format(sc), filtered, every)
		}
	})
}
