package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// Measured on 3.8.0 with tickTime=2000 (probe q8): the negotiated timeout
// is the requested one clamped to [2, 20] ticks, 4000..40000 ms.
// Programmer's Guide, "ZooKeeper Sessions".
func TestServerSessionTimeoutNegotiation(t *testing.T) {
	cases := []struct{ asked, got int32 }{
		{-1, 4000}, {0, 4000}, {1000, 4000}, {1500, 4000}, {2000, 4000}, {3000, 4000}, {4000, 4000},
		{4001, 4001}, {5000, 5000}, {10000, 10000}, {30000, 30000}, {40000, 40000},
		{41000, 40000}, {60000, 40000}, {100000, 40000},
	}
	h := newHarness(t, ServerConfig{})
	for _, tc := range cases {
		c := h.open()
		if r := h.connectOn(c, ConnectRequest{TimeoutMs: tc.asked}); r.TimeoutMs != tc.got {
			t.Errorf("asked %d ms, got %d, want %d", tc.asked, r.TimeoutMs, tc.got)
		}
	}
}

// Sessions expire on tick boundaries: the expiry is rounded up to the
// next multiple of tickTime after now+timeout (ExpiryQueue.update,
// SessionTrackerImpl), and every request or ping pushes it.
func TestServerSessionExpiryBuckets(t *testing.T) {
	cases := []struct {
		name     string
		pingsMs  []int64
		expireMs int64
	}{
		{"never touched", nil, 6000},
		{"ping in the same bucket", []int64{1000}, 6000},
		{"ping moves it a bucket", []int64{2500}, 8000},
		{"pings keep it alive", []int64{3000, 6000, 9000}, 14000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			c, sid := h.connect(4000)
			for _, p := range tc.pingsMs {
				h.tick(p)
				h.ok(c, Request{Op: OpPing})
			}
			if got := h.s.NextDeadlineMs(); got != tc.expireMs {
				t.Fatalf("next deadline %d, want %d", got, tc.expireMs)
			}
			h.nowMs = tc.expireMs - 1
			h.s.Tick(h.nowMs)
			if h.s.HasInternal() || h.s.sessions[sid].closing {
				t.Fatalf("expired before %d", tc.expireMs)
			}
			h.nowMs = tc.expireMs
			h.s.Tick(h.nowMs)
			if !h.s.HasInternal() {
				t.Fatalf("not expired at %d", tc.expireMs)
			}
		})
	}
}

// Between the expiry and the closeSession transaction the session is
// closing: its requests are answered SESSIONEXPIRED (SessionTrackerImpl
// checkSession) and its ephemerals still exist; StepInternal applies the
// closeSession, which deletes them under one zxid, fires their watches,
// and closes the connection. A reconnect to the dead session gets
// session id 0 and a close (ZooKeeperServer.finishSessionInit).
func TestServerExpiryClosingWindow(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(4000)
	b, _ := h.connect(40000)
	h.ok(a, mkCreate("/e", nil, zk.FlagEphemeral))
	h.ok(b, watchExists("/e"))
	h.nowMs = 6000
	h.s.Tick(h.nowMs)
	zxid := h.s.LastZxid()
	for _, r := range []Request{mkCreate("/x", nil, 0), Request{Op: OpExists, Path: "/e"}, Request{Op: OpPing}} {
		if got := h.do(a, r); got.Err != CodeSessionExpired {
			t.Fatalf("%v in the closing window: %v", r.Op, got.Err)
		}
	}
	if h.do(b, Request{Op: OpExists, Path: "/e"}).Err != CodeOK {
		t.Fatalf("the ephemeral went before the closeSession")
	}
	if h.s.LastZxid() != zxid {
		t.Fatalf("the closing window consumed zxids")
	}
	if h.s.ExpireSession(h.nowMs, sid) {
		t.Fatalf("a closing session expired again")
	}
	h.s.StepInternal(h.nowMs)
	if h.s.LastZxid() != zxid+1 {
		t.Fatalf("closeSession: zxid %d, want %d", h.s.LastZxid(), zxid+1)
	}
	if got := h.events(b); fmt.Sprint(got) != "[EventNodeDeleted /e]" {
		t.Fatalf("watcher got %q", got)
	}
	out := h.take(a)
	if len(out) != 1 || out[0].Kind != OutClose || h.s.HasConn(a) {
		t.Fatalf("the expired session's connection: %+v", out)
	}
	a2 := h.open()
	r := h.connectOn(a2, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 4000})
	if r.SessionID != 0 || r.TimeoutMs != 0 {
		t.Fatalf("reconnect to an expired session: %+v", r)
	}
	if out := h.take(a2); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("reconnect to an expired session: %+v", out)
	}
}

// Measured on 3.8.0 (probe q11): an explicit close deletes the session's
// ephemerals in one transaction, the reply to closeSession coming after
// the events, and the parent's cversion and pzxid move once per child.
func TestServerCloseSessionEvents(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	b, bsid := h.connect(4000)
	a, _ := h.connect(4000)
	base := h.baseline(b)
	h.ok(b, mkCreate("/e", nil, 0))
	h.ok(a, mkCreate("/e/1", []byte("abc"), zk.FlagEphemeral))
	h.ok(a, mkCreate("/e/2", nil, zk.FlagEphemeral))
	h.ok(b, watchExists("/e/1"))
	h.ok(b, watchGet("/e/2"))
	h.ok(b, watchChildren("/e"))
	r := h.do(a, Request{Op: OpCloseSession})
	if r.Err != CodeOK {
		t.Fatal(r.Err)
	}
	if out := h.take(a); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("after the close reply: %+v", out)
	}
	got := h.events(b)
	want := []string{"EventNodeDeleted /e/1", "EventNodeChildrenChanged /e", "EventNodeDeleted /e/2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if s := relStat(h.stat(b, "/e"), base, bsid); s != "{Czxid:B+1 Mzxid:B+1 Version:0 Cversion:4 Aversion:0 EphemeralOwner:0x0 DataLength:0 NumChildren:0 Pzxid:B+4}" {
		t.Fatalf("stat /e = %s", s)
	}
}

// Measured on 3.8.0 (probe q11b): a closing session's ephemerals are
// deleted in the iteration order of a clone of its HashSet
// (DataTree.getEphemerals clones; the CloseSessionTxn lists the clone's
// order), which differs from the live set's order once the live set has
// been resized (round 1).
func TestServerEphemeralDeletionOrder(t *testing.T) {
	rounds := []struct {
		n    int
		del  []int
		want string
	}{
		{2, nil, "e0 e1"},
		{5, nil, "e1 e0 sub/x2 e3 e4"},
		{13, nil, "e9 sub/x11 e7 e6 e4 e3 e1 e0 sub/x2 sub/x5 sub/x8 e10 e12"},
		{30, nil, "sub/x29 e9 e7 e6 e4 e3 sub/x23 e1 e0 e10 sub/x26 e12 e13 e15 e16 e18 e19 sub/x20 sub/x11 sub/x14 e21 e22 sub/x17 e24 e25 e27 sub/x2 e28 sub/x8 sub/x5"},
		{40, []int{0, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 33, 35, 37},
			"e12 e34 e10 e30 sub/x26 sub/x20 e18 e39 e16 e15 e36 e22 e21 e9 e6 e4 sub/x14 sub/x38 e1 sub/x32 sub/x2 sub/x8 e28 e27 e25 e24"},
	}
	h := newHarness(t, ServerConfig{})
	b, _ := h.connect(40000)
	for round, spec := range rounds {
		base := fmt.Sprintf("/k%d", round)
		h.ok(b, mkCreate(base, nil, 0))
		h.ok(b, mkCreate(base+"/sub", nil, 0))
		a, _ := h.connect(40000)
		var paths []string
		for i := range spec.n {
			p := fmt.Sprintf("%s/e%d", base, i)
			if i%3 == 2 {
				p = fmt.Sprintf("%s/sub/x%d", base, i)
			}
			h.ok(a, mkCreate(p, nil, zk.FlagEphemeral))
			paths = append(paths, p)
		}
		deleted := map[int]bool{}
		for _, i := range spec.del {
			h.ok(a, mkDelete(paths[i], -1))
			deleted[i] = true
		}
		for i, p := range paths {
			if !deleted[i] {
				h.ok(b, watchExists(p))
			}
		}
		h.ok(a, Request{Op: OpCloseSession})
		var got []string
		for _, e := range h.events(b) {
			if p, ok := strings.CutPrefix(e, "EventNodeDeleted "+base+"/"); ok {
				got = append(got, p)
			}
		}
		if strings.Join(got, " ") != spec.want {
			t.Errorf("round %d: deletion order\n got %s\nwant %s", round, strings.Join(got, " "), spec.want)
		}
	}
}

// Measured on 3.8.0 (probe q7): the container sweep runs every 60 s and
// deletes the containers that are empty and once had a child; one that
// never had a child stays, as does one with a child; its watches fire.
// Programmer's Guide, "Container Nodes".
func TestServerContainerSweep(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(40000)
	c2, _ := h.connect(4000)
	cont := func(p string) Request {
		return Request{Op: OpCreateCont, Path: p, Mode: zk.FlagContainer, ACL: openACL}
	}
	h.ok(c, cont("/c"))
	h.ok(c, cont("/c2"))
	h.ok(c, cont("/c3"))
	h.ok(c, mkCreate("/c3/k", nil, 0))
	h.ok(c, mkCreate("/c/k", nil, 0))
	h.ok(c, mkDelete("/c/k", -1))
	h.ok(c, cont("/c4"))
	h.ok(c2, mkCreate("/c4/e", nil, zk.FlagEphemeral))
	h.ok(c2, Request{Op: OpCloseSession})
	h.ok(c, watchExists("/c"))
	if got := h.s.NextDeadlineMs(); got != 40000/2000*2000+2000 {
		t.Fatalf("next deadline %d: the session's expiry comes first", got)
	}
	h.tick(30_000)
	h.ok(c, Request{Op: OpPing})
	h.tick(59_999)
	if h.do(c, Request{Op: OpExists, Path: "/c"}).Err != CodeOK {
		t.Fatalf("swept before 60 s")
	}
	zxid := h.s.LastZxid()
	h.tick(60_000)
	if got := h.events(c); fmt.Sprint(got) != "[EventNodeDeleted /c]" {
		t.Fatalf("events %q", got)
	}
	for p, want := range map[string]Code{"/c": CodeNoNode, "/c2": CodeOK, "/c3": CodeOK, "/c4": CodeNoNode} {
		if got := h.do(c, Request{Op: OpExists, Path: p}).Err; got != want {
			t.Errorf("%s after the sweep: %v, want %v", p, got, want)
		}
	}
	if h.s.LastZxid() != zxid+2 {
		t.Fatalf("each container deletion is a transaction: %d zxids", h.s.LastZxid()-zxid)
	}
}

// A standalone server's restart keeps the tree and the sessions (they are
// in the snapshot and the log) and drops the connections and the watches;
// each session gets its full timeout again from the restart, and a
// session whose closeSession was pending is alive again.
func TestServerRestart(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, asid := h.connect(4000)
	b, bsid := h.connect(4000)
	h.ok(a, mkCreate("/p", []byte("d"), 0))
	h.ok(a, mkCreate("/e", nil, zk.FlagEphemeral))
	h.ok(b, mkCreate("/f", nil, zk.FlagEphemeral))
	h.ok(a, watchGet("/p"))
	h.ok(b, watchChildren("/"))
	h.s.ExpireSession(h.nowMs, bsid)
	zxid := h.s.LastZxid()
	h.nowMs = 5000
	h.s.Restart(h.nowMs)
	if h.s.HasConn(a) || h.s.HasConn(b) || h.s.HasInternal() {
		t.Fatalf("connections or queued closes survived the restart")
	}
	if h.s.dataWatches.len()+h.s.childWatches.len() != 0 {
		t.Fatalf("watches survived the restart")
	}
	if h.s.LastZxid() != zxid {
		t.Fatalf("the restart changed the zxid")
	}
	if got := h.s.NextDeadlineMs(); got != (5000+4000)/2000*2000+2000 {
		t.Fatalf("expiry after restart at %d", got)
	}
	for _, sid := range []int64{asid, bsid} {
		c := h.open()
		if r := h.connectOn(c, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 4000}); r.SessionID != sid {
			t.Fatalf("session %#x lost in the restart", sid)
		}
		for _, p := range []string{"/p", "/e", "/f"} {
			if h.do(c, Request{Op: OpExists, Path: p}).Err != CodeOK {
				t.Fatalf("%s lost in the restart", p)
			}
		}
		h.ok(c, mkSet("/p", nil, -1))
		if ev := h.events(c); len(ev) != 0 {
			t.Fatalf("a watch survived the restart: %q", ev)
		}
	}
}

// A connection that reattaches a session moves it: the server closes the
// old connection (DisconnectReason.CLIENT_RECONNECT). A wrong password is
// refused like an expired session, but the holder's connection is closed
// all the same, before the password is checked (measured on 3.8); the
// session lives on.
func TestServerSessionMove(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(4000)
	a2 := h.open()
	if r := h.connectOn(a2, ConnectRequest{SessionID: sid, Passwd: []byte("wrong"), TimeoutMs: 4000}); r.SessionID != 0 {
		t.Fatalf("wrong password accepted")
	}
	if out := h.take(a); len(out) != 1 || out[0].Kind != OutClose || h.s.HasConn(a) {
		t.Fatalf("holder's connection after a wrong password: %+v", out)
	}
	a1 := h.open()
	if r := h.connectOn(a1, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 4000}); r.SessionID != sid {
		t.Fatalf("the holder's reattach after a wrong password: %+v", r)
	}
	a3 := h.open()
	if r := h.connectOn(a3, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 10000}); r.SessionID != sid || r.TimeoutMs != 10000 {
		t.Fatalf("reattach: %+v", r)
	}
	if out := h.take(a1); len(out) != 1 || out[0].Kind != OutClose || h.s.HasConn(a1) {
		t.Fatalf("old connection: %+v", out)
	}
	h.ok(a3, mkCreate("/x", nil, zk.FlagEphemeral))
}

// Measured on 3.8.0 (probe q6size): a request frame longer than
// jute.maxbuffer (1048575 bytes) makes the server close the connection
// without applying anything or consuming a zxid. A create's frame is
// 47 + len(path) + len(data) bytes, a setData's 20 + len(path) + len(data).
func TestServerPacketLimit(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		ok   bool
	}{
		{"create /d largest", mkCreate("/d", make([]byte, 1048526), 0), true},
		{"create /d smallest failing", mkCreate("/d", make([]byte, 1048527), 0), false},
		{"create /d 1 MiB", mkCreate("/d", make([]byte, 1048576), 0), false},
		{"create longer path largest", mkCreate("/dddddddddd", make([]byte, 1048517), 0), true},
		{"create longer path failing", mkCreate("/dddddddddd", make([]byte, 1048526), 0), false},
		{"setData largest", mkSet("/d0", make([]byte, 1048552), -1), true},
		{"setData smallest failing", mkSet("/d0", make([]byte, 1048553), -1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ServerConfig{})
			c, _ := h.connect(4000)
			h.ok(c, mkCreate("/d0", nil, 0))
			zxid := h.s.LastZxid()
			r, replied := h.try(c, tc.req)
			if replied != tc.ok || (tc.ok && r.Err != CodeOK) {
				t.Fatalf("replied %v %v, want ok=%v", replied, r.Err, tc.ok)
			}
			if tc.ok {
				return
			}
			if h.s.HasConn(c) || h.s.LastZxid() != zxid {
				t.Fatalf("connection kept or zxid consumed")
			}
			if out := h.take(c); len(out) != 1 || out[0].Kind != OutClose {
				t.Fatalf("outputs %+v", out)
			}
		})
	}
}

// A client that has seen a zxid the server has not applied is refused: the
// connection closes with no ConnectResponse, and no session or zxid is
// spent (ZooKeeperServer.processConnectRequest, CLIENT_ZXID_AHEAD; the
// wire tests check it against a real 3.8 server).
func TestServerRefusesClientAhead(t *testing.T) {
	h := newHarness(t, ServerConfig{})
	a, sid := h.connect(4000)
	zxid := h.s.LastZxid()
	c := h.open()
	h.s.Connect(h.nowMs, c, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 4000, LastZxidSeen: zxid + 1})
	if out := h.take(c); len(out) != 1 || out[0].Kind != OutClose || h.s.HasConn(c) {
		t.Fatalf("client ahead: got %+v, want the connection closed unanswered", out)
	}
	if h.s.LastZxid() != zxid || len(h.s.Sessions()) != 1 {
		t.Fatalf("refusal changed the server: zxid %#x (was %#x), sessions %v", h.s.LastZxid(), zxid, h.s.Sessions())
	}
	// The session is untouched and still on its connection; a client
	// level with the server is welcome.
	h.ok(a, Request{Op: OpPing})
	d := h.open()
	if r := h.connectOn(d, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 4000, LastZxidSeen: zxid}); r.SessionID != sid {
		t.Fatalf("client level with the server refused: %+v", r)
	}
}
