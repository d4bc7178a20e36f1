package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// A server keeps its last few tree changes, in the order TreeChanges
// counts them, for a checker to look at just those (RecentTreeChange):
// creates and deletes, a closed session's ephemerals among them; older
// ones, and counts not reached yet, are not there.
func TestRecentTreeChanges(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, sid := h.connect(4000)
	h.ok(c, mkCreate("/d", nil, 0))
	for i := range 3 {
		h.ok(c, mkCreate(fmt.Sprintf("/d/e%d", i), nil, zk.FlagEphemeral))
	}
	h.ok(c, mkDelete("/d/e1", -1))
	h.s.ExpireSession(h.nowMs, sid) // deletes /d/e0 and /d/e2
	for h.s.HasInternal() {
		h.s.StepInternal(h.nowMs)
	}
	h.collect()
	c, _ = h.connect(4000)
	want := []TreeChange{{"/d", true}, {"/d/e0", true}, {"/d/e1", true}, {"/d/e2", true}, {"/d/e1", false}}
	if n := h.s.TreeChanges(); n != 7 {
		t.Fatalf("TreeChanges %d, want 7", n)
	}
	var got []TreeChange
	for k := uint64(1); k <= 7; k++ {
		c, ok := h.s.RecentTreeChange(k)
		if !ok {
			t.Fatalf("change %d of 7 not kept", k)
		}
		got = append(got, c)
	}
	if !slices.Equal(got[:5], want) {
		t.Errorf("changes %v, want %v first", got, want)
	}
	if expired := []TreeChange{got[5], got[6]}; !slices.ContainsFunc(expired, func(c TreeChange) bool { return c == TreeChange{"/d/e0", false} }) ||
		!slices.ContainsFunc(expired, func(c TreeChange) bool { return c == TreeChange{"/d/e2", false} }) {
		t.Errorf("the expiry's changes %v, want the deletes of /d/e0 and /d/e2", expired)
	}
	for i := range treeChangesKept {
		h.ok(c, mkCreate(fmt.Sprintf("/f%d", i), nil, 0))
	}
	if _, ok := h.s.RecentTreeChange(7); ok {
		t.Errorf("change 7 still kept after %d more", treeChangesKept)
	}
	if c, ok := h.s.RecentTreeChange(7 + treeChangesKept); !ok || c != (TreeChange{fmt.Sprintf("/f%d", treeChangesKept-1), true}) {
		t.Errorf("the last change: %v %v", c, ok)
	}
	for _, k := range []uint64{0, 8 + treeChangesKept} {
		if _, ok := h.s.RecentTreeChange(k); ok {
			t.Errorf("change %d kept", k)
		}
	}
}
