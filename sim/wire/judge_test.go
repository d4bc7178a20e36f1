package wire_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

// A raw client speaks the protocol frame by frame, to see exactly what a
// server answers to what no client library would send.
type rawClient struct {
	t    *testing.T
	addr string
	nc   net.Conn
	r    *bufio.Reader
	ops  map[int32]sim.OpCode // xid -> the type of the request sent with it
	out  []string             // the transcript
	base int64                // the first reply's zxid: later ones are shown relative to it
	// The session of the last handshake, closed after the probe so that
	// its expiry does not move the zxids of a later probe.
	session int64
	passwd  []byte
	// expect holds, for each call of replies in turn, how many frames to
	// wait for with rawFrameWaitMax before waiting rawQuiet for more;
	// counts records how many each call got.
	expect []int
	counts []int
}

// closeSession reattaches the probe's session from a new connection and
// closes it, if it is still alive.
func closeSession(t *testing.T, addr string, id int64, passwd []byte) {
	if id == 0 {
		return
	}
	c := dialRaw(t, addr)
	c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000, SessionID: id, Passwd: passwd}})
	c.request(sim.Request{Xid: 1, Op: sim.OpCloseSession})
	c.expect = []int{1}
	c.replies()
}

// rawFrameWaitMax is how long a raw client waits for a frame it expects:
// a real server under load can take its time.
const rawFrameWaitMax = 10 * time.Second

// rawQuiet is how long a raw client waits for a frame before it writes
// "quiet": the server sent nothing more and kept the connection open.
const rawQuiet = 300 * time.Millisecond

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, addr: addr, nc: nc, r: bufio.NewReader(nc), ops: make(map[int32]sim.OpCode)}
}

func (c *rawClient) send(frame []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(frame); err != nil {
		c.out = append(c.out, "write: "+err.Error())
	}
}

func (c *rawClient) connect(req wire.ConnectRequest) {
	c.send(wire.AppendConnectRequest(nil, req))
	body, ok := c.frame(rawFrameWaitMax)
	if !ok {
		return
	}
	r, ro, err := wire.DecodeConnectResponse(body)
	if err != nil {
		c.out = append(c.out, fmt.Sprintf("connect response: %v (%d bytes)", err, len(body)))
		return
	}
	if r.SessionID != 0 {
		c.session, c.passwd = r.SessionID, r.Passwd
	}
	c.out = append(c.out, fmt.Sprintf("connect response: %d bytes timeout=%d session=%s passwd=%s readOnlyByte=%v",
		len(body), r.TimeoutMs, nonzero(r.SessionID != 0), passwdText(r.Passwd), ro))
}

func (c *rawClient) request(req sim.Request) {
	c.ops[req.Xid] = req.Op
	c.send(wire.AppendRequest(nil, req))
}

// frame reads one frame, waiting at most wait; on a close or a quiet
// spell it writes that to the transcript and returns false.
func (c *rawClient) frame(wait time.Duration) ([]byte, bool) {
	c.nc.SetReadDeadline(time.Now().Add(wait))
	var prefix [4]byte
	_, err := io.ReadFull(c.r, prefix[:])
	if err == nil {
		body := make([]byte, binary.BigEndian.Uint32(prefix[:]))
		if _, err = io.ReadFull(c.r, body); err == nil {
			return body, true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.out = append(c.out, "quiet")
	} else {
		c.out = append(c.out, "closed")
	}
	return nil, false
}

// replies reads frames until the server closes or goes quiet, and renders
// each by the request it answers.
func (c *rawClient) replies() {
	want := 0
	if len(c.expect) > 0 {
		want, c.expect = c.expect[0], c.expect[1:]
	}
	for n := 0; ; n++ {
		wait := rawQuiet
		if n < want {
			wait = rawFrameWaitMax
		}
		body, ok := c.frame(wait)
		if !ok {
			c.counts = append(c.counts, n)
			return
		}
		h, err := wire.DecodeReplyHeader(body)
		if err != nil {
			c.out = append(c.out, err.Error())
			continue
		}
		if h.Xid == wire.XidNotification {
			ev, err := wire.DecodeEvent(body)
			c.out = append(c.out, fmt.Sprintf("notification zxid=%d %v %q err=%v", h.Zxid, ev.Type, ev.Path, err))
			continue
		}
		op := c.ops[h.Xid]
		r, err := wire.DecodeReply(op, body)
		if c.base == 0 && h.Zxid > 0 {
			c.base = h.Zxid
		}
		line := fmt.Sprintf("reply xid=%d zxid=%s err=%v body=%d bytes", h.Xid, c.zxidText(h.Zxid), h.Err, len(body)-16)
		if err != nil {
			line += " decode: " + err.Error()
		}
		if r.Path != "" {
			line += fmt.Sprintf(" path=%q", r.Path)
		}
		if r.Children != nil {
			kids := slices.Sorted(slices.Values(r.Children))
			line += fmt.Sprintf(" children=%q", kids)
		}
		if r.Ephemerals != nil {
			line += fmt.Sprintf(" ephemerals=%q", slices.Sorted(slices.Values(r.Ephemerals)))
		}
		if op == sim.OpGetAllChildrenNum {
			line += fmt.Sprintf(" total=%d", r.TotalNumber)
		}
		if r.Clients != nil {
			line += fmt.Sprintf(" clients=%v", r.Clients)
		}
		if op == sim.OpSASL {
			line += fmt.Sprintf(" token=%q null=%v", r.Data, r.Data == nil)
		}
		if r.ACL != nil {
			line += fmt.Sprintf(" acl=%v", r.ACL)
		}
		for _, m := range r.Multi {
			typ := m.Op.String()
			if m.Op == 0 {
				typ = "error"
			}
			line += fmt.Sprintf(" [%s %v %q data=%q children=%q]", typ, m.Err, m.Path, m.Data, m.Children)
		}
		c.out = append(c.out, line)
	}
}

func nonzero(b bool) string {
	if b {
		return "nonzero"
	}
	return "0"
}

func (c *rawClient) zxidText(z int64) string {
	if z > 0 {
		return fmt.Sprintf("first%+d", z-c.base)
	}
	return fmt.Sprint(z)
}

func passwdText(p []byte) string {
	for _, b := range p {
		if b != 0 {
			return fmt.Sprintf("%d bytes", len(p))
		}
	}
	return fmt.Sprintf("%d zero bytes", len(p))
}

// A probe is one exchange of frames, run on both servers.
type probe struct {
	name string
	run  func(c *rawClient, root string)
}

func newSession(c *rawClient) {
	c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}})
}

var probes = []probe{
	{"handshake without the readOnly byte", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: wire.XidPing, Op: sim.OpPing})
		c.request(sim.Request{Xid: 1, Op: sim.OpCloseSession})
		c.replies()
	}},
	{"handshake with the readOnly byte", func(c *rawClient, root string) {
		c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}, HasReadOnly: true})
		c.request(sim.Request{Xid: 1, Op: sim.OpCloseSession})
		c.replies()
	}},
	{"timeout negotiation", func(c *rawClient, root string) {
		c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 1}})
		c.request(sim.Request{Xid: 1, Op: sim.OpCloseSession})
		c.replies()
	}},
	{"reattach from a new connection", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root, Watch: true})
		c.replies()
		d := dialRaw(c.t, c.addr)
		d.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 20000, SessionID: c.session, Passwd: c.passwd}, HasReadOnly: true})
		c.out = append(c.out, "second connection: "+strings.Join(d.out, "; "))
		c.replies() // the first connection is closed
		d.request(sim.Request{Xid: 2, Op: sim.OpCreate, Path: root + "/x", ACL: openACL})
		d.expect = []int{1}
		d.replies()
		c.out = append(c.out, "second connection: "+strings.Join(d.out[1:], "; "))
		c.session, c.passwd = d.session, d.passwd
	}},
	{"wrong password", func(c *rawClient, root string) {
		newSession(c)
		d := dialRaw(c.t, c.addr)
		wrong := append([]byte(nil), c.passwd...)
		wrong[0] ^= 1
		d.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000, SessionID: c.session, Passwd: wrong}})
		d.replies()
		c.out = append(c.out, "second connection: "+strings.Join(d.out, "; "))
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		c.replies()
	}},
	{"unknown session", func(c *rawClient, root string) {
		c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000, SessionID: 0x7eadbeef, Passwd: make([]byte, 16)}})
		c.replies()
	}},
	{"client ahead", func(c *rawClient, root string) {
		c.connect(wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000, LastZxidSeen: 1 << 40}})
		c.replies()
	}},
	{"requests pipelined behind the handshake", func(c *rawClient, root string) {
		var b []byte
		b = wire.AppendConnectRequest(b, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}, HasReadOnly: true})
		b = wire.AppendRequest(b, sim.Request{Xid: wire.XidSetWatches, Op: sim.OpSetWatches, DataWatches: []string{root + "/gone"}})
		b = wire.AppendRequest(b, sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		c.ops[wire.XidSetWatches], c.ops[1] = sim.OpSetWatches, sim.OpExists
		c.send(b)
		if body, ok := c.frame(rawFrameWaitMax); ok {
			r, ro, err := wire.DecodeConnectResponse(body)
			c.session, c.passwd = r.SessionID, r.Passwd
			c.out = append(c.out, fmt.Sprintf("connect response readOnlyByte=%v err=%v", ro, err))
		}
		c.replies()
	}},
	{"unknown opcode", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		// ZooKeeper answers an unknown opcode out of band
		// (UnimplementedRequestProcessor, bypassing the pipeline) and
		// closes: a request still in the pipeline is dropped unanswered.
		// The probe waits for the exists reply first.
		c.replies()
		c.request(sim.Request{Xid: 2, Op: 999})
		c.replies()
		c.request(sim.Request{Xid: 2, Op: sim.OpExists, Path: root})
		c.replies()
	}},
	{"truncated records", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		c.replies()
		for xid, op := range []sim.OpCode{sim.OpGetData, sim.OpCreate, sim.OpSetData, sim.OpMulti} {
			frame := wire.AppendRequest(nil, sim.Request{Xid: int32(xid + 2), Op: op, Path: root})
			frame = frame[:4+8+2]
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			c.ops[int32(xid+2)] = op
			c.send(frame)
			c.replies()
		}
		c.request(sim.Request{Xid: 9, Op: sim.OpExists, Path: root})
		c.replies()
	}},
	{"a multi holding a read", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		c.request(sim.Request{Xid: 2, Op: sim.OpMulti, Ops: []sim.Request{{Op: sim.OpGetData, Path: root}}})
		c.request(sim.Request{Xid: 3, Op: sim.OpExists, Path: root})
		c.replies()
	}},
	{"frame shorter than a header", func(c *rawClient, root string) {
		newSession(c)
		c.send([]byte{0, 0, 0, 3, 0, 0, 0})
		c.replies()
	}},
	{"negative frame length", func(c *rawClient, root string) {
		newSession(c)
		c.send([]byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 1})
		c.replies()
	}},
	{"frame one past jute.maxbuffer", func(c *rawClient, root string) {
		newSession(c)
		c.send([]byte{0, 0x10, 0, 0, 0, 0, 0, 1})
		c.replies()
	}},
	{"a failed multi", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpMulti, Ops: []sim.Request{
			{Op: sim.OpCreate, Path: root + "/m", ACL: openACL},
			{Op: sim.OpCheck, Path: root + "/missing", Version: 3},
			{Op: sim.OpDelete, Path: root, Version: -1},
		}})
		c.request(sim.Request{Xid: 2, Op: sim.OpMulti, Ops: []sim.Request{
			{Op: sim.OpCreate, Path: root + "/m", ACL: openACL},
			{Op: sim.OpCheck, Path: root + "/m", Version: 0},
			{Op: sim.OpSetData, Path: root + "/m", Version: -1},
			{Op: sim.OpDelete, Path: root + "/m", Version: -1},
		}})
		c.request(sim.Request{Xid: 3, Op: sim.OpMulti})
		c.replies()
	}},
	{"a notification", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root + "/n", Watch: true})
		c.request(sim.Request{Xid: 2, Op: sim.OpCreate, Path: root + "/n", ACL: openACL})
		c.request(sim.Request{Xid: 3, Op: sim.OpGetData, Path: root + "/n", Watch: true})
		c.request(sim.Request{Xid: 4, Op: sim.OpDelete, Path: root + "/n", Version: -1})
		c.replies()
	}},
	{"error replies carry no record", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpGetData, Path: root + "/missing"})
		c.request(sim.Request{Xid: 2, Op: sim.OpCreate, Path: root, ACL: openACL})
		c.request(sim.Request{Xid: 3, Op: sim.OpCreate2, Path: root + "/c2", ACL: openACL})
		c.request(sim.Request{Xid: 4, Op: sim.OpDelete, Path: root + "/c2", Version: -1})
		c.request(sim.Request{Xid: 5, Op: sim.OpGetChildrenNoStat, Path: root})
		c.replies()
	}},
	{"3.5+ reads", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpCreate2, Path: root + "/e", Mode: zk.FlagEphemeral, ACL: openACL})
		c.request(sim.Request{Xid: 2, Op: sim.OpCreate, Path: root + "/p", Data: []byte("d"), ACL: openACL})
		c.request(sim.Request{Xid: 3, Op: sim.OpCreate, Path: root + "/p/q", ACL: openACL})
		c.request(sim.Request{Xid: 4, Op: sim.OpGetEphemerals, Path: root})
		c.request(sim.Request{Xid: 5, Op: sim.OpGetAllChildrenNum, Path: root})
		c.request(sim.Request{Xid: 6, Op: sim.OpGetAllChildrenNum, Path: root + "/missing"})
		c.request(sim.Request{Xid: 7, Op: sim.OpMultiRead, Ops: []sim.Request{
			{Op: sim.OpGetData, Path: root + "/p"},
			{Op: sim.OpGetChildrenNoStat, Path: root + "/p"},
			{Op: sim.OpGetData, Path: root + "/missing"},
		}})
		c.request(sim.Request{Xid: 8, Op: sim.OpWhoAmI})
		c.request(sim.Request{Xid: 9, Op: sim.OpGetACL, Path: root + "/p"})
		c.request(sim.Request{Xid: 10, Op: sim.OpSetACL, Path: root + "/p", ACL: zk.WorldACL(zk.PermRead | zk.PermWrite | zk.PermDelete | zk.PermAdmin), Version: 0})
		// A create pipelined right behind the setACL is checked against the
		// old ACL on ZooKeeper (PrepRequestProcessor's ChangeRecord for a
		// setACL is a duplicate that keeps the old acl until the txn is
		// applied); the simulator applies one request at a time. The probe
		// waits for the setACL's reply.
		c.replies()
		c.request(sim.Request{Xid: 11, Op: sim.OpCreate, Path: root + "/p/no", ACL: openACL})
		c.request(sim.Request{Xid: 12, Op: sim.OpGetData, Path: "/zookeeper/config"})
		c.request(sim.Request{Xid: 13, Op: sim.OpSync, Path: root})
		c.request(sim.Request{Xid: 14, Op: sim.OpCreateTTL, Path: root + "/ttl", ACL: openACL, Mode: zk.FlagTTL, TTLMs: 1000})
		c.request(sim.Request{Xid: 15, Op: sim.OpCreateCont, Path: root + "/cont", ACL: openACL, Mode: zk.FlagContainer})
		c.request(sim.Request{Xid: 16, Op: sim.OpReconfig, JoiningServers: "server.2=127.0.0.1:2888:3888;2182", CurConfigID: -1})
		c.replies()
	}},
	{"persistent and recursive watches", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpAddWatch, Path: root, AddWatchMode: sim.AddWatchPersistentRecursive})
		c.request(sim.Request{Xid: 2, Op: sim.OpAddWatch, Path: root + "/a", AddWatchMode: sim.AddWatchPersistent})
		c.request(sim.Request{Xid: 3, Op: sim.OpCreate, Path: root + "/a", ACL: openACL})
		c.request(sim.Request{Xid: 4, Op: sim.OpCreate, Path: root + "/a/b", ACL: openACL})
		c.request(sim.Request{Xid: 5, Op: sim.OpSetData, Path: root + "/a/b", Version: -1})
		c.request(sim.Request{Xid: 6, Op: sim.OpCheckWatches, Path: root + "/a", WatcherType: sim.WatcherAny})
		c.request(sim.Request{Xid: 7, Op: sim.OpCheckWatches, Path: root + "/none", WatcherType: sim.WatcherData})
		c.request(sim.Request{Xid: 8, Op: sim.OpRemoveWatches, Path: root + "/a", WatcherType: sim.WatcherAny})
		c.request(sim.Request{Xid: 9, Op: sim.OpDelete, Path: root + "/a/b", Version: -1})
		c.replies()
	}},
	{"setWatches2 pipelined behind the handshake", func(c *rawClient, root string) {
		var b []byte
		b = wire.AppendConnectRequest(b, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}, HasReadOnly: true})
		b = wire.AppendRequest(b, sim.Request{Xid: wire.XidSetWatches, Op: sim.OpSetWatches2, RelativeZxid: 1,
			DataWatches: []string{root}, PersistentRecursiveWatches: []string{root}, PersistentWatches: []string{root + "/x"}})
		b = wire.AppendRequest(b, sim.Request{Xid: 1, Op: sim.OpCreate, Path: root + "/x", ACL: openACL})
		c.ops[wire.XidSetWatches], c.ops[1] = sim.OpSetWatches2, sim.OpCreate
		c.send(b)
		if body, ok := c.frame(rawFrameWaitMax); ok {
			r, ro, err := wire.DecodeConnectResponse(body)
			c.session, c.passwd = r.SessionID, r.Passwd
			c.out = append(c.out, fmt.Sprintf("connect response readOnlyByte=%v err=%v", ro, err))
		}
		c.replies()
	}},
	{"sasl on a server without SASL", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: 1, Op: sim.OpExists, Path: root})
		c.replies()
		c.request(sim.Request{Xid: 2, Op: sim.OpSASL, Data: []byte("token")})
		c.replies()
		c.request(sim.Request{Xid: 3, Op: sim.OpExists, Path: root})
		c.replies()
	}},
	{"auth", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte("alice:secret")})
		c.request(sim.Request{Xid: 1, Op: sim.OpWhoAmI})
		c.replies()
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "nosuchscheme", AuthData: []byte("x")})
		c.replies()
	}},
	// Bad ACLs and credentials as a raw client can send them, which a
	// client library might refuse first: each gets the real server's error
	// code, and the connection stays up (PrepRequestProcessor.fixupACL,
	// DigestAuthenticationProvider.isValid, IPAuthenticationProvider.isValid).
	{"malformed ACLs", func(c *rawClient, root string) {
		newSession(c)
		bad := [][]zk.ACL{
			nil,
			{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}},
			{{Perms: zk.PermAll, Scheme: "digest", ID: ":"}},
			{{Perms: zk.PermAll, Scheme: "ip", ID: "300.1.1.1"}},
			{{Perms: zk.PermAll, Scheme: "ip", ID: "not-an-ip"}},
			{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/"}},
			{{Perms: zk.PermAll, Scheme: "ip", ID: ""}},
			{{Perms: zk.PermAll, Scheme: "nosuchscheme", ID: "x"}},
			{{Perms: zk.PermAll, Scheme: "", ID: ""}},
			{{Perms: zk.PermAll, Scheme: "auth", ID: ""}},
			{{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}, {Perms: zk.PermAll, Scheme: "ip", ID: "1.2.3"}},
			{{Perms: 0, Scheme: "world", ID: "anyone"}},
			{{Perms: -1, Scheme: "world", ID: "anyone"}},
		}
		// Each setACL goes to a node of its own: ZooKeeper checks a request
		// pipelined behind a setACL against the node's old ACL (see "3.5+
		// reads"), the simulator against the new one.
		xid := int32(1)
		for i, acl := range bad {
			c.request(sim.Request{Xid: xid, Op: sim.OpCreate, Path: fmt.Sprintf("%s/t%d", root, i), ACL: openACL})
			c.request(sim.Request{Xid: xid + 1, Op: sim.OpCreate, Path: fmt.Sprintf("%s/c%d", root, i), ACL: acl})
			c.request(sim.Request{Xid: xid + 2, Op: sim.OpSetACL, Path: fmt.Sprintf("%s/t%d", root, i), ACL: acl, Version: -1})
			xid += 3
		}
		c.request(sim.Request{Xid: xid, Op: sim.OpMulti, Ops: []sim.Request{
			{Op: sim.OpCreate, Path: root + "/m", ACL: openACL},
			{Op: sim.OpCreate, Path: root + "/m/x", ACL: []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "x"}}},
		}})
		c.replies()
	}},
	{"bad credentials", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte("nocolon")})
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte{}})
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte(":")})
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "ip", AuthData: []byte("not-an-ip")})
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "ip", AuthData: nil})
		c.request(sim.Request{Xid: 1, Op: sim.OpWhoAmI})
		c.request(sim.Request{Xid: 2, Op: sim.OpExists, Path: root})
		c.replies()
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: nil})
		c.replies()
	}},
	{"auth with the empty scheme", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "", AuthData: []byte("x")})
		c.replies()
	}},
	{"auth with the super scheme", func(c *rawClient, root string) {
		newSession(c)
		c.request(sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "super", AuthData: []byte("super:x")})
		c.replies()
	}},
}

var openACL = zk.WorldACL(zk.PermAll)

// TestJudgedByRealServer runs each probe on a real ZooKeeper and on a
// wire.Server over TCP, and wants the same transcript from both.
func TestJudgedByRealServer(t *testing.T) {
	real := zktest.Shared(t)
	simSrv := wire.New(sim.NewServer(sim.ServerConfig{EpochMs: time.Now().UnixMilli()}), wire.Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go simSrv.Serve(l)
	t.Cleanup(func() { simSrv.Close() })
	for i, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			// The wire server runs first; the real one is then given as
			// long as it needs for as many frames as the wire server sent
			// at each step, and rawQuiet for any more.
			transcript := func(addr string, expect []int) (string, []int) {
				root := fmt.Sprintf("/wire-judge-%d-%d", time.Now().UnixNano(), i)
				setup := dialRaw(t, addr)
				newSession(setup)
				setup.request(sim.Request{Xid: 1, Op: sim.OpCreate, Path: root, ACL: openACL})
				setup.request(sim.Request{Xid: 2, Op: sim.OpCloseSession})
				setup.expect = []int{2}
				setup.replies()
				c := dialRaw(t, addr)
				c.expect = expect
				p.run(c, root)
				c.nc.Close()
				closeSession(t, addr, c.session, c.passwd)
				return strings.ReplaceAll(strings.Join(c.out, "\n"), root, "~"), c.counts
			}
			got, counts := transcript(l.Addr().String(), nil)
			want, _ := transcript(real.Addr, counts)
			if got != want {
				t.Errorf("wire.Server differs from ZooKeeper\n--- ZooKeeper:\n%s\n--- wire.Server:\n%s", want, got)
			} else {
				t.Logf("both:\n%s", got)
			}
		})
	}
}
