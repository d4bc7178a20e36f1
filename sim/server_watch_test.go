package sim

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
)

func watchExists(p string) Request   { return Request{Op: OpExists, Path: p, Watch: true} }
func watchGet(p string) Request      { return Request{Op: OpGetData, Path: p, Watch: true} }
func watchChildren(p string) Request { return Request{Op: OpGetChildren, Path: p, Watch: true} }

// TestServerWatchTriggers is ZooKeeper's watch trigger table: which calls
// set which watch, which operations fire which event on which path, once
// per connection however many watches the connection set, and only once
// (Programmer's Guide, "ZooKeeper Watches": "Semantics of Watches" and
// "What ZooKeeper Guarantees about Watches"). The cases are the probe's
// q9 (a)-(l), measured on 3.8.0, and the guide's table.
func TestServerWatchTriggers(t *testing.T) {
	cases := []struct {
		ref     string
		setup   []Request // by the other session, before the watches
		watches []Request // by the watcher
		ops     []Request // by the other session
		want    []string  // the watcher's events, in order
	}{
		{"q9a: exists+getData+getChildren, delete: one NodeDeleted",
			[]Request{mkCreate("/w", nil, 0)},
			[]Request{watchExists("/w"), watchChildren("/w"), watchGet("/w")},
			[]Request{mkDelete("/w", -1)},
			[]string{"EventNodeDeleted /w"}},
		{"q9b: exists on a missing node, create: NodeCreated",
			nil, []Request{watchExists("/w")}, []Request{mkCreate("/w", nil, 0)},
			[]string{"EventNodeCreated /w"}},
		{"q9c: getChildren is not fired by setData",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchChildren("/w")},
			[]Request{mkSet("/w", []byte("x"), -1), mkCreate("/w/c1", nil, 0)},
			[]string{"EventNodeChildrenChanged /w"}},
		{"q9d: getData, two setData: one NodeDataChanged",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchGet("/w")},
			[]Request{mkSet("/w", []byte("x"), -1), mkSet("/w", []byte("y"), -1)},
			[]string{"EventNodeDataChanged /w"}},
		{"q9e: getChildren, child delete",
			[]Request{mkCreate("/w", nil, 0), mkCreate("/w/c", nil, 0)}, []Request{watchChildren("/w")},
			[]Request{mkDelete("/w/c", -1)},
			[]string{"EventNodeChildrenChanged /w"}},
		{"q9e3: getChildren is not fired by a child's data or a grandchild",
			[]Request{mkCreate("/w", nil, 0), mkCreate("/w/c1", nil, 0)}, []Request{watchChildren("/w")},
			[]Request{mkSet("/w/c1", []byte("x"), -1), mkCreate("/w/c1/g", nil, 0)},
			nil},
		{"q9f: exists twice and getData, one setData: one event",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchExists("/w"), watchExists("/w"), watchGet("/w")},
			[]Request{mkSet("/w", []byte("x"), -1)},
			[]string{"EventNodeDataChanged /w"}},
		{"q9g: a child watch alone fires NodeDeleted",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchChildren("/w")},
			[]Request{mkDelete("/w", -1)},
			[]string{"EventNodeDeleted /w"}},
		{"q9i: exists on an existing node is not fired by children",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchExists("/w")},
			[]Request{mkCreate("/w/c9", nil, 0), mkDelete("/w/c9", -1), mkDelete("/w", -1)},
			[]string{"EventNodeDeleted /w"}},
		{"q9j: create and delete: only NodeCreated, the watch is one-shot",
			nil, []Request{watchExists("/w2")},
			[]Request{mkCreate("/w2", nil, 0), mkDelete("/w2", -1)},
			[]string{"EventNodeCreated /w2"}},
		{"q9k: parent child watch and child exists+child watches, child deleted",
			[]Request{mkCreate("/w3", nil, 0), mkCreate("/w3/k", nil, 0)},
			[]Request{watchChildren("/w3"), watchExists("/w3/k"), watchChildren("/w3/k")},
			[]Request{mkDelete("/w3/k", -1)},
			[]string{"EventNodeDeleted /w3/k", "EventNodeChildrenChanged /w3"}},
		{"q9l: a multi fires in the order of its ops",
			[]Request{mkCreate("/w3", nil, 0)},
			[]Request{watchChildren("/w3"), watchExists("/w3/a"), watchExists("/w3/b")},
			[]Request{mkMulti(mkCreate("/w3/a", nil, 0), mkCreate("/w3/b", nil, 0))},
			[]string{"EventNodeCreated /w3/a", "EventNodeChildrenChanged /w3", "EventNodeCreated /w3/b"}},
		{"guide: getData on a missing node sets no watch (NoNode)",
			nil, []Request{watchGet("/w"), watchChildren("/w")}, []Request{mkCreate("/w", nil, 0)},
			nil},
		{"guide: a failed write fires nothing",
			[]Request{mkCreate("/w", nil, 0)}, []Request{watchGet("/w"), watchChildren("/w")},
			[]Request{mkSet("/w", nil, 9), mkDelete("/w", 9), mkCreate("/w", nil, 0), mkMulti(mkCreate("/w/x", nil, 0), mkCheck("/w", 9))},
			nil},
		{"guide: a watch on the root sees its children",
			nil, []Request{watchChildren("/")}, []Request{mkCreate("/r", nil, 0)},
			[]string{"EventNodeChildrenChanged /"}},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
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
				h.do(b, r)
			}
			got := h.events(a)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			if h.s.dataWatches.paths["/w"] != nil && len(tc.want) > 0 && tc.want[0] == "EventNodeDataChanged /w" {
				t.Fatalf("a fired watch stayed registered")
			}
		})
	}
}

// A client sees a watch event before the reply of the write that fired
// it, its own write included (Programmer's Guide, "What ZooKeeper
// Guarantees about Watches"; measured on 3.8.0, probe q9h).
func TestServerOwnWriteEventPrecedesReply(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, _ := h.connect(40000)
	h.ok(a, mkCreate("/w", nil, 0))
	h.ok(a, watchGet("/w"))
	h.s.Receive(h.nowMs, a, mkSet("/w", []byte("x"), -1))
	out := h.s.Outputs()
	if len(out) != 2 || out[0].Kind != OutEvent || out[0].Event.Type != zk.EventNodeDataChanged || out[1].Kind != OutReply {
		t.Fatalf("outputs %+v, want the event then the reply", out)
	}
}

// Watches belong to the connection: a disconnect drops them, and
// setWatches on the new connection re-registers them, firing at once those
// whose trigger was missed since relativeZxid (DataTree.setWatches). An
// exist watch on a node created and deleted while the client was away is
// re-registered silently: the blind spot of the Programmer's Guide
// ("Things to Remember about Watches": "if a znode is created and deleted
// while disconnected, the watch for its existence will be missed").
func TestServerSetWatches(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(40000)
	b, _ := h.connect(40000)
	for _, p := range []string{"/same", "/changed", "/gone", "/kids", "/kidsgone", "/born"} {
		if p != "/born" {
			h.ok(b, mkCreate(p, nil, 0))
		}
	}
	for _, r := range []Request{watchGet("/same"), watchGet("/changed"), watchGet("/gone"),
		watchChildren("/kids"), watchChildren("/kidsgone"), watchExists("/born"), watchExists("/blind")} {
		h.do(a, r)
	}
	last := h.s.LastZxid()
	h.s.Disconnect(a)
	if h.s.dataWatches.len()+h.s.childWatches.len() != 0 {
		t.Fatalf("watches survived the disconnect: %v %v", h.s.dataWatches.paths, h.s.childWatches.paths)
	}
	for _, r := range []Request{mkSet("/changed", []byte("x"), -1), mkDelete("/gone", -1), mkCreate("/kids/k", nil, 0),
		mkDelete("/kidsgone", -1), mkCreate("/born", nil, 0), mkCreate("/blind", nil, 0), mkDelete("/blind", -1)} {
		h.ok(b, r)
	}
	if ev := h.events(a); len(ev) != 0 {
		t.Fatalf("events to a closed connection: %q", ev)
	}
	a2 := h.open()
	h.connectOn(a2, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 40000})
	h.ok(a2, Request{Op: OpSetWatches, RelativeZxid: last,
		DataWatches:  []string{"/same", "/changed", "/gone"},
		ExistWatches: []string{"/born", "/blind"},
		ChildWatches: []string{"/kids", "/kidsgone"}})
	// The setWatches events were sent before its reply, which do() took.
	got := h.events(a2)
	want := []string{"EventNodeDataChanged /changed", "EventNodeDeleted /gone", "EventNodeCreated /born",
		"EventNodeChildrenChanged /kids", "EventNodeDeleted /kidsgone"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("setWatches events %q, want %q", got, want)
	}
	// The unchanged watch and the blind exist watch are registered again.
	h.ok(b, mkSet("/same", []byte("y"), -1))
	h.ok(b, mkCreate("/blind", nil, 0))
	if got := h.events(a2); fmt.Sprint(got) != "[EventNodeDataChanged /same EventNodeCreated /blind]" {
		t.Fatalf("re-registered watches fired %q", got)
	}
}
