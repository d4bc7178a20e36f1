package sim

// marshallingError answers a request whose record could not be decoded
// (Request.Malformed). The request processors deserialize the record
// only once they handle the request: PrepRequestProcessor turns a write it
// cannot read into an error transaction, which takes a zxid, and
// FinalRequestProcessor answers a read it cannot read with the last zxid;
// both answer MARSHALLINGERROR and keep the connection (measured on 3.8
// by the wire package's TestJudgedByRealServer: a truncated getData,
// create, setData and multi, and a multi holding a getData).
func (s *Server) marshallingError(conn ConnID, req Request) {
	zxid := s.lastZxid
	if preppedAsTxn(req.Op) {
		t := s.begin()
		s.commit(t)
		zxid = t.zxid
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: zxid, Err: CodeMarshallingError})
}

// preppedAsTxn lists the ops PrepRequestProcessor.pRequest makes a
// transaction of, successful or not.
func preppedAsTxn(op OpCode) bool {
	switch op {
	case OpCreate, OpCreate2, OpCreateTTL, OpCreateCont, OpDeleteContainer, OpDelete, OpSetData,
		OpSetACL, OpCheck, OpMulti, OpReconfig, OpCreateSession, OpCloseSession:
		return true
	}
	return false
}
