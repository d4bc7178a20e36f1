package difftest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// rawPaths are the paths random raw sequences act on: a small tree, so
// that watches, their ancestors and the changes meet often.
var rawPaths = []string{"R", "R/a", "R/a/b", "R/a/b/c", "R/b", "R/ab"}

// oddPaths are paths only a raw client sends: a trailing slash, a NUL, no
// slash at all. (The root's two names, "/" and "", would read the whole
// tree, which other cases share; the watch ops use "" below.)
var oddPaths = []string{"R/a/", "R/a\x00", "no-slash"}

// rawStepGen draws one request of the kinds only a raw client sends, mixed
// with the writes and watching reads that make them interesting.
func rawStepGen(clients int) *rapid.Generator[rawStep] {
	return rapid.Custom(func(t *rapid.T) rawStep {
		c := rapid.IntRange(0, clients-1).Draw(t, "client")
		path := rapid.SampledFrom(rawPaths[1:]).Draw(t, "path")
		anyPath := rapid.SampledFrom(rawPaths).Draw(t, "watchPath")
		if rapid.IntRange(0, 9).Draw(t, "odd") == 0 {
			// Paths a client library would refuse, which the server takes
			// as they come.
			anyPath = rapid.SampledFrom(oddPaths).Draw(t, "oddPath")
		}
		var req sim.Request
		switch kind := rapid.IntRange(0, 15).Draw(t, "kind"); kind {
		case 0, 1, 2:
			mode := rapid.SampledFrom([]int32{zk.FlagPersistent, zk.FlagPersistent, zk.FlagEphemeral}).Draw(t, "mode")
			op := rapid.SampledFrom([]sim.OpCode{sim.OpCreate, sim.OpCreate2}).Draw(t, "createOp")
			req = sim.Request{Op: op, Path: path, Data: []byte("d"), Mode: mode, ACL: openACL}
		case 3, 4:
			req = rDelete(path)
		case 5, 6:
			req = rSet(path, rapid.SampledFrom([]string{"x", "yy"}).Draw(t, "data"))
		case 7, 8:
			op := rapid.SampledFrom([]sim.OpCode{sim.OpExists, sim.OpGetData, sim.OpGetChildren, sim.OpGetChildrenNoStat}).Draw(t, "readOp")
			req = rRead(op, anyPath, rapid.Bool().Draw(t, "watch"))
		case 9, 10:
			if rapid.IntRange(0, 9).Draw(t, "emptyWatch") == 0 {
				anyPath = ""
			}
			req = rAddWatch(anyPath, sim.AddWatchMode(rapid.IntRange(0, 1).Draw(t, "addMode")))
		case 11:
			if rapid.IntRange(0, 9).Draw(t, "emptyCheck") == 0 {
				anyPath = ""
			}
			op := rapid.SampledFrom([]sim.OpCode{sim.OpCheckWatches, sim.OpRemoveWatches}).Draw(t, "watchesOp")
			req = rWatches(op, anyPath, sim.WatcherType(rapid.IntRange(1, 3).Draw(t, "watcherType")))
		case 12:
			req = sim.Request{Op: sim.OpGetEphemerals, Path: rapid.SampledFrom([]string{"R", "R/a", "R/a/"}).Draw(t, "prefix")}
		case 13:
			req = sim.Request{Op: sim.OpGetAllChildrenNum, Path: anyPath}
		case 14:
			req = sim.Request{Op: sim.OpMultiRead, Ops: []sim.Request{
				rRead(sim.OpGetData, path, false), rRead(sim.OpGetChildrenNoStat, anyPath, false)}}
		case 15:
			other := rapid.SampledFrom(rawPaths[1:]).Draw(t, "other")
			req = sim.Request{Op: sim.OpMulti, Ops: []sim.Request{
				rCreate(path, "", zk.FlagPersistent), rSet(other, "m")}}
		}
		return rawStep{client: c, req: req}
	})
}

// rawDifferential runs random sequences of the requests above on the
// simulator and on the real ZooKeeper 3.8 at addr and compares the
// transcripts.
func rawDifferential(t *testing.T, addr string) {
	events, notOK := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		clients := rapid.IntRange(1, 3).Draw(rt, "clients")
		n := rapid.IntRange(8, 30).Draw(rt, "length")
		c := rawCase{name: "random", clients: clients}
		if rapid.IntRange(0, 3).Draw(rt, "tree") > 0 {
			// Most sequences start from a tree, so that the watches have
			// something to see.
			for _, p := range []string{"R/a", "R/a/b", "R/b"} {
				c.steps = append(c.steps, step(0, rCreate(p, "", zk.FlagPersistent)))
			}
		}
		for i := range n {
			c.steps = append(c.steps, rawStepGen(clients).Draw(rt, fmt.Sprintf("step%d", i+1)))
		}
		for _, l := range runRawCase(rt, addr, c) {
			if strings.Contains(l, " event ") {
				events++
			} else if !strings.Contains(l, "err=OK") {
				notOK++
			}
		}
	})
	t.Logf("coverage: %d events, %d error replies", events, notOK)
}
