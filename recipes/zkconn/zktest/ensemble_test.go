package zktest_test

import (
	"os"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// A five-server ensemble starts with one leader and four followers, and
// keeps a quorum with two servers killed. It runs with
// ZKLAB_ENSEMBLE_LONG=1 (five JVMs on two cores take 20 s or more); the
// three-server ensemble runs in TestEnsembleFacts.
func TestEnsembleOfFive(t *testing.T) {
	if testing.Short() || os.Getenv(zktest.EnvEnsembleLong) != "1" {
		t.Skipf("starts five servers: set %s=1", zktest.EnvEnsembleLong)
	}
	start := time.Now()
	e := zktest.StartEnsemble(t, 5)
	leader, err := e.WaitLeader(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("5 servers serving with leader s%d in %v", leader, time.Since(start).Round(time.Millisecond))
	followers := 0
	for _, m := range e.Members {
		if mode, err := e.Mode(m.ID); err == nil && mode == "follower" {
			followers++
		}
	}
	if followers != 4 {
		t.Fatalf("%d followers, want 4", followers)
	}
	c := e.Dial(t, 10*time.Second)
	killed := 0
	for _, m := range e.Members {
		if m.ID != leader && killed < 2 {
			e.Kill(m.ID)
			killed++
		}
	}
	if _, err := c.ZK().Create("/five-quorum", nil, 0, acl); err != nil {
		t.Fatalf("a write with 3 of 5 servers up: %v", err)
	}
}
