package sim

// SessionInfo is one live session as the four-letter word dump shows it.
type SessionInfo struct {
	ID        int64
	TimeoutMs int64
	// ExpiresMs is the virtual time, a tick boundary, at which the session
	// expires unless the client is heard from before.
	ExpiresMs int64
	// Ephemerals are the paths of its ephemeral nodes, in the order
	// ZooKeeper's DataTree.getEphemerals lists them.
	Ephemerals []string
}

// SessionInfos lists the live sessions in id order (Sessions), with their
// deadlines and ephemerals. It changes nothing.
func (s *Server) SessionInfos() []SessionInfo {
	ids := s.Sessions()
	infos := make([]SessionInfo, 0, len(ids))
	for _, id := range ids {
		sess := s.sessions[id]
		info := SessionInfo{ID: id, TimeoutMs: sess.timeoutMs, ExpiresMs: sess.expiresMs}
		if sess.ephemerals != nil {
			info.Ephemerals = sess.ephemerals.clonedOrder()
		}
		infos = append(infos, info)
	}
	return infos
}
