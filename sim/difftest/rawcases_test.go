package difftest

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
)

// rawCase is a differential case of the requests go-zookeeper cannot send.
type rawCase struct {
	name    string
	clients int
	steps   []rawStep
}

// runRawCase runs c on the simulator and on the real server at addr and
// compares the transcripts line by line.
func runRawCase(t *testing.T, addr string, c rawCase) {
	t.Helper()
	root := newRoot()
	conns := make([]*rawConn, c.clients)
	for i := range conns {
		rc, err := dialRaw(addr, int32(sessionTimeout.Milliseconds()))
		if err != nil {
			t.Fatalf("dial %s: %v", addr, err)
		}
		defer rc.Close()
		conns[i] = rc
	}
	realLines := rawTranscript(t, &realSide{conns: conns}, c.clients, root, c.steps)
	simLines := rawTranscript(t, newSimSide(t, sim.ServerConfig{}, c.clients), c.clients, root, c.steps)
	for i := range max(len(simLines), len(realLines)) {
		var s, r string
		if i < len(simLines) {
			s = simLines[i]
		}
		if i < len(realLines) {
			r = realLines[i]
		}
		if s != r {
			t.Fatalf("line %d differs:\n sim: %s\nreal: %s\nreal transcript:\n%s\nsim transcript:\n%s",
				i+1, s, r, strings.Join(realLines, "\n"), strings.Join(simLines, "\n"))
		}
	}
	if testing.Verbose() {
		t.Logf("%s: %d lines match:\n%s", c.name, len(realLines), strings.Join(realLines, "\n"))
	}
}

const (
	persistent = sim.AddWatchPersistent
	recursive  = sim.AddWatchPersistentRecursive
)

// rawCases are the cases held to the real server. Each line of the
// transcript they make is a reply (every field the reply type carries,
// zxids relative to the root's creation) or an event, per client, in the
// order the client receives them.
var rawCases = []rawCase{
	{"persistent watch: not one-shot, every event type on the path, none for a child's data", 2, []rawStep{
		step(0, rAddWatch("R/p", persistent)),
		step(1, rCreate("R/p", "", 0)),
		step(1, rSet("R/p", "x")),
		step(1, rSet("R/p", "y")),
		step(1, rCreate("R/p/c", "", 0)),
		step(1, rSet("R/p/c", "z")),
		step(1, rCreate("R/p/c/g", "", 0)),
		step(1, rDelete("R/p/c/g")),
		step(1, rDelete("R/p/c")),
		step(1, rDelete("R/p")),
		step(1, rCreate("R/p", "", 0)),
	}},
	{"persistent recursive watch: the subtree, no NodeChildrenChanged", 2, []rawStep{
		step(0, rAddWatch("R/r", recursive)),
		step(1, rCreate("R/r", "", 0)),
		step(1, rCreate("R/r/a", "", 0)),
		step(1, rCreate("R/r/a/b", "", 0)),
		step(1, rSet("R/r/a/b", "x")),
		step(1, rSet("R/r", "y")),
		step(1, rCreate("R/rx", "", 0)),
		step(1, rDelete("R/r/a/b")),
		step(1, rDelete("R/r/a")),
		step(1, rDelete("R/r")),
	}},
	{"a persistent watch and standard watches of the same client on the same path", 2, []rawStep{
		step(1, rCreate("R/s", "", 0)),
		step(0, rAddWatch("R/s", persistent)),
		step(0, rRead(sim.OpGetData, "R/s", true)),
		step(1, rSet("R/s", "1")),
		step(1, rSet("R/s", "2")),
		step(1, rCreate("R/s/c", "", 0)),
		step(0, rRead(sim.OpGetChildren, "R/s", true)),
		step(1, rCreate("R/s/d", "", 0)),
		step(1, rCreate("R/s/e", "", 0)),
		step(0, rAddWatch("R/s", persistent)),
		step(1, rSet("R/s", "3")),
		step(1, rCreate("R/s/f", "", 0)),
	}},
	{"a recursive watch and a standard watch of the same client on the same path", 2, []rawStep{
		step(1, rCreate("R/t", "", 0)),
		step(0, rAddWatch("R/t", recursive)),
		step(0, rRead(sim.OpExists, "R/t", true)),
		step(1, rCreate("R/t/a", "", 0)),
		step(1, rSet("R/t", "1")),
		step(1, rSet("R/t", "2")),
		step(1, rSet("R/t/a", "3")),
		step(1, rDelete("R/t/a")),
	}},
	{"a recursive watch on an ancestor and a standard watch below it: one event", 2, []rawStep{
		step(1, rCreate("R/u", "", 0)),
		step(1, rCreate("R/u/v", "", 0)),
		step(0, rAddWatch("R/u", recursive)),
		step(0, rRead(sim.OpGetData, "R/u/v", true)),
		step(0, rRead(sim.OpGetChildren, "R/u", true)),
		step(1, rSet("R/u/v", "1")),
		step(1, rSet("R/u/v", "2")),
		step(1, rDelete("R/u/v")),
	}},
	{"persistent watches of two clients", 3, []rawStep{
		step(0, rAddWatch("R/m", persistent)),
		step(1, rAddWatch("R", recursive)),
		step(2, rCreate("R/m", "", 0)),
		step(2, rSet("R/m", "x")),
		step(2, rCreate("R/m/k", "", 0)),
	}},
	{"checkWatches and removeWatches by type", 2, []rawStep{
		step(1, rCreate("R/w", "", 0)),
		step(0, rWatches(sim.OpCheckWatches, "R/w", sim.WatcherAny)),
		step(0, rRead(sim.OpGetData, "R/w", true)),
		step(0, rWatches(sim.OpCheckWatches, "R/w", sim.WatcherData)),
		step(0, rWatches(sim.OpCheckWatches, "R/w", sim.WatcherChildren)),
		step(0, rWatches(sim.OpCheckWatches, "R/w", sim.WatcherAny)),
		step(0, rWatches(sim.OpRemoveWatches, "R/w", sim.WatcherChildren)),
		step(0, rWatches(sim.OpRemoveWatches, "R/w", sim.WatcherData)),
		step(0, rWatches(sim.OpRemoveWatches, "R/w", sim.WatcherData)),
		step(1, rSet("R/w", "x")),
		step(0, rRead(sim.OpGetChildren, "R/w", true)),
		step(0, rRead(sim.OpExists, "R/w", true)),
		step(0, rWatches(sim.OpRemoveWatches, "R/w", sim.WatcherAny)),
		step(0, rWatches(sim.OpRemoveWatches, "R/w", sim.WatcherAny)),
		step(1, rDelete("R/w")),
	}},
	{"checkWatches asks whether anyone watches the path", 2, []rawStep{
		step(1, rCreate("R/x", "", 0)),
		step(1, rRead(sim.OpGetData, "R/x", true)),
		step(0, rWatches(sim.OpCheckWatches, "R/x", sim.WatcherData)),
		step(0, rWatches(sim.OpRemoveWatches, "R/x", sim.WatcherData)),
		step(1, rSet("R/x", "1")),
	}},
	{"removeWatches of a persistent and a recursive watch", 2, []rawStep{
		step(1, rCreate("R/y", "", 0)),
		step(0, rAddWatch("R/y", recursive)),
		step(0, rWatches(sim.OpCheckWatches, "R/y", sim.WatcherChildren)),
		step(0, rWatches(sim.OpRemoveWatches, "R/y", sim.WatcherData)),
		step(1, rCreate("R/y/a", "", 0)),
		step(1, rSet("R/y/a", "1")),
		step(1, rDelete("R/y/a")),
		step(0, rWatches(sim.OpRemoveWatches, "R/y", sim.WatcherChildren)),
		step(1, rCreate("R/y/b", "", 0)),
		step(1, rDelete("R/y/b")),
		step(0, rAddWatch("R/y", persistent)),
		step(0, rWatches(sim.OpRemoveWatches, "R/y", sim.WatcherAny)),
		step(1, rSet("R/y", "2")),
	}},
	{"addWatch: no checks, a bad mode", 1, []rawStep{
		step(0, rAddWatch("R/missing/deep", persistent)),
		step(0, rAddWatch("no-slash", recursive)),
		step(0, rAddWatch("R/z", 7)),
		step(0, rCreate("R/missing", "", 0)),
		step(0, rCreate("R/missing/deep", "", 0)),
		step(0, rWatches(sim.OpCheckWatches, "R/z", 9)),
	}},
	{"setWatches2 and setWatches with relativeZxid", 2, []rawStep{
		step(1, rCreate("R/a", "", 0)),
		step(1, rCreate("R/b", "", 0)),
		step(1, rSet("R/b", "new")),
		step(1, rCreate("R/k", "", 0)),
		step(1, rCreate("R/k/c", "", 0)),
		step(0, sim.Request{Op: sim.OpSetWatches2, RelativeZxid: 0,
			DataWatches: []string{"R/gone"}, ExistWatches: []string{"R/a", "R/none"}, ChildWatches: []string{"R/k"},
			PersistentWatches: []string{"R/p"}, PersistentRecursiveWatches: []string{"R/k"}}),
		step(1, rCreate("R/none", "", 0)),
		step(1, rCreate("R/p", "", 0)),
		step(1, rCreate("R/k/d", "", 0)),
		step(0, sim.Request{Op: sim.OpSetWatches, RelativeZxid: 1 << 60,
			DataWatches: []string{"R/a"}, ChildWatches: []string{"R/a"}, PersistentWatches: []string{"R/b"}}),
		step(1, rSet("R/b", "x")),
		step(1, rSet("R/a", "x")),
		step(1, rCreate("R/a/c", "", 0)),
	}},
	{"getEphemerals by prefix", 2, []rawStep{
		step(0, rCreate("R/e", "", 0)),
		step(0, rCreate("R/e/a", "", zk.FlagEphemeral)),
		step(0, rCreate("R/e/ab", "", zk.FlagEphemeral)),
		step(0, rCreate("R/e/b", "", zk.FlagEphemeral)),
		step(0, rCreate("R/e/s-", "", zk.FlagEphemeralSequential)),
		step(0, rCreate("R/e/s-", "", zk.FlagEphemeralSequential)),
		step(1, rCreate("R/e/other", "", zk.FlagEphemeral)),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: "R/e/a"}),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: "R/e/"}),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: "R/e/s"}),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: "R/nothing"}),
		step(1, sim.Request{Op: sim.OpGetEphemerals, Path: "R"}),
		step(1, sim.Request{Op: sim.OpGetEphemerals, Path: "R/e/o"}),
		step(1, rDelete("R/e/other")),
		step(1, sim.Request{Op: sim.OpGetEphemerals, Path: "R"}),
	}},
	{"getAllChildrenNumber", 1, []rawStep{
		step(0, rCreate("R/n", "", 0)),
		step(0, rCreate("R/n/a", "", 0)),
		step(0, rCreate("R/n/a/b", "", 0)),
		step(0, rCreate("R/n/a/b/c", "", 0)),
		step(0, rCreate("R/n/d", "", 0)),
		step(0, rCreate("R/nx", "", 0)),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "R/n"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "R/n/a/b/c"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "R/missing"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "/zookeeper"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "R/n/"}),
	}},
	{"multiRead: each op on its own, watches set, errors per op", 2, []rawStep{
		step(0, rCreate("R/q", "qd", 0)),
		step(0, rCreate("R/q/a", "", 0)),
		step(0, sim.Request{Op: sim.OpMultiRead, Ops: []sim.Request{
			rRead(sim.OpGetData, "R/q", true),
			rRead(sim.OpGetChildrenNoStat, "R/q", true),
			rRead(sim.OpGetData, "R/missing", true),
			rRead(sim.OpGetChildrenNoStat, "R/missing", false),
			rRead(sim.OpGetData, "/zookeeper/config", false),
		}}),
		step(1, rSet("R/q", "x")),
		step(1, rCreate("R/q/b", "", 0)),
		step(1, rCreate("R/missing", "", 0)),
		step(0, sim.Request{Op: sim.OpMultiRead, Ops: []sim.Request{}}),
		step(0, sim.Request{Op: sim.OpMultiRead, Ops: []sim.Request{rRead(sim.OpGetData, "R/q", false), rCreate("R/q/z", "", 0)}}),
	}},
	{"getChildren without a Stat, create2 and create in a multi", 1, []rawStep{
		step(0, rCreate2("R/g", 0)),
		step(0, rCreate2("R/g/s-", zk.FlagSequence)),
		step(0, rCreate2("R/g/e", zk.FlagEphemeral)),
		step(0, rCreate2("R/g/e", 0)),
		step(0, rCreate2("R/nope/x", 0)),
		step(0, rRead(sim.OpGetChildrenNoStat, "R/g", false)),
		step(0, rRead(sim.OpGetChildrenNoStat, "R/none", false)),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rCreate2("R/g/m", 0), rCreate("R/g/n", "", 0), rSet("R/g/m", "x")}}),
		step(0, rRead(sim.OpGetChildren, "R/g", false)),
	}},
	{"reconfig, deleteContainer and an unknown opcode", 2, []rawStep{
		step(0, sim.Request{Op: sim.OpReconfig, JoiningServers: "server.2=127.0.0.1:2888:3888", CurConfigID: -1}),
		step(0, sim.Request{Op: sim.OpDeleteContainer, Path: "R"}),
		step(0, rCreate("R/after", "", zk.FlagEphemeral)),
		step(0, sim.Request{Op: 99}),
		step(1, sim.Request{Op: sim.OpGetEphemerals, Path: "R"}),
		step(1, rRead(sim.OpExists, "R/after", false)),
	}},
	{"the system nodes", 1, []rawStep{
		step(0, rRead(sim.OpGetData, "/zookeeper", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper", false)),
		step(0, rRead(sim.OpGetData, "/zookeeper/quota", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper/quota", false)),
		step(0, rRead(sim.OpGetData, "/zookeeper/config", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper/config", false)),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "/zookeeper"}),
	}},
}

// TestRawOpsMatchRealServer holds the simulator's answers to the requests
// only a raw client sends (go-zookeeper v1.0.4 has none of them) to a real
// ZooKeeper 3.8, field by field and event by event.
func TestRawOpsMatchRealServer(t *testing.T) {
	srv := zktest.Shared(t)
	for _, c := range rawCases {
		t.Run(c.name, func(t *testing.T) { runRawCase(t, srv.Addr, c) })
	}
}
