package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// errorFixture is the tree every error case starts from: /a with a child,
// /nd without DELETE permission holding /nd/k (which has a child), /nr
// without READ, /ro read-only holding /ro/x, and an ephemeral /eph.
func errorFixture(h *srvHarness, c ConnID) {
	h.ok(c, mkCreate("/a", nil, 0))
	h.ok(c, mkCreate("/a/k", nil, 0))
	h.ok(c, mkCreateACL("/nd", zk.WorldACL(zk.PermAll&^zk.PermDelete)))
	h.ok(c, mkCreate("/nd/k", nil, 0))
	h.ok(c, mkCreate("/nd/k/g", nil, 0))
	h.ok(c, mkCreateACL("/ndl", zk.WorldACL(zk.PermAll&^zk.PermDelete)))
	h.ok(c, mkCreateACL("/nr", zk.WorldACL(zk.PermAll&^zk.PermRead)))
	h.ok(c, mkCreate("/ro", nil, 0))
	h.ok(c, mkCreate("/ro/x", nil, 0))
	h.s.nodes["/ro"].acl = aclReadOnly
	h.ok(c, mkCreate("/eph", nil, zk.FlagEphemeral))
}

// TestServerErrors checks the error of every failing request, and that a
// failed write changes nothing but the zxid. Where several errors apply,
// the one reported follows PrepRequestProcessor's order of checks, as
// measured.
//
// Sources: "q6" is /tmp/zkprobe/RESULTS.txt; "probe2" is a second probe
// run on 3.8.0 for this test (/tmp/zkprobe2/main.go, out.txt), sending
// paths the go-zookeeper client would refuse through a multi, which it
// does not validate.
func TestServerErrors(t *testing.T) {
	const bad = "/\U0001D11E" // a character outside the BMP
	cases := []struct {
		ref  string
		req  Request
		want Code
	}{
		// create
		{"q6: create under missing parent", mkCreate("/nope/x", nil, 0), CodeNoNode},
		{"q6: create existing", mkCreate("/a", nil, 0), CodeNodeExists},
		{"q6: create /", mkCreate("/", nil, 0), CodeNodeExists},
		{"q6: child of ephemeral", mkCreate("/eph/x", nil, 0), CodeNoChildrenForEphemeral},
		{"q6: ephemeral child of ephemeral", mkCreate("/eph/x", nil, zk.FlagEphemeral), CodeNoChildrenForEphemeral},
		{"q6: sequential child of ephemeral", mkCreate("/eph/x", nil, zk.FlagSequence), CodeNoChildrenForEphemeral},
		{"q6: nil ACL", mkCreateACL("/n", nil), CodeInvalidACL},
		{"q6: empty ACL", mkCreateACL("/n", []zk.ACL{}), CodeInvalidACL},
		{"q6: create /zookeeper/x is allowed", mkCreate("/zookeeper/x", nil, 0), CodeOK},
		{"q6: create /zookeeper/quota/x is allowed", mkCreate("/zookeeper/quota/x", nil, 0), CodeOK},
		{"q6: create /zookeeper/config/x: config is read-only", mkCreate("/zookeeper/config/x", nil, 0), CodeNoAuth},
		{"q10: non-BMP character", mkCreate(bad, nil, 0), CodeBadArguments},
		{"q5: no leading slash: parent m not found", mkCreate("m/bad", nil, 0), CodeNoNode},
		{"probe2: /missing/. parent first", mkCreate("/missing/.", nil, 0), CodeNoNode},
		{"probe2: /a/. relative", mkCreate("/a/.", nil, 0), CodeBadArguments},
		{"probe2: /a/ trailing slash", mkCreate("/a/", nil, 0), CodeBadArguments},
		{"probe2: /missing/<non-BMP>", mkCreate("/missing"+bad, nil, 0), CodeNoNode},
		{"probe2: empty ACL before bad path", mkCreateACL(bad, []zk.ACL{}), CodeInvalidACL},
		{"probe2: empty ACL before missing parent", mkCreateACL("/missing/x", []zk.ACL{}), CodeInvalidACL},
		{"probe2: no slash before empty ACL", mkCreateACL("x", []zk.ACL{}), CodeBadArguments},
		{"probe2: empty path", mkCreate("", nil, 0), CodeBadArguments},
		{"probe2: NUL", mkCreate("/a\x00b", nil, 0), CodeBadArguments},
		{"probe2: no CREATE before NodeExists", mkCreate("/ro/x", nil, 0), CodeNoAuth},
		{"probe2: no CREATE before bad path", mkCreate("/ro"+bad, nil, 0), CodeNoAuth},
		{"probe2: bad path before ephemeral parent", mkCreate("/eph"+bad, nil, 0), CodeBadArguments},
		{"probe2: /eph/.. ", mkCreate("/eph/..", nil, 0), CodeBadArguments},
		{"probe2: unknown flags first", mkCreate("/a/k", nil, 99), CodeBadArguments},
		{"q7: container existing", Request{Op: OpCreateCont, Path: "/a", Mode: zk.FlagContainer, ACL: openACL}, CodeNodeExists},
		{"q7: container under missing", Request{Op: OpCreateCont, Path: "/nope/c", Mode: zk.FlagContainer, ACL: openACL}, CodeNoNode},
		// delete
		{"q6: delete non-empty", mkDelete("/a", -1), CodeNotEmpty},
		{"q6: delete missing", mkDelete("/a/nope", -1), CodeNoNode},
		{"q6: delete /", mkDelete("/", -1), CodeBadArguments},
		{"q6: delete / version 0", mkDelete("/", 0), CodeBadArguments},
		{"q6: delete /zookeeper", mkDelete("/zookeeper", -1), CodeBadArguments},
		{"q6: delete /zookeeper/quota", mkDelete("/zookeeper/quota", -1), CodeBadArguments},
		{"q6: delete /zookeeper/config", mkDelete("/zookeeper/config", -1), CodeBadArguments},
		{"q6: delete wrong version", mkDelete("/a/k", 3), CodeBadVersion},
		{"q6: delete version -2", mkDelete("/a/k", -2), CodeBadVersion},
		{"q6: delete version -1", mkDelete("/a/k", -1), CodeOK},
		{"q6: another session's ephemeral", mkDelete("/eph", -1), CodeOK},
		{"q6: delete needs DELETE on the parent, not the node", mkDelete("/ndl", -1), CodeOK},
		{"probe2: delete /nope/", mkDelete("/nope/", -1), CodeNoNode},
		{"probe2: delete /a/: not validated, not found", mkDelete("/a/", -1), CodeNoNode},
		{"probe2: delete non-BMP: not found", mkDelete(bad, -1), CodeNoNode},
		{"probe2: delete x", mkDelete("x", -1), CodeBadArguments},
		{"probe2: delete empty path", mkDelete("", -1), CodeBadArguments},
		{"probe2: delete NUL", mkDelete("/a\x00", -1), CodeBadArguments},
		{"probe2: delete /a/.", mkDelete("/a/.", -1), CodeNoNode},
		{"probe2: version before NotEmpty", mkDelete("/a", 7), CodeBadVersion},
		{"probe2: no DELETE before version", mkDelete("/nd/k", 7), CodeNoAuth},
		{"probe2: no DELETE before NotEmpty", mkDelete("/nd/k", -1), CodeNoAuth},
		{"probe2: no DELETE before NoNode", mkDelete("/nd/missing", -1), CodeNoAuth},
		// setData and check
		{"q6: setData wrong version", mkSet("/a", nil, 3), CodeBadVersion},
		{"q6: setData version -2", mkSet("/a", nil, -2), CodeBadVersion},
		{"q6: setData version -1", mkSet("/a", nil, -1), CodeOK},
		{"q6: setData missing", mkSet("/nope", nil, -1), CodeNoNode},
		{"q6: setData /zookeeper", mkSet("/zookeeper", []byte("x"), -1), CodeOK},
		{"q6: setData /", mkSet("/", []byte("x"), -1), CodeOK},
		{"q6: setData /zookeeper/config", mkSet("/zookeeper/config", []byte("x"), -1), CodeNoAuth},
		{"probe2: setData /a/", mkSet("/a/", nil, -1), CodeBadArguments},
		{"probe2: setData x", mkSet("x", nil, -1), CodeBadArguments},
		{"probe2: setData /nope/: validated first", mkSet("/nope/", nil, -1), CodeBadArguments},
		{"probe2: no WRITE before version", mkSet("/ro", nil, 5), CodeNoAuth},
		{"probe2: check /a/", mkCheck("/a/", -1), CodeBadArguments},
		{"probe2: check needs READ", mkCheck("/nr", 3), CodeNoAuth},
		{"q5: check missing", mkCheck("/nope", 0), CodeNoNode},
		// reads
		{"q6: getData missing", Request{Op: OpGetData, Path: "/nope", Watch: true}, CodeNoNode},
		{"q6: getChildren missing", Request{Op: OpGetChildren, Path: "/nope", Watch: true}, CodeNoNode},
		{"q6: exists missing", Request{Op: OpExists, Path: "/nope"}, CodeNoNode},
		{"probe2: exists checks no ACL", Request{Op: OpExists, Path: "/nr"}, CodeOK},
		{"probe2: getData needs READ", Request{Op: OpGetData, Path: "/nr"}, CodeNoAuth},
		{"probe2: getChildren needs READ", Request{Op: OpGetChildren, Path: "/nr"}, CodeNoAuth},
		{"probe2: exists non-BMP: not found", Request{Op: OpExists, Path: bad}, CodeNoNode},
		{"q4: sync on a missing path", Request{Op: OpSync, Path: "/nope"}, CodeOK},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			owner, _ := h.connect(40000)
			errorFixture(h, owner)
			c, _ := h.connect(40000)
			before := dumpTree(h.s)
			zxid := h.s.LastZxid()
			r := h.do(c, tc.req)
			if r.Err != tc.want {
				t.Fatalf("got %v, want %v", r.Err, tc.want)
			}
			if tc.req.Op.isWrite() {
				if r.Zxid != zxid+1 || h.s.LastZxid() != zxid+1 {
					t.Fatalf("write: reply zxid %d, last %d, want %d", r.Zxid, h.s.LastZxid(), zxid+1)
				}
			} else if h.s.LastZxid() != zxid {
				t.Fatalf("a read consumed a zxid")
			}
			if tc.want != CodeOK && dumpTree(h.s) != before {
				t.Fatalf("a failed request changed the tree")
			}
			// The same request inside a multi fails the same way.
			if tc.req.Op.isWrite() && tc.want != CodeOK {
				m := h.do(c, mkMulti(tc.req))
				if len(m.Multi) != 1 || m.Multi[0].Err != tc.want {
					t.Fatalf("in a multi: %+v", m.Multi)
				}
			}
		})
	}
}

// dumpTree describes the whole tree, for comparing before and after.
func dumpTree(s *Server) string {
	var b strings.Builder
	for _, p := range sortedPaths(s) {
		n := s.nodes[p]
		fmt.Fprintf(&b, "%s %q %+v\n", p, n.data, n.stat())
	}
	return b.String()
}

func sortedPaths(s *Server) []string {
	paths := make([]string, 0, len(s.nodes))
	for p := range s.nodes {
		paths = append(paths, p)
	}
	sortStrings(paths)
	return paths
}

// Measured on 3.8.0 (probe q4): which requests consume a zxid. Every write
// is a transaction, failed or not, a multi is one transaction whatever its
// size (empty and failed included), creating and closing a session are
// transactions; reads, sync and pings are not.
func TestServerZxidPerTransaction(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		cost int64
	}{
		{"failed create NodeExists", mkCreate("/z", nil, 0), 1},
		{"failed create NoNode", mkCreate("/nope/x", nil, 0), 1},
		{"failed delete NoNode", mkDelete("/nope", -1), 1},
		{"failed delete NotEmpty", mkDelete("/z", -1), 1},
		{"failed delete BadVersion", mkDelete("/z/child", 99), 1},
		{"failed setData BadVersion", mkSet("/z", []byte("x"), 99), 1},
		{"failed setData NoNode", mkSet("/nope", []byte("x"), -1), 1},
		{"successful setData", mkSet("/z", []byte("x"), -1), 1},
		{"multi of 3 creates", mkMulti(mkCreate("/z/m1", nil, 0), mkCreate("/z/m2", nil, 0), mkCreate("/z/m3", nil, 0)), 1},
		{"failed multi", mkMulti(mkCreate("/z/f1", nil, 0), mkCreate("/z/child", nil, 0)), 1},
		{"failed multi single check", mkMulti(mkCheck("/z", 99)), 1},
		{"multi single check", mkMulti(mkCheck("/z", 0)), 1},
		{"empty multi", mkMulti(), 1},
		{"sync", Request{Op: OpSync, Path: "/z"}, 0},
		{"sync missing", Request{Op: OpSync, Path: "/nope"}, 0},
		{"exists", Request{Op: OpExists, Path: "/z", Watch: true}, 0},
		{"getData", Request{Op: OpGetData, Path: "/z", Watch: true}, 0},
		{"getChildren", Request{Op: OpGetChildren, Path: "/z", Watch: true}, 0},
		{"ping", Request{Op: OpPing}, 0},
		{"setWatches", Request{Op: OpSetWatches, DataWatches: []string{"/z"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			c, _ := h.connect(4000)
			h.ok(c, mkCreate("/z", []byte("d"), 0))
			h.ok(c, mkCreate("/z/child", []byte("d"), 0))
			before := h.s.LastZxid()
			r := h.do(c, tc.req)
			if got := h.s.LastZxid() - before; got != tc.cost {
				t.Fatalf("consumed %d zxids, want %d", got, tc.cost)
			}
			if r.Zxid != h.s.LastZxid() {
				t.Fatalf("reply zxid %d, last zxid %d", r.Zxid, h.s.LastZxid())
			}
		})
	}
	t.Run("multi creates share one czxid", func(t *testing.T) {
		h := newHarness(t, ServerConfig{})
		c, _ := h.connect(4000)
		h.ok(c, mkCreate("/z", nil, 0))
		r := h.ok(c, mkMulti(mkCreate("/z/m1", nil, 0), mkCreate("/z/m2", nil, 0)))
		for _, p := range []string{"/z/m1", "/z/m2"} {
			if st := h.stat(c, p); st.Czxid != r.Zxid {
				t.Fatalf("%s czxid %d, multi zxid %d", p, st.Czxid, r.Zxid)
			}
		}
	})
	t.Run("sessions", func(t *testing.T) {
		h := newHarness(t, ServerConfig{})
		if h.s.LastZxid() != 0 {
			t.Fatalf("initial zxid %d", h.s.LastZxid())
		}
		c, _ := h.connect(4000)
		if h.s.LastZxid() != 1 {
			t.Fatalf("after createSession: %d", h.s.LastZxid())
		}
		h.ok(c, mkCreate("/e1", nil, zk.FlagEphemeral))
		h.ok(c, mkCreate("/e2", nil, zk.FlagEphemeral))
		r := h.do(c, Request{Op: OpCloseSession})
		// One closeSession deletes both ephemerals under its one zxid.
		if r.Zxid != 4 || h.s.LastZxid() != 4 {
			t.Fatalf("closeSession zxid %d, last %d, want 4", r.Zxid, h.s.LastZxid())
		}
		c2, _ := h.connect(4000)
		if st := h.stat(c2, "/"); st.Pzxid != 4 {
			t.Fatalf("root pzxid %d, want the closeSession's 4", st.Pzxid)
		}
	})
}

// Measured on 3.8.0 (probe q5): a multi is atomic; when an op fails the
// results are OK for the ops before it, its error, and
// RUNTIMEINCONSISTENCY after; later ops see the effects of earlier ones
// (create under a node created in the same multi, check after delete).
// Programmer's Guide, "Multi-update" (ZooKeeper.multi javadoc).
func TestServerMulti(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, sid := h.connect(4000)
	b := h.baseline(c)
	h.ok(c, mkCreate("/m", nil, 0))
	h.ok(c, mkCreate("/m/v", []byte("v"), 0))
	var got []string
	pmr := func(name string, ops ...Request) {
		r := h.do(c, mkMulti(ops...))
		var parts []string
		for _, x := range r.Multi {
			s := x.Err.String()
			if x.Path != "" {
				s += " " + x.Path
			}
			if x.Op == OpSetData {
				s += " " + relStat(x.Stat, b, sid)
			}
			parts = append(parts, s)
		}
		got = append(got, name+": "+strings.Join(parts, ", "))
	}
	pst := func(p string) { got = append(got, "  stat "+p+" = "+relStat(h.stat(c, p), b, sid)) }
	pmr("create a, create a, create b", mkCreate("/m/a", nil, 0), mkCreate("/m/a", nil, 0), mkCreate("/m/b", nil, 0))
	got = append(got, fmt.Sprintf("  children /m: %q", h.ok(c, Request{Op: OpGetChildren, Path: "/m"}).Children))
	pst("/m")
	pmr("check v 5, create c", mkCheck("/m/v", 5), mkCreate("/m/c", nil, 0))
	pmr("create d, create missing/x, create e", mkCreate("/m/d", nil, 0), mkCreate("/m/missing/x", nil, 0), mkCreate("/m/e", nil, 0))
	pmr("check nope", mkCheck("/m/nope", 0))
	pmr("create f, setData v 7, delete v", mkCreate("/m/f", nil, 0), mkSet("/m/v", []byte("q"), 7), mkDelete("/m/v", -1))
	pmr("delete /m, create g", mkDelete("/m", -1), mkCreate("/m/g", nil, 0))
	pmr("empty")
	pst("/m")
	pmr("create h, setData v, check v 1, delete h, create seq s-, create eph",
		mkCreate("/m/h", []byte("hh"), 0), mkSet("/m/v", []byte("vv"), 0), mkCheck("/m/v", 1),
		mkDelete("/m/h", -1), mkCreate("/m/s-", nil, zk.FlagSequence), mkCreate("/m/eph", nil, zk.FlagEphemeral))
	pst("/m")
	pst("/m/v")
	pmr("create n1, create n1/n2, setData n1, delete n1/n2",
		mkCreate("/m/n1", nil, 0), mkCreate("/m/n1/n2", nil, 0), mkSet("/m/n1", []byte("z"), -1), mkDelete("/m/n1/n2", -1))
	pst("/m/n1")
	pmr("create m/bad", mkCreate("m/bad", nil, 0))
	pmr("create ok1, create eph/x", mkCreate("/m/ok1", nil, 0), mkCreate("/m/eph/x", nil, 0))
	pmr("create v, check v 99, create v", mkCreate("/m/v", nil, 0), mkCheck("/m/v", 99), mkCreate("/m/v", nil, 0))
	pmr("check /", mkCheck("/", 0))
	pmr("delete v 1, check v", mkDelete("/m/v", 1), mkCheck("/m/v", -1))
	want := []string{
		"create a, create a, create b: OK, NODEEXISTS, RUNTIMEINCONSISTENCY",
		`  children /m: ["v"]`,
		"  stat /m = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+2}",
		"check v 5, create c: BADVERSION, RUNTIMEINCONSISTENCY",
		"create d, create missing/x, create e: OK, NONODE, RUNTIMEINCONSISTENCY",
		"check nope: NONODE",
		"create f, setData v 7, delete v: OK, BADVERSION, RUNTIMEINCONSISTENCY",
		"delete /m, create g: NOTEMPTY, RUNTIMEINCONSISTENCY",
		"empty: ",
		"  stat /m = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+2}",
		"create h, setData v, check v 1, delete h, create seq s-, create eph: OK /m/h, OK {Czxid:B+2 Mzxid:B+10 Version:1 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:2 NumChildren:0 Pzxid:B+2}, OK, OK, OK /m/s-0000000002, OK /m/eph",
		"  stat /m = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:5 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:3 Pzxid:B+10}",
		"  stat /m/v = {Czxid:B+2 Mzxid:B+10 Version:1 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:2 NumChildren:0 Pzxid:B+2}",
		"create n1, create n1/n2, setData n1, delete n1/n2: OK /m/n1, OK /m/n1/n2, OK {Czxid:B+11 Mzxid:B+11 Version:1 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:1 NumChildren:1 Pzxid:B+11}, OK",
		"  stat /m/n1 = {Czxid:B+11 Mzxid:B+11 Version:1 Cversion:2 Aversion:0 EphemeralOwner:0x0 DataLength:1 NumChildren:0 Pzxid:B+11}",
		"create m/bad: NONODE",
		"create ok1, create eph/x: OK, NOCHILDRENFOREPHEMERALS",
		"create v, check v 99, create v: NODEEXISTS, RUNTIMEINCONSISTENCY, RUNTIMEINCONSISTENCY",
		"check /: OK",
		"delete v 1, check v: OK, NONODE",
	}
	diffLines(t, got, want)

	// Two sequential creates under one parent in one multi get successive
	// numbers, and a delete then its parent's delete in one multi see the
	// parent emptied (the overlay's parent record must be the one updated).
	// Found by the differential tests against 3.8.0.
	r := h.ok(c, mkMulti(mkCreate("/m/q-", nil, zk.FlagSequence), mkCreate("/m/q-", nil, zk.FlagEphemeralSequential)))
	if r.Multi[0].Path != "/m/q-0000000005" || r.Multi[1].Path != "/m/q-0000000006" {
		t.Fatalf("two sequential creates in a multi: %+v", r.Multi)
	}
	h.ok(c, mkCreate("/d", nil, 0))
	h.ok(c, mkCreate("/d/k", nil, 0))
	if r := h.do(c, mkMulti(mkDelete("/d/k", -1), mkDelete("/d", -1))); r.Multi[1].Err != CodeOK {
		t.Fatalf("delete child then parent in a multi: %+v", r.Multi)
	}
}

func sortStrings(s []string) { slices.Sort(s) }

// A request whose record cannot be decoded is answered MARSHALLINGERROR
// and the session goes on; a write takes a zxid for its error
// transaction, a read does not (measured on 3.8: TestJudgedByRealServer in
// sim/wire, "truncated records").
func TestServerMalformedRequest(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(4000)
	for _, tc := range []struct {
		op        OpCode
		takesZxid bool
	}{{OpGetData, false}, {OpExists, false}, {OpCreate, true}, {OpSetData, true}, {OpMulti, true}, {OpDelete, true}} {
		before := h.s.LastZxid()
		r, ok := h.try(c, Request{Op: tc.op, Malformed: true})
		if !ok || r.Err != CodeMarshallingError {
			t.Fatalf("malformed %v: %+v %v, want MARSHALLINGERROR", tc.op, r, ok)
		}
		want := before
		if tc.takesZxid {
			want = before + 1
		}
		if r.Zxid != want || h.s.LastZxid() != want {
			t.Errorf("malformed %v: reply zxid %#x, server %#x; want %#x", tc.op, r.Zxid, h.s.LastZxid(), want)
		}
	}
	h.ok(c, mkCreate("/after", nil, 0))
}

// A SASL token on a server without SASL gets {xid, zxid 0, OK} and a null
// token, and the connection stays (measured on 3.8: TestJudgedByRealServer
// in sim/wire, "sasl on a server without SASL").
func TestServerSASLWithoutSASL(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(4000)
	h.ok(c, mkCreate("/x", nil, 0))
	r, ok := h.try(c, Request{Xid: 5, Op: OpSASL, Data: []byte("token")})
	if !ok || r.Err != CodeOK || r.Zxid != 0 || r.Data != nil {
		t.Fatalf("sasl: %+v %v", r, ok)
	}
	h.ok(c, Request{Op: OpPing})
}
