package scenarios

import (
	"strings"
	"testing"
)

// TestLeaderChecksSpeakOfLeaders: an election's checks say who leads,
// not who holds the lock; a lock's keep their words.
func TestLeaderChecksSpeakOfLeaders(t *testing.T) {
	for _, c := range []struct {
		file, splitBrain, zkPass string
	}{
		{"testdata/leader-split-brain-unfenced.scenario", "believe they lead at once", "terms"},
		{"testdata/split-brain-unfenced.scenario", "believe they hold the lock", "leases"},
	} {
		sc, err := ParseFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Replay(sc, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sb := res.Verdict.Check(CheckSplitBrain); sb.Outcome != Fail || !strings.HasSuffix(sb.Detail, c.splitBrain) {
			t.Errorf("%s: split-brain %v %q, want a failure ending %q", c.file, sb.Outcome, sb.Detail, c.splitBrain)
		}
		if zk := res.Verdict.Check(CheckZKHolders); zk.Outcome != Pass || !strings.HasSuffix(zk.Detail, c.zkPass) {
			t.Errorf("%s: zk-holders %v %q, want a pass counting %s", c.file, zk.Outcome, zk.Detail, c.zkPass)
		}
	}
	if !(&Scenario{Recipe: "fair-lock", workloadLine: workloadLine{Workload: "lead"}}).Election() || (&Scenario{Recipe: "fair-lock"}).Election() {
		t.Error("Election: a lead workload makes an election; a lock's cycles do not")
	}
}
