package scenarios

import (
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

func TestExploreSmoke(t *testing.T) {
	for _, tc := range []struct {
		recipe string
		store  StoreKind
		faults []sim.FaultKind
	}{
		{"unprotected-lock", StoreFenced, nil},
		{"lost-wakeup-lock", StoreFenced, nil},
		{"persistent-lock", StoreFenced, nil},
		{"fair-lock", StoreUnfenced, nil},
		{"fair-lock", StoreFenced, nil},
	} {
		res, err := Explore(ExploreOptions{Recipe: tc.recipe, Store: tc.store, Runs: 300, Seed: 1, Dir: t.TempDir(), ShrinkTime: time.Second})
		if err != nil {
			t.Errorf("%s: %v", tc.recipe, err)
			continue
		}
		t.Logf("%s %s: runs=%d steps=%d elapsed=%v tofail=%v", tc.recipe, tc.store, res.Runs, res.Steps, res.Elapsed, res.ToFailure)
		if res.Failure != nil {
			t.Logf("%s\n%s", res.Failure.Verdict, Format(res.Failure.Scenario))
		}
	}
}
