package difftest

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// A knownDifference is a case where the simulator and ZooKeeper 3.8 differ,
// found by these tests and not yet fixed in the simulator. Its test runs
// the case and skips with the difference while it stands; once the
// simulator is fixed the test passes, and the entry's hide should go.
type knownDifference struct {
	name string
	why  string
	seq  Sequence
	// hide rewrites a transcript line so that the random sequences of
	// TestDifferential do not stop at this difference again.
	hide func(string) string
}

// knownDifferences lists the differences that stand. Those found and since
// fixed in the simulator are in regressions.
var knownDifferences = []knownDifference{}

// regressions are differences the differential tests found, fixed in the
// simulator (commit 544b750, "sim: server fixes from measured 3.8.0
// facts"): they must agree.
var regressions = []knownDifference{
	{
		name: "multi-ttl-flag-create",
		why: `a multi's create with a TTL flag: ZooKeeper 3.8 cannot read it (the rebuilt createTTL holds a ` +
			`CreateRequest) and fails the whole multi with MARSHALLINGERROR and no results, which go-zookeeper ` +
			`returns as an empty slice; the simulator answered per-op results`,
		seq: Sequence{Clients: 1, Ops: []Op{
			{Kind: Multi, Ops: []SubOp{
				{Kind: SubCreate, Path: Path{Rel: "/a"}},
				{Kind: SubCreate, Path: Path{Rel: "/t"}, Flags: zk.FlagTTL},
			}},
			{Kind: Children, Path: Path{Rel: ""}},
		}},
	},
	{
		name: "multi-container-create",
		why: `a multi's create with the container flag: ZooKeeper 3.8 rebuilds each create from its flags ` +
			`(Op.create), makes a container and answers with a create2-typed result, which go-zookeeper v1.0.4 ` +
			`cannot decode (ErrAPIError, the results before it kept); the simulator made a persistent node and ` +
			`answered a plain create result`,
		seq: Sequence{Clients: 1, Ops: []Op{
			{Kind: Multi, Ops: []SubOp{
				{Kind: SubCreate, Path: Path{Rel: "/a"}},
				{Kind: SubCreate, Path: Path{Rel: "/c"}, Flags: zk.FlagContainer},
				{Kind: SubCreate, Path: Path{Rel: "/b"}},
			}},
			{Kind: Children, Path: Path{Rel: ""}},
			{Kind: Exists, Path: Path{Rel: "/c"}},
		}},
	},
	{
		name: "system-node-data",
		why: `getData of /zookeeper, /zookeeper/quota and /zookeeper/config returns empty non-nil data ([]byte{}) ` +
			`on ZooKeeper 3.8 (the server sends a zero-length buffer), nil in the simulator`,
		seq: Sequence{Clients: 1, Ops: []Op{
			{Kind: Get, Path: Path{Rel: "/zookeeper", Abs: true}},
			{Kind: Get, Path: Path{Rel: "/zookeeper/quota", Abs: true}},
			{Kind: GetW, Path: Path{Rel: "/zookeeper/config", Abs: true}},
		}},
	},
	{
		name: "multi-two-sequential-creates",
		why: `a multi with two sequential creates under one parent: ZooKeeper numbers them one after the other ` +
			`(the multi's pending parent record counts the first), the simulator gives both the same number and ` +
			`fails the second with NodeExists (the whole multi fails)`,
		seq: Sequence{Clients: 1, Ops: []Op{
			{Kind: Multi, Ops: []SubOp{
				{Kind: SubCreate, Path: Path{Rel: "/s-"}, Flags: zk.FlagSequence},
				{Kind: SubCreate, Path: Path{Rel: "/s-"}, Flags: zk.FlagEphemeralSequential},
			}},
			{Kind: Children, Path: Path{Rel: ""}},
		}},
	},
}

func hideKnownDifferences(line string) string {
	for _, k := range knownDifferences {
		if k.hide != nil {
			line = k.hide(line)
		}
	}
	return line
}

// TestRegressions runs each fixed difference: the backends must agree.
func TestRegressions(t *testing.T) {
	srv := zktest.Shared(t)
	for _, k := range regressions {
		t.Run(k.name, func(t *testing.T) {
			lines := check(t, srv.Addr, k.seq, nil)
			t.Logf("was: %s\nnow agree:\n%s", k.why, strings.Join(lines, "\n"))
		})
	}
}

// TestKnownDifferences runs each known difference.
func TestKnownDifferences(t *testing.T) {
	srv := zktest.Shared(t)
	for _, k := range knownDifferences {
		t.Run(k.name, func(t *testing.T) {
			simLines, realLines := transcripts(t, srv.Addr, k.seq)
			if d := firstDifference(k.seq, simLines, realLines); d != "" {
				t.Skipf("known difference: %s — see report\n%s", k.why, d)
			}
		})
	}
}
