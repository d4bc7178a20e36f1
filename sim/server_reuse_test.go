package sim

import (
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// A deleted node is reused, data buffer and all, by the next create: the
// new node shows nothing of the old one, and a reply that carried the old
// node's data keeps it (the reply has its own copy). A setData that
// rewrites a node's buffer in place leaves earlier replies alone too, and
// nil data stays apart from empty data.
func TestServerReusesDeletedNodes(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(30000)
	h.ok(c, Request{Op: OpCreate, Path: "/a", Data: []byte("old data"), ACL: zk.WorldACL(zk.PermAll)})
	h.ok(c, Request{Op: OpCreate, Path: "/a/child", ACL: zk.WorldACL(zk.PermAll)})
	h.ok(c, Request{Op: OpDelete, Path: "/a/child", Version: -1})
	before := h.ok(c, Request{Op: OpGetData, Path: "/a"})
	h.ok(c, Request{Op: OpDelete, Path: "/a", Version: -1})
	if len(h.s.freeNodes) != 2 {
		t.Fatalf("%d nodes kept for reuse, want 2", len(h.s.freeNodes))
	}

	created := h.ok(c, Request{Op: OpCreate, Path: "/b", Data: []byte("new"), ACL: zk.WorldACL(zk.PermAll)})
	got := h.ok(c, Request{Op: OpGetData, Path: "/b"})
	if string(got.Data) != "new" || got.Stat.Version != 0 || got.Stat.NumChildren != 0 || got.Stat.Cversion != 0 || got.Stat != created.Stat {
		t.Fatalf("reused node reads %q %+v, want fresh data \"new\" and the create's stat %+v", got.Data, got.Stat, created.Stat)
	}
	if string(before.Data) != "old data" {
		t.Fatalf("an earlier reply's data changed to %q when its node's buffer was reused", before.Data)
	}
	// The reused node starts with no children set: its first child is
	// listed alone.
	h.ok(c, Request{Op: OpCreate, Path: "/b/x", ACL: zk.WorldACL(zk.PermAll)})
	if kids := h.ok(c, Request{Op: OpGetChildren, Path: "/b"}).Children; strings.Join(kids, ",") != "x" {
		t.Fatalf("children of the reused node: %v, want [x]", kids)
	}

	h.ok(c, Request{Op: OpSetData, Path: "/b", Data: []byte("abc"), Version: -1})
	if d := h.ok(c, Request{Op: OpGetData, Path: "/b"}).Data; string(d) != "abc" || string(got.Data) != "new" {
		t.Fatalf("after setData in place: node reads %q, earlier reply %q; want \"abc\" and \"new\"", d, got.Data)
	}
	h.ok(c, Request{Op: OpSetData, Path: "/b", Data: nil, Version: -1})
	if d := h.ok(c, Request{Op: OpGetData, Path: "/b"}).Data; d != nil {
		t.Fatalf("setData nil: node reads %q, want nil", d)
	}
	h.ok(c, Request{Op: OpSetData, Path: "/b", Data: []byte{}, Version: -1})
	if d := h.ok(c, Request{Op: OpGetData, Path: "/b"}).Data; d == nil || len(d) != 0 {
		t.Fatalf("setData empty: node reads %#v, want empty, not nil", d)
	}
}

// The lookup cache follows every create and delete, found and missing
// paths alike, and CheckInvariants catches an entry that disagrees with
// the tree.
func TestServerLookupCacheFollowsTheTree(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(30000)
	if h.s.lookup("/p") != nil {
		t.Fatal("a missing path was found")
	}
	h.ok(c, Request{Op: OpCreate, Path: "/p", ACL: zk.WorldACL(zk.PermAll)})
	if n := h.s.lookup("/p"); n == nil || n != h.s.nodes["/p"] {
		t.Fatalf("after the create the cache gives %p, the tree %p", n, h.s.nodes["/p"])
	}
	h.ok(c, Request{Op: OpDelete, Path: "/p", Version: -1})
	if n := h.s.lookup("/p"); n != nil {
		t.Fatalf("after the delete the cache still gives a node %p", n)
	}
	if err := h.s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}

	h.s.lookup("/zookeeper")
	for i, path := range h.s.lookups.paths {
		if path == "/zookeeper" {
			h.s.lookups.nodes[i] = nil
		}
	}
	err := h.s.CheckInvariants()
	if err == nil || !strings.Contains(err.Error(), "stale node for /zookeeper") {
		t.Fatalf("a stale cache entry: CheckInvariants = %v, want the stale entry named", err)
	}
}
