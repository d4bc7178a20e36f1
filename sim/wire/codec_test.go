package wire_test

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// requestCases holds one request of every type a 3.8 client sends, with
// every field of its record set.
var requestCases = []sim.Request{
	{Xid: 1, Op: sim.OpCreate, Path: "/a", Data: []byte("x"), ACL: zk.WorldACL(zk.PermAll), Mode: zk.FlagEphemeral},
	{Xid: 2, Op: sim.OpCreate2, Path: "/a", Data: []byte{}, ACL: zk.DigestACL(zk.PermRead, "u", "p"), Mode: zk.FlagSequence},
	{Xid: 3, Op: sim.OpCreateCont, Path: "/c", ACL: zk.WorldACL(zk.PermAll), Mode: zk.FlagContainer},
	{Xid: 4, Op: sim.OpCreateTTL, Path: "/t", Data: []byte("t"), ACL: zk.WorldACL(zk.PermAll), Mode: zk.FlagTTL, TTLMs: 5000},
	{Xid: 5, Op: sim.OpDelete, Path: "/a", Version: 3},
	{Xid: 6, Op: sim.OpExists, Path: "/a", Watch: true},
	{Xid: 7, Op: sim.OpGetData, Path: "/a", Watch: true},
	{Xid: 8, Op: sim.OpSetData, Path: "/a", Data: []byte("y"), Version: -1},
	{Xid: 9, Op: sim.OpGetACL, Path: "/a"},
	{Xid: 10, Op: sim.OpSetACL, Path: "/a", ACL: zk.WorldACL(zk.PermRead), Version: 2},
	{Xid: 11, Op: sim.OpGetChildrenNoStat, Path: "/", Watch: true},
	{Xid: 12, Op: sim.OpSync, Path: "/a"},
	{Xid: wire.XidPing, Op: sim.OpPing},
	{Xid: 13, Op: sim.OpGetChildren, Path: "/", Watch: false},
	{Xid: 14, Op: sim.OpCheck, Path: "/a", Version: 4},
	{Xid: 15, Op: sim.OpMulti, Ops: []sim.Request{
		{Op: sim.OpCreate, Path: "/m", Data: []byte("m"), ACL: zk.WorldACL(zk.PermAll)},
		{Op: sim.OpCreate2, Path: "/m2", ACL: zk.WorldACL(zk.PermAll)},
		{Op: sim.OpCheck, Path: "/m", Version: 0},
		{Op: sim.OpSetData, Path: "/m", Data: []byte("n"), Version: -1},
		{Op: sim.OpDelete, Path: "/m", Version: -1},
	}},
	{Xid: 16, Op: sim.OpReconfig, JoiningServers: "server.2=h:1:2;3", LeavingServers: "3", NewMembers: "", CurConfigID: -1},
	{Xid: 17, Op: sim.OpCheckWatches, Path: "/a", WatcherType: sim.WatcherData},
	{Xid: 18, Op: sim.OpRemoveWatches, Path: "/a", WatcherType: sim.WatcherAny},
	{Xid: 19, Op: sim.OpMultiRead, Ops: []sim.Request{
		{Op: sim.OpGetData, Path: "/a"},
		{Op: sim.OpGetChildrenNoStat, Path: "/"},
	}},
	{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte("u:p")},
	{Xid: wire.XidSetWatches, Op: sim.OpSetWatches, RelativeZxid: 7, DataWatches: []string{"/a"}, ExistWatches: []string{"/b", "/c"}, ChildWatches: []string{}},
	{Xid: 20, Op: sim.OpGetEphemerals, Path: "/"},
	{Xid: 21, Op: sim.OpGetAllChildrenNum, Path: "/"},
	{Xid: wire.XidSetWatches, Op: sim.OpSetWatches2, RelativeZxid: 7, DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{"/c"},
		PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/s"}},
	{Xid: 22, Op: sim.OpAddWatch, Path: "/a", AddWatchMode: sim.AddWatchPersistentRecursive},
	{Xid: 23, Op: sim.OpWhoAmI},
	{Xid: 25, Op: sim.OpSASL, Data: []byte("token")},
	{Xid: 24, Op: sim.OpCloseSession},
}

// Every request survives encoding and decoding field for field, and its
// frame's length prefix is its length.
func TestRequestRoundTrip(t *testing.T) {
	for _, want := range requestCases {
		frame := wire.AppendRequest(nil, want)
		if n := binary.BigEndian.Uint32(frame); int(n) != len(frame)-4 {
			t.Fatalf("%v: length prefix %d, frame body %d bytes", want.Op, n, len(frame)-4)
		}
		got, err := wire.DecodeRequest(frame[4:])
		if err != nil {
			t.Fatalf("%v: %v", want.Op, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v round trip:\n got %+v\nwant %+v", want.Op, got, want)
		}
	}
}

// Request sizes the simulated server's packet accounting also knows
// (sim/packet.go, measured on 3.8): the frame length is what jute.maxbuffer
// limits.
func TestRequestFrameSizes(t *testing.T) {
	create := wire.AppendRequest(nil, sim.Request{Op: sim.OpCreate, Path: "/d", Data: make([]byte, 10), ACL: zk.WorldACL(zk.PermAll)})
	if got, want := len(create)-4, 47+2+10; got != want {
		t.Errorf("create frame %d bytes, want %d (47 + path + data)", got, want)
	}
	set := wire.AppendRequest(nil, sim.Request{Op: sim.OpSetData, Path: "/d", Data: make([]byte, 10)})
	if got, want := len(set)-4, 20+2+10; got != want {
		t.Errorf("setData frame %d bytes, want %d (20 + path + data)", got, want)
	}
}

var stat = zk.Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6, Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}

// Every reply a server sends decodes to what was encoded, as a client
// reads it.
func TestReplyRoundTrip(t *testing.T) {
	cases := []struct {
		op   sim.OpCode
		resp sim.Response
	}{
		{sim.OpCreate, sim.Response{Path: "/a"}},
		{sim.OpCreate2, sim.Response{Path: "/a", Stat: stat}},
		{sim.OpCreateCont, sim.Response{Path: "/c", Stat: stat}},
		{sim.OpCreateTTL, sim.Response{Path: "/t", Stat: stat}},
		{sim.OpDelete, sim.Response{}},
		{sim.OpExists, sim.Response{Stat: stat}},
		{sim.OpGetData, sim.Response{Data: []byte("d"), Stat: stat}},
		{sim.OpGetData, sim.Response{Stat: stat}}, // null data
		{sim.OpSetData, sim.Response{Stat: stat}},
		{sim.OpGetACL, sim.Response{ACL: zk.WorldACL(zk.PermAll), Stat: stat}},
		{sim.OpSetACL, sim.Response{Stat: stat}},
		{sim.OpGetChildrenNoStat, sim.Response{Children: []string{"a", "b"}}},
		{sim.OpGetChildren, sim.Response{Children: []string{}, Stat: stat}},
		{sim.OpSync, sim.Response{Path: "/a"}},
		{sim.OpPing, sim.Response{Xid: wire.XidPing}},
		{sim.OpMulti, sim.Response{Multi: []sim.MultiResult{
			{Op: sim.OpCreate, Path: "/m"}, {Op: sim.OpCreate2, Path: "/m2", Stat: stat}, {Op: sim.OpCheck},
			{Op: sim.OpSetData, Stat: stat}, {Op: sim.OpDelete},
		}}},
		{sim.OpMulti, sim.Response{Multi: []sim.MultiResult{{Err: sim.CodeOK}, {Err: sim.CodeNoNode}, {Err: sim.CodeRuntimeInconsistency}}}},
		{sim.OpMultiRead, sim.Response{Multi: []sim.MultiResult{
			{Op: sim.OpGetData, Data: []byte("x"), Stat: stat}, {Op: sim.OpGetChildrenNoStat, Children: []string{"k"}}, {Err: sim.CodeNoNode},
		}}},
		{sim.OpReconfig, sim.Response{Data: []byte("server.1=..."), Stat: stat}},
		{sim.OpCheckWatches, sim.Response{}},
		{sim.OpRemoveWatches, sim.Response{}},
		{sim.OpGetEphemerals, sim.Response{Ephemerals: []string{"/e"}}},
		{sim.OpGetAllChildrenNum, sim.Response{TotalNumber: 42}},
		{sim.OpSetWatches2, sim.Response{Xid: wire.XidSetWatches}},
		{sim.OpAddWatch, sim.Response{}},
		{sim.OpWhoAmI, sim.Response{Clients: []sim.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "digest", User: "u"}}}},
		{sim.OpAuth, sim.Response{Xid: wire.XidAuth}},
		{sim.OpSASL, sim.Response{}}, // a null token
		{sim.OpCloseSession, sim.Response{}},
		{sim.OpGetData, sim.Response{Err: sim.CodeNoNode}}, // an error reply is the header alone
	}
	for _, tc := range cases {
		want := tc.resp
		if want.Xid == 0 {
			want.Xid = 9
		}
		want.Zxid = 0x1234
		frame := wire.AppendReply(nil, tc.op, &want)
		got, err := wire.DecodeReply(tc.op, frame[4:])
		if err != nil {
			t.Fatalf("%v: %v", tc.op, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v reply round trip:\n got %+v\nwant %+v", tc.op, got, want)
		}
	}
}

// The byte-level shapes clients depend on.
func TestWireShapes(t *testing.T) {
	// go-zookeeper's handshake has no readOnly byte: 44 bytes, answered
	// with 36; the Java client's has it: 45, answered with 37.
	old := wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 1}})
	ro := wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 1}, HasReadOnly: true})
	if len(old)-4 != 44 || len(ro)-4 != 45 {
		t.Errorf("connect requests of %d and %d bytes, want 44 and 45", len(old)-4, len(ro)-4)
	}
	for _, frame := range [][]byte{old, ro} {
		req, err := wire.DecodeConnectRequest(frame[4:])
		if err != nil || req.HasReadOnly != (len(frame) == len(ro)) || req.TimeoutMs != 1 {
			t.Errorf("decoded %+v, %v", req, err)
		}
	}
	resp := sim.ConnectResponse{SessionID: 5, Passwd: make([]byte, 16), TimeoutMs: 4000}
	if n := len(wire.AppendConnectResponse(nil, resp, false)) - 4; n != 36 {
		t.Errorf("connect response without readOnly: %d bytes, want 36", n)
	}
	if n := len(wire.AppendConnectResponse(nil, resp, true)) - 4; n != 37 {
		t.Errorf("connect response with readOnly: %d bytes, want 37", n)
	}
	// An expired session: timeout 0, session 0, 16 zero bytes.
	expired := wire.AppendConnectResponse(nil, sim.ConnectResponse{}, false)
	got, _, err := wire.DecodeConnectResponse(expired[4:])
	if err != nil || got.SessionID != 0 || got.TimeoutMs != 0 || len(got.Passwd) != 16 || string(got.Passwd) != string(make([]byte, 16)) {
		t.Errorf("expired answer %+v, %v", got, err)
	}
	// addWatch's reply carries a 4-byte ErrorResponse(0) (the Java
	// client reads it; an empty body is an EOF to it).
	if n := len(wire.AppendReply(nil, sim.OpAddWatch, &sim.Response{Xid: 1})) - 4; n != 16+4 {
		t.Errorf("addWatch reply body %d bytes, want 4", n-16)
	}
	// A notification: xid -1, zxid -1 (before 3.9), err 0, WatcherEvent.
	ev := wire.AppendEvent(nil, zk.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: "/a"})
	h, err := wire.DecodeReplyHeader(ev[4:])
	if err != nil || h.Xid != -1 || h.Zxid != -1 || h.Err != 0 {
		t.Errorf("notification header %+v, %v", h, err)
	}
	if e, err := wire.DecodeEvent(ev[4:]); err != nil || e.Type != zk.EventNodeCreated || e.State != zk.StateSyncConnected || e.Path != "/a" {
		t.Errorf("notification %+v, %v", e, err)
	}
}

// Malformed records decode to a Malformed request with its header (the
// server answers MARSHALLINGERROR); a frame too short for a header is an
// error alone.
func TestDecodeMalformed(t *testing.T) {
	if _, err := wire.DecodeRequest([]byte{0, 0, 0, 1, 0}); err == nil {
		t.Fatal("a 5-byte frame decoded")
	}
	cases := map[string][]byte{
		"truncated path":   append(header(7, sim.OpGetData), 0, 0, 0, 9, '/'),
		"negative length":  append(header(7, sim.OpGetData), 0xff, 0xff, 0xff, 0xfe),
		"huge vector":      append(header(7, sim.OpSetWatches), append(make([]byte, 8), 0x7f, 0xff, 0xff, 0xff)...),
		"read in a multi":  wire.AppendRequest(nil, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{{Op: sim.OpGetData, Path: "/"}}})[4:],
		"multi in a multi": wire.AppendRequest(nil, sim.Request{Op: sim.OpMulti, Ops: []sim.Request{{Op: sim.OpMulti}}})[4:],
		"no multi end":     header(7, sim.OpMulti),
	}
	for name, frame := range cases {
		binary.BigEndian.PutUint32(frame, 7)
		req, err := wire.DecodeRequest(frame)
		if err == nil || !req.Malformed || req.Xid != 7 {
			t.Errorf("%s: decoded %+v, %v; want Malformed xid 7 and an error", name, req, err)
		}
	}
}

func header(xid int32, op sim.OpCode) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}
