package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// srvHarness drives a *Server directly, as the world would: it opens
// connections, sends requests and collects what the server outputs, so
// that the server's semantics can be tested without the scheduler or the
// simulated client.
type srvHarness struct {
	t       harnessT
	s       *Server
	nowMs   int64
	conns   ConnID
	xid     int32
	pending []Output // outputs not yet taken by a test
}

// harnessT is what the harness needs of a *testing.T or a *rapid.T.
type harnessT interface {
	Helper()
	Fatalf(format string, args ...any)
}

func newHarness(t harnessT, cfg ServerConfig) *srvHarness {
	t.Helper()
	s := NewServer(cfg)
	s.checkEvery = true
	return &srvHarness{t: t, s: s}
}

func (h *srvHarness) collect() { h.pending = append(h.pending, h.s.Outputs()...) }

// open opens a connection without a session.
func (h *srvHarness) open() ConnID {
	h.conns++
	h.s.Open(h.conns)
	return h.conns
}

// connect opens a connection and a new session on it.
func (h *srvHarness) connect(timeoutMs int32) (ConnID, int64) {
	h.t.Helper()
	c := h.open()
	r := h.connectOn(c, ConnectRequest{TimeoutMs: timeoutMs})
	if r.SessionID == 0 {
		h.t.Fatalf("connect: no session")
	}
	return c, r.SessionID
}

// connectOn sends a ConnectRequest on an open connection and returns the
// response.
func (h *srvHarness) connectOn(c ConnID, req ConnectRequest) ConnectResponse {
	h.t.Helper()
	h.s.Connect(h.nowMs, c, req)
	h.collect()
	for i, o := range h.pending {
		if o.Conn == c && o.Kind == OutConnect {
			h.pending = slices.Delete(h.pending, i, i+1)
			return o.Connect
		}
	}
	h.t.Fatalf("connect on %d: no connect response", c)
	return ConnectResponse{}
}

// do sends a request and returns its reply; the events it fired stay
// pending for events().
func (h *srvHarness) do(c ConnID, req Request) Response {
	h.t.Helper()
	r, ok := h.try(c, req)
	if !ok {
		h.t.Fatalf("%v %q on conn %d: no reply", req.Op, req.Path, c)
	}
	return r
}

// try is do for a request that may get no reply (the connection closed).
func (h *srvHarness) try(c ConnID, req Request) (Response, bool) {
	h.t.Helper()
	h.xid++
	req.Xid = h.xid
	h.s.Receive(h.nowMs, c, req)
	h.collect()
	for i, o := range h.pending {
		if o.Conn == c && o.Kind == OutReply && o.Reply.Xid == req.Xid {
			h.pending = slices.Delete(h.pending, i, i+1)
			return o.Reply, true
		}
	}
	return Response{}, false
}

// ok is do for a request that must succeed.
func (h *srvHarness) ok(c ConnID, req Request) Response {
	h.t.Helper()
	r := h.do(c, req)
	if r.Err != CodeOK {
		h.t.Fatalf("%v %q: %v", req.Op, req.Path, r.Err)
	}
	return r
}

// take removes and returns the pending outputs of a connection.
func (h *srvHarness) take(c ConnID) []Output {
	h.collect()
	var mine, rest []Output
	for _, o := range h.pending {
		if o.Conn == c {
			mine = append(mine, o)
		} else {
			rest = append(rest, o)
		}
	}
	h.pending = rest
	return mine
}

// events removes the pending outputs of a connection and describes its
// events as "Type path", in order.
func (h *srvHarness) events(c ConnID) []string {
	var out []string
	for _, o := range h.take(c) {
		if o.Kind == OutEvent {
			out = append(out, fmt.Sprintf("%v %s", o.Event.Type, o.Event.Path))
		}
	}
	return out
}

// stat returns a node's Stat through exists.
func (h *srvHarness) stat(c ConnID, path string) zk.Stat {
	h.t.Helper()
	return h.ok(c, Request{Op: OpExists, Path: path}).Stat
}

// tick advances virtual time and lets the server run its timers and its
// queued closeSessions.
func (h *srvHarness) tick(toMs int64) {
	h.nowMs = toMs
	h.s.Tick(h.nowMs)
	for h.s.HasInternal() {
		h.s.StepInternal(h.nowMs)
	}
	h.collect()
}

var openACL = zk.WorldACL(zk.PermAll)

func mkCreate(path string, data []byte, mode int32) Request {
	return Request{Op: OpCreate, Path: path, Data: data, Mode: mode, ACL: openACL}
}

func mkCreateACL(path string, acl []zk.ACL) Request {
	return Request{Op: OpCreate, Path: path, ACL: acl}
}

func mkDelete(path string, version int32) Request {
	return Request{Op: OpDelete, Path: path, Version: version}
}

func mkSet(path string, data []byte, version int32) Request {
	return Request{Op: OpSetData, Path: path, Data: data, Version: version}
}

func mkCheck(path string, version int32) Request {
	return Request{Op: OpCheck, Path: path, Version: version}
}

func mkMulti(ops ...Request) Request { return Request{Op: OpMulti, Ops: ops} }

// relStat formats a Stat the way the probe printed it, with zxids relative
// to a baseline zxid b and times left out, so a measured line can be
// compared as text.
func relStat(s zk.Stat, b int64, session int64) string {
	rel := func(z int64) string {
		switch d := z - b; {
		case z == 0:
			return "0"
		case d >= 0:
			return fmt.Sprintf("B+%d", d)
		default:
			return fmt.Sprintf("B%d", d)
		}
	}
	owner := fmt.Sprintf("%#x", s.EphemeralOwner)
	if s.EphemeralOwner != 0 && s.EphemeralOwner == session {
		owner = "self"
	}
	return fmt.Sprintf("{Czxid:%s Mzxid:%s Version:%d Cversion:%d Aversion:%d EphemeralOwner:%s DataLength:%d NumChildren:%d Pzxid:%s}",
		rel(s.Czxid), rel(s.Mzxid), s.Version, s.Cversion, s.Aversion, owner, s.DataLength, s.NumChildren, rel(s.Pzxid))
}

// diffLines reports the first line where two transcripts differ.
func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("line %d:\n got: %s\nwant: %s\nwhole transcript:\n%s", i+1, g, w, strings.Join(got, "\n"))
		}
	}
}
