package zkconntest_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/scenarios/zkconntest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

func newZkLock(c *zk.Conn) zkconntest.Locker {
	return zk.NewLock(c, "/lock", zk.WorldACL(zk.PermAll))
}

// The exploration finds go-zookeeper's own zk.Lock flaw, used as shipped:
// an error after its create leaves the node behind, under a session that
// lives on, and the next Lock waits behind it for ever. Several seeds,
// so that finding it does not hang on one lucky draw.
func TestFindsZkLockOrphanedNode(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		res := zkconntest.Explore(t, "zk.Lock", zkconntest.LockClient(newZkLock), zkconntest.Options{Seed: seed, Dir: t.TempDir()})
		if res.Failure == nil {
			t.Fatalf("seed %d: no violation in %d runs: zk.Lock's orphaned node went unfound", seed, res.Runs)
		}
		v := strings.Join(res.Violations, "\n")
		if !strings.HasPrefix(v, "liveness:") || !strings.Contains(v, "/lock/") || !strings.Contains(v, "is left behind") {
			t.Fatalf("seed %d: violations %q, want a waiter stuck behind a lock node left behind", seed, v)
		}
		if len(res.Failure.Faults) > 2 {
			t.Errorf("seed %d: shrunk to %d faults, want at most 2: %v", seed, len(res.Failure.Faults), res.Failure.Faults)
		}
		t.Logf("seed %d: found after %d runs in %v; %v", seed, res.Runs, res.ToFailure, res.Failure.Faults)

		// The file replays the violation. Not on every try without fail: a
		// kept failure failed 20 runs of 20, but where go-zookeeper's
		// goroutines race (a request sent before or after a disconnect)
		// a replay may go the other way: 1 of 750 replays over 15 seeds
		// as measured (TestTimeToFindZkLockFlaw); 4 of 5 is required.
		sc, err := zkconntest.ParseFile(res.File)
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		var last []string
		for range 5 {
			rep := zkconntest.Replay(t, sc, zkconntest.LockClient(newZkLock), 0)
			if rep.Failure != nil && strings.HasPrefix(rep.Violations[0], "liveness:") {
				failed++
			} else {
				last = rep.Violations
			}
		}
		if failed < 4 {
			t.Fatalf("seed %d: %d of 5 replays of %s (%v) failed (the others: %q), want the liveness violation", seed, failed, res.File, sc.Faults, last)
		}
	}
}

// Without faults zk.Lock is a good lock: every client gets it, never two
// at once, and the server's history is linearizable.
func TestZkLockWithoutFaults(t *testing.T) {
	sc := &zkconntest.Scenario{Name: "zk.Lock", Clients: 4, Cycles: 3, SessionTimeout: 10e9}
	if rep := zkconntest.Replay(t, sc, zkconntest.LockClient(newZkLock), 0); rep.Failure != nil {
		t.Fatalf("violations without faults: %q", rep.Violations)
	}
}

// A scenario file reads back as it was written, and a bad one gets an
// error naming the file and line.
func TestScenarioFile(t *testing.T) {
	text := "program zk.Lock\nclients 2\ncycles 1\nsession-timeout 10s\nfault client 0 getChildren #1 lose-reply\nfault client 1 create #2 partition 20s\n"
	sc, err := zkconntest.Parse("f.zkconn", text)
	if err != nil {
		t.Fatal(err)
	}
	if got := zkconntest.Format(sc, ""); !strings.HasSuffix(got, text) {
		t.Fatalf("formatted:\n%s\nwant it to end with:\n%s", got, text)
	}
	for _, bad := range []struct{ text, want string }{
		{"program p\nclients 2\ncycles 1\nsession-timeout 10s\nfault client 0 getChildren #1 lose-it\n", "f.zkconn:5: unknown fault \"lose-it\""},
		{"program p\nclients x\n", "f.zkconn:2: clients \"x\""},
		{"program p\nclients 2\ncycles 1\nsession-timeout 10s\nfault client 0 getChildren #1 partition\n", "f.zkconn:5: a partition needs its duration"},
		{"program p\nbogus 1\n", "f.zkconn:2: unknown directive \"bogus\""},
		{"program p\nclients 1\ncycles 1\nsession-timeout 10s\nfault client 3 create #1 expire\n", "there are only 1 clients"},
	} {
		if _, err := zkconntest.Parse("f.zkconn", bad.text); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", bad.text, err, bad.want)
		}
	}
}

// noWaitLock takes the lock by creating its node and never waits: two
// clients hold it at once.
type noWaitLock struct {
	c    *zk.Conn
	node string
}

func (l *noWaitLock) Lock() error {
	if _, err := l.c.Create("/nowait", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		return err
	}
	node, err := l.c.Create("/nowait/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	l.node = node
	return err
}

func (l *noWaitLock) Unlock() error { return l.c.Delete(l.node, -1) }

// The one-holder check fails a lock that lets two clients in, with no
// fault needed.
func TestTwoHoldersCaught(t *testing.T) {
	newLock := func(c *zk.Conn) zkconntest.Locker { return &noWaitLock{c: c} }
	res := zkconntest.Explore(t, "nowait", zkconntest.LockClient(newLock), zkconntest.Options{Clients: 3, Dir: t.TempDir()})
	if res.Failure == nil || !strings.HasPrefix(res.Violations[0], "two holders:") {
		t.Fatalf("violations %q, want two holders", res.Violations)
	}
	if len(res.Failure.Faults) != 0 || res.Failure.Clients != 2 {
		t.Fatalf("shrunk to %d clients and faults %v, want 2 clients and none", res.Failure.Clients, res.Failure.Faults)
	}
}

// With -zkconn.replay, Test replays the file instead of exploring: here a
// file without faults, which zk.Lock passes, and a file of another
// program, which is not replayed.
func TestReplayFlag(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/calm.zkconn"
	other := dir + "/other.zkconn"
	sc := &zkconntest.Scenario{Name: "zk.Lock", Clients: 2, Cycles: 2, SessionTimeout: 10e9}
	if err := os.WriteFile(file, []byte(zkconntest.Format(sc, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.Name = "another"
	sc.Faults = []zkconntest.Fault{{Client: 0, Op: sim.OpGetChildren, Request: 1, Action: wire.FaultDropRequest}}
	if err := os.WriteFile(other, []byte(zkconntest.Format(sc, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("zkconn.replay", "")
	for _, f := range []string{file, other} {
		flag.Set("zkconn.replay", f)
		res := zkconntest.TestLock(t, "zk.Lock", newZkLock, zkconntest.Options{})
		if res.File != f || res.Failure != nil {
			t.Fatalf("replay of %s: %+v", f, res)
		}
		if f == file && res.Runs != 1 || f == other && res.Runs != 0 {
			t.Fatalf("replay of %s: %d runs", f, res.Runs)
		}
	}
}

// What a seed decides is decided again: the same seed finds the same
// shrunk scenario, and writes the same file (but for the replay line's
// directory), in another exploration. Only for a seed whose runs do not
// hang on go-zookeeper's races: seed 2 draws a disconnect right after a
// create's reply in its 2nd run, which fails or not depending on whether
// the client sent its next request before it saw the close, so one
// exploration keeps that run and another goes on to its 3rd (package
// doc, "What is reproducible").
func TestSameSeedSameScenario(t *testing.T) {
	for _, seed := range []uint64{1} {
		var files []string
		for range 2 {
			res := zkconntest.Explore(t, "zk.Lock", zkconntest.LockClient(newZkLock), zkconntest.Options{Seed: seed, Dir: t.TempDir()})
			if res.Failure == nil {
				t.Fatalf("seed %d: not found", seed)
			}
			data, err := os.ReadFile(res.File)
			if err != nil {
				t.Fatal(err)
			}
			_, text, _ := strings.Cut(string(data), "\n") // the replay line names the temporary directory
			files = append(files, text)
		}
		if files[0] != files[1] {
			t.Fatalf("seed %d: two explorations wrote\n%s\nand\n%s", seed, files[0], files[1])
		}
	}
}
