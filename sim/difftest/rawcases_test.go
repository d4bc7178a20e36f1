package difftest

import (
	"os"
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
func runRawCase(t TB, addr string, c rawCase) []string {
	t.Helper()
	return runRawCaseConfig(t, addr, c, sim.ServerConfig{})
}

// runRawCaseConfig is runRawCase with the simulator configured as the
// real server is.
func runRawCaseConfig(t TB, addr string, c rawCase, cfg sim.ServerConfig) []string {
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
	simLines := rawTranscript(t, newSimSide(t, cfg, c.clients), c.clients, root, c.steps)
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
	return realLines
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
		step(0, rWatches(sim.OpCheckWatches, "no-slash", sim.WatcherData)),
		step(0, rWatches(sim.OpCheckWatches, "other", sim.WatcherData)),
		step(0, rWatches(sim.OpRemoveWatches, "no-slash", sim.WatcherData)),
		step(0, rWatches(sim.OpRemoveWatches, "no-slash", sim.WatcherChildren)),
		step(0, rWatches(sim.OpRemoveWatches, "other", sim.WatcherAny)),
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
	{"setWatches: a change after relativeZxid fires at once, one at it does not", 2, []rawStep{
		step(1, rCreate("R/a", "", 0)), // B+1
		step(1, rCreate("R/b", "", 0)), // B+2
		step(1, rSet("R/a", "x")),      // B+3: R/a's mzxid
		step(1, rCreate("R/b/c", "", 0)),
		{client: 0, zxidFromBase: true, req: sim.Request{Op: sim.OpSetWatches, RelativeZxid: 3,
			DataWatches: []string{"R/a", "R/b"}, ChildWatches: []string{"R/b", "R/a"}, ExistWatches: []string{"R/b/c", "R/x"}}},
		{client: 0, zxidFromBase: true, req: sim.Request{Op: sim.OpSetWatches, RelativeZxid: 2,
			DataWatches: []string{"R/a"}}},
		step(1, rSet("R/b", "y")),
		step(1, rCreate("R/a/k", "", 0)),
		step(1, rCreate("R/x", "", 0)),
		step(1, rSet("R/a", "z")),
	}},
	{"setWatches of the empty path: the root's node, a watch that never fires", 2, []rawStep{
		step(0, sim.Request{Op: sim.OpSetWatches, RelativeZxid: 1 << 60,
			DataWatches: []string{""}, ExistWatches: []string{""}, ChildWatches: []string{""}}),
		step(0, sim.Request{Op: sim.OpSetWatches2, RelativeZxid: 1 << 60,
			PersistentWatches: []string{""}, PersistentRecursiveWatches: []string{""}}),
		step(1, rCreate("R/x", "", 0)),
		step(0, rWatches(sim.OpRemoveWatches, "", sim.WatcherAny)),
		step(0, rWatches(sim.OpRemoveWatches, "", sim.WatcherAny)),
	}},
	{"a NUL in a read's path: exists refuses it, the others find nothing", 1, []rawStep{
		step(0, rRead(sim.OpExists, "R/a\x00b", true)),
		step(0, rRead(sim.OpGetData, "R/a\x00b", true)),
		step(0, rRead(sim.OpGetChildren, "R\x00", true)),
		step(0, rRead(sim.OpGetChildrenNoStat, "R\x00", true)),
		step(0, rRead(sim.OpExists, "R\x00", false)),
		step(0, sim.Request{Op: sim.OpSync, Path: "R\x00"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "R\x00"}),
		step(0, rWatches(sim.OpCheckWatches, "R/a\x00b", sim.WatcherData)),
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
	{"getEphemerals of a session whose set has grown past a resize: the clone's order", 1, []rawStep{
		step(0, rCreate("R/m", "", 0)),
		step(0, rCreate("R/m/lock-", "", zk.FlagEphemeralSequential)),
		step(0, rCreate("R/m/x", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/node", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/a1", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/b22", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/zz", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/q", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/w-", "", zk.FlagEphemeralSequential)),
		step(0, rCreate("R/m/e", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/r0", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/t", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/y9", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/u", "", zk.FlagEphemeral)),
		step(0, rCreate("R/m/i-", "", zk.FlagEphemeralSequential)),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: "R/m/"}),
		step(0, rDelete("R/m/x")),
		step(0, rDelete("R/m/q")),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: ""}),
		step(0, rRead(sim.OpGetChildren, "R/m", false)),
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
		step(1, sim.Request{Op: sim.OpCreateSession}),
		step(1, rCreate("R/after2", "", 0)),
		step(1, sim.Request{Op: sim.OpNotification}),
	}},
	{"opcodes no server knows", 5, []rawStep{
		step(0, sim.Request{Op: 10}),
		step(1, sim.Request{Op: 23}),
		step(2, sim.Request{Op: 108}),
		step(3, sim.Request{Op: -12}),
		step(4, rCreate("R/still", "", 0)),
	}},
	{"a multi with anything but create, delete, setData and check fails whole", 1, []rawStep{
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rCreate("R/a", "", 0), rRead(sim.OpGetData, "R", false)}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rRead(sim.OpGetData, "R", false)}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rRead(sim.OpGetChildrenNoStat, "R", false), rCreate("R/b", "", 0)}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rCreate("R/c", "", 0), rRead(sim.OpExists, "R", false)}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{rCreateTTL(sim.OpCreate, "R/t", zk.FlagTTL, 0), rRead(sim.OpGetData, "R", false)}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{}}),
		step(0, rRead(sim.OpGetChildren, "R", false)),
	}},
	{"a multi's create with a TTL mode cannot be read: MARSHALLINGERROR, unless an earlier op failed", 1, []rawStep{
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
			rCreate("R/a", "", 0),
			rCreateTTL(sim.OpCreate, "R/b", zk.FlagTTL, 0),
		}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
			rCreateTTL(sim.OpCreateCont, "R/c", zk.FlagPersistentSequentialWithTTL, 0),
		}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
			rCreate("R/x/y", "", 0),
			rCreateTTL(sim.OpCreate2, "R/e", zk.FlagTTL, 0),
		}}),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
			rCreateTTL(sim.OpCreateTTL, "R/f", zk.FlagTTL, 10),
		}}),
		step(0, rRead(sim.OpGetChildren, "R", false)),
	}},
	{"create modes: the op decides the owner, the mode the checks", 1, []rawStep{
		step(0, rCreateTTL(sim.OpCreateCont, "R/cc", zk.FlagContainer, 0)),
		step(0, rCreateTTL(sim.OpCreateCont, "R/c0", zk.FlagPersistent, 0)),
		step(0, rCreateTTL(sim.OpCreateCont, "R/c1", zk.FlagEphemeral, 0)),
		step(0, rCreateTTL(sim.OpCreateCont, "R/c2", zk.FlagSequence, 0)),
		step(0, rCreateTTL(sim.OpCreate, "R/p4", zk.FlagContainer, 0)),
		step(0, rCreateTTL(sim.OpCreate2, "R/q4", zk.FlagContainer, 0)),
		step(0, rCreateTTL(sim.OpCreateTTL, "R/t5", zk.FlagTTL, 1000)),
		step(0, rCreateTTL(sim.OpCreateTTL, "R/t0", zk.FlagPersistent, 1000)),
		step(0, rCreateTTL(sim.OpCreateTTL, "R/t4", zk.FlagContainer, 1000)),
		step(0, rCreateTTL(sim.OpCreate2, "R/u5", zk.FlagTTL, 0)),
		step(0, rCreateTTL(sim.OpCreate, "R/v6", zk.FlagPersistentSequentialWithTTL, 0)),
		step(0, rCreateTTL(sim.OpCreate, "R/v7", 7, 0)),
		step(0, rCreateTTL(sim.OpCreateCont, "R/v7", -1, 0)),
		step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
			rCreateTTL(sim.OpCreate, "R/m4", zk.FlagContainer, 0),
			rCreateTTL(sim.OpCreateCont, "R/m0", zk.FlagPersistent, 0),
			rCreateTTL(sim.OpCreateTTL, "R/mt", zk.FlagPersistent, 5),
			rCreateTTL(sim.OpCreateTTL, "R/mn", zk.FlagPersistent, -1),
		}}),
		step(0, rCreate("R/cc/kid", "", 0)),
		step(0, rDelete("R/cc/kid")),
		step(0, rRead(sim.OpGetChildren, "R", false)),
	}},
}

// freshServerCases depend on the whole tree, so they run on a server of
// their own, as fresh as the simulator's: the root's children and Stat,
// getAllChildrenNumber of "/", the root found under "", and the system
// nodes (whose ACL no other test can have changed). The cases share the
// server: the one that reads the root comes first.
var freshServerCases = []rawCase{
	{"the root, and the root under the empty path", 2, []rawStep{
		step(0, sim.Request{Op: sim.OpGetACL, Path: "/"}),
		step(0, sim.Request{Op: sim.OpGetACL, Path: ""}),
		step(0, rRead(sim.OpGetChildren, "/", false)),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "/"}),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: ""}),
		step(0, rRead(sim.OpExists, "", true)),
		step(0, rRead(sim.OpGetData, "", true)),
		step(0, rRead(sim.OpGetChildrenNoStat, "", true)),
		step(0, rRead(sim.OpGetChildren, "", true)),
		step(0, sim.Request{Op: sim.OpMultiRead, Ops: []sim.Request{rRead(sim.OpGetData, "", false), rRead(sim.OpGetChildrenNoStat, "", false)}}),
		step(0, sim.Request{Op: sim.OpGetEphemerals, Path: " / "}),
		step(1, rCreate("/fresh", "", zk.FlagEphemeral)),
		step(1, rSet("/", "root")),
		step(1, rDelete("/fresh")),
		step(0, rWatches(sim.OpCheckWatches, "", sim.WatcherAny)),
		step(0, rWatches(sim.OpRemoveWatches, "", sim.WatcherAny)),
		step(0, rRead(sim.OpGetChildren, "/", false)),
	}},
	{"the system nodes", 1, []rawStep{
		step(0, rRead(sim.OpGetData, "/zookeeper", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper", false)),
		step(0, rRead(sim.OpGetData, "/zookeeper/quota", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper/quota", false)),
		step(0, rRead(sim.OpGetData, "/zookeeper/config", false)),
		step(0, rRead(sim.OpGetChildren, "/zookeeper/config", false)),
		step(0, sim.Request{Op: sim.OpGetAllChildrenNum, Path: "/zookeeper"}),
		step(0, sim.Request{Op: sim.OpGetACL, Path: "/zookeeper"}),
		step(0, sim.Request{Op: sim.OpGetACL, Path: "/zookeeper/quota"}),
		step(0, sim.Request{Op: sim.OpGetACL, Path: "/zookeeper/config"}),
	}},
}

// TestRawOps holds the simulator's answers to the requests only a raw
// client sends (go-zookeeper v1.0.4 has none of them) to a real ZooKeeper
// 3.8, field by field and event by event: the fixed cases, then random
// sequences. They run on a server of their own: the transcripts compare
// zxids, which another test's sessions expiring on a shared server would
// shift.
func TestRawOps(t *testing.T) {
	srv := zktest.Start(t)
	t.Run("fresh", func(t *testing.T) {
		if os.Getenv(zktest.EnvServer) != "" {
			t.Skipf("the whole-tree cases need a server of their own, not %s=%s", zktest.EnvServer, os.Getenv(zktest.EnvServer))
		}
		for _, c := range freshServerCases {
			t.Run(c.name, func(t *testing.T) { runRawCase(t, srv.Addr, c) })
		}
	})
	t.Run("cases", func(t *testing.T) {
		for _, c := range rawCases {
			t.Run(c.name, func(t *testing.T) { runRawCase(t, srv.Addr, c) })
		}
	})
	t.Run("random", func(t *testing.T) { rawDifferential(t, srv.Addr) })
}

// extendedTypesCase runs on a server started with
// zookeeper.extendedTypesEnabled, which TTL nodes need (Debian's server
// has it off).
var extendedTypesCase = rawCase{name: "TTL nodes with the extended types on", clients: 1, steps: []rawStep{
	step(0, rCreateTTL(sim.OpCreateTTL, "R/t", zk.FlagTTL, 1000)),
	step(0, rCreateTTL(sim.OpCreateTTL, "R/s-", zk.FlagPersistentSequentialWithTTL, 1000)),
	step(0, rCreateTTL(sim.OpCreateTTL, "R/max", zk.FlagTTL, 1<<40-1)),
	step(0, rCreateTTL(sim.OpCreateTTL, "R/over", zk.FlagTTL, 1<<40)),
	step(0, rCreateTTL(sim.OpCreateTTL, "R/zero", zk.FlagTTL, 0)),
	step(0, rCreateTTL(sim.OpCreateTTL, "R/p", zk.FlagPersistent, 5)),
	step(0, rCreateTTL(sim.OpCreate, "R/c", zk.FlagTTL, 0)),
	step(0, rCreateTTL(sim.OpCreate2, "R/c2", zk.FlagPersistentSequentialWithTTL, 0)),
	step(0, rCreate("R/t/kid", "", zk.FlagEphemeral)),
	step(0, rRead(sim.OpGetData, "R/t", false)),
	step(0, rRead(sim.OpExists, "R/max", false)),
	step(0, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
		rCreateTTL(sim.OpCreateTTL, "R/mt", zk.FlagTTL, 100),
		rCreateTTL(sim.OpCreateTTL, "R/mp", zk.FlagPersistent, 100),
	}}),
	step(0, rRead(sim.OpGetChildren, "R", false)),
}}

// TestRawOpsExtendedTypes holds the TTL creates to a server with the
// extended types on.
func TestRawOpsExtendedTypes(t *testing.T) {
	srv := zktest.StartWithJVMFlags(t, "-Dzookeeper.extendedTypesEnabled=true")
	runRawCaseConfig(t, srv.Addr, extendedTypesCase, sim.ServerConfig{ExtendedTypes: true})
}
