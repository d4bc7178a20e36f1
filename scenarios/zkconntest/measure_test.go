package zkconntest_test

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zklab/zklab/scenarios/zkconntest"
)

// The time the exploration takes to find zk.Lock's orphaned node, over
// ZKLAB_ZKCONN_SEEDS seeds (1..N), median and range; a measurement, not a
// check, so it runs only when asked:
//
//	ZKLAB_ZKCONN_SEEDS=9 go test ./scenarios/zkconntest -run TimeToFind -v -count=1
func TestTimeToFindZkLockFlaw(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZKLAB_ZKCONN_SEEDS"))
	if n == 0 {
		t.Skip("set ZKLAB_ZKCONN_SEEDS=N to measure over seeds 1..N")
	}
	var first, kept []time.Duration
	var runs []int
	const replaysPerSeed = 50
	replayed, replays := 0, 0
	for seed := range uint64(n) {
		res := zkconntest.Explore(t, "zk.Lock", zkconntest.LockClient(newZkLock), zkconntest.Options{Seed: seed + 1, Dir: t.TempDir()})
		if res.Failure == nil {
			t.Fatalf("seed %d: not found in %d runs", seed+1, res.Runs)
		}
		first, kept, runs = append(first, res.FirstFailure), append(kept, res.ToFailure), append(runs, res.Runs)
		again := 0
		for range replaysPerSeed {
			if rep := zkconntest.Replay(t, res.Failure, zkconntest.LockClient(newZkLock), 0); rep.Failure != nil {
				again++
			}
		}
		replayed, replays = replayed+again, replays+replaysPerSeed
		t.Logf("seed %d: %d of %d replays failed again", seed+1, again, replaysPerSeed)
		t.Logf("seed %d: first failing run after %v, kept after %d runs and %v: %v %.40q", seed+1, res.FirstFailure.Round(time.Millisecond), res.Runs, res.ToFailure.Round(time.Millisecond), res.Failure.Faults, res.Violations[0])
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	slices.Sort(runs)
	t.Logf("%d seeds: first failing run median %v (%v..%v); shrunk, stable failure median %v (%v..%v); runs median %d (%d..%d)",
		n, median(first).Round(time.Millisecond), first[0].Round(time.Millisecond), first[len(first)-1].Round(time.Millisecond),
		median(kept).Round(time.Millisecond), kept[0].Round(time.Millisecond), kept[len(kept)-1].Round(time.Millisecond),
		runs[len(runs)/2], runs[0], runs[len(runs)-1])
	t.Logf("replays of the kept failures that failed again: %d of %d", replayed, replays)
}
