package sim

import (
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// SessionInfos lists each live session with its tick-aligned deadline and
// its ephemerals; an expired session is gone from it.
func TestSessionInfos(t *testing.T) {
	h := newHarness(t, ServerConfig{TickTimeMs: 2000})
	c1, s1 := h.connect(6000)
	_, s2 := h.connect(10000)
	for _, p := range []string{"/a", "/b"} {
		h.ok(c1, Request{Op: OpCreate, Path: p, Mode: zk.FlagEphemeral, ACL: zk.WorldACL(zk.PermAll)})
	}
	infos := h.s.SessionInfos()
	if len(infos) != 2 || infos[0].ID != s1 || infos[1].ID != s2 {
		t.Fatalf("sessions %+v, want %#x and %#x", infos, s1, s2)
	}
	// Connected at 0 with 6 s: the deadline is the tick boundary past 6 s
	// (SessionTrackerImpl.roundToNextInterval).
	if infos[0].TimeoutMs != 6000 || infos[0].ExpiresMs != 8000 {
		t.Errorf("session 1: %+v, want timeout 6000 and expiry at 8000", infos[0])
	}
	if !slices.Equal(infos[0].Ephemerals, []string{"/a", "/b"}) || len(infos[1].Ephemerals) != 0 {
		t.Errorf("ephemerals %v and %v", infos[0].Ephemerals, infos[1].Ephemerals)
	}
	h.tick(8000)
	if infos = h.s.SessionInfos(); len(infos) != 1 || infos[0].ID != s2 {
		t.Errorf("after session 1's expiry: %+v", infos)
	}
}
