package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// The cases here are the differential cases of sim/difftest (rawCases,
// freshServerCases), measured on ZooKeeper 3.8.0, restated at the
// server's door so that they run without a real server.

func addWatch(p string, mode AddWatchMode) Request {
	return Request{Op: OpAddWatch, Path: p, AddWatchMode: mode}
}

func checkWatches(p string, typ WatcherType) Request {
	return Request{Op: OpCheckWatches, Path: p, WatcherType: typ}
}

func removeWatches(p string, typ WatcherType) Request {
	return Request{Op: OpRemoveWatches, Path: p, WatcherType: typ}
}

// TestServerPersistentWatches is the trigger table of persistent and
// persistent-recursive watches (Programmer's Guide, "Persistent, Recursive
// Watches"; WatchManager.triggerWatch of 3.8.0): which events reach the
// watcher, each once, and that the watch stays.
func TestServerPersistentWatches(t *testing.T) {
	cases := []struct {
		name    string
		setup   []Request // by the other session, before the watches
		watches []Request // by the watcher
		ops     []Request // by the other session
		want    []string  // the watcher's events, in order
	}{
		{"persistent: every event on the path, again and again, none for a grandchild or a child's data",
			nil, []Request{addWatch("/p", AddWatchPersistent)},
			[]Request{mkCreate("/p", nil, 0), mkSet("/p", []byte("x"), -1), mkSet("/p", []byte("y"), -1),
				mkCreate("/p/c", nil, 0), mkSet("/p/c", []byte("z"), -1), mkCreate("/p/c/g", nil, 0),
				mkDelete("/p/c/g", -1), mkDelete("/p/c", -1), mkDelete("/p", -1), mkCreate("/p", nil, 0)},
			[]string{"EventNodeCreated /p", "EventNodeDataChanged /p", "EventNodeDataChanged /p",
				"EventNodeChildrenChanged /p", "EventNodeChildrenChanged /p", "EventNodeDeleted /p", "EventNodeCreated /p"}},
		{"recursive: the whole subtree, no NodeChildrenChanged, not a sibling with the same prefix",
			nil, []Request{addWatch("/r", AddWatchPersistentRecursive)},
			[]Request{mkCreate("/r", nil, 0), mkCreate("/r/a", nil, 0), mkCreate("/r/a/b", nil, 0),
				mkSet("/r/a/b", []byte("x"), -1), mkSet("/r", []byte("y"), -1), mkCreate("/rx", nil, 0),
				mkDelete("/r/a/b", -1), mkDelete("/r/a", -1), mkDelete("/r", -1)},
			[]string{"EventNodeCreated /r", "EventNodeCreated /r/a", "EventNodeCreated /r/a/b",
				"EventNodeDataChanged /r/a/b", "EventNodeDataChanged /r",
				"EventNodeDeleted /r/a/b", "EventNodeDeleted /r/a", "EventNodeDeleted /r"}},
		{"recursive on the root sees everything",
			nil, []Request{addWatch("/", AddWatchPersistentRecursive)},
			[]Request{mkCreate("/a", nil, 0), mkSet("/a", nil, -1)},
			[]string{"EventNodeCreated /a", "EventNodeDataChanged /a"}},
		{"3.8: a getData watch turns the data half of a persistent watch one-shot; addWatch turns it back",
			[]Request{mkCreate("/s", nil, 0)},
			[]Request{addWatch("/s", AddWatchPersistent), watchGet("/s")},
			[]Request{mkSet("/s", []byte("1"), -1), mkSet("/s", []byte("2"), -1), mkCreate("/s/c", nil, 0)},
			[]string{"EventNodeDataChanged /s", "EventNodeChildrenChanged /s"}},
		{"3.8: an exists watch turns the data half of a recursive watch one-shot on the path and deaf below it",
			[]Request{mkCreate("/t", nil, 0)},
			[]Request{addWatch("/t", AddWatchPersistentRecursive), watchExists("/t")},
			[]Request{mkCreate("/t/a", nil, 0), mkSet("/t", []byte("1"), -1), mkSet("/t", []byte("2"), -1),
				mkSet("/t/a", []byte("3"), -1), mkDelete("/t/a", -1)},
			// The child table's recursive half still hears the deletion.
			[]string{"EventNodeDataChanged /t", "EventNodeDeleted /t/a"}},
		{"a recursive watch on an ancestor and a standard watch below: one event each time",
			[]Request{mkCreate("/u", nil, 0), mkCreate("/u/v", nil, 0)},
			[]Request{addWatch("/u", AddWatchPersistentRecursive), watchGet("/u/v"), watchChildren("/u")},
			[]Request{mkSet("/u/v", []byte("1"), -1), mkSet("/u/v", []byte("2"), -1), mkDelete("/u/v", -1)},
			[]string{"EventNodeDataChanged /u/v", "EventNodeDataChanged /u/v", "EventNodeDeleted /u/v", "EventNodeChildrenChanged /u"}},
		{"addWatch checks nothing: a missing parent, a path without a slash",
			nil, []Request{addWatch("/m/deep", AddWatchPersistent), addWatch("no-slash", AddWatchPersistentRecursive)},
			[]Request{mkCreate("/m", nil, 0), mkCreate("/m/deep", nil, 0)},
			[]string{"EventNodeCreated /m/deep"}},
		{"removeWatches of the data half of a recursive watch leaves the child half's deletions",
			[]Request{mkCreate("/y", nil, 0)},
			[]Request{addWatch("/y", AddWatchPersistentRecursive), removeWatches("/y", WatcherData)},
			[]Request{mkCreate("/y/a", nil, 0), mkSet("/y/a", []byte("1"), -1), mkDelete("/y/a", -1)},
			[]string{"EventNodeDeleted /y/a"}},
		{"multiRead sets no watch",
			[]Request{mkCreate("/q", nil, 0)},
			[]Request{{Op: OpMultiRead, Ops: []Request{watchGet("/q"), {Op: OpGetChildrenNoStat, Path: "/q", Watch: true}}}},
			[]Request{mkSet("/q", nil, -1), mkCreate("/q/a", nil, 0)},
			nil},
		{"a watch on the empty path never fires",
			nil, []Request{watchExists(""), watchGet(""), watchChildren("")},
			[]Request{mkSet("/", nil, -1), mkCreate("/e", nil, 0)},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			a, _ := h.connect(40000)
			b, _ := h.connect(40000)
			for _, r := range tc.setup {
				h.ok(b, r)
			}
			for _, r := range tc.watches {
				h.do(a, r)
			}
			for _, r := range tc.ops {
				h.ok(b, r)
			}
			if got := h.events(a); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("events %q\nwant   %q", got, tc.want)
			}
		})
	}
}

// Two clients' persistent watches on the same change each get the event
// once, and a disconnect drops a persistent watch like any other.
func TestServerPersistentWatchesOfTwoClients(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	b, _ := h.connect(40000)
	c, _ := h.connect(40000)
	h.ok(a, addWatch("/m", AddWatchPersistent))
	h.ok(b, addWatch("/", AddWatchPersistentRecursive))
	h.ok(b, addWatch("/m", AddWatchPersistentRecursive))
	h.ok(c, mkCreate("/m", nil, 0))
	h.ok(c, mkCreate("/m/k", nil, 0))
	if got, want := h.events(a), []string{"EventNodeCreated /m", "EventNodeChildrenChanged /m"}; !slices.Equal(got, want) {
		t.Fatalf("a's events %q, want %q", got, want)
	}
	if got, want := h.events(b), []string{"EventNodeCreated /m", "EventNodeCreated /m/k"}; !slices.Equal(got, want) {
		t.Fatalf("b's events %q, want %q", got, want)
	}
	h.s.Disconnect(b)
	if err := h.s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if h.s.dataWatches.recursive != 0 || h.s.childWatches.recursive != 0 {
		t.Fatalf("a disconnect left recursive watches counted: %d %d", h.s.dataWatches.recursive, h.s.childWatches.recursive)
	}
}

// checkWatches and removeWatches answer NOWATCHER when there is no watch of
// the type asked; checkWatches of 3.8.0 asks whether anyone watches the
// path, and fails on a path without a slash; an unknown type is
// MARSHALLINGERROR. Neither sends an event.
func TestServerCheckAndRemoveWatches(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	b, _ := h.connect(40000)
	h.ok(b, mkCreate("/w", nil, 0))
	steps := []struct {
		c    ConnID
		req  Request
		want Code
	}{
		{a, checkWatches("/w", WatcherAny), CodeNoWatcher},
		{a, watchGet("/w"), CodeOK},
		{a, checkWatches("/w", WatcherData), CodeOK},
		{a, checkWatches("/w", WatcherChildren), CodeNoWatcher},
		{a, checkWatches("/w", WatcherAny), CodeOK},
		{b, checkWatches("/w", WatcherData), CodeOK}, // a's watch answers for b
		{b, removeWatches("/w", WatcherData), CodeNoWatcher},
		{a, removeWatches("/w", WatcherChildren), CodeNoWatcher},
		{a, removeWatches("/w", WatcherData), CodeOK},
		{a, removeWatches("/w", WatcherData), CodeNoWatcher},
		{a, watchChildren("/w"), CodeOK},
		{a, watchExists("/w"), CodeOK},
		{a, removeWatches("/w", WatcherAny), CodeOK},
		{a, removeWatches("/w", WatcherAny), CodeNoWatcher},
		{a, checkWatches("/w", 9), CodeMarshallingError},
		{a, removeWatches("/w", 0), CodeMarshallingError},
		{a, addWatch("no-slash", AddWatchPersistent), CodeOK},
		{a, checkWatches("no-slash", WatcherData), CodeMarshallingError},
		{a, removeWatches("no-slash", WatcherData), CodeOK},
		{a, watchGet(""), CodeOK},
		{a, checkWatches("", WatcherData), CodeNoWatcher},
		{a, removeWatches("", WatcherData), CodeOK},
		{a, addWatch("/w", 7), CodeMarshallingError},
	}
	for i, st := range steps {
		if got := h.do(st.c, st.req).Err; got != st.want {
			t.Fatalf("step %d, %v %q type %d: %v, want %v", i+1, st.req.Op, st.req.Path, st.req.WatcherType, got, st.want)
		}
	}
	h.ok(b, mkSet("/w", nil, -1))
	if got := h.events(a); len(got) != 0 {
		t.Fatalf("events after every watch was removed: %q", got)
	}
}

// setWatches2 re-registers the three one-shot lists as setWatches does,
// firing at once what was missed since relativeZxid, and the persistent
// lists without looking at the tree; setWatches ignores persistent lists.
func TestServerSetWatches2(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	b, _ := h.connect(40000)
	for _, p := range []string{"/a", "/b", "/k", "/k/c"} {
		h.ok(b, mkCreate(p, nil, 0))
	}
	h.ok(b, mkSet("/b", []byte("new"), -1))
	h.ok(a, Request{Op: OpSetWatches2, DataWatches: []string{"/gone"}, ExistWatches: []string{"/a", "/none"},
		ChildWatches: []string{"/k"}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/k"}})
	if got, want := h.events(a), []string{"EventNodeDeleted /gone", "EventNodeCreated /a", "EventNodeChildrenChanged /k"}; !slices.Equal(got, want) {
		t.Fatalf("setWatches2 fired %q, want %q", got, want)
	}
	h.ok(b, mkCreate("/none", nil, 0))
	h.ok(b, mkCreate("/p", nil, 0))
	h.ok(b, mkCreate("/k/d", nil, 0))
	if got, want := h.events(a), []string{"EventNodeCreated /none", "EventNodeCreated /p", "EventNodeCreated /k/d"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	h.ok(a, Request{Op: OpSetWatches, RelativeZxid: h.s.LastZxid(), PersistentWatches: []string{"/b"}})
	h.ok(b, mkSet("/b", nil, -1))
	if got := h.events(a); len(got) != 0 {
		t.Fatalf("setWatches registered a persistent watch: %q", got)
	}
}

// getEphemerals lists the session's own ephemerals whose path starts with
// the prefix as a string; an empty or "/" prefix, trimmed, lists all.
func TestServerGetEphemerals(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	b, _ := h.connect(40000)
	h.ok(a, mkCreate("/e", nil, 0))
	for _, p := range []string{"/e/a", "/e/ab", "/e/b"} {
		h.ok(a, mkCreate(p, nil, zk.FlagEphemeral))
	}
	h.ok(b, mkCreate("/e/other", nil, zk.FlagEphemeral))
	cases := []struct {
		c      ConnID
		prefix string
		want   []string
	}{
		{a, "/e/a", []string{"/e/a", "/e/ab"}},
		{a, "/e/", []string{"/e/a", "/e/ab", "/e/b"}},
		{a, " / ", []string{"/e/a", "/e/ab", "/e/b"}},
		{a, "", []string{"/e/a", "/e/ab", "/e/b"}},
		{a, "/nothing", []string{}},
		{b, "/e", []string{"/e/other"}},
	}
	for _, tc := range cases {
		got := h.ok(tc.c, Request{Op: OpGetEphemerals, Path: tc.prefix}).Ephemerals
		slices.Sort(got) // the order is the clone's, held to a real server by difftest
		if !slices.Equal(got, tc.want) {
			t.Fatalf("getEphemerals %q: %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

// getAllChildrenNumber counts every node below the path; "/" counts every
// node but the root, and "" (the root under its other name) the root too.
func TestServerGetAllChildrenNumber(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	for _, p := range []string{"/n", "/n/a", "/n/a/b", "/n/d", "/nx"} {
		h.ok(a, mkCreate(p, nil, 0))
	}
	for path, want := range map[string]int32{"/n": 3, "/n/a/b": 0, "/zookeeper": 2, "/": 8, "": 9} {
		if got := h.ok(a, Request{Op: OpGetAllChildrenNum, Path: path}).TotalNumber; got != want {
			t.Errorf("getAllChildrenNumber %q = %d, want %d", path, got, want)
		}
	}
	for _, path := range []string{"/missing", "/n/"} {
		if got := h.do(a, Request{Op: OpGetAllChildrenNum, Path: path}).Err; got != CodeNoNode {
			t.Errorf("getAllChildrenNumber %q: %v, want NONODE", path, got)
		}
	}
}

// multiRead answers each op on its own, errors per op, and refuses a
// write among its ops as a whole.
func TestServerMultiRead(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	h.ok(a, mkCreate("/q", []byte("qd"), 0))
	h.ok(a, mkCreate("/q/a", nil, 0))
	r := h.ok(a, Request{Op: OpMultiRead, Ops: []Request{
		{Op: OpGetData, Path: "/q"}, {Op: OpGetChildrenNoStat, Path: "/q"},
		{Op: OpGetData, Path: "/missing"}, {Op: OpGetChildrenNoStat, Path: "/missing"},
	}})
	want := []MultiResult{
		{Op: OpGetData, Data: []byte("qd"), Stat: h.stat(a, "/q")},
		{Op: OpGetChildrenNoStat, Children: []string{"a"}},
		{Err: CodeNoNode}, {Err: CodeNoNode},
	}
	if fmt.Sprint(r.Multi) != fmt.Sprint(want) {
		t.Fatalf("multiRead: %+v\nwant       %+v", r.Multi, want)
	}
	if got := h.do(a, Request{Op: OpMultiRead, Ops: []Request{{Op: OpGetData, Path: "/q"}, mkCreate("/q/z", nil, 0)}}); got.Err != CodeMarshallingError || got.Multi != nil {
		t.Fatalf("multiRead with a create: %+v, want MARSHALLINGERROR alone", got)
	}
	if _, ok := h.s.Node("/q/z"); ok {
		t.Fatalf("a refused multiRead created a node")
	}
	if got := h.ok(a, Request{Op: OpGetChildrenNoStat, Path: "/q"}); got.Stat != (zk.Stat{}) || !slices.Equal(got.Children, []string{"a"}) {
		t.Fatalf("getChildren without a Stat: %+v", got)
	}
}

// The create ops: the op decides the node's owner and the reply's shape,
// the mode the checks; inside a multi the server rebuilds each create from
// its flags.
func TestServerCreateOpsAndModes(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(40000)
	cases := []struct {
		req   Request
		want  Code
		owner ownerKindType
	}{
		{Request{Op: OpCreateCont, Path: "/cc", Mode: zk.FlagContainer, ACL: openACL}, CodeOK, ownerContainer},
		{Request{Op: OpCreateCont, Path: "/c0", Mode: zk.FlagPersistent, ACL: openACL}, CodeOK, ownerContainer},
		{Request{Op: OpCreateCont, Path: "/c1", Mode: zk.FlagEphemeral, ACL: openACL}, CodeOK, ownerContainer},
		{Request{Op: OpCreate, Path: "/p4", Mode: zk.FlagContainer, ACL: openACL}, CodeOK, ownerNone},
		{Request{Op: OpCreate2, Path: "/q4", Mode: zk.FlagContainer, ACL: openACL}, CodeOK, ownerNone},
		{Request{Op: OpCreate2, Path: "/e", Mode: zk.FlagEphemeral, ACL: openACL}, CodeOK, ownerSession},
		{Request{Op: OpCreateTTL, Path: "/t5", Mode: zk.FlagTTL, TTLMs: 1000, ACL: openACL}, CodeUnimplemented, 0},
		{Request{Op: OpCreateTTL, Path: "/t0", Mode: zk.FlagPersistent, TTLMs: 1000, ACL: openACL}, CodeBadArguments, 0},
		{Request{Op: OpCreateTTL, Path: "/t4", Mode: zk.FlagContainer, TTLMs: 1000, ACL: openACL}, CodeBadArguments, 0},
		{Request{Op: OpCreate2, Path: "/u5", Mode: zk.FlagTTL, ACL: openACL}, CodeUnimplemented, 0},
		{Request{Op: OpCreate, Path: "/v7", Mode: 7, ACL: openACL}, CodeBadArguments, 0},
		{Request{Op: OpCreateCont, Path: "/v7", Mode: -1, ACL: openACL}, CodeBadArguments, 0},
	}
	for _, tc := range cases {
		r := h.do(a, tc.req)
		if r.Err != tc.want {
			t.Fatalf("%v %s mode %d: %v, want %v", tc.req.Op, tc.req.Path, tc.req.Mode, r.Err, tc.want)
		}
		if r.Err != CodeOK {
			continue
		}
		n := h.s.nodes[tc.req.Path]
		if got := ownerKind(n.ephemeralOwner); got != tc.owner || tc.owner == ownerSession && n.ephemeralOwner != sid {
			t.Fatalf("%v %s mode %d: owner %#x, want kind %d", tc.req.Op, tc.req.Path, tc.req.Mode, n.ephemeralOwner, tc.owner)
		}
		if r.Path != tc.req.Path || r.Stat != n.stat() {
			t.Fatalf("%v %s: reply %+v, want the path and %+v", tc.req.Op, tc.req.Path, r, n.stat())
		}
	}
	r := h.ok(a, mkMulti(
		Request{Op: OpCreate, Path: "/m4", Mode: zk.FlagContainer, ACL: openACL},
		Request{Op: OpCreateCont, Path: "/m0", Mode: zk.FlagPersistent, ACL: openACL},
		Request{Op: OpCreate2, Path: "/m2", ACL: openACL},
		Request{Op: OpCreateTTL, Path: "/mt", Mode: zk.FlagPersistent, TTLMs: -1, ACL: openACL}))
	gotOps := []OpCode{}
	for _, m := range r.Multi {
		gotOps = append(gotOps, m.Op)
	}
	if want := []OpCode{OpCreate2, OpCreate, OpCreate, OpCreate}; !slices.Equal(gotOps, want) {
		t.Fatalf("multi result types %v, want %v", gotOps, want)
	}
	for _, bad := range []Request{watchGet("/"), {Op: OpGetChildrenNoStat, Path: "/"}, watchExists("/"), {Op: OpSetACL, Path: "/", ACL: openACL, Version: -1}, mkMulti(), {Op: OpCloseSession}} {
		zxid := h.s.LastZxid()
		r := h.do(a, mkMulti(mkCreate("/n0", nil, 0), bad))
		if r.Err != CodeMarshallingError || r.Multi != nil || r.Zxid != zxid+1 {
			t.Fatalf("a multi with %v: %+v, want MARSHALLINGERROR alone, an error transaction", bad.Op, r)
		}
	}
	zxid := h.s.LastZxid()
	r = h.do(a, mkMulti(mkCreate("/n1", nil, 0), Request{Op: OpCreate, Path: "/n2", Mode: zk.FlagTTL, ACL: openACL}))
	if r.Err != CodeMarshallingError || r.Multi != nil || r.Zxid != zxid+1 {
		t.Fatalf("a multi with a TTL-flagged create: %+v, want MARSHALLINGERROR alone, an error transaction", r)
	}
	if _, ok := h.s.Node("/n1"); ok {
		t.Fatalf("a refused multi created /n1")
	}
	r = h.do(a, mkMulti(mkCreate("/x/y", nil, 0), Request{Op: OpCreate, Path: "/n2", Mode: zk.FlagTTL, ACL: openACL}))
	if r.Err != CodeOK || len(r.Multi) != 2 || r.Multi[0].Err != CodeNoNode || r.Multi[1].Err != CodeRuntimeInconsistency {
		t.Fatalf("a TTL-flagged create after a failed op: %+v, want NONODE, RUNTIMEINCONSISTENCY", r)
	}
	if ownerKind(h.s.nodes["/m4"].ephemeralOwner) != ownerContainer || ownerKind(h.s.nodes["/m0"].ephemeralOwner) != ownerNone {
		t.Fatalf("a multi's creates: /m4 owner %#x, /m0 owner %#x", h.s.nodes["/m4"].ephemeralOwner, h.s.nodes["/m0"].ephemeralOwner)
	}
}

// A createTTL with a non-TTL mode and a negative TTL stops a real 3.8.0
// server; the simulator closes the connection unanswered and changes
// nothing, and the session lives on.
func TestServerCreateTTLThatCrashesARealServer(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(40000)
	zxid := h.s.LastZxid()
	if _, ok := h.try(a, Request{Op: OpCreateTTL, Path: "/neg", Mode: zk.FlagPersistent, TTLMs: -1, ACL: openACL}); ok {
		t.Fatalf("the request was answered")
	}
	if h.s.HasConn(a) || h.s.LastZxid() != zxid || !slices.Contains(h.s.Sessions(), sid) {
		t.Fatalf("conn open %v, zxid %#x (was %#x), sessions %v", h.s.HasConn(a), h.s.LastZxid(), zxid, h.s.Sessions())
	}
}

// An opcode the server does not know is answered UNIMPLEMENTED with zxid
// -1 and its connection closed; the session survives for a reconnect.
// reconfig on a standalone server and a client's deleteContainer are
// error transactions.
func TestServerUnknownOpReconfigDeleteContainer(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(40000)
	zxid := h.s.LastZxid()
	if r := h.do(a, Request{Op: OpReconfig, JoiningServers: "server.2=127.0.0.1:2888:3888", CurConfigID: -1}); r.Err != CodeReconfigDisabled || r.Zxid != zxid+1 {
		t.Fatalf("reconfig: %+v", r)
	}
	if r := h.do(a, Request{Op: OpDeleteContainer, Path: "/"}); r.Err != CodeBadArguments || r.Zxid != zxid+2 {
		t.Fatalf("deleteContainer: %+v", r)
	}
	if r := h.do(a, Request{Op: OpCreateSession}); r.Err != CodeMarshallingError || r.Zxid != zxid+3 || !h.s.HasConn(a) {
		t.Fatalf("createSession on a live connection: %+v", r)
	}
	for _, op := range []OpCode{99, OpNotification, 23, 108, -12} {
		c := h.open()
		h.connectOn(c, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 40000})
		r := h.do(c, Request{Op: op})
		if r.Err != CodeUnimplemented || r.Zxid != -1 || h.s.HasConn(c) {
			t.Fatalf("op %d: %+v, conn open %v", op, r, h.s.HasConn(c))
		}
	}
	if !slices.Contains(h.s.Sessions(), sid) {
		t.Fatalf("the session died with its connection")
	}
}

// TestServerWatchTablesProperty drives random watches, writes, removals,
// disconnects, expiries and restarts through the server, which checks its
// invariants after every transaction; the test checks them, the watch
// tables' included, after every step, and that a connection's checkWatches
// agrees with what removeWatches then finds.
func TestServerWatchTablesProperty(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/b", ""}
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt, ServerConfig{})
		var conns []ConnID
		var sids []int64
		for range 3 {
			c, sid := h.connect(10000)
			conns, sids = append(conns, c), append(sids, sid)
		}
		for i := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			k := rapid.IntRange(0, len(conns)-1).Draw(rt, fmt.Sprintf("conn%d", i))
			c := conns[k]
			p := rapid.SampledFrom(paths).Draw(rt, fmt.Sprintf("path%d", i))
			var req Request
			switch rapid.IntRange(0, 12).Draw(rt, fmt.Sprintf("kind%d", i)) {
			case 0, 1:
				req = mkCreate(p, nil, rapid.SampledFrom([]int32{0, zk.FlagEphemeral}).Draw(rt, fmt.Sprintf("mode%d", i)))
			case 2:
				req = mkDelete(p, -1)
			case 3:
				req = mkSet(p, []byte("x"), -1)
			case 4:
				req = watchGet(p)
			case 5:
				req = watchExists(p)
			case 6:
				req = watchChildren(p)
			case 7, 8:
				req = addWatch(p, AddWatchMode(rapid.IntRange(0, 1).Draw(rt, fmt.Sprintf("mode%d", i))))
			case 9:
				typ := WatcherType(rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("type%d", i)))
				if !h.s.HasConn(c) {
					continue
				}
				checked := h.do(c, checkWatches(p, typ)).Err
				removed := h.do(c, removeWatches(p, typ)).Err
				if removed == CodeOK && checked != CodeOK && p != "" {
					rt.Fatalf("removeWatches %q found a watch checkWatches did not (%v)", p, checked)
				}
			case 10:
				h.s.Disconnect(c)
				c2 := h.open()
				h.connectOn(c2, ConnectRequest{SessionID: sids[k], Passwd: sessionPasswd(sids[k]), TimeoutMs: 10000})
				conns[k] = c2
			case 11:
				h.s.ExpireSession(h.nowMs, sids[k])
				h.tick(h.nowMs)
				c2, sid := h.connect(10000)
				conns[k], sids[k] = c2, sid
			case 12:
				h.s.Restart(h.nowMs)
				for j := range conns {
					c2 := h.open()
					h.connectOn(c2, ConnectRequest{SessionID: sids[j], Passwd: sessionPasswd(sids[j]), TimeoutMs: 10000})
					conns[j] = c2
				}
			}
			if req.Op != 0 && h.s.HasConn(c) {
				h.do(c, req)
			}
			h.collect()
			h.pending = h.pending[:0]
			if err := h.s.CheckInvariants(); err != nil {
				rt.Fatalf("step %d: %v", i, err)
			}
		}
	})
}
