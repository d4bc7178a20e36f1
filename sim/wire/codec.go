package wire

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// Special xids (ClientCnxn): a reply header's xid says what a frame is
// when it is not the answer to a numbered request.
const (
	XidNotification int32 = -1 // a watch event, server to client
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Sizes of the fixed records.
const (
	requestHeaderBytes = 8  // xid, type
	replyHeaderBytes   = 16 // xid, zxid, err
	passwdBytes        = 16 // a session password (ZooKeeperServer.generatePasswd)
	// connectRequestBytesOld is a ConnectRequest without the readOnly
	// byte, as go-zookeeper sends it: protocolVersion, lastZxidSeen,
	// timeOut, sessionId and a 16-byte passwd.
	connectRequestBytesOld = 4 + 8 + 4 + 8 + 4 + passwdBytes
)

// notificationZxid is the zxid in a watch event's reply header: -1 before
// ZooKeeper 3.9 (ZOOKEEPER-4655 put the event's zxid there), and this
// server answers as 3.8 does.
const notificationZxid = -1

// ConnectRequest is a decoded ConnectRequest record, with whether the
// client sent the trailing readOnly byte: one that did not (go-zookeeper,
// old clients) gets a ConnectResponse without it too.
type ConnectRequest struct {
	ProtocolVersion int32
	sim.ConnectRequest
	ReadOnly    bool
	HasReadOnly bool
}

// DecodeConnectRequest decodes the first frame of a connection (its body,
// after the length prefix).
func DecodeConnectRequest(frame []byte) (ConnectRequest, error) {
	d := decoder{b: frame}
	var r ConnectRequest
	r.ProtocolVersion = d.int32("protocolVersion")
	r.LastZxidSeen = d.int64("lastZxidSeen")
	r.TimeoutMs = d.int32("timeOut")
	r.SessionID = d.int64("sessionId")
	r.Passwd = d.buffer("passwd")
	if d.err == nil && d.left() > 0 {
		r.ReadOnly = d.bool("readOnly")
		r.HasReadOnly = true
	}
	if d.err != nil {
		return ConnectRequest{}, fmt.Errorf("connect request: %w", d.err)
	}
	return r, nil
}

// AppendConnectRequest appends a ConnectRequest frame, length prefix
// included, as a client sends it.
func AppendConnectRequest(b []byte, r ConnectRequest) []byte {
	return frame(b, func(e *encoder) {
		e.int32(r.ProtocolVersion)
		e.int64(r.LastZxidSeen)
		e.int32(r.TimeoutMs)
		e.int64(r.SessionID)
		passwd := r.Passwd
		if passwd == nil {
			passwd = make([]byte, passwdBytes)
		}
		e.buffer(passwd)
		if r.HasReadOnly {
			e.bool(r.ReadOnly)
		}
	})
}

// AppendConnectResponse appends a ConnectResponse frame. A refused session
// (SessionID 0) gets timeout 0 and 16 zero bytes of password, as
// ZooKeeperServer.finishSessionInit answers one; the readOnly byte is
// written only for a client that sent one (NIOServerCnxn isOldClient).
func AppendConnectResponse(b []byte, r sim.ConnectResponse, withReadOnly bool) []byte {
	return frame(b, func(e *encoder) {
		e.int32(0) // protocolVersion
		e.int32(r.TimeoutMs)
		e.int64(r.SessionID)
		passwd := r.Passwd
		if len(passwd) == 0 {
			passwd = make([]byte, passwdBytes)
		}
		e.buffer(passwd)
		if withReadOnly {
			e.bool(false) // a standalone server is never read-only
		}
	})
}

// DecodeConnectResponse decodes a ConnectResponse frame body; hasReadOnly
// reports whether it carried the readOnly byte.
func DecodeConnectResponse(body []byte) (r sim.ConnectResponse, hasReadOnly bool, err error) {
	d := decoder{b: body}
	d.int32("protocolVersion")
	r.TimeoutMs = d.int32("timeOut")
	r.SessionID = d.int64("sessionId")
	r.Passwd = d.buffer("passwd")
	if d.err == nil && d.left() > 0 {
		d.bool("readOnly")
		hasReadOnly = true
	}
	return r, hasReadOnly, d.end("connect response")
}

// frame appends a length-prefixed frame whose body fill writes.
func frame(b []byte, fill func(e *encoder)) []byte {
	start := len(b)
	e := encoder{b: append(b, 0, 0, 0, 0)}
	fill(&e)
	n := len(e.b) - start - 4
	e.b[start] = byte(n >> 24)
	e.b[start+1] = byte(n >> 16)
	e.b[start+2] = byte(n >> 8)
	e.b[start+3] = byte(n)
	return e.b
}

// ErrMalformedHeader is a frame too short for a request header: ZooKeeper
// closes the connection.
var ErrMalformedHeader = errors.New("frame shorter than a request header")

// DecodeRequest decodes a request frame body: its header and the record
// its opcode calls for. An opcode it does not know is returned with no
// fields but Xid and Op, for the server to answer as it answers unknown
// opcodes. Bytes after the record are ignored, as ZooKeeper's deserializer
// ignores them.
//
// A record that cannot be decoded is returned with its header, Malformed
// set, and an error saying what is wrong: the server answers it (with
// MARSHALLINGERROR) and keeps the connection. Only a header that cannot
// be read is ErrMalformedHeader.
func DecodeRequest(frame []byte) (sim.Request, error) {
	d := decoder{b: frame}
	var req sim.Request
	req.Xid = d.int32("xid")
	req.Op = sim.OpCode(d.int32("type"))
	if d.err != nil {
		return sim.Request{}, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	decodeBody(&d, &req, false)
	if d.err != nil {
		return sim.Request{Xid: req.Xid, Op: req.Op, Malformed: true}, fmt.Errorf("%v record: %w", req.Op, d.err)
	}
	return req, nil
}

// decodeBody reads the record of req.Op; inMulti restricts it to what a
// multi or multiRead may hold (MultiOperationRecord).
func decodeBody(d *decoder, req *sim.Request, inMulti bool) {
	switch req.Op {
	case sim.OpCreate, sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		req.Path = d.string("path")
		req.Data = d.buffer("data")
		req.ACL = d.acls("acl")
		req.Mode = d.int32("flags")
		if req.Op == sim.OpCreateTTL {
			req.TTLMs = d.int64("ttl")
		}
	case sim.OpDelete, sim.OpCheck:
		req.Path = d.string("path")
		req.Version = d.int32("version")
	case sim.OpSetData:
		req.Path = d.string("path")
		req.Data = d.buffer("data")
		req.Version = d.int32("version")
	case sim.OpExists, sim.OpGetData, sim.OpGetChildrenNoStat, sim.OpGetChildren:
		req.Path = d.string("path")
		req.Watch = d.bool("watch")
	case sim.OpGetACL, sim.OpSync, sim.OpGetEphemerals, sim.OpGetAllChildrenNum:
		req.Path = d.string("path")
	case sim.OpSetACL:
		req.Path = d.string("path")
		req.ACL = d.acls("acl")
		req.Version = d.int32("version")
	case sim.OpMulti, sim.OpMultiRead:
		if inMulti {
			d.fail("multi", errors.New("a multi inside a multi"))
			return
		}
		decodeMulti(d, req)
	case sim.OpReconfig:
		req.JoiningServers = d.string("joiningServers")
		req.LeavingServers = d.string("leavingServers")
		req.NewMembers, req.NewMembersNull = d.nullableString("newMembers")
		req.CurConfigID = d.int64("curConfigId")
	case sim.OpCheckWatches, sim.OpRemoveWatches:
		req.Path = d.string("path")
		req.WatcherType = sim.WatcherType(d.int32("type"))
	case sim.OpAddWatch:
		req.Path = d.string("path")
		req.AddWatchMode = sim.AddWatchMode(d.int32("mode"))
	case sim.OpSetWatches, sim.OpSetWatches2:
		req.RelativeZxid = d.int64("relativeZxid")
		req.DataWatches = d.strings("dataWatches")
		req.ExistWatches = d.strings("existWatches")
		req.ChildWatches = d.strings("childWatches")
		if req.Op == sim.OpSetWatches2 {
			req.PersistentWatches = d.strings("persistentWatches")
			req.PersistentRecursiveWatches = d.strings("persistentRecursiveWatches")
		}
	case sim.OpAuth:
		d.int32("type") // AuthPacket.type, always 0
		req.AuthScheme = d.string("scheme")
		req.AuthData = d.buffer("auth")
	case sim.OpSASL:
		req.Data = d.buffer("token") // GetSASLRequest
	case sim.OpPing, sim.OpCloseSession, sim.OpWhoAmI:
		// no record
	}
}

// decodeMulti reads a MultiOperationRecord: a MultiHeader (type, done, err)
// before each op, and a final one with done set.
func decodeMulti(d *decoder, req *sim.Request) {
	for d.err == nil {
		typ := sim.OpCode(d.int32("multi header type"))
		done := d.bool("multi header done")
		d.int32("multi header err")
		if d.err != nil || done {
			return
		}
		if !multiMayHold(req.Op, typ) {
			d.fail("multi", fmt.Errorf("%v cannot be part of a %v", typ, req.Op))
			return
		}
		op := sim.Request{Op: typ}
		decodeBody(d, &op, true)
		req.Ops = append(req.Ops, op)
	}
}

// multiMayHold is MultiOperationRecord.deserialize's list: a multi holds
// writes and a multiRead holds reads; anything else is "Invalid type of
// op".
func multiMayHold(multi, op sim.OpCode) bool {
	if multi == sim.OpMultiRead {
		return op == sim.OpGetChildrenNoStat || op == sim.OpGetData
	}
	switch op {
	case sim.OpCreate, sim.OpCreate2, sim.OpCreateTTL, sim.OpCreateCont, sim.OpDelete, sim.OpSetData, sim.OpCheck:
		return true
	}
	return false
}

// AppendRequest appends a request frame, length prefix included, as a
// client encodes it. A multi's sub-requests go in req.Ops.
func AppendRequest(b []byte, req sim.Request) []byte {
	return frame(b, func(e *encoder) {
		e.int32(req.Xid)
		e.int32(int32(req.Op))
		encodeBody(e, &req)
	})
}

func encodeBody(e *encoder, req *sim.Request) {
	switch req.Op {
	case sim.OpCreate, sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		e.string(req.Path)
		e.buffer(req.Data)
		e.acls(req.ACL)
		e.int32(req.Mode)
		if req.Op == sim.OpCreateTTL {
			e.int64(req.TTLMs)
		}
	case sim.OpDelete, sim.OpCheck:
		e.string(req.Path)
		e.int32(req.Version)
	case sim.OpSetData:
		e.string(req.Path)
		e.buffer(req.Data)
		e.int32(req.Version)
	case sim.OpExists, sim.OpGetData, sim.OpGetChildrenNoStat, sim.OpGetChildren:
		e.string(req.Path)
		e.bool(req.Watch)
	case sim.OpGetACL, sim.OpSync, sim.OpGetEphemerals, sim.OpGetAllChildrenNum:
		e.string(req.Path)
	case sim.OpSetACL:
		e.string(req.Path)
		e.acls(req.ACL)
		e.int32(req.Version)
	case sim.OpMulti, sim.OpMultiRead:
		for i := range req.Ops {
			e.int32(int32(req.Ops[i].Op))
			e.bool(false)
			e.int32(-1)
			encodeBody(e, &req.Ops[i])
		}
		e.int32(-1)
		e.bool(true)
		e.int32(-1)
	case sim.OpReconfig:
		e.string(req.JoiningServers)
		e.string(req.LeavingServers)
		if req.NewMembersNull {
			e.int32(-1)
		} else {
			e.string(req.NewMembers)
		}
		e.int64(req.CurConfigID)
	case sim.OpCheckWatches, sim.OpRemoveWatches:
		e.string(req.Path)
		e.int32(int32(req.WatcherType))
	case sim.OpAddWatch:
		e.string(req.Path)
		e.int32(int32(req.AddWatchMode))
	case sim.OpSetWatches, sim.OpSetWatches2:
		e.int64(req.RelativeZxid)
		e.strings(req.DataWatches)
		e.strings(req.ExistWatches)
		e.strings(req.ChildWatches)
		if req.Op == sim.OpSetWatches2 {
			e.strings(req.PersistentWatches)
			e.strings(req.PersistentRecursiveWatches)
		}
	case sim.OpAuth:
		e.int32(0)
		e.string(req.AuthScheme)
		e.buffer(req.AuthData)
	case sim.OpSASL:
		e.buffer(req.Data)
	}
}

// AppendReply appends the frame answering a request of type op: the reply
// header and, when Err is OK, the response record op calls for
// (FinalRequestProcessor); an error reply is the header alone.
func AppendReply(b []byte, op sim.OpCode, r *sim.Response) []byte {
	return frame(b, func(e *encoder) {
		e.int32(r.Xid)
		e.int64(r.Zxid)
		e.int32(int32(r.Err))
		if r.Err != sim.CodeOK {
			return
		}
		encodeResponse(e, op, r)
	})
}

func encodeResponse(e *encoder, op sim.OpCode, r *sim.Response) {
	switch op {
	case sim.OpCreate, sim.OpSync:
		e.string(r.Path)
	case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		e.string(r.Path)
		e.stat(&r.Stat)
	case sim.OpExists, sim.OpSetData, sim.OpSetACL:
		e.stat(&r.Stat)
	case sim.OpGetData, sim.OpReconfig:
		e.buffer(r.Data)
		e.stat(&r.Stat)
	case sim.OpSASL:
		e.buffer(r.Data) // SetSASLResponse's token
	case sim.OpGetACL:
		e.acls(r.ACL)
		e.stat(&r.Stat)
	case sim.OpGetChildrenNoStat:
		e.strings(r.Children)
	case sim.OpGetChildren:
		e.strings(r.Children)
		e.stat(&r.Stat)
	case sim.OpMulti, sim.OpMultiRead:
		for i := range r.Multi {
			encodeMultiResult(e, &r.Multi[i])
		}
		e.int32(-1)
		e.bool(true)
		e.int32(-1)
	case sim.OpGetEphemerals:
		e.strings(r.Ephemerals)
	case sim.OpGetAllChildrenNum:
		e.int32(r.TotalNumber)
	case sim.OpAddWatch:
		// FinalRequestProcessor answers addWatch with ErrorResponse(0): a
		// 4-byte body the Java client reads (an empty one is an EOF to it).
		e.int32(0)
	case sim.OpWhoAmI:
		e.int32(int32(len(r.Clients)))
		for _, c := range r.Clients {
			e.string(c.AuthScheme)
			e.string(c.User)
		}
	}
	// delete, check, ping, setWatches, setWatches2, checkWatches,
	// removeWatches, auth and closeSession have no record.
}

// encodeMultiResult writes one result of a MultiResponse: its MultiHeader
// (type, done, err), then its record.
func encodeMultiResult(e *encoder, m *sim.MultiResult) {
	if m.Op == 0 || m.Op == sim.OpError || m.Err != sim.CodeOK {
		e.int32(int32(sim.OpError))
		e.bool(false)
		e.int32(int32(m.Err))
		e.int32(int32(m.Err)) // ErrorResponse
		return
	}
	e.int32(int32(m.Op))
	e.bool(false)
	e.int32(0)
	switch m.Op {
	case sim.OpCreate:
		e.string(m.Path)
	case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		e.string(m.Path)
		e.stat(&m.Stat)
	case sim.OpSetData:
		e.stat(&m.Stat)
	case sim.OpGetData:
		e.buffer(m.Data)
		e.stat(&m.Stat)
	case sim.OpGetChildrenNoStat:
		e.strings(m.Children)
	}
}

// AppendEvent appends a watch notification frame: reply header xid -1,
// then a WatcherEvent.
func AppendEvent(b []byte, ev zk.Event) []byte {
	return frame(b, func(e *encoder) {
		e.int32(XidNotification)
		e.int64(notificationZxid)
		e.int32(0)
		e.int32(int32(ev.Type))
		e.int32(int32(ev.State))
		e.string(ev.Path)
	})
}

// ReplyHeader is the header of every frame a server sends after the
// handshake.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  sim.Code
}

// DecodeReplyHeader decodes the header of a server frame body.
func DecodeReplyHeader(body []byte) (ReplyHeader, error) {
	d := decoder{b: body}
	h := ReplyHeader{Xid: d.int32("xid"), Zxid: d.int64("zxid"), Err: sim.Code(d.int32("err"))}
	if d.err != nil {
		return ReplyHeader{}, fmt.Errorf("reply header: %w", d.err)
	}
	return h, nil
}

// DecodeReply decodes a server frame body answering a request of type op,
// as a client does: the header, and the record when Err is OK.
func DecodeReply(op sim.OpCode, body []byte) (sim.Response, error) {
	d := decoder{b: body}
	var r sim.Response
	r.Xid = d.int32("xid")
	r.Zxid = d.int64("zxid")
	r.Err = sim.Code(d.int32("err"))
	if d.err == nil && r.Err == sim.CodeOK {
		decodeResponse(&d, op, &r)
	}
	return r, d.end(fmt.Sprintf("%v reply", op))
}

func decodeResponse(d *decoder, op sim.OpCode, r *sim.Response) {
	switch op {
	case sim.OpCreate, sim.OpSync:
		r.Path = d.string("path")
	case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		r.Path = d.string("path")
		r.Stat = d.stat("stat")
	case sim.OpExists, sim.OpSetData, sim.OpSetACL:
		r.Stat = d.stat("stat")
	case sim.OpGetData, sim.OpReconfig:
		r.Data = d.buffer("data")
		r.Stat = d.stat("stat")
	case sim.OpSASL:
		r.Data = d.buffer("token")
	case sim.OpGetACL:
		r.ACL = d.acls("acl")
		r.Stat = d.stat("stat")
	case sim.OpGetChildrenNoStat:
		r.Children = d.strings("children")
	case sim.OpGetChildren:
		r.Children = d.strings("children")
		r.Stat = d.stat("stat")
	case sim.OpMulti, sim.OpMultiRead:
		for d.err == nil {
			typ := sim.OpCode(d.int32("multi header type"))
			done := d.bool("multi header done")
			code := sim.Code(d.int32("multi header err"))
			if d.err != nil || done {
				return
			}
			m := sim.MultiResult{Op: typ, Err: code}
			switch typ {
			case sim.OpError:
				m.Op = 0
				m.Err = sim.Code(d.int32("error"))
			case sim.OpCreate:
				m.Path = d.string("path")
			case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
				m.Path = d.string("path")
				m.Stat = d.stat("stat")
			case sim.OpSetData:
				m.Stat = d.stat("stat")
			case sim.OpGetData:
				m.Data = d.buffer("data")
				m.Stat = d.stat("stat")
			case sim.OpGetChildrenNoStat:
				m.Children = d.strings("children")
			case sim.OpDelete, sim.OpCheck:
			default:
				d.fail("multi result", fmt.Errorf("unknown type %d", typ))
			}
			r.Multi = append(r.Multi, m)
		}
	case sim.OpGetEphemerals:
		r.Ephemerals = d.strings("ephemerals")
	case sim.OpGetAllChildrenNum:
		r.TotalNumber = d.int32("totalNumber")
	case sim.OpAddWatch:
		d.int32("err")
	case sim.OpWhoAmI:
		n, _ := d.length("clientInfo", 8)
		for range n {
			r.Clients = append(r.Clients, sim.ClientInfo{AuthScheme: d.string("authScheme"), User: d.string("user")})
		}
	}
}

// DecodeEvent decodes a notification frame body (xid -1).
func DecodeEvent(body []byte) (zk.Event, error) {
	d := decoder{b: body}
	d.int32("xid")
	d.int64("zxid")
	d.int32("err")
	ev := zk.Event{Type: zk.EventType(d.int32("type")), State: zk.State(d.int32("state")), Path: d.string("path")}
	return ev, d.end("notification")
}
