package sim

// sasl answers a SASL token (op 102) on a server with no SASL configured,
// as ZooKeeper 3.8 does: ZooKeeperServer.processPacket hands it to
// processSasl ahead of the request pipeline, whose connection has no
// SaslServer (a NullPointerException it logs), so the reply is header
// {xid, zxid 0, OK} and a SetSASLResponse with a null token; the session is
// not checked and the connection stays (measured on 3.8 by the wire
// package's TestJudgedByRealServer, "sasl"). The token, if any, is in
// req.Data.
func (s *Server) sasl(conn ConnID, req Request) {
	s.reply(conn, Response{Xid: req.Xid, Zxid: 0})
}
