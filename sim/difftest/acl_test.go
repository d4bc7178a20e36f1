package difftest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"pgregory.net/rapid"
)

// clientAddrs gives client i the address 127.0.0.(i+1): distinct peers
// for the ip scheme, all reaching a server on 127.0.0.1.
func clientAddrs(n int) []netip.Addr {
	addrs := make([]netip.Addr, n)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
	}
	return addrs
}

func aclGen(t *rapid.T, label string) ACLKind {
	return weighted(t, label, w(8, ACLAll), w(2, ACLRead), w(1, ACLNone),
		w(3, ACLAuth), w(1, ACLAuthRead), w(3, ACLAlice), w(2, ACLAliceRead), w(1, ACLBob),
		w(2, ACLIP1), w(2, ACLIP2), w(1, ACLLoopback),
		w(2, ACLNoRead), w(2, ACLNoCreate), w(2, ACLNoDelete), w(1, ACLNoWrite), w(1, ACLNoAdmin), w(1, ACLAdminOnly),
		w(1, ACLDuplicates), w(1, ACLBadIP), w(1, ACLIPv6), w(1, ACLBadDigest), w(1, ACLUnknown), w(1, ACLWorldOther))
}

func credGen(t *rapid.T) Cred {
	super := 0
	if superConfigured {
		super = 1
	}
	return weighted(t, "cred", w(5, CredAlice), w(2, CredBob), w(1, CredAliceWrong), w(1, CredNoColon),
		w(super, CredSuper), w(1, CredIP), w(1, CredUnknown), w(1, CredWorld))
}

// aclPathGen draws paths from a small tree, so that most operations meet
// a node and its ACL; now and then a sequential, bad or shared path.
func aclPathGen() *rapid.Generator[Path] {
	return rapid.Custom(func(t *rapid.T) Path {
		switch weighted(t, "pathKind", w(20, "node"), w(1, "other")) {
		case "other":
			return pathGen().Draw(t, "other")
		}
		return Path{Rel: weighted(t, "node", w(6, "/a"), w(4, "/b"), w(4, "/a/b"), w(1, "/a/b/c"))}
	})
}

// aclOpGen draws the operations of an access-control sequence: creates
// with every kind of ACL, credentials, getACL and setACL, and the reads,
// writes, watches and multis whose permissions they decide.
func aclOpGen(clients int) *rapid.Generator[Op] {
	return rapid.Custom(func(t *rapid.T) Op {
		op := Op{Client: rapid.IntRange(0, clients-1).Draw(t, "client")}
		op.Kind = weighted(t, "kind",
			w(10, Create), w(4, AddAuth), w(5, SetACL), w(3, GetACL), w(4, Delete), w(2, Exists), w(3, ExistsW),
			w(2, Get), w(3, GetW), w(3, Set), w(1, Children), w(3, ChildrenW), w(3, Multi), w(1, Sync), w(1, Close))
		if op.Kind != Multi && op.Kind != AddAuth && op.Kind != Close {
			op.Path = aclPathGen().Draw(t, "path")
		}
		switch op.Kind {
		case Create:
			op.Data = dataGen().Draw(t, "data")
			op.Flags = weighted(t, "flags", w(6, int32(0)), w(2, int32(zk.FlagEphemeral)), w(1, int32(zk.FlagSequence)))
			op.ACL = aclGen(t, "acl")
		case SetACL:
			op.ACL = aclGen(t, "acl")
			op.Version = versionGen(t, "version")
			if op.Path.Abs {
				op.Kind = GetACL // the shared nodes stay as they are
			}
		case AddAuth:
			op.Cred = credGen(t)
		case Set:
			op.Data = dataGen().Draw(t, "data")
			op.Version = versionGen(t, "version")
		case Delete:
			op.Version = versionGen(t, "version")
		case Multi:
			op.Ops = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) SubOp {
				s := subOpGen().Draw(t, "sub")
				if s.Kind == SubCreate {
					s.ACL = aclGen(t, "subACL")
				}
				return s
			}), 1, 4).Draw(t, "ops")
		}
		if writesShared(op) {
			op.Kind = Exists
		}
		return op
	})
}

func aclSequenceGen() *rapid.Generator[Sequence] {
	return rapid.Custom(func(t *rapid.T) Sequence {
		clients := rapid.IntRange(1, 3).Draw(t, "clients")
		seq := Sequence{Clients: clients, Seed: rapid.Uint64().Draw(t, "seed"), Addrs: clientAddrs(clients)}
		n := rapid.IntRange(opsMin, opsMax).Draw(t, "length")
		for i := range n {
			seq.Ops = append(seq.Ops, aclOpGen(clients).Draw(t, fmt.Sprintf("op%d", i+1)))
		}
		return seq
	})
}

// TestDifferentialACL runs random access-control sequences (schemes,
// permissions, credentials, multis, watches), by clients at 127.0.0.1,
// .2 and .3, on the simulator and on a real ZooKeeper, and compares every
// result field by field.
func TestDifferentialACL(t *testing.T) {
	srv := zktest.Shared(t)
	var stats aclCoverage
	rapid.Check(t, func(rt *rapid.T) {
		seq := aclSequenceGen().Draw(rt, "sequence")
		lines := check(rt, srv.Addr, seq, hideKnownDifferences)
		stats.add(lines)
	})
	t.Logf("coverage: %v", stats)
}

type aclCoverage struct {
	ops, noAuth, invalidACL, authFailed, redacted, getACLs, setACLs, events int
}

func (c *aclCoverage) add(lines []string) {
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			c.ops++
		}
		c.noAuth += strings.Count(l, "not authenticated")
		c.invalidACL += strings.Count(l, "invalid ACL")
		c.authFailed += strings.Count(l, "authentication failed")
		if strings.Contains(l, " getACL ") && strings.Contains(l, ":x") {
			c.redacted++
		}
		if strings.Contains(l, " getACL ") && strings.HasSuffix(l, " ok") {
			c.getACLs++
		}
		if strings.Contains(l, " setACL ") && strings.HasSuffix(l, " ok") {
			c.setACLs++
		}
		if strings.Contains(l, "watch#") {
			c.events++
		}
	}
}

func (c aclCoverage) String() string {
	return fmt.Sprintf("%d ops: %d NOAUTH, %d INVALIDACL, %d AUTHFAILED, %d getACL ok (%d redacted), %d setACL ok, %d watch events",
		c.ops, c.noAuth, c.invalidACL, c.authFailed, c.getACLs, c.redacted, c.setACLs, c.events)
}

// aclCases are the access-control rules measured on the real server, each
// as a sequence that both backends must answer alike.
var aclCases = []struct {
	name string
	seq  Sequence
}{
	{"auth ACL needs credentials, INVALIDACL before NONODE", Sequence{Clients: 1, Ops: []Op{
		{Kind: Create, Path: Path{Rel: "/x"}, ACL: ACLAuth},
		{Kind: Create, Path: Path{Rel: "/missing/x"}, ACL: ACLAuth},
		{Kind: AddAuth, Cred: CredAlice},
		{Kind: Create, Path: Path{Rel: "/x"}, Data: Data{Bytes: "d"}, ACL: ACLAuthRead},
		{Kind: GetACL, Path: Path{Rel: "/x"}},
	}}},
	{"getACL redacts digests without ADMIN", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: AddAuth, Cred: CredAlice},
		{Client: 0, Kind: Create, Path: Path{Rel: "/r"}, ACL: ACLAliceRead},
		{Client: 1, Kind: GetACL, Path: Path{Rel: "/r"}},
		{Client: 0, Kind: GetACL, Path: Path{Rel: "/r"}},
		{Client: 0, Kind: Create, Path: Path{Rel: "/adm"}, ACL: ACLAdminOnly},
		{Client: 1, Kind: GetACL, Path: Path{Rel: "/adm"}},
		{Client: 0, Kind: Create, Path: Path{Rel: "/none"}, ACL: ACLNoRead},
		{Client: 0, Kind: SetACL, Path: Path{Rel: "/none"}, ACL: ACLNoAdmin, Version: 0},
		{Client: 1, Kind: GetACL, Path: Path{Rel: "/none"}},
	}}},
	{"ip scheme sees each client's address", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: Create, Path: Path{Rel: "/ip"}, ACL: ACLIP2},
		{Client: 0, Kind: Get, Path: Path{Rel: "/ip"}},
		{Client: 1, Kind: Get, Path: Path{Rel: "/ip"}},
		{Client: 0, Kind: Create, Path: Path{Rel: "/lo"}, ACL: ACLLoopback},
		{Client: 1, Kind: Create, Path: Path{Rel: "/lo/k"}},
		{Client: 1, Kind: Set, Path: Path{Rel: "/lo"}, Version: -1},
		{Client: 0, Kind: Create, Path: Path{Rel: "/v6"}, ACL: ACLIPv6},
		{Client: 0, Kind: Create, Path: Path{Rel: "/bad"}, ACL: ACLBadIP},
		{Client: 1, Kind: AddAuth, Cred: CredIP},
	}}},
	{"unknown scheme fails and closes the connection, credentials survive", Sequence{Clients: 1, Ops: []Op{
		{Kind: AddAuth, Cred: CredAlice},
		{Kind: Create, Path: Path{Rel: "/a"}, ACL: ACLAlice},
		{Kind: AddAuth, Cred: CredUnknown},
		{Kind: Get, Path: Path{Rel: "/a"}},
		{Kind: AddAuth, Cred: CredWorld},
		{Kind: Get, Path: Path{Rel: "/a"}},
		{Kind: AddAuth, Cred: CredNoColon},
	}}},
	{"multi checks the nodes it created", Sequence{Clients: 1, Ops: []Op{
		{Kind: Multi, Ops: []SubOp{
			{Kind: SubCreate, Path: Path{Rel: "/m"}, ACL: ACLRead},
			{Kind: SubCreate, Path: Path{Rel: "/m/c"}},
		}},
		{Kind: Multi, Ops: []SubOp{
			{Kind: SubCreate, Path: Path{Rel: "/m2"}, ACL: ACLNoWrite},
			{Kind: SubSet, Path: Path{Rel: "/m2"}, Version: -1},
		}},
		{Kind: Multi, Ops: []SubOp{
			{Kind: SubCreate, Path: Path{Rel: "/m3"}, ACL: ACLNoRead},
			{Kind: SubCheck, Path: Path{Rel: "/m3"}, Version: 0},
		}},
		{Kind: AddAuth, Cred: CredAlice},
		{Kind: Multi, Ops: []SubOp{
			{Kind: SubCreate, Path: Path{Rel: "/m4"}, ACL: ACLAuth},
			{Kind: SubCreate, Path: Path{Rel: "/m4/c"}},
		}},
	}}},
	{"watch events need READ when they fire, and are used up", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: Create, Path: Path{Rel: "/w"}, ACL: ACLNoRead},
		{Client: 1, Kind: ExistsW, Path: Path{Rel: "/w"}},
		{Client: 1, Kind: GetW, Path: Path{Rel: "/w"}},
		{Client: 0, Kind: Set, Path: Path{Rel: "/w"}, Version: -1},
		{Client: 0, Kind: SetACL, Path: Path{Rel: "/w"}, Version: -1},
		{Client: 0, Kind: Set, Path: Path{Rel: "/w"}, Version: -1},
		{Client: 1, Kind: ExistsW, Path: Path{Rel: "/n"}},
		{Client: 0, Kind: Create, Path: Path{Rel: "/n"}, ACL: ACLIP1},
		{Client: 1, Kind: ChildrenW, Path: Path{Rel: "/w"}},
		{Client: 0, Kind: SetACL, Path: Path{Rel: "/w"}, ACL: ACLNoRead, Version: -1},
		{Client: 0, Kind: Create, Path: Path{Rel: "/w/k"}},
	}}},
	{"super passes every check", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: AddAuth, Cred: CredAlice},
		{Client: 0, Kind: Create, Path: Path{Rel: "/a"}, ACL: ACLAlice},
		{Client: 1, Kind: Get, Path: Path{Rel: "/a"}},
		{Client: 1, Kind: AddAuth, Cred: CredSuper},
		{Client: 1, Kind: Get, Path: Path{Rel: "/a"}},
		{Client: 1, Kind: GetACL, Path: Path{Rel: "/a"}},
		{Client: 1, Kind: SetACL, Path: Path{Rel: "/a"}, ACL: ACLRead, Version: 0},
		{Client: 1, Kind: Create, Path: Path{Rel: "/a/under-read-only"}},
	}}},
	{"auth expands to every digest, in the server's order", Sequence{Clients: 1, Ops: []Op{
		{Kind: AddAuth, Cred: CredAlice},
		{Kind: AddAuth, Cred: CredBob},
		{Kind: AddAuth, Cred: CredNoColon},
		{Kind: AddAuth, Cred: CredAliceWrong},
		{Kind: AddAuth, Cred: CredIP},
		{Kind: Create, Path: Path{Rel: "/e"}, ACL: ACLDuplicates},
		{Kind: GetACL, Path: Path{Rel: "/e"}},
		{Kind: SetACL, Path: Path{Rel: "/e"}, ACL: ACLAuthRead, Version: 0},
		{Kind: GetACL, Path: Path{Rel: "/e"}},
	}}},
	{"an ephemeral's deletion on close is dropped for a watcher without READ", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: Create, Path: Path{Rel: "/eph"}, Flags: zk.FlagEphemeral, ACL: ACLNoRead},
		{Client: 0, Kind: Create, Path: Path{Rel: "/vis"}, Flags: zk.FlagEphemeral},
		{Client: 1, Kind: ExistsW, Path: Path{Rel: "/eph"}},
		{Client: 1, Kind: ExistsW, Path: Path{Rel: "/vis"}},
		{Client: 0, Kind: Close},
		{Client: 1, Kind: Exists, Path: Path{Rel: "/eph"}},
	}}},
	// The server used the watch up, the client did not: it sends it again
	// in setWatches after a reconnect, and it fires once READ is back.
	{"a dropped event's watch comes back after a reconnect", Sequence{Clients: 2, Ops: []Op{
		{Client: 0, Kind: Create, Path: Path{Rel: "/w"}, ACL: ACLNoRead},
		{Client: 1, Kind: ExistsW, Path: Path{Rel: "/w"}},
		{Client: 0, Kind: Set, Path: Path{Rel: "/w"}, Data: Data{Bytes: "x"}, Version: -1},
		{Client: 1, Kind: Fault, Fault: FaultDisconnect},
		{Client: 0, Kind: SetACL, Path: Path{Rel: "/w"}, Version: -1},
		{Client: 0, Kind: Set, Path: Path{Rel: "/w"}, Data: Data{Bytes: "y"}, Version: -1},
	}}},
}

// TestACLCases runs each measured rule on both backends.
func TestACLCases(t *testing.T) {
	srv := zktest.Shared(t)
	for _, tc := range aclCases {
		t.Run(tc.name, func(t *testing.T) {
			seq := tc.seq
			if !superConfigured && strings.Contains(seq.String(), string(CredSuper)) {
				t.Skip("the real server has no super user: it was not started by this package")
			}
			if proxyTB(t, seq) == nil {
				// Faults go through proxies, which all connect from
				// 127.0.0.1.
				seq.Addrs = clientAddrs(seq.Clients)
			}
			lines := check(t, srv.Addr, seq, nil)
			t.Logf("agree:\n%s", strings.Join(lines, "\n"))
		})
	}
}
