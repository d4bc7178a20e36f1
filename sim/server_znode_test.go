package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-zookeeper/zk"
)

// These tests replay, against the server state machine, the experiments of
// /tmp/zkprobe/main.go that were run on a real ZooKeeper 3.8.0, and compare
// with the lines it printed (RESULTS.txt). Zxids are written relative to a
// baseline B, the czxid of a probe node created first, as the probe did.

// baseline creates /zprobe and /zprobe/1 as the probe's setBase did and
// returns the czxid of /zprobe/1.
func (h *srvHarness) baseline(c ConnID) int64 {
	h.t.Helper()
	h.ok(c, mkCreate("/zprobe", nil, 0))
	return h.ok(c, mkCreate("/zprobe/1", nil, 0)).Stat.Czxid
}

// Measured on 3.8.0 (probe q2): sequence suffixes are "%010d" of the
// parent's count of creates (deletes and failed creates do not advance
// it; setData on the parent does not either), shared by every prefix
// under one parent, "/" + sequential included; the reported cversion is
// 2*creates - numChildren; pzxid is the zxid of the last child create or
// delete. Programmer's Guide, "Sequence Nodes -- Unique Naming" and "ZooKeeper
// Stat Structure".
func TestServerSequenceAndParentStat(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, sid := h.connect(4000)
	b := h.baseline(c)
	var got []string
	step := func(name string, r Response) {
		got = append(got, fmt.Sprintf("%s -> path=%q err=%v", name, r.Path, r.Err))
		got = append(got, "  stat /p = "+relStat(h.stat(c, "/p"), b, sid))
	}
	step("create /p", h.do(c, mkCreate("/p", nil, 0)))
	for range 3 {
		step("create seq /p/s-", h.do(c, mkCreate("/p/s-", nil, zk.FlagSequence)))
	}
	step("delete /p/s-0000000001", h.do(c, mkDelete("/p/s-0000000001", -1)))
	step("create seq /p/s-", h.do(c, mkCreate("/p/s-", nil, zk.FlagSequence)))
	step("create /p/x", h.do(c, mkCreate("/p/x", nil, 0)))
	step("create /p/x AGAIN", h.do(c, mkCreate("/p/x", nil, 0)))
	step("create /p/missing/y", h.do(c, mkCreate("/p/missing/y", nil, 0)))
	step("delete /p/nonexist", h.do(c, mkDelete("/p/nonexist", -1)))
	step("delete /p/x", h.do(c, mkDelete("/p/x", -1)))
	step("create seq /p/s-", h.do(c, mkCreate("/p/s-", nil, zk.FlagSequence)))
	step("create seq /p/", h.do(c, mkCreate("/p/", nil, zk.FlagSequence)))
	step("create eph seq /p/e-", h.do(c, mkCreate("/p/e-", nil, zk.FlagEphemeralSequential)))
	step("create seq /p/s-", h.do(c, mkCreate("/p/s-", nil, zk.FlagSequence)))
	h.ok(c, mkCreate("/p2", nil, 0))
	got = append(got, "create seq /p2/a -> "+h.do(c, mkCreate("/p2/a", nil, zk.FlagSequence)).Path)
	got = append(got, "create seq /p2/b -> "+h.do(c, mkCreate("/p2/b", nil, zk.FlagSequence)).Path)
	h.ok(c, mkCreate("/p3", nil, 0))
	h.ok(c, mkCreate("/p3/q0000000001", nil, 0))
	got = append(got, "  stat /p3 = "+relStat(h.stat(c, "/p3"), b, sid))
	got = append(got, fmt.Sprintf("create seq /p3/q when /p3/q0000000001 exists -> %v", h.do(c, mkCreate("/p3/q", nil, zk.FlagSequence)).Err))
	got = append(got, "  stat /p3 = "+relStat(h.stat(c, "/p3"), b, sid))
	got = append(got, fmt.Sprintf("create seq /p3/q again -> %v", h.do(c, mkCreate("/p3/q", nil, zk.FlagSequence)).Err))
	got = append(got, "  stat /p3 = "+relStat(h.stat(c, "/p3"), b, sid))
	got = append(got, fmt.Sprintf("children /p = %q", h.ok(c, Request{Op: OpGetChildren, Path: "/p"}).Children))
	h.ok(c, mkCreate("/p4", nil, 0))
	for range 3 {
		h.ok(c, mkSet("/p4", []byte("x"), -1))
	}
	got = append(got, "create seq /p4/n after 3 setData on /p4 -> "+h.do(c, mkCreate("/p4/n", nil, zk.FlagSequence)).Path)
	got = append(got, "create seq /rootseq- -> "+h.do(c, mkCreate("/rootseq-", nil, zk.FlagSequence)).Path)
	got = append(got, "  stat / = "+relStat(h.stat(c, "/"), b, sid))

	p := func(cv, n, pz int) string {
		return fmt.Sprintf("  stat /p = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:%d Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:%d Pzxid:B+%d}", cv, n, pz)
	}
	want := []string{
		`create /p -> path="/p" err=OK`, p(0, 0, 1),
		`create seq /p/s- -> path="/p/s-0000000000" err=OK`, p(1, 1, 2),
		`create seq /p/s- -> path="/p/s-0000000001" err=OK`, p(2, 2, 3),
		`create seq /p/s- -> path="/p/s-0000000002" err=OK`, p(3, 3, 4),
		`delete /p/s-0000000001 -> path="" err=OK`, p(4, 2, 5),
		`create seq /p/s- -> path="/p/s-0000000003" err=OK`, p(5, 3, 6),
		`create /p/x -> path="/p/x" err=OK`, p(6, 4, 7),
		`create /p/x AGAIN -> path="" err=NODEEXISTS`, p(6, 4, 7),
		`create /p/missing/y -> path="" err=NONODE`, p(6, 4, 7),
		`delete /p/nonexist -> path="" err=NONODE`, p(6, 4, 7),
		`delete /p/x -> path="" err=OK`, p(7, 3, 11),
		`create seq /p/s- -> path="/p/s-0000000005" err=OK`, p(8, 4, 12),
		`create seq /p/ -> path="/p/0000000006" err=OK`, p(9, 5, 13),
		`create eph seq /p/e- -> path="/p/e-0000000007" err=OK`, p(10, 6, 14),
		`create seq /p/s- -> path="/p/s-0000000008" err=OK`, p(11, 7, 15),
		"create seq /p2/a -> /p2/a0000000000",
		"create seq /p2/b -> /p2/b0000000001",
		"  stat /p3 = {Czxid:B+19 Mzxid:B+19 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+20}",
		"create seq /p3/q when /p3/q0000000001 exists -> NODEEXISTS",
		"  stat /p3 = {Czxid:B+19 Mzxid:B+19 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+20}",
		"create seq /p3/q again -> NODEEXISTS",
		"  stat /p3 = {Czxid:B+19 Mzxid:B+19 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+20}",
		`children /p = ["s-0000000008" "e-0000000007" "0000000006" "s-0000000000" "s-0000000003" "s-0000000002" "s-0000000005"]`,
		"create seq /p4/n after 3 setData on /p4 -> /p4/n0000000000",
		"create seq /rootseq- -> /rootseq-0000000005",
	}
	// The root's zxids: the probe's baseline was 4 (a session and /zprobe
	// before it); here it is 3, so only the relative pzxid is compared.
	diffLines(t, got[:len(got)-1], want)
	root := h.stat(c, "/")
	if root.Cversion != 5 || root.NumChildren != 7 || root.Pzxid != b+28 || root.Czxid != 0 || root.Mzxid != 0 {
		t.Fatalf("stat / = %s, measured {Cversion:5 NumChildren:7 Pzxid:B+28}", relStat(root, b, sid))
	}
}

// Measured on 3.8.0 (probe q3): the Stat of a node through create,
// setData (every setData bumps version and mzxid, even with the same
// data), child creates and deletes; nil and empty data stay apart; an
// ephemeral shows its session; a grandchild does not touch the
// grandparent. Programmer's Guide, "ZooKeeper Stat Structure".
func TestServerStatFields(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, sid := h.connect(4000)
	b := h.baseline(c)
	var got []string
	pst := func(p string) { got = append(got, "  stat "+p+" = "+relStat(h.stat(c, p), b, sid)) }
	h.ok(c, mkCreate("/q3", nil, 0))
	pst("/q3")
	h.ok(c, mkCreate("/q3/n", []byte("hello"), 0))
	pst("/q3/n")
	pst("/q3")
	h.nowMs += 33
	r := h.ok(c, mkSet("/q3/n", []byte("world!!"), -1))
	got = append(got, "Set /q3/n returned stat="+relStat(r.Stat, b, sid))
	if r.Stat.Mtime != DefaultEpochMs+33 || r.Stat.Ctime != DefaultEpochMs {
		t.Errorf("ctime %d mtime %d, want the virtual wall clock at create and at set", r.Stat.Ctime, r.Stat.Mtime)
	}
	pst("/q3")
	got = append(got, "Set (empty, version 1) returned stat="+relStat(h.ok(c, mkSet("/q3/n", []byte{}, 1)).Stat, b, sid))
	got = append(got, "Set (nil) returned stat="+relStat(h.ok(c, mkSet("/q3/n", nil, -1)).Stat, b, sid))
	g := h.ok(c, Request{Op: OpGetData, Path: "/q3/n"})
	got = append(got, fmt.Sprintf("Get /q3/n nil=%v stat=%s", g.Data == nil, relStat(g.Stat, b, sid)))
	h.ok(c, mkCreate("/q3/m", nil, 0))
	pst("/q3")
	h.ok(c, mkDelete("/q3/n", -1))
	pst("/q3")
	got = append(got, "Set /q3 returned "+relStat(h.ok(c, mkSet("/q3", []byte("pp"), -1)).Stat, b, sid))
	h.ok(c, mkCreate("/q3/nil", nil, 0))
	g = h.ok(c, Request{Op: OpGetData, Path: "/q3/nil"})
	got = append(got, fmt.Sprintf("nil data: isnil=%v stat=%s", g.Data == nil, relStat(g.Stat, b, sid)))
	h.ok(c, mkCreate("/q3/empty", []byte{}, 0))
	g = h.ok(c, Request{Op: OpGetData, Path: "/q3/empty"})
	got = append(got, fmt.Sprintf("empty data: isnil=%v stat=%s", g.Data == nil, relStat(g.Stat, b, sid)))
	h.ok(c, mkCreate("/q3/eph", []byte("e"), zk.FlagEphemeral))
	pst("/q3/eph")
	ch := h.ok(c, Request{Op: OpGetChildren, Path: "/q3"})
	got = append(got, fmt.Sprintf("Children /q3 = %q stat=%s", ch.Children, relStat(ch.Stat, b, sid)))
	h.ok(c, mkCreate("/q3/m/g", nil, 0))
	pst("/q3")
	pst("/q3/m")
	got = append(got, "setData same nil value: "+relStat(h.ok(c, mkSet("/q3/m", nil, -1)).Stat, b, sid))

	want := []string{
		"  stat /q3 = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+1}",
		"  stat /q3/n = {Czxid:B+2 Mzxid:B+2 Version:0 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:5 NumChildren:0 Pzxid:B+2}",
		"  stat /q3 = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+2}",
		"Set /q3/n returned stat={Czxid:B+2 Mzxid:B+3 Version:1 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:7 NumChildren:0 Pzxid:B+2}",
		"  stat /q3 = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+2}",
		"Set (empty, version 1) returned stat={Czxid:B+2 Mzxid:B+4 Version:2 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+2}",
		"Set (nil) returned stat={Czxid:B+2 Mzxid:B+5 Version:3 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+2}",
		"Get /q3/n nil=true stat={Czxid:B+2 Mzxid:B+5 Version:3 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+2}",
		"  stat /q3 = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:2 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:2 Pzxid:B+6}",
		"  stat /q3 = {Czxid:B+1 Mzxid:B+1 Version:0 Cversion:3 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+7}",
		"Set /q3 returned {Czxid:B+1 Mzxid:B+8 Version:1 Cversion:3 Aversion:0 EphemeralOwner:0x0 DataLength:2 NumChildren:1 Pzxid:B+7}",
		"nil data: isnil=true stat={Czxid:B+9 Mzxid:B+9 Version:0 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+9}",
		"empty data: isnil=false stat={Czxid:B+10 Mzxid:B+10 Version:0 Cversion:0 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+10}",
		"  stat /q3/eph = {Czxid:B+11 Mzxid:B+11 Version:0 Cversion:0 Aversion:0 EphemeralOwner:self DataLength:1 NumChildren:0 Pzxid:B+11}",
		`Children /q3 = ["nil" "eph" "m" "empty"] stat={Czxid:B+1 Mzxid:B+8 Version:1 Cversion:6 Aversion:0 EphemeralOwner:0x0 DataLength:2 NumChildren:4 Pzxid:B+11}`,
		"  stat /q3 = {Czxid:B+1 Mzxid:B+8 Version:1 Cversion:6 Aversion:0 EphemeralOwner:0x0 DataLength:2 NumChildren:4 Pzxid:B+11}",
		"  stat /q3/m = {Czxid:B+6 Mzxid:B+6 Version:0 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+12}",
		"setData same nil value: {Czxid:B+6 Mzxid:B+13 Version:1 Cversion:1 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:1 Pzxid:B+12}",
	}
	diffLines(t, got, want)
}

// Measured on 3.8.0 (probe q1): the initial tree. The system nodes were
// made by no transaction (every zxid 0), do not count as creates
// (cversion -1 for "/" with one child, -2 for /zookeeper with two),
// /zookeeper/config is read-only with aversion -1, and their data is
// empty, not null (the differential tests).
func TestServerInitialTree(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(4000)
	cases := []struct {
		path     string
		children []string
		stat     zk.Stat
	}{
		{"/", []string{"zookeeper"}, zk.Stat{Cversion: -1, NumChildren: 1}},
		{"/zookeeper", []string{"config", "quota"}, zk.Stat{Cversion: -2, NumChildren: 2}},
		{"/zookeeper/config", []string{}, zk.Stat{Aversion: -1}},
		{"/zookeeper/quota", []string{}, zk.Stat{}},
	}
	for _, tc := range cases {
		g := h.ok(c, Request{Op: OpGetData, Path: tc.path})
		if g.Stat != tc.stat || g.Data == nil || len(g.Data) != 0 {
			t.Errorf("%s: stat %+v data %#v, want %+v and empty non-nil data", tc.path, g.Stat, g.Data, tc.stat)
		}
		ch := h.ok(c, Request{Op: OpGetChildren, Path: tc.path})
		if fmt.Sprint(ch.Children) != fmt.Sprint(tc.children) {
			t.Errorf("%s: children %q, want %q", tc.path, ch.Children, tc.children)
		}
	}
}

// The sequence counter is a Java int: past 2^31-1 it wraps, and "%010d"
// of a negative int is a minus sign and nine digits (Java's Formatter
// pads after the sign, as Go's does). PrepRequestProcessor,
// pRequest2TxnCreate.
func TestServerSequenceOverflow(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(4000)
	h.ok(c, mkCreate("/o", nil, 0))
	h.s.nodes["/o"].cversion = math.MaxInt32
	cases := []string{"/o/s-2147483647", "/o/s--2147483648", "/o/s--2147483647"}
	for _, want := range cases {
		if got := h.ok(c, mkCreate("/o/s-", nil, zk.FlagSequence)).Path; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	h.s.nodes["/o"].cversion = -5
	if got := h.ok(c, mkCreate("/o/t", nil, zk.FlagSequence)).Path; got != "/o/t-000000005" {
		t.Fatalf("got %s, want /o/t-000000005", got)
	}
}

// Every create mode (Programmer's Guide, "Ephemeral Nodes", "Sequence
// Nodes", "Container Nodes", "TTL Nodes"), measured on 3.8.0 (probes q6,
// q7): a container shows no ephemeral owner; TTL is UNIMPLEMENTED unless
// extended types are on; the container flag on a plain create (opcode 1)
// makes a persistent node, since a CreateTxn carries only "ephemeral".
func TestServerCreateModes(t *testing.T) {
	cases := []struct {
		name  string
		req   Request
		path  string // the node made, "" if the create fails
		err   Code
		owner string // "self", "0", or "" when the create fails
		swept bool   // a container: deleted by the sweep once emptied
	}{
		{"persistent", mkCreate("/n", nil, zk.FlagPersistent), "/n", CodeOK, "0", false},
		{"ephemeral", mkCreate("/n", nil, zk.FlagEphemeral), "/n", CodeOK, "self", false},
		{"sequential", mkCreate("/n-", nil, zk.FlagSequence), "/n-0000000000", CodeOK, "0", false},
		{"ephemeral sequential", mkCreate("/n-", nil, zk.FlagEphemeralSequential), "/n-0000000000", CodeOK, "self", false},
		{"container", Request{Op: OpCreateCont, Path: "/n", Mode: zk.FlagContainer, ACL: openACL}, "/n", CodeOK, "0", true},
		{"container flag on plain create", mkCreate("/n", nil, zk.FlagContainer), "/n", CodeOK, "0", false},
		{"TTL", Request{Op: OpCreateTTL, Path: "/n", Mode: zk.FlagTTL, TTLMs: 5000, ACL: openACL}, "", CodeUnimplemented, "", false},
		{"TTL sequential", Request{Op: OpCreateTTL, Path: "/n", Mode: zk.FlagPersistentSequentialWithTTL, TTLMs: 5000, ACL: openACL}, "", CodeUnimplemented, "", false},
		{"TTL 0", Request{Op: OpCreateTTL, Path: "/n", Mode: zk.FlagTTL, ACL: openACL}, "", CodeUnimplemented, "", false},
		{"unknown flags", mkCreate("/n", nil, 99), "", CodeBadArguments, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			c, sid := h.connect(40000)
			r := h.do(c, tc.req)
			if r.Err != tc.err || r.Path != tc.path {
				t.Fatalf("got %q %v, want %q %v", r.Path, r.Err, tc.path, tc.err)
			}
			if tc.err != CodeOK {
				if r.Zxid != 2 || h.s.LastZxid() != 2 {
					t.Fatalf("failed create: zxid %d, want 2 (it is a transaction)", r.Zxid)
				}
				return
			}
			st := h.stat(c, tc.path)
			owner := "0"
			if st.EphemeralOwner == sid {
				owner = "self"
			} else if st.EphemeralOwner != 0 {
				owner = fmt.Sprintf("%#x", st.EphemeralOwner)
			}
			if owner != tc.owner || st != r.Stat {
				t.Fatalf("owner %s (stat %+v, create's %+v), want %s", owner, st, r.Stat, tc.owner)
			}
			if owner == "self" {
				return
			}
			// Give it a child and take it away; a container goes at the
			// next sweep, after 60 s.
			h.ok(c, mkCreate(tc.path+"/k", nil, 0))
			h.ok(c, mkDelete(tc.path+"/k", -1))
			h.tick(30_000)
			h.ok(c, Request{Op: OpPing})
			h.tick(60_000)
			h.ok(c, Request{Op: OpPing})
			gone := h.do(c, Request{Op: OpExists, Path: tc.path}).Err == CodeNoNode
			if gone != tc.swept {
				t.Fatalf("swept: %v, want %v", gone, tc.swept)
			}
		})
	}
	t.Run("ephemeral parent", func(t *testing.T) {
		h := newHarness(t, ServerConfig{})
		c, _ := h.connect(40000)
		h.ok(c, mkCreate("/e", nil, zk.FlagEphemeral))
		if r := h.do(c, mkCreate("/e/k", nil, zk.FlagEphemeral)); r.Err != CodeNoChildrenForEphemeral {
			t.Fatalf("got %v", r.Err)
		}
	})
}
