package zktest_test

import (
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

func TestEnsembleStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	start := time.Now()
	e := zktest.StartEnsemble(t, 3)
	t.Logf("3 servers serving with a leader in %v", time.Since(start))
	leader, ok := e.Leader()
	if !ok {
		t.Fatal("no leader")
	}
	for _, m := range e.Members {
		mode, err := e.Mode(m.ID)
		t.Logf("s%d %s: %s %v", m.ID, m.Addr, mode, err)
		if want := map[bool]string{true: "leader", false: "follower"}[m.ID == leader]; mode != want {
			t.Errorf("s%d is %q, want %q", m.ID, mode, want)
		}
	}
}
