package sim

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// This file holds the requests ZooKeeper 3.5 to 3.8 added to the 3.4 set,
// as a standalone 3.8 server answers them (FinalRequestProcessor and
// PrepRequestProcessor of release 3.8.0, held to a real server by the
// differential tests in sim/difftest): addWatch, checkWatches,
// removeWatches, setWatches2, getChildren without a Stat, getEphemerals,
// getAllChildrenNumber, multiRead and reconfig; and what a server does with
// an opcode it does not know.

// receiveMore handles the requests Receive does not; the session is live.
func (s *Server) receiveMore(nowMs int64, conn ConnID, sess *serverSession, req Request) {
	switch req.Op {
	case OpGetChildrenNoStat:
		// handleGetChildrenRequest: the checks of getChildren2, and a
		// reply without the Stat.
		resp := s.readReply(conn, req.Xid, func() { r := withOp(req, OpGetChildren); s.getChildren(conn, &r) })
		resp.Stat = zk.Stat{}
		s.reply(conn, resp)
	case OpAddWatch:
		s.addWatch(conn, req)
	case OpCheckWatches, OpRemoveWatches:
		s.checkOrRemoveWatches(conn, req)
	case OpSetWatches2:
		s.setWatches2(conn, req)
	case OpGetEphemerals:
		s.getEphemerals(conn, sess, req)
	case OpGetAllChildrenNum:
		s.getAllChildrenNumber(conn, req)
	case OpMultiRead:
		s.multiRead(conn, req)
	case OpReconfig:
		// PrepRequestProcessor refuses a reconfig before anything else
		// when reconfigEnabled is off, as it is on a standalone server;
		// the refusal is an error transaction with a zxid of its own.
		t := s.begin()
		s.commit(t)
		s.reply(conn, Response{Xid: req.Xid, Zxid: t.zxid, Err: CodeReconfigDisabled})
	case OpDeleteContainer:
		// PrepRequestProcessor reads a deleteContainer's path as the
		// whole request buffer, header bytes and NULs included, which no
		// client request passes (getParentPathAndValidate): an error
		// transaction, BADARGUMENTS.
		t := s.begin()
		s.commit(t)
		s.reply(conn, Response{Xid: req.Xid, Zxid: t.zxid, Err: CodeBadArguments})
	case OpCreateSession:
		// A createSession on an established connection goes down the
		// pipeline as a transaction (Request.isValid knows the opcode):
		// PrepRequestProcessor reads the timeout from the start of the
		// buffer and re-tracks the session, and FinalRequestProcessor
		// fails to finish a session init on a connection that has one:
		// MARSHALLINGERROR, with the transaction's zxid (measured on
		// 3.8.0). The re-tracking uses the request's xid as a timeout
		// until the session's next request; the simulator leaves that
		// window out.
		t := s.begin()
		s.commit(t)
		s.reply(conn, Response{Xid: req.Xid, Zxid: t.zxid, Err: CodeMarshallingError})
	case OpGetACL, OpSetACL, OpAuth, OpSASL, OpWhoAmI:
		panic(fmt.Sprintf("sim: %v reached receiveMore; Receive handles it", req.Op))
	default:
		s.unknownOp(conn, req)
	}
}

// unknownOp answers an opcode the server does not know
// (Request.isValid): ZooKeeperServer.submitRequestNow hands it to
// UnimplementedRequestProcessor, which replies UNIMPLEMENTED with the
// request's unset zxid, -1, and closes the connection; the session lives on.
func (s *Server) unknownOp(conn ConnID, req Request) {
	s.reply(conn, Response{Xid: req.Xid, Zxid: -1, Err: CodeUnimplemented})
	s.dropConn(conn)
	s.send(Output{Conn: conn, Kind: OutClose})
}

func withOp(req Request, op OpCode) Request {
	req.Op = op
	return req
}

// readReply runs a read handler that replies on conn and takes its reply
// back, so that a request built on another (multiRead, getChildren
// without a Stat, getAllChildrenNumber) has its checks in their order
// without a second copy of them. Reads send nothing but their reply.
func (s *Server) readReply(conn ConnID, xid int32, read func()) Response {
	before := len(s.outputs)
	read()
	if len(s.outputs) != before+1 {
		panic(fmt.Sprintf("sim: a read sent %d messages, want its reply only", len(s.outputs)-before))
	}
	o := s.outputs[before]
	if o.Kind != OutReply || o.Conn != conn {
		panic(fmt.Sprintf("sim: a read sent %+v, want its reply", o))
	}
	s.outputs = s.outputs[:before]
	o.Reply.Xid = xid
	return o.Reply
}

// addWatch sets a persistent or persistent-recursive watch on path in
// both tables (DataTree.addWatch). Nothing is checked: not the path, not
// that the node exists, not its ACL (3.8.0's FinalRequestProcessor). The
// reply carries an ErrorResponse with code 0. A mode that is neither is
// refused by WatcherMode.fromZooDef with an exception the server reports
// as MARSHALLINGERROR.
func (s *Server) addWatch(conn ConnID, req Request) {
	var mode watchMode
	switch req.AddWatchMode {
	case AddWatchPersistent:
		mode = watchPersistent
	case AddWatchPersistentRecursive:
		mode = watchPersistentRecursive
	default:
		s.replyCode(conn, req.Xid, s.lastZxid, CodeMarshallingError)
		return
	}
	s.dataWatches.add(req.Path, conn, mode)
	s.childWatches.add(req.Path, conn, mode)
	s.replyCode(conn, req.Xid, s.lastZxid, CodeOK)
}

// checkOrRemoveWatches answers checkWatches and removeWatches
// (DataTree.containsWatcher, removeWatch): NOWATCHER when there is no such
// watch. The server sends no event for a removed watch; the client makes
// its own DataWatchRemoved or ChildWatchRemoved. An unknown type fails
// WatcherType.fromInt: MARSHALLINGERROR.
func (s *Server) checkOrRemoveWatches(conn ConnID, req Request) {
	var tables []*watchTable
	switch req.WatcherType {
	case WatcherChildren:
		tables = []*watchTable{s.childWatches}
	case WatcherData:
		tables = []*watchTable{s.dataWatches}
	case WatcherAny:
		tables = []*watchTable{s.childWatches, s.dataWatches}
	default:
		s.replyCode(conn, req.Xid, s.lastZxid, CodeMarshallingError)
		return
	}
	found := false
	for _, t := range tables {
		if req.Op == OpCheckWatches {
			in, failed := t.contains(req.Path, conn)
			if failed {
				s.replyCode(conn, req.Xid, s.lastZxid, CodeMarshallingError)
				return
			}
			found = found || in
		} else if t.remove(req.Path, conn) {
			found = true
		}
	}
	resp := Response{Xid: req.Xid, Zxid: s.lastZxid}
	if !found {
		resp.Err = CodeNoWatcher
	}
	s.reply(conn, resp)
}

// setWatches2 is setWatches with the persistent and persistent-recursive
// watches, which are re-registered without looking at the tree: nothing
// is fired for what they missed (DataTree.setWatches).
func (s *Server) setWatches2(conn ConnID, req Request) {
	s.setWatches(conn, req)
	for _, path := range req.PersistentWatches {
		s.childWatches.add(path, conn, watchPersistent)
		s.dataWatches.add(path, conn, watchPersistent)
	}
	for _, path := range req.PersistentRecursiveWatches {
		s.childWatches.add(path, conn, watchPersistentRecursive)
		s.dataWatches.add(path, conn, watchPersistentRecursive)
	}
}

// getEphemerals lists the session's ephemeral nodes whose path starts with
// the prefix, as plain strings ("/a" matches "/ab"); a prefix that is
// empty or "/" once trimmed lists them all. The order is that of the clone
// DataTree.getEphemerals makes of the session's set.
func (s *Server) getEphemerals(conn ConnID, sess *serverSession, req Request) {
	all := []string{}
	if sess.ephemerals != nil {
		all = sess.ephemerals.clonedOrder()
	}
	prefix := req.Path
	if trimmed := strings.TrimFunc(prefix, javaTrimmed); trimmed != "" && trimmed != "/" {
		kept := all[:0]
		for _, p := range all {
			if strings.HasPrefix(p, prefix) {
				kept = append(kept, p)
			}
		}
		all = kept
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, Ephemerals: all})
}

// javaTrimmed is what String.trim removes: every char up to U+0020.
func javaTrimmed(r rune) bool { return r <= ' ' }

// getAllChildrenNumber counts the nodes below path, at any depth: for "/"
// every node but the root, /zookeeper and its children included
// (DataTree.getAllChildrenNumber). The node must exist and be readable,
// as for getChildren.
func (s *Server) getAllChildrenNumber(conn ConnID, req Request) {
	resp := s.readReply(conn, req.Xid, func() { r := withOp(withWatch(req, false), OpGetChildren); s.getChildren(conn, &r) })
	if resp.Err != CodeOK {
		s.reply(conn, Response{Xid: req.Xid, Zxid: resp.Zxid, Err: resp.Err})
		return
	}
	count := len(s.nodes) - 1
	if req.Path != "/" {
		count = 0
		prefix := req.Path + "/"
		for path := range s.nodes {
			if strings.HasPrefix(path, prefix) {
				count++
			}
		}
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, TotalNumber: int32(count)})
}

func withWatch(req Request, watch bool) Request {
	req.Watch = watch
	return req
}

// multiRead answers each getData and getChildren of the request on its
// own, as the single request would be answered but without a watch, an
// error becoming that op's error result; it is not a transaction. An op
// of any other type fails the whole request with MARSHALLINGERROR
// (MultiOperationRecord and FinalRequestProcessor's "Invalid type of
// readOp").
func (s *Server) multiRead(conn ConnID, req Request) {
	for _, op := range req.Ops {
		if op.Op != OpGetData && op.Op != OpGetChildrenNoStat {
			s.replyCode(conn, req.Xid, s.lastZxid, CodeMarshallingError)
			return
		}
	}
	results := make([]MultiResult, len(req.Ops))
	for i, op := range req.Ops {
		// MultiOperationRecord rebuilds each op from its path alone
		// (Op.getData, Op.getChildren): the watch flag is dropped, and a
		// multiRead sets no watch (measured on 3.8.0).
		op.Watch = false
		var resp Response
		if op.Op == OpGetData {
			resp = s.readReply(conn, req.Xid, func() { s.getData(conn, &op) })
		} else {
			resp = s.readReply(conn, req.Xid, func() { r := withOp(op, OpGetChildren); s.getChildren(conn, &r) })
		}
		switch {
		case resp.Err != CodeOK:
			results[i] = MultiResult{Err: resp.Err}
		case op.Op == OpGetData:
			results[i] = MultiResult{Op: OpGetData, Stat: resp.Stat, Data: resp.Data}
		default:
			results[i] = MultiResult{Op: OpGetChildrenNoStat, Children: resp.Children}
		}
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, Multi: results})
}

// multiCreateOp gives a create inside a multi the type the server gives
// it. MultiOperationRecord rebuilds each create from its flags
// (Op.create): the opcode sent is dropped, a container flag makes a
// container whatever the opcode (a plain create included), create2 becomes
// create, and createTTL without a TTL flag becomes create (measured on
// 3.8.0). TTL flags are left to validateCreate.
func multiCreateOp(op Request) Request {
	switch op.Op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL:
	default:
		return op
	}
	switch op.Mode {
	case zk.FlagContainer:
		op.Op = OpCreateCont
	case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
	default:
		op.Op = OpCreate
	}
	return op
}

// multiWriteOp reports whether op may be one of a multi's ops. Any other
// fails the whole multi with MARSHALLINGERROR, an error transaction, before
// any op is looked at: MultiOperationRecord refuses an op type it does not
// know (setACL among them) and a read mixed with writes while reading the
// request, and a multi of reads alone fails in PrepRequestProcessor, which
// has no transaction to make of one (measured on 3.8.0).
func multiWriteOp(op OpCode) bool {
	switch op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL, OpDelete, OpSetData, OpCheck:
		return true
	}
	return false
}

// multiCreateUnreadable reports a create of a multi that
// PrepRequestProcessor cannot read: a create, create2 or createContainer
// with a TTL mode is rebuilt as a createTTL (Op.create) that still holds a
// CreateRequest, and pRequest2TxnCreate's cast to CreateTTLRequest throws.
// The whole multi fails with MARSHALLINGERROR, an error transaction with
// no results, unless an earlier op already failed, which stops the
// preparing first (measured on 3.8.0).
func multiCreateUnreadable(op Request) bool {
	isTTL := op.Mode == zk.FlagTTL || op.Mode == zk.FlagPersistentSequentialWithTTL
	return isTTL && (op.Op == OpCreate || op.Op == OpCreate2 || op.Op == OpCreateCont)
}

// multiResultOp is the type of a multi's result as MultiResponse carries
// it: a create's result is a CreateResult with a Stat, typed create2, for
// the creates that make a container or a TTL node (FinalRequestProcessor),
// and a plain CreateResult, typed create, for the others.
func multiResultOp(op OpCode) OpCode {
	switch op {
	case OpCreateCont, OpCreateTTL:
		return OpCreate2
	}
	return op
}

// createOwner checks a create's mode and TTL as
// PrepRequestProcessor.pRequest2TxnCreate does, in its order, and returns
// the ephemeralOwner of the node it makes, which the transaction's type
// decides, not the mode (DataTree.processTxn, measured on 3.8.0):
//
//   - a mode outside CreateMode is BADARGUMENTS (CreateMode.fromFlag);
//   - a TTL mode without zookeeper.extendedTypesEnabled is UNIMPLEMENTED;
//   - the TTL is checked against the mode (EphemeralType.validateTTL): a
//     TTL mode needs 0 < ttl <= 2^40-1, any other mode a negative ttl
//     (every op but createTTL carries -1), else BADARGUMENTS;
//   - createContainer makes a container whatever its mode (the mode still
//     decides the sequence suffix); createTTL a TTL node; create and
//     create2 an ephemeral node for an ephemeral mode and a persistent
//     node for any other, a container mode included.
func (s *Server) createOwner(sess *serverSession, req *Request) (int64, Code) {
	mode := req.Mode
	if mode < zk.FlagPersistent || mode > zk.FlagPersistentSequentialWithTTL {
		return 0, CodeBadArguments
	}
	isTTL := mode == zk.FlagTTL || mode == zk.FlagPersistentSequentialWithTTL
	if isTTL && !s.cfg.ExtendedTypes {
		return 0, CodeUnimplemented
	}
	ttl := int64(-1)
	if req.Op == OpCreateTTL {
		ttl = req.TTLMs
	}
	if isTTL && (ttl <= 0 || ttl > ttlMaxMs) || !isTTL && ttl >= 0 {
		return 0, CodeBadArguments
	}
	switch {
	case req.Op == OpCreateCont:
		return containerOwner, CodeOK
	case req.Op == OpCreateTTL:
		return ttlOwnerMask | ttl, CodeOK
	case mode == zk.FlagEphemeral || mode == zk.FlagEphemeralSequential:
		return sess.id, CodeOK
	}
	return 0, CodeOK
}

// crashesServer reports a request a real 3.8.0 server cannot apply: a
// createTTL with a mode that is not a TTL mode and a negative TTL passes
// every check (validateTTL asks a non-TTL mode for a negative TTL) and
// then fails in DataTree.processTxn (EphemeralType.TTL.toEphemeralOwner),
// which stops the server: measured, the process exits and the client's
// connection closes unanswered. The simulator closes the connection
// unanswered and applies nothing; it does not stop the server.
func crashesServer(req *Request) bool {
	if req.Op != OpCreateTTL { // every request is asked: the op first
		return false
	}
	isTTL := req.Mode == zk.FlagTTL || req.Mode == zk.FlagPersistentSequentialWithTTL
	return !isTTL && req.TTLMs < 0 && req.Mode >= zk.FlagPersistent && req.Mode <= zk.FlagPersistentSequentialWithTTL
}

// readNode is the node a read finds at path. DataTree's node map holds the
// root under "" as well as "/", and the reads look paths up unvalidated:
// exists, getData and getChildren of "" answer with the root (measured on
// 3.8.0), though a watch they set on "" never fires, since no event names
// "".
func (s *Server) readNode(path string) *znode {
	if path == "" {
		return s.nodes["/"]
	}
	return s.lookup(path)
}
