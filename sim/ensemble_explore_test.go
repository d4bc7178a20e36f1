package sim

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// randomServerFaults draws a few server and client faults at random
// times in the first 20 s, overlapping as they come.
func randomServerFaults(seed uint64, servers int) []ScheduledFault {
	rng := rand.New(rand.NewPCG(seed, 99))
	kinds := append(append([]FaultKind(nil), ServerFaultKinds...), FaultDropReply, FaultDropRequest, FaultExpire, FaultDisconnect, FaultRestart)
	var faults []ScheduledFault
	for range 2 + rng.IntN(6) {
		f := Fault{Kind: kinds[rng.IntN(len(kinds))], Duration: time.Duration(200+rng.IntN(5000)) * time.Millisecond}
		switch {
		case namesServer(f.Kind):
			f.Server = 1 + rng.IntN(servers)
		case !isServerFault(f.Kind) && f.Kind != FaultRestart:
			f.Client = 2 + rng.IntN(3)
			if f.Kind != FaultDisconnect {
				f.Duration = 0
			}
		}
		faults = append(faults, ScheduledFault{AtTime: time.Duration(rng.IntN(20000)) * time.Millisecond, Fault: f})
	}
	return faults
}

// Random fault schedules on three and five servers: every run ends with
// its invariants held (the ensemble panics on a lost commit, two leaders
// in an epoch or a zxid going back), a leader, and every member holding
// the committed view. ZKLAB_ENSEMBLE_SEEDS sets how many seeds (default
// 12 per size).
func TestEnsembleSurvivesRandomFaultSchedules(t *testing.T) {
	seeds := 12
	if s := os.Getenv("ZKLAB_ENSEMBLE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ZKLAB_ENSEMBLE_SEEDS=%q: %v", s, err)
		}
		seeds = n
	}
	for _, servers := range []int{3, 5} {
		for seed := range uint64(seeds) {
			faults := randomServerFaults(seed, servers)
			t.Logf("servers %d seed %d faults %v", servers, seed, faults) // shown when the run fails
			w, _ := lockWorkload(t, seed, servers, faults)
			if w.Leader() == 0 {
				t.Fatalf("servers %d seed %d %v: no leader at the end", servers, seed, faults)
			}
			want := replicaDigest(w.Server())
			for i := 1; i <= servers; i++ {
				if got := replicaDigest(w.Member(i)); got != want {
					t.Fatalf("servers %d seed %d %v: s%d differs from the committed view", servers, seed, faults, i)
				}
			}
			w.Close()
		}
	}
}
