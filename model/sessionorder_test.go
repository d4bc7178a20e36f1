package model

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// zxop is zop with the reply's zxid.
func zxop(c int, session int64, in ZnodeInput, out ZnodeOutput, zxid, call, ret int64) porcupine.Operation {
	out.Zxid = zxid
	return zop(c, session, in, out, call, ret)
}

func TestSessionOrder(t *testing.T) {
	create := func(c int, s int64, p string, zxid, call, ret int64) porcupine.Operation {
		return zxop(c, s, ZnodeInput{Op: "create", Path: p, Data: "x"}, ZnodeOutput{}, zxid, call, ret)
	}
	get := func(c int, s int64, p string, present bool, zxid, call, ret int64) porcupine.Operation {
		if !present {
			return zxop(c, s, ZnodeInput{Op: "get", Path: p}, ZnodeOutput{Err: errTextNoNode}, zxid, call, ret)
		}
		return zxop(c, s, ZnodeInput{Op: "get", Path: p}, ZnodeOutput{Data: "x"}, zxid, call, ret)
	}
	// c1 creates /a (zxid 0x10) and /b (0x11). c2 reads /b on an up to
	// date server (0x11), then /a missing on a server behind both, which
	// answers with its own older zxid (0x0f).
	backAcrossPaths := []porcupine.Operation{
		create(1, 0x1, "/a", 0x10, 0, 1),
		create(1, 0x1, "/b", 0x11, 2, 3),
		get(2, 0x2, "/b", true, 0x11, 4, 5),
		get(2, 0x2, "/a", false, 0x0f, 6, 7),
	}
	// Each path alone is fine for SessionReads: /a's read is stale, /b's
	// fresh. Across the two, the session went back.
	check(t, "back across two paths, per path", SessionReads(), backAcrossPaths, porcupine.Ok)
	err := SessionOrder(backAcrossPaths)
	if err == nil || !strings.Contains(err.Error(), "session 0x2 went back in time") {
		t.Errorf("back across two paths: %v, want the session going back", err)
	}
	// What a real ensemble does: a lagging follower answers stale, with
	// its own (older) zxid, but the session's zxids only grow, across
	// paths and across a move to a fresher server.
	staleMonotonic := []porcupine.Operation{
		create(1, 0x1, "/a", 0x10, 0, 1),
		create(1, 0x1, "/b", 0x11, 2, 3),
		get(2, 0x2, "/a", false, 0x0f, 4, 5),
		get(2, 0x2, "/b", false, 0x0f, 6, 7),
		get(2, 0x2, "/a", true, 0x11, 8, 9),
		get(2, 0x2, "/b", true, 0x11, 10, 11),
	}
	if err := SessionOrder(staleMonotonic); err != nil {
		t.Errorf("stale but monotonic: %v", err)
	}
	check(t, "stale but monotonic, per path", SessionReads(), staleMonotonic, porcupine.Ok)
	// Another session may be behind; overlapping calls of one session
	// are not ordered; ambiguous writes and errors tell nothing; the
	// return and the next call at one step are in order.
	others := []porcupine.Operation{
		get(2, 0x2, "/b", true, 0x11, 4, 5),
		get(3, 0x3, "/a", false, 0x0f, 6, 7),
		get(2, 0x2, "/a", false, 0x0f, 4, 9),
		zxop(2, 0x2, ZnodeInput{Op: "set", Path: "/a", Ambiguous: true}, ZnodeOutput{}, 0x01, 10, 11),
		zxop(2, 0x2, ZnodeInput{Op: "set", Path: "/a"}, ZnodeOutput{Err: "zk: session has been expired by the server"}, 0x01, 12, 13),
	}
	if err := SessionOrder(others); err != nil {
		t.Errorf("nothing ordered goes back: %v", err)
	}
	sameStep := []porcupine.Operation{
		get(2, 0x2, "/b", true, 0x11, 4, 5),
		get(2, 0x2, "/a", false, 0x0f, 5, 6),
	}
	if err := SessionOrder(sameStep); err == nil {
		t.Error("a call at its predecessor's return step going back: not caught")
	}
}
