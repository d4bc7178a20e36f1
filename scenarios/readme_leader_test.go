package scenarios_test

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

// README leader begin
// A leader election is tested as a lock: Acquire campaigns until elected,
// the lease is the term (its Token the epoch), Release abdicates. The
// checks then read as: one leader in ZooKeeper's view (zk-holders), no
// two leaders in the candidates' belief (split-brain), a leader within a
// bound once the faults stop (liveness).
func TestMyLeader(t *testing.T) {
	scenarios.Test(t, "my-leader", func(c recipes.Conn, dir string, _ recipes.Options) scenarios.Lock {
		return scenarios.LockOf(recipes.NewLeaderLatch(c, dir)) // your election here
	}, scenarios.Options{Clients: 3, Runs: 50})
}

// README leader end

// The README shows exactly the leader example above, in twenty lines or
// fewer.
func TestReadmeLeaderExample(t *testing.T) {
	src, err := os.ReadFile("readme_leader_test.go")
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile(`(?s)// README leader begin\n(.*)\n// README leader end`).FindSubmatch(src)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if snippet == nil || !bytes.Contains(readme, snippet[1]) {
		t.Errorf("README.md does not show the code between the README leader markers of readme_leader_test.go")
	}
	if n := bytes.Count(snippet[1], []byte("\n")) + 1; n > 20 {
		t.Errorf("the README's leader example is %d lines, want at most 20", n)
	}
}
