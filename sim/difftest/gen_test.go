package difftest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"pgregory.net/rapid"
)

// The path alphabet: a few nodes two and three deep under the run's root,
// prefixes for sequential nodes, invalid paths, and ZooKeeper's own nodes.
var (
	seqPaths = []string{"/a/s-", "/s-", "/a/", "/b/e-"}
	badPaths = []string{"/a/", "/a//b", "/a/./b", "/a/.", "/a/..", "/a/b/"}
	absPaths = []string{"", "a", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"}
)

// weighted draws one of choices, each as likely as its weight; rapid
// shrinks toward the first.
func weighted[V any](t *rapid.T, label string, choices ...weight[V]) V {
	total := 0
	for _, c := range choices {
		total += c.w
	}
	n := rapid.IntRange(0, total-1).Draw(t, label)
	for _, c := range choices {
		if n < c.w {
			return c.v
		}
		n -= c.w
	}
	panic("unreachable")
}

type weight[V any] struct {
	w int
	v V
}

func w[V any](n int, v V) weight[V] { return weight[V]{n, v} }

func pathGen() *rapid.Generator[Path] {
	return rapid.Custom(func(t *rapid.T) Path {
		switch weighted(t, "pathKind", w(16, "node"), w(3, "seq"), w(1, "bad"), w(1, "abs")) {
		case "seq":
			return Path{Rel: rapid.SampledFrom(seqPaths).Draw(t, "seq")}
		case "bad":
			return Path{Rel: rapid.SampledFrom(badPaths).Draw(t, "bad")}
		case "abs":
			return Path{Rel: rapid.SampledFrom(absPaths).Draw(t, "abs"), Abs: true}
		}
		return Path{Rel: weighted(t, "node", w(6, "/a"), w(4, "/b"), w(4, "/a/b"), w(3, "/a/c"), w(2, "/b/a"), w(2, "/a/b/c"))}
	})
}

func dataGen() *rapid.Generator[Data] {
	return rapid.Custom(func(t *rapid.T) Data {
		return weighted(t, "data", w(4, Data{Bytes: "x"}), w(1, Data{Nil: true}), w(1, Data{}), w(2, Data{Bytes: "hello"}), w(1, Data{Bytes: "é"}))
	})
}

func createFlagsGen(t *rapid.T, label string, odd bool) int32 {
	odds := 0
	if odd {
		odds = 1
	}
	return weighted(t, label, w(8, int32(0)), w(5, int32(zk.FlagEphemeral)), w(4, int32(zk.FlagSequence)),
		w(3, int32(zk.FlagEphemeralSequential)), w(odds, int32(zk.FlagTTL)), w(odds, int32(99)))
}

func versionGen(t *rapid.T, label string) int32 {
	return weighted(t, label, w(6, int32(-1)), w(3, int32(0)), w(2, int32(1)), w(1, int32(2)), w(1, int32(-2)))
}

func subOpGen() *rapid.Generator[SubOp] {
	return rapid.Custom(func(t *rapid.T) SubOp {
		s := SubOp{Kind: weighted(t, "sub", w(4, SubCreate), w(2, SubDelete), w(2, SubSet), w(2, SubCheck))}
		// ZooKeeper's own nodes are left out: a multi that changed them
		// would change state shared by every run.
		s.Path = pathGen().Draw(t, "subPath")
		if s.Path.Abs {
			s.Path = Path{Rel: "/a"}
		}
		switch s.Kind {
		case SubCreate:
			s.Data = dataGen().Draw(t, "subData")
			s.Flags = createFlagsGen(t, "subFlags", false)
		case SubSet:
			s.Data = dataGen().Draw(t, "subData")
			s.Version = versionGen(t, "subVersion")
		default:
			s.Version = versionGen(t, "subVersion")
		}
		return s
	})
}

// writesShared reports whether op could change a node outside the run's
// root (ZooKeeper's own, or /): those are kept out of the sequences.
func writesShared(op Op) bool {
	switch op.Kind {
	case Create, CreateContainer, Set:
		return op.Path.Abs
	}
	return false
}

func opGen(clients int) *rapid.Generator[Op] {
	return rapid.Custom(func(t *rapid.T) Op {
		op := Op{Client: rapid.IntRange(0, clients-1).Draw(t, "client")}
		op.Kind = weighted(t, "kind",
			w(12, Create), w(5, Delete), w(3, Exists), w(4, ExistsW), w(2, Get), w(4, GetW), w(5, Set),
			w(2, Children), w(4, ChildrenW), w(3, Multi), w(1, Sync), w(1, CreateContainer), w(1, Close))
		if op.Kind != Multi && op.Kind != Close {
			op.Path = pathGen().Draw(t, "path")
		}
		switch op.Kind {
		case Create:
			op.Data = dataGen().Draw(t, "data")
			op.Flags = createFlagsGen(t, "flags", true)
			op.ACL = weighted(t, "acl", w(20, ACLAll), w(1, ACLRead), w(1, ACLNone))
		case CreateContainer:
			op.Data = dataGen().Draw(t, "data")
			op.Flags = weighted(t, "flags", w(5, int32(zk.FlagContainer)), w(1, int32(zk.FlagSequence)))
		case Set:
			op.Data = dataGen().Draw(t, "data")
			op.Version = versionGen(t, "version")
		case Delete:
			op.Version = versionGen(t, "version")
		case Multi:
			op.Ops = rapid.SliceOfN(subOpGen(), 0, 4).Draw(t, "ops")
		}
		if writesShared(op) {
			op.Kind = Exists
		}
		return op
	})
}

// The length of a random sequence.
const (
	opsMin = 8
	opsMax = 40
)

func sequenceGen() *rapid.Generator[Sequence] {
	return rapid.Custom(func(t *rapid.T) Sequence {
		clients := rapid.IntRange(1, 3).Draw(t, "clients")
		seq := Sequence{Clients: clients, Seed: rapid.Uint64().Draw(t, "seed")}
		// The length drawn first, so that rapid shrinks a sequence by its
		// tail; SliceOfN favours very short sequences.
		n := rapid.IntRange(opsMin, opsMax).Draw(t, "length")
		for i := range n {
			seq.Ops = append(seq.Ops, opGen(clients).Draw(t, fmt.Sprintf("op%d", i+1)))
		}
		return seq
	})
}

// TestDifferential runs random operation sequences, by one client and by
// several with their own sessions, on the simulator and on a real
// ZooKeeper, and compares every result.
func TestDifferential(t *testing.T) {
	srv := zktest.Shared(t)
	var stats coverage
	rapid.Check(t, func(rt *rapid.T) {
		seq := sequenceGen().Draw(rt, "sequence")
		lines := check(rt, srv.Addr, seq, hideKnownDifferences)
		stats.add(seq, lines)
	})
	t.Logf("coverage: %v", stats)
}

// coverage counts what the random sequences reached, so that a generator
// that stopped reaching the interesting cases shows in the log.
type coverage struct {
	sequences, ops, okCreates, sequential, events, notWatching, multiOK, multiFailed, closes, ephemeralGone int
}

func (c *coverage) add(seq Sequence, lines []string) {
	c.sequences++
	c.ops += len(seq.Ops)
	for _, l := range lines {
		switch {
		case strings.Contains(l, " create") && strings.HasSuffix(l, " ok") && !strings.Contains(l, "multi"):
			c.okCreates++
			if strings.Contains(l, "-00") {
				c.sequential++
			}
		case strings.Contains(l, "watch#"):
			c.events++
			if strings.Contains(l, "EventNotWatching") {
				c.notWatching++
			}
			if strings.Contains(l, "EventNodeDeleted") && strings.Contains(l, "closed") {
				c.ephemeralGone++
			}
		case strings.Contains(l, " multi") && strings.Contains(l, "-> ok"):
			c.multiOK++
		case strings.Contains(l, " multi"):
			c.multiFailed++
		case strings.Contains(l, "closed state"):
			c.closes++
		}
	}
}

func (c coverage) String() string {
	return fmt.Sprintf("%d sequences, %d ops, %d creates ok (%d sequential), %d watch events (%d NotWatching), %d multis ok, %d failed, %d closes",
		c.sequences, c.ops, c.okCreates, c.sequential, c.events, c.notWatching, c.multiOK, c.multiFailed, c.closes)
}
