package wire

import (
	"math"
	"slices"
	"time"

	"github.com/zklab/zklab/sim"
)

// ConnInfo is what the four-letter words cons and dump show of one
// connection (ServerCnxn.dumpConnectionInfo).
type ConnInfo struct {
	ID     sim.ConnID
	Remote string // the peer's address, e.g. "127.0.0.1:53690"
	// Session is the connection's session id, 0 before its handshake.
	Session   int64
	TimeoutMs int32 // the negotiated session timeout
	Opened    time.Time
	// Queued is the frames waiting to be written; Received and Sent count
	// packets, the handshake and its answer included.
	Queued   int
	Received int64
	Sent     int64
	// Outstanding is the requests received and not yet answered.
	Outstanding int
	LastOp      sim.OpCode // the last request's type (0 before any)
	LastCxid    int32      // the last request's xid
	LastZxid    int64      // the zxid of the last reply
	LastReply   time.Time  // when the last reply was queued
	// Latencies of the replies, in milliseconds, from a request's arrival
	// to its reply's queueing; all 0 before any reply.
	LastLatencyMs, MinLatencyMs, AvgLatencyMs, MaxLatencyMs int64
}

// Stats is what the four-letter words srvr, stat and mntr show of the
// server as a whole.
type Stats struct {
	// Mode is the server's role as srvr's Mode line names it:
	// "standalone", "leader" or "follower"; "" while it does not serve
	// (an ensemble member without a leader).
	Mode        string
	Connections int
	// Outstanding is the requests received and not yet answered.
	Outstanding int
	Received    int64 // packets received
	Sent        int64 // packets sent
	// Latencies of all replies, in milliseconds, since the server started
	// (or ResetStats); all 0 before any reply.
	MinLatencyMs, AvgLatencyMs, MaxLatencyMs int64
	Zxid                                     int64 // the last applied transaction
	NodeCount                                int   // znodes, the root and /zookeeper included
	Sessions                                 int   // live sessions
	// Watches counts the registered watches (sim.Server.Watches):
	// WatchPaths the distinct paths, WatchConns the connections with one.
	Watches, WatchPaths, WatchConns int
	// Ephemerals counts the live sessions' ephemeral nodes.
	Ephemerals int
	// ApproximateDataSize is the znodes' paths and data, in bytes.
	ApproximateDataSize int64
	// Started is when the server was made (New): uptime counts from it.
	Started time.Time
}

type counters struct {
	received, sent                      int64
	latencyMinMs, latencyMaxMs, totalMs int64
	replies                             int64
}

func (c *counters) reply(latencyMs int64) {
	c.replies++
	c.totalMs += latencyMs
	c.latencyMinMs = min(c.latencyMinMs, latencyMs)
	c.latencyMaxMs = max(c.latencyMaxMs, latencyMs)
}

func (c *counters) latencies() (minMs, avgMs, maxMs int64) {
	if c.replies == 0 {
		return 0, 0, 0
	}
	return c.latencyMinMs, c.totalMs / c.replies, c.latencyMaxMs
}

type connCounters struct {
	counters
	lastOp        sim.OpCode
	lastCxid      int32
	lastZxid      int64
	lastReply     time.Time
	lastLatencyMs int64
}

func (c *connCounters) request(req sim.Request, at time.Time) {
	c.received++
	c.lastOp = req.Op
	c.lastCxid = req.Xid
}

func (c *connCounters) reply(latencyMs, zxid int64, at time.Time) {
	c.counters.reply(latencyMs)
	c.lastLatencyMs = latencyMs
	c.lastZxid = zxid
	c.lastReply = at
}

// info fills in what the counters know of a connection described by
// the rest of info (a served connection's or an ensemble member's).
func (c *connCounters) info(info ConnInfo) ConnInfo {
	info.MinLatencyMs, info.AvgLatencyMs, info.MaxLatencyMs = c.latencies()
	info.Received, info.Sent = c.received, c.sent
	info.LastOp, info.LastCxid, info.LastZxid, info.LastReply = c.lastOp, c.lastCxid, c.lastZxid, c.lastReply
	info.LastLatencyMs = c.lastLatencyMs
	return info
}

func (c *conn) infoLocked() ConnInfo {
	return c.stats.info(ConnInfo{ID: c.id, Remote: c.remote, Session: c.session, TimeoutMs: c.timeoutMs, Opened: c.opened,
		Queued: c.queued, Outstanding: len(c.pending)})
}

// Conns returns the open connections, in the order they were opened.
func (s *Server) Conns() []ConnInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	infos := make([]ConnInfo, 0, len(s.conns))
	for _, c := range s.conns {
		infos = append(infos, c.infoLocked())
	}
	slices.SortFunc(infos, func(a, b ConnInfo) int { return int(a.ID - b.ID) })
	return infos
}

// Stats returns the server's counters and the simulated server's sizes.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{
		Mode: "standalone", Connections: len(s.conns), Received: s.stats.received, Sent: s.stats.sent,
		Zxid: s.sim.LastZxid(), NodeCount: s.sim.NodeCount(), Sessions: len(s.sim.Sessions()),
		ApproximateDataSize: s.sim.ApproximateDataSize(), Started: s.start,
	}
	for _, info := range s.sim.SessionInfos() {
		st.Ephemerals += len(info.Ephemerals)
	}
	st.MinLatencyMs, st.AvgLatencyMs, st.MaxLatencyMs = s.stats.latencies()
	for _, c := range s.conns {
		st.Outstanding += len(c.pending)
	}
	paths := make(map[string]bool)
	conns := make(map[sim.ConnID]bool)
	for _, w := range s.sim.Watches() {
		st.Watches++
		paths[w.Path] = true
		conns[w.Conn] = true
	}
	st.WatchPaths, st.WatchConns = len(paths), len(conns)
	return st
}

// ResetStats zeroes the latency and packet counters of the server and of
// every connection (the four-letter words srst and crst).
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = counters{latencyMinMs: math.MaxInt64}
	for _, c := range s.conns {
		c.stats = connCounters{counters: counters{latencyMinMs: math.MaxInt64}}
	}
}
