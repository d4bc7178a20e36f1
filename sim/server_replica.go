package sim

import (
	"fmt"
	"math/bits"

	"github.com/go-zookeeper/zk"
)

// This file lets servers replicate one another's transactions, for the
// ensemble (ensemble.go). ZooKeeper's leader turns each request into a
// transaction in PrepRequestProcessor, proposes it, and every server
// applies the committed transaction to its own DataTree in zxid order
// (FinalRequestProcessor, ZooKeeper Internals "Zab"). Here a transaction
// travels as a TxnRecord: what the leader executed and what it answered. A
// replica re-executes it through the same code path as the leader did, at
// the leader's time and zxid and with the caller's identities, so that
// ZooKeeper's semantics stay in one place, and asserts that it reproduces
// the leader's outcome: a replica that disagrees is a simulator bug. Only
// the first replica to apply a write validates it again; the others apply
// the write it validated, through the same apply, and their answers too
// are held to the leader's (on three servers the four executions of every
// write were the ensemble's largest cost).

// TxnKind says what a committed transaction does.
type TxnKind uint8

const (
	// RecCreateSession opens a session (OpCode.createSession).
	RecCreateSession TxnKind = iota + 1
	// RecCloseSession closes a session, by request or by expiry, deleting
	// its ephemerals (OpCode.closeSession).
	RecCloseSession
	// RecWrite is a client's create, delete, setData, check, setACL or
	// multi, successful or not: a failed one is an error transaction, which
	// changes nothing but takes its zxid.
	RecWrite
	// RecError is a transaction that is only an error (ErrorTxn): a
	// malformed write, a reconfig or deleteContainer a client sent.
	RecError
	// RecSweep is the ContainerManager's deletions of one run: one
	// transaction per node, zxids Zxid to LastZxid.
	RecSweep
	// RecReconfig is a reconfig that made a new configuration: a
	// SetDataTxn of /zookeeper/config with the configuration's text
	// (Req.Data), ensemble_reconfig.go.
	RecReconfig
)

// TxnRecord is one committed transaction, as the leader made it.
type TxnRecord struct {
	Kind      TxnKind
	Zxid      int64 // its zxid (the first, for a sweep)
	LastZxid  int64 // the last zxid it takes: Zxid but for a sweep
	TimeMs    int64 // the leader's virtual time when it made it
	Session   int64
	TimeoutMs int64 // a createSession's negotiated timeout
	// Conn is the connection the request came on (0 for the server's
	// own: an expiry or a sweep); Req is the request.
	Conn ConnID
	Req  Request
	// Auth holds the caller's identities (Request.authInfo), which the
	// re-execution checks ACLs against.
	Auth []authID
	// Resp is the leader's answer, Xid and Zxid set.
	Resp Response
	// checked is a write (not a multi) as the leader's prep server
	// validated it: the members apply it without validating Req again
	// (ApplyRecord), as ZooKeeper's followers apply the leader's txn
	// (FinalRequestProcessor) and never run PrepRequestProcessor's checks.
	// A member whose every step is checked (CheckEveryStep) re-executes
	// it all the same, and its answer is held to the leader's.
	checked *checkedWrite
	// appliedText is every member's "sN applied <rec>" for the trace,
	// appliedTextLen bytes each (World.appliedText).
	appliedText    string
	appliedTextLen int
	// nodesChecked says a member has applied it and checked the nodes it
	// touched (Server.commit): the members after it do not check them
	// again (see ApplyRecord).
	nodesChecked bool
}

// checkedWrite is a write one replica validated: every replica's tree is
// the same prefix of the committed log when it applies a record (the
// ensemble asserts it), so its validation would come out the same.
type checkedWrite struct {
	ok    bool     // it passed validation; a failed one changes nothing
	w     write    // what apply applies
	acl   []zk.ACL // a create's or setACL's ACL, which each server interns in its own table
	valid bool     // set by the validation that filled it (Server.prepWrite)
}

// handOn returns the write for the members: its node pointers point into
// the tree that validated it, and each member looks them up in its own;
// its ACL goes by value, as each server interns ACLs in its own table.
func (c checkedWrite) handOn(s *Server, op OpCode) *checkedWrite {
	return c.handOnTo(new(checkedWrite), s, op)
}

// handOnTo is handOn into dst, which it returns.
func (c *checkedWrite) handOnTo(dst *checkedWrite, s *Server, op OpCode) *checkedWrite {
	*dst = *c
	dst.w.node, dst.w.parent = nil, nil
	dst.valid = false
	if dst.ok && isACLWrite(op) {
		dst.acl = s.acls.lists[dst.w.acl]
	}
	return dst
}

// recordSlot is a prepared write's record and its checked write, which
// the record points to, in one allocation; an ensemble takes them from
// slabs of recordSlabLen (takeRecordSlot).
type recordSlot struct {
	rec     TxnRecord
	checked checkedWrite
}

// recordSlabLen is how many recordSlots a slab holds.
const recordSlabLen = 4

// takeRecordSlot returns a zero slot from *slab, which it refills when
// it is empty; with slab nil, a slot of its own. A record and its
// checked write were two allocations for every write, some 720
// instructions together (the record alone, 768 bytes of pointers and
// all, 445), a fifth of prepSingleWrite's on three servers; one
// allocation of four slots costs less than one of those.
// The slots of a slab live as long as the longest lived of them: an
// ensemble's records all live as long as it does.
func takeRecordSlot(slab *[]recordSlot) *recordSlot {
	if slab == nil {
		return new(recordSlot)
	}
	if len(*slab) == 0 {
		*slab = make([]recordSlot, recordSlabLen)
	}
	slot := &(*slab)[0]
	*slab = (*slab)[1:]
	return slot
}

func (r *TxnRecord) String() string { return string(r.appendText(nil)) }

// appendText appends what String says, as fmt's %#x and %v would write
// it: an ensemble's trace says it for every member's every application,
// and fmt.Sprintf was a tenth of an exploration's time on 3 servers.
func (r *TxnRecord) appendText(b []byte) []byte {
	if r.Kind < RecCreateSession || r.Kind > RecReconfig {
		return append(b, '?')
	}
	b = appendHex(b, r.Zxid)
	switch r.Kind {
	case RecCreateSession:
		b = append(b, " createSession "...)
		return appendHex(b, r.Session)
	case RecCloseSession:
		b = append(b, " closeSession "...)
		return appendHex(b, r.Session)
	case RecWrite:
		b = append(b, ' ')
		b = append(b, r.Req.Op.String()...)
		b = append(b, ' ')
		b = append(b, r.Req.Path...)
		b = append(b, " session "...)
		b = appendHex(b, r.Session)
		b = append(b, " err="...)
		return append(b, r.Resp.Err.String()...)
	case RecReconfig:
		b = append(b, " reconfig session "...)
		return appendHex(b, r.Session)
	case RecError:
		b = append(b, " error "...)
		b = append(b, r.Req.Op.String()...)
		b = append(b, " session "...)
		return appendHex(b, r.Session)
	}
	b = append(b, ".."...)
	b = appendHex(b, r.LastZxid)
	return append(b, " container sweep"...) // RecSweep
}

// appendHex appends v as fmt's %#x writes an int64. It writes the digits
// in place, from the last: strconv.AppendUint, which formats into a
// buffer of its own and copies it, was a third of what the trace's
// "sN applied" texts cost on three servers.
func appendHex(b []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u
	}
	digits := max(1, (bits.Len64(u)+3)/4)
	b = append(b, "0x0000000000000000"[:2+digits]...)
	for i := len(b) - 1; u != 0; i-- {
		b[i] = hexDigits[u&0xf]
		u >>= 4
	}
	return b
}

const hexDigits = "0123456789abcdef"

// replayConn is the connection a replica's re-executions run as: no
// client connection has a negative id.
const replayConn ConnID = -1

// isACLWrite reports the single writes whose validation interns an ACL.
func isACLWrite(op OpCode) bool {
	switch op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL, OpSetACL:
		return true
	}
	return false
}

// isReplicatedWrite reports the ops a replica re-executes.
func isReplicatedWrite(op OpCode) bool {
	switch op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL, OpDelete, OpSetData, OpCheck, OpSetACL, OpMulti:
		return true
	}
	return false
}

// forwardedToLeader reports the requests a follower hands to its leader
// (FollowerRequestProcessor: every request that changes state, and sync);
// the rest it answers itself.
func forwardedToLeader(op OpCode) bool {
	return preppedAsTxn(op) || op == OpSync
}

// --- the leader's side: PrepRequestProcessor ---

// PrepConnect opens a new session for a connection a member accepted:
// the createSession transaction. The connection is bound for the call
// only: the leader's prep server keeps sessions, not connections.
func (s *Server) PrepConnect(nowMs int64, conn ConnID, timeoutMs int32) (*TxnRecord, ConnectResponse) {
	s.OpenFrom(conn, DefaultClientAddr)
	before := s.lastZxid
	s.Connect(nowMs, conn, ConnectRequest{TimeoutMs: timeoutMs, Passwd: make([]byte, 16)})
	var resp ConnectResponse
	for _, o := range s.Outputs() {
		if o.Conn == conn && o.Kind == OutConnect {
			resp = o.Connect
		}
	}
	s.Disconnect(conn)
	if s.lastZxid != before+1 || resp.SessionID == 0 {
		panic(fmt.Sprintf("sim: createSession took zxids %#x..%#x, session %#x", before, s.lastZxid, resp.SessionID))
	}
	return &TxnRecord{Kind: RecCreateSession, Zxid: s.lastZxid, LastZxid: s.lastZxid, TimeMs: nowMs, Session: resp.SessionID, TimeoutMs: int64(resp.TimeoutMs), Conn: conn}, resp
}

// PrepRequest executes a request a member forwarded for session, from a
// connection whose identities are auth: the session is checked and
// touched, the request validated and applied to the leader's prep state,
// so that the next request sees it (PrepRequestProcessor's
// outstandingChanges). It returns the transaction it made, nil if none
// (an expired session's request), and the answer.
func (s *Server) PrepRequest(nowMs int64, conn ConnID, session int64, auth []authID, req Request) (*TxnRecord, Response) {
	return s.prepRequest(nowMs, conn, session, auth, &req, nil)
}

// prepRequest is PrepRequest with the request by pointer (Server.receive);
// it keeps no pointer to req. A single write's record comes from slab
// (takeRecordSlot).
func (s *Server) prepRequest(nowMs int64, conn ConnID, session int64, auth []authID, req *Request, slab *[]recordSlot) (*TxnRecord, Response) {
	if sess := s.sessions[session]; sess != nil && !sess.closing && preppedAsSingleWrite(req) && packetLen(req) <= s.cfg.MaxPacketBytes {
		r := s.prepSingleWrite(nowMs, conn, sess, auth, req, slab)
		return r, r.Resp
	}
	s.setConn(conn, session)
	if s.auth == nil {
		s.auth = make(map[ConnID]*connAuth)
	}
	s.replayAuth = connAuth{ids: auth} // dropped with the connection below
	s.auth[conn] = &s.replayAuth
	if sess := s.sessions[session]; sess != nil {
		sess.conn = conn
	}
	before := s.lastZxid
	s.prepWrite = checkedWrite{}
	s.receive(nowMs, conn, req)
	var resp Response
	replied := false
	for _, o := range s.Outputs() {
		if o.Conn == conn && o.Kind == OutReply {
			resp, replied = o.Reply, true
		}
	}
	if s.HasConn(conn) {
		s.dropConn(conn)
	}
	s.replayAuth = connAuth{}
	if !replied {
		panic(fmt.Sprintf("sim: the leader did not answer a forwarded %v", req.Op))
	}
	if s.lastZxid == before {
		return nil, resp
	}
	if s.lastZxid != before+1 {
		panic(fmt.Sprintf("sim: a forwarded %v took zxids %#x..%#x", req.Op, before+1, s.lastZxid))
	}
	r := &TxnRecord{Zxid: s.lastZxid, LastZxid: s.lastZxid, TimeMs: nowMs, Session: session, Conn: conn, Req: *req, Auth: auth, Resp: resp}
	switch {
	case req.Op == OpCloseSession && !req.Malformed:
		r.Kind = RecCloseSession
	case isReplicatedWrite(req.Op) && !req.Malformed:
		r.Kind = RecWrite
		if req.Op != OpMulti && s.prepWrite.valid {
			r.checked = s.prepWrite.handOn(s, req.Op)
		}
	default:
		r.Kind = RecError
	}
	return r, resp
}

// preppedAsSingleWrite reports whether prepRequest takes req by
// prepSingleWrite: a single write (not a multi) that is well formed, and
// that Server.receiveOn hands to writeInto rather than refuse before it
// looks at the session (one too long, or that crashes a server). The
// caller checks the length.
func preppedAsSingleWrite(req *Request) bool {
	switch req.Op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL, OpDelete, OpSetData, OpCheck, OpSetACL:
		return !req.Malformed && !crashesServer(req)
	}
	return false
}

// prepSingleWrite is prepRequest of a single write for a live session
// (preppedAsSingleWrite): what Server.receiveOn does with it, without
// the connection. The write runs as replayConn, whose identities are
// auth, as a member's ApplyRecord runs it, and its answer is written
// into the record, rather than the connection entered in the server's
// tables, answered through its outputs and taken out again: that
// bookkeeping, two map inserts and two deletes, the reply's copies and
// the scan of the outputs, was a quarter of what the leader spent on a write
// on three servers. Nothing of a single write looks at the connection:
// not the session's, nor the server's table of them.
func (s *Server) prepSingleWrite(nowMs int64, conn ConnID, sess *serverSession, auth []authID, req *Request, slab *[]recordSlot) *TxnRecord {
	s.replayAuth = connAuth{ids: auth}
	s.caller = replayConn
	s.lastSession = sess // as receiveOn's look-up leaves it
	s.touch(nowMs, sess)
	s.prepWrite = checkedWrite{}
	slot := takeRecordSlot(slab)
	r := &slot.rec
	r.Kind, r.TimeMs, r.Session, r.Conn, r.Auth = RecWrite, nowMs, sess.id, conn, auth
	t := s.begin()
	var w write
	s.writeInto(nowMs, sess, req, t, &r.Resp, &w)
	r.Resp.Xid, r.Resp.Zxid = req.Xid, t.zxid
	s.commit(t)
	s.Outputs() // a prep server has no watchers: nothing, as ever
	s.replayAuth = connAuth{}
	s.caller = conn
	r.Zxid, r.LastZxid, r.Req = t.zxid, t.zxid, *req
	if s.prepWrite.valid {
		r.checked = s.prepWrite.handOnTo(&slot.checked, s, req.Op)
	}
	return r
}

// PrepTick lets the leader's time reach nowMs (Server.Tick): sessions
// expire (their closes come from PrepInternal), and the ContainerManager's
// deletions make a sweep record, nil if it deleted nothing.
func (s *Server) PrepTick(nowMs int64) *TxnRecord {
	before := s.lastZxid
	s.Tick(nowMs)
	s.Outputs()
	if s.lastZxid == before {
		return nil
	}
	return &TxnRecord{Kind: RecSweep, Zxid: before + 1, LastZxid: s.lastZxid, TimeMs: nowMs}
}

// PrepInternal applies the next expired session's close (StepInternal)
// and returns its record.
func (s *Server) PrepInternal(nowMs int64) *TxnRecord {
	id := s.StepInternal(nowMs)
	s.Outputs()
	return &TxnRecord{Kind: RecCloseSession, Zxid: s.lastZxid, LastZxid: s.lastZxid, TimeMs: nowMs, Session: id}
}

// Revalidate is the leader's answer to a member that a client asks to
// reattach a session on (LearnerHandler REVALIDATE,
// SessionTrackerImpl.touchSession): the session is valid if it is alive
// and the password matches, and it is then touched with the timeout the
// client negotiated.
func (s *Server) Revalidate(nowMs int64, id int64, passwd []byte, timeoutMs int32) bool {
	sess, ok := s.sessions[id]
	if !ok || sess.closing || string(sess.passwd) != string(passwd) {
		return false
	}
	sess.timeoutMs = min(max(int64(timeoutMs), s.cfg.MinSessionTimeoutMs), s.cfg.MaxSessionTimeoutMs)
	s.touch(nowMs, sess)
	return true
}

// TouchSession is a follower's report that a session is alive (the
// sessions a follower lists in its PING to the leader).
func (s *Server) TouchSession(nowMs int64, id int64) {
	if sess, ok := s.sessions[id]; ok {
		s.touch(nowMs, sess)
	}
}

// --- every member's side: applying committed transactions ---

// ApplyRecord applies a committed transaction. The request's connection
// gets the answer if it is open on this server; the watches it triggers
// fire to this server's own watchers. A replica that does not reproduce
// the leader's outcome panics: the replicas of an ensemble diverged.
//
// The first member to apply a transaction checks the invariants of the
// nodes it touched; the others do not. They apply it to the same tree
// (the ensemble holds every member to a prefix of one committed log), each
// answer is held to the leader's here, and the world checks every
// member's whole tree at the end of every run (World.Run, RunFor). The
// members' second and third look at each node cost a twentieth of an
// exploration on three servers, and made its speed fall below half the
// single server's (issue 13).
func (s *Server) ApplyRecord(r *TxnRecord) {
	if r.Zxid <= s.lastZxid {
		panic(fmt.Sprintf("sim: transaction %v applied after %#x: a server's zxid only grows", r, s.lastZxid))
	}
	s.nodesCheckedElsewhere = r.nodesChecked && !s.checkEvery
	_, onThis := s.conns[r.Conn]
	onThis = onThis && r.Conn != 0
	s.lastZxid = r.Zxid - 1
	switch r.Kind {
	case RecCreateSession:
		if _, ok := s.sessions[r.Session]; ok {
			panic(fmt.Sprintf("sim: %v: the session exists already", r))
		}
		t := s.begin()
		sess := newSession(r.Session, r.TimeoutMs)
		s.addSession(sess)
		s.touch(r.TimeMs, sess)
		if onThis && s.conns[r.Conn] == 0 {
			sess.conn = r.Conn
			s.setConn(r.Conn, r.Session)
		}
		s.commit(t)
		if sess.conn != 0 {
			s.send(Output{Conn: r.Conn, Kind: OutConnect, Connect: ConnectResponse{SessionID: sess.id, Passwd: sess.passwd, TimeoutMs: int32(r.TimeoutMs)}})
		}
	case RecCloseSession:
		sess := s.sessions[r.Session]
		if sess == nil {
			panic(fmt.Sprintf("sim: %v: no such session on the replica", r))
		}
		var req *Request
		if onThis && sess.conn == r.Conn {
			req = &r.Req
		}
		s.closeSession(r.TimeMs, r.Session, req)
	case RecWrite:
		sess := s.sessions[r.Session]
		if sess == nil {
			panic(fmt.Sprintf("sim: %v: no such session on the replica", r))
		}
		// The write runs as replayConn, whose identities are the
		// record's (callingAuth): not entered in s.auth, as a map's
		// insert and delete for every member's every write showed.
		s.replayAuth = connAuth{ids: r.Auth}
		s.caller = replayConn
		t := s.begin()
		// A single write's answer is written where it goes out, on the
		// member its connection is on, as Server.receiveOn writes it,
		// and moved behind the watch events its commit sends: built
		// aside, and copied up from apply, it was zeroed twice and
		// copied twice (a Response is some 260 bytes, an Output 370)
		// for every member's every write.
		k := len(s.outputs)
		var aside Response
		resp := &aside
		inPlace := onThis && r.Req.Op != OpMulti
		if inPlace {
			resp = s.replySlot(r.Conn)
		}
		var checked *checkedWrite
		switch c := r.checked; {
		case r.Req.Op == OpMulti:
			*resp = s.multi(r.TimeMs, sess, r.Req, t)
		case c == nil || s.checkEvery:
			// A record made without the leader's validation (a log
			// replayed from elsewhere), or a member that checks every
			// step: it re-executes the request, validation and all, as
			// the leader did; the members after it apply what it
			// validated.
			var w write
			*resp, w = s.writeOne(r.TimeMs, sess, r.Req, t)
			if c == nil {
				checked = checkedWrite{ok: resp.Err == CodeOK, w: w}.handOn(s, r.Req.Op)
			}
		case c.ok:
			// The members apply what the leader validated, through the
			// same apply; the answer is still held to the leader's below.
			w := c.w
			if c.acl != nil {
				w.acl = s.acls.intern(c.acl)
			}
			s.applyInto(r.TimeMs, sess, &r.Req, &w, t, resp) // it only reads the request: no copy
		default:
			resp.Err = r.Resp.Err
		}
		resp.Xid, resp.Zxid = r.Req.Xid, t.zxid
		// Held to the leader's before the commit, whose watch events may
		// move the outputs, and the answer written there with them.
		if !sameWriteResponse(resp, &r.Resp) {
			panic(fmt.Sprintf("sim: a replica re-executed %v and got %+v, the leader %+v", r, *resp, r.Resp))
		}
		s.commit(t)
		s.replayAuth = connAuth{}
		s.caller = 0
		if checked != nil {
			r.checked = checked
		}
		switch {
		case inPlace:
			s.replyLast(k)
		case onThis:
			s.reply(r.Conn, aside)
		}
	case RecError:
		s.lastZxid = r.Zxid
		if onThis {
			s.reply(r.Conn, r.Resp)
		}
	case RecReconfig:
		resp := s.applyConfig(r)
		if !sameWriteResponse(&resp, &r.Resp) || string(resp.Data) != string(r.Resp.Data) {
			panic(fmt.Sprintf("sim: a replica applied %v and got %+v, the leader %+v", r, resp, r.Resp))
		}
		if onThis {
			s.reply(r.Conn, resp)
		}
	case RecSweep:
		s.sweepContainers(r.TimeMs)
		if s.lastZxid != r.LastZxid {
			panic(fmt.Sprintf("sim: a replica's container sweep at %d took zxids to %#x, the leader's %v", r.TimeMs, s.lastZxid, r))
		}
	default:
		panic(fmt.Sprintf("sim: unknown record kind %d", r.Kind))
	}
	if s.lastZxid != r.LastZxid {
		panic(fmt.Sprintf("sim: %v left the replica at %#x", r, s.lastZxid))
	}
	s.nodesCheckedElsewhere = false
	r.nodesChecked = true
}

// newPrepServer makes a new leader's prep state from its applied state's
// log: every record replayed on a fresh server (the snapshot and the
// transaction log a real server loads), with session ids of its own server
// id and epoch zxids. Every session gets its full timeout from now, as a
// new SessionTrackerImpl tracks each session it loads.
func newPrepServer(cfg ServerConfig, log []*TxnRecord, sid int, epoch int64, nowMs int64) *Server {
	s := NewServer(cfg)
	for _, r := range log {
		s.ApplyRecord(r)
	}
	s.Outputs()
	s.prep = true
	// SessionTrackerImpl.initializeNextSessionId: the server id in the top
	// byte, the time below.
	s.nextSessionID = int64(uint64((s.cfg.EpochMs+nowMs)<<24)>>8) | int64(sid)<<56
	s.lastZxid = epoch << 32
	s.Restart(nowMs)
	return s
}

// sameWriteResponse compares what a write's answer carries: a replica's
// must be the leader's. It takes pointers: a Response is 264 bytes, and
// copying two for every member's every write showed.
func sameWriteResponse(a, b *Response) bool {
	if a.Xid != b.Xid || a.Zxid != b.Zxid || a.Err != b.Err || a.Path != b.Path || a.Stat != b.Stat || len(a.Multi) != len(b.Multi) {
		return false
	}
	for i := range a.Multi {
		x, y := a.Multi[i], b.Multi[i]
		if x.Op != y.Op || x.Err != y.Err || x.Path != y.Path || x.Stat != y.Stat {
			return false
		}
	}
	return true
}

// callerAuth is a connection's identities as they stand, shared rather
// than copied: a connection's ids only ever grow by appending
// (connAuth.add), so a slice of them taken now never changes.
func (s *Server) callerAuth(conn ConnID) []authID {
	if a := s.auth[conn]; a != nil {
		return a.ids[:len(a.ids):len(a.ids)]
	}
	return nil
}
