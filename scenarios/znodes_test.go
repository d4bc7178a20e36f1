package scenarios

import (
	"testing"
	"time"
)

// zkLinearizableFindings are scenarios that failed zk-linearizable, the
// check of the simulator's own history against model.Znode, for a fault
// of the history rather than of the server; each must pass it now.
var zkLinearizableFindings = map[string]string{
	// c2 crashes with its createContainer /zklab/lock on its way; the
	// history kept that call, which never returned, as a success with
	// a return at step 0, and c1's creating /zklab/lock clashed with it.
	"crash-with-create-on-its-way": `recipe fair-lock
clients 2
cycles 2
hold 28ms
seed 1
fault step=17 crash c2
fault step=89 disconnect c2 for=30s
fault at=12ms restart for=30s
schedule 3 1 1 2 1 2 0*3 1 0 1*6 0 1 0 1
expect zk-linearizable pass
expect run pass
`,
}

func TestZKLinearizableFindings(t *testing.T) {
	for name, text := range zkLinearizableFindings {
		t.Run(name, func(t *testing.T) {
			sc, err := Parse(name, text)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Replay(sc, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if c := res.Verdict.Check(CheckZnodes); c.Outcome != Pass {
				t.Errorf("zk-linearizable %v (%s)\n%s", c.Outcome, c.Detail, res.History())
			}
			if res.Verdict.Failed() {
				t.Errorf("verdict:\n%s", res.Verdict)
			}
		})
	}
}

// TestExploreZnodes: with Znodes, exploration checks each run's server
// history (zk-linearizable), as a replay does; without, it skips it.
func TestExploreZnodes(t *testing.T) {
	for _, znodes := range []bool{false, true} {
		res, err := Explore(ExploreOptions{Recipe: "unprotected-lock", Runs: 2000, Seed: 1, Dir: t.TempDir(), ShrinkTime: time.Second, Znodes: znodes})
		if err != nil || res.Found == nil || res.Failure == nil {
			t.Fatalf("znodes=%v: the flawed recipe not found: %v", znodes, err)
		}
		want := Skipped
		if znodes {
			want = Pass // the server is right; the recipe is not
		}
		for _, r := range []*Result{res.Found, res.Failure} {
			if got := r.Verdict.Check(CheckZnodes).Outcome; got != want {
				t.Errorf("znodes=%v: zk-linearizable %v, want %v", znodes, got, want)
			}
		}
	}
}
