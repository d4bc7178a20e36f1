package sim

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// This file is the ensemble's dynamic reconfiguration as ZooKeeper 3.8's
// clients see it (ZooKeeper docs "Dynamic Reconfiguration"; the
// OpCode.reconfig case of PrepRequestProcessor.pRequest2Txn, QuorumMaj,
// QuorumPeer.QuorumServer, Leader.tryToCommit and getDesignatedLeader).
//
// The configuration is a list of voting servers (server.N lines) and a
// version, the zxid of the reconfig that made it (0x100000000, the first
// leader's NEWLEADER zxid, for the initial one); /zookeeper/config holds
// its text on every member. With reconfigEnabled, a reconfig from a
// client allowed to write /zookeeper/config (the super user: the node's
// ACL is world:anyone read) proposes a new configuration, incrementally
// (joining and leaving servers) or whole (newMembers), as a transaction
// that sets /zookeeper/config (its Stat's version becomes -1, as the
// SetDataTxn carries). That transaction, and every one proposed while it
// is outstanding, commits on a quorum of both the old and the new
// configuration; then the new one is the ensemble's: quorums, elections
// and commits count its voters only. A server it removed goes on
// following the leader and serving its clients as a non-voting
// participant (QuorumPeer.updateLearnerType: it stays a PARTICIPANT, not
// in the view). A leader it removed hands leadership to the designated
// leader, a voter of the new configuration that acked it, without an
// election (QuorumPeer.updateServerState on reconfigFlag): every member
// restarts its role, and every client connection closes.
//
// Where the model is simpler than ZooKeeper: the configuration is the
// ensemble's, not each member's (the last committed one; a member that
// has not yet applied the commit already counts by it); servers the
// ensemble does not have (a joiner with an id beyond its members) are
// voters that never connect; and a configuration that gives a member
// another client address does not move its listener (a real member
// rebinds its client port there, QuorumPeer.processReconfig: the
// connections and addresses are the driver's, not the state machine's).

// EnsembleServer is one server.N line of an ensemble's configuration:
// server.ID=Host:QuorumPort:ElectionPort:participant;ClientAddr:ClientPort.
type EnsembleServer struct {
	ID                       int
	Host                     string
	QuorumPort, ElectionPort int
	// ClientAddr and ClientPort are the client address, "" and 0 when the
	// line has none (a static zoo.cfg's server lines, whose member takes
	// clientPort).
	ClientAddr string
	ClientPort int
}

// EnsembleConfig is what the ensemble's zoo.cfg says beyond each
// server's settings.
type EnsembleConfig struct {
	// ReconfigEnabled is reconfigEnabled: without it a reconfig is
	// refused with RECONFIGDISABLED, an error transaction.
	ReconfigEnabled bool
	// StandaloneDisabled is standaloneEnabled=false: a reconfig may then
	// leave a single voter (with it, the default, two are the fewest).
	StandaloneDisabled bool
	// Servers are the members' server.N lines, member i's with ID i; nil
	// gives member i 127.0.0.1, quorum port 2887+i and election port
	// 3887+i (the ports ZooKeeper's documentation uses), and no client
	// part, as a static zoo.cfg's lines have none.
	Servers []EnsembleServer
}

// quorumConfig is a configuration: QuorumMaj over its servers, in the
// order its members map (a java.util.HashMap<Long, QuorumServer>) iterates,
// which is the order of /zookeeper/config's lines.
type quorumConfig struct {
	servers  []EnsembleServer // in iteration order
	capacity int              // the map's table size
	version  int64
	voters   uint32 // the ensemble's members among its servers, bit id-1
	// parsed: QuorumMaj(Properties) made it, so reading its text back
	// gives the same order (a new leader need not).
	parsed bool
}

// newParsedConfig is a configuration QuorumMaj(Properties) makes, from a
// zoo.cfg or a configuration's text (a follower's, a new leader's,
// newMembers): a HashMap of the default capacity, filled in id order
// (the Properties' own order, which only ids that share a bucket, 16
// apart, would show).
func newParsedConfig(servers []EnsembleServer, version int64, members int) *quorumConfig {
	c := &quorumConfig{servers: make([]EnsembleServer, 0, len(servers)), capacity: 16, version: version, parsed: true}
	sorted := slices.Clone(servers)
	slices.SortFunc(sorted, func(a, b EnsembleServer) int { return a.ID - b.ID })
	for _, s := range sorted {
		c.put(s)
	}
	c.finish(members)
	return c
}

// put is HashMap.put of a new key: it goes last in insertion order, and
// the table doubles past three quarters full.
func (c *quorumConfig) put(s EnsembleServer) {
	c.servers = append(c.servers, s)
	if 4*len(c.servers) > 3*c.capacity {
		c.capacity *= 2
	}
}

// finish orders the servers as the map iterates, bucket by bucket
// (Long.hashCode, spread, masked; ids are below 2^16), each bucket's in
// insertion order, and sets the voters.
func (c *quorumConfig) finish(members int) {
	slices.SortStableFunc(c.servers, func(a, b EnsembleServer) int { return a.ID&(c.capacity-1) - b.ID&(c.capacity-1) })
	c.voters = 0
	for _, s := range c.servers {
		if s.ID <= members {
			c.voters |= 1 << (s.ID - 1)
		}
	}
}

// hasQuorum reports whether the members in mask are a majority of the
// configuration's voters (QuorumMaj.containsQuorum).
func (c *quorumConfig) hasQuorum(mask uint32) bool {
	return 2*bits.OnesCount32(mask&c.voters) > len(c.servers)
}

func (c *quorumConfig) votes(id int) bool { return c.voters&(1<<(id-1)) != 0 }

// text is QuorumMaj.toString: each server's line (QuorumServer.toString),
// then the version in hex: the data of /zookeeper/config.
func (c *quorumConfig) text() []byte {
	b := make([]byte, 0, 80*len(c.servers)+24)
	for _, s := range c.servers {
		b = append(b, "server."...)
		b = strconv.AppendInt(b, int64(s.ID), 10)
		b = append(b, '=')
		b = append(b, s.Host...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(s.QuorumPort), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(s.ElectionPort), 10)
		b = append(b, ":participant"...)
		if s.ClientPort != 0 {
			b = append(b, ';')
			b = append(b, s.ClientAddr...)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(s.ClientPort), 10)
		}
		b = append(b, '\n')
	}
	b = append(b, "version="...)
	return strconv.AppendInt(b, c.version, 16)
}

func defaultEnsembleServers(n int) []EnsembleServer {
	servers := make([]EnsembleServer, n)
	for i := range servers {
		servers[i] = EnsembleServer{ID: i + 1, Host: "127.0.0.1", QuorumPort: 2888 + i, ElectionPort: 3888 + i}
	}
	return servers
}

// initialConfigVersion is the initial configuration's version, measured
// on 3.8.0: with reconfigEnabled, the zxid of the first leader's
// NEWLEADER, epoch 1 counter 0 (the version of the dynamic configuration
// file the servers write); without it, 0.
func (e *Ensemble) initialConfigVersion() int64 {
	if e.ensCfg.ReconfigEnabled {
		return 1 << 32
	}
	return 0
}

// errBadServerSpec is a joiner or a newMembers line QuorumServer refuses
// (a ConfigException: BADARGUMENTS).
type errBadServerSpec string

func (e errBadServerSpec) Error() string { return string(e) }

// parseServerSpec reads a server's spec as QuorumServer(sid, spec) does:
// host:quorumPort:electionPort[:role][;[clientAddress:]clientPort]. An
// incremental reconfig's joiner needs the client part ("each server
// should have 3 ports specified"); newMembers and a configuration's text
// need not have it.
func parseServerSpec(id int, spec string, needClient bool) (EnsembleServer, error) {
	s := EnsembleServer{ID: id}
	addr, client, hasClient := strings.Cut(spec, ";")
	if strings.Contains(client, ";") {
		return s, errBadServerSpec(spec + " wrong format")
	}
	parts := strings.Split(addr, ":")
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return s, errBadServerSpec(spec + " does not have the form server_config or server_config;client_config")
	}
	s.Host = parts[0]
	for i, p := range []*int{&s.QuorumPort, &s.ElectionPort} {
		n, err := strconv.Atoi(strings.TrimSpace(parts[i+1]))
		if err != nil || n < 0 || n > 65535 {
			return s, errBadServerSpec(spec + ": bad port")
		}
		*p = n
	}
	if len(parts) == 4 && parts[3] != "participant" {
		// An observer: the simulated ensemble has none.
		return s, errBadServerSpec(spec + ": the simulated ensemble has participants only")
	}
	if !hasClient {
		if needClient {
			return s, errBadServerSpec(spec + ": each server should have 3 ports specified")
		}
		return s, nil
	}
	host, port := "0.0.0.0", client
	if i := strings.LastIndex(client, ":"); i >= 0 {
		host, port = client[:i], client[i+1:]
	}
	n, err := strconv.Atoi(strings.TrimSpace(port))
	if err != nil || n < 0 || n > 65535 {
		return s, errBadServerSpec(spec + ": bad client port")
	}
	s.ClientAddr, s.ClientPort = host, n
	return s, nil
}

// splitList is ZooKeeper's StringUtils.split: the trimmed parts between
// sep, empty ones dropped.
func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// nextConfig computes a reconfig's new server list from the last one, as
// pRequest2Txn does. A ConfigException is BADARGUMENTS; an id that is
// not a number is a NumberFormatException, which pRequest turns into
// MARSHALLINGERROR.
func nextConfig(last *quorumConfig, req Request, version int64, members int) (*quorumConfig, Code) {
	if !req.NewMembersNull {
		// Non-incremental: the lines may be separated by commas or
		// newlines (java.util.Properties), keys server.N.
		var servers []EnsembleServer
		for _, line := range splitList(strings.ReplaceAll(req.NewMembers, ",", "\n"), "\n") {
			key, value, ok := strings.Cut(line, "=")
			key = strings.TrimSpace(key)
			id, isServer := strings.CutPrefix(key, "server.")
			if !ok || !isServer {
				// parseDynamicConfig refuses a key other than server.,
				// group. or weight. (the simulator has no groups or weights).
				return nil, CodeBadArguments
			}
			sid, err := strconv.Atoi(id)
			if err != nil {
				return nil, CodeBadArguments
			}
			s, err := parseServerSpec(sid, strings.TrimSpace(value), false)
			if err != nil {
				return nil, CodeBadArguments
			}
			if slices.ContainsFunc(servers, func(o EnsembleServer) bool { return o.ID == sid }) {
				return nil, CodeBadArguments
			}
			servers = append(servers, s)
		}
		if len(servers) == 0 {
			return nil, CodeBadArguments
		}
		return newParsedConfig(servers, version, members), CodeOK
	}
	// new HashMap<>(lastSeenQV.getAllMembers()): the last configuration's
	// servers in its order, in a table sized for them.
	next := &quorumConfig{servers: slices.Clone(last.servers), capacity: javaCopyCapacity(len(last.servers)), version: version}
	for _, leaving := range splitList(req.LeavingServers, ",") {
		sid, err := strconv.ParseInt(leaving, 10, 64)
		if err != nil {
			return nil, CodeMarshallingError
		}
		next.servers = slices.DeleteFunc(next.servers, func(s EnsembleServer) bool { return int64(s.ID) == sid })
	}
	for _, joiner := range splitList(req.JoiningServers, ",") {
		parts := splitList(joiner, "=")
		if len(parts) != 2 {
			return nil, CodeBadArguments
		}
		sid, err := strconv.ParseInt(parts[0][strings.LastIndex(parts[0], ".")+1:], 10, 64)
		if err != nil || sid < 1 || sid > 255 {
			return nil, CodeMarshallingError
		}
		s, err := parseServerSpec(int(sid), parts[1], true)
		if err != nil {
			return nil, CodeBadArguments
		}
		next.servers = slices.DeleteFunc(next.servers, func(o EnsembleServer) bool { return o.ID == s.ID })
		next.put(s)
	}
	next.finish(members)
	return next, CodeOK
}

// prepReconfig is the leader's PrepRequestProcessor on a reconfig with
// reconfigEnabled, for a live session: the checks in pRequest2Txn's
// order, then the transaction. A refusal is an error transaction.
func (e *Ensemble) prepReconfig(nowMs int64, conn ConnID, session int64, auth []authID, req Request) *TxnRecord {
	p := e.prep
	fail := func(code Code) *TxnRecord {
		t := p.begin()
		p.commit(t)
		return &TxnRecord{Kind: RecError, Zxid: t.zxid, LastZxid: t.zxid, TimeMs: nowMs, Session: session, Conn: conn, Req: req, Auth: auth,
			Resp: Response{Xid: req.Xid, Zxid: t.zxid, Err: code}}
	}
	if e.pending != nil {
		return fail(CodeReconfigInProgress)
	}
	if req.CurConfigID != -1 && req.CurConfigID != e.config.version {
		return fail(CodeBadVersion)
	}
	zxid := p.lastZxid + 1
	next, code := nextConfig(e.config, req, zxid, len(e.members))
	if code != CodeOK {
		return fail(code)
	}
	// "Reconfig failed - new configuration must include at least 2
	// followers" (1 with standaloneEnabled=false).
	fewest := 2
	if e.ensCfg.StandaloneDisabled {
		fewest = 1
	}
	if len(next.servers) < fewest {
		return fail(CodeBadArguments)
	}
	if !next.hasQuorum(e.syncedMask()) {
		return fail(CodeNewConfigNoQuorum)
	}
	if !p.allowedAs(auth, p.nodes["/zookeeper/config"].acl, zk.PermWrite) {
		return fail(CodeNoAuth)
	}
	rec := &TxnRecord{Kind: RecReconfig, Zxid: zxid, LastZxid: zxid, TimeMs: nowMs, Session: session, Conn: conn, Req: req, Auth: auth}
	rec.Req.Data = next.text()
	rec.Resp = p.applyConfig(rec)
	e.pending = next
	e.note("s%d proposes configuration %#x: %s", e.leader, zxid, strings.ReplaceAll(string(rec.Req.Data), "\n", " "))
	return rec
}

// allowedAs reports whether a caller with the identities auth has perm
// on a node with ACL id (ZooKeeperServer.checkACL).
func (s *Server) allowedAs(auth []authID, id aclID, perm int32) bool {
	if s.acls.world[id]&perm != 0 {
		return true
	}
	return checkACL(s.acls.lists[id], perm, auth)
}

// syncedMask is Leader.isQuorumSynced's set: the leader and the members
// following it, in sync, that it reaches.
func (e *Ensemble) syncedMask() uint32 {
	l := e.members[e.leader-1]
	var mask uint32
	for _, m := range e.members {
		if m == l || (m.following == e.leader && e.reachable(m, l)) {
			mask |= 1 << (m.id - 1)
		}
	}
	return mask
}

// applyConfig is a reconfig's SetDataTxn on /zookeeper/config, which
// DataTree.processTxn applies as a setData: the data, mzxid and mtime
// change, the version becomes the transaction's, -1, and data watches
// fire. It returns the answer: the new data and Stat.
func (s *Server) applyConfig(r *TxnRecord) Response {
	t := s.begin()
	n := s.nodes["/zookeeper/config"]
	n.data = slices.Clone(r.Req.Data)
	n.version = -1
	n.mzxid = t.zxid
	n.mtime = s.wallMs(r.TimeMs)
	t.touched = append(t.touched, touchedNode{path: "/zookeeper/config"})
	t.events = append(t.events, pendingEvent{"/zookeeper/config", zk.EventNodeDataChanged, n.acl})
	s.commit(t)
	return Response{Xid: r.Req.Xid, Zxid: t.zxid, Data: slices.Clone(n.data), Stat: n.stat()}
}

// setConfigNode puts a configuration on /zookeeper/config as
// ZKDatabase.initConfigInZKDatabase does when a member starts or syncs:
// a setData with version -1 and the configuration's version as its
// zxid, outside any transaction (no watch fires).
func (s *Server) setConfigNode(data []byte, version int64, nowMs int64) {
	n := s.nodes["/zookeeper/config"]
	n.data = slices.Clone(data)
	n.version = -1
	n.mzxid = version
	n.mtime = s.wallMs(nowMs)
}

// committedConfig is called for each transaction the leader commits: a
// reconfig's configuration becomes the ensemble's. When it removed the
// leader, the leader names the designated leader, commits nothing more
// (Leader.allowedToCommit), and hands over once it has applied the
// reconfig, answering its own connection's (handOff).
func (e *Ensemble) committedConfig(rec *TxnRecord, index int) {
	if rec.Kind != RecReconfig {
		return
	}
	next := e.pending
	if next == nil || next.version != rec.Zxid {
		// Committed by a new leader that found it logged: the
		// configuration is in the record's data.
		next = configFromText(rec.Req.Data, len(e.members))
	}
	e.config, e.pending = next, nil
	e.note("configuration %#x is the ensemble's", rec.Zxid)
	if next.votes(e.leader) {
		return
	}
	e.handOffTo, e.handOffZxid = e.designatedLeader(index), rec.Zxid
	e.note("s%d is not in configuration %#x: s%d is the designated leader", e.leader, rec.Zxid, e.handOffTo)
}

// configFromText is QuorumPeer.configFromString: a configuration read
// back from its text (one text made).
func configFromText(data []byte, members int) *quorumConfig {
	var servers []EnsembleServer
	var version int64
	for _, line := range strings.Split(string(data), "\n") {
		key, value, _ := strings.Cut(line, "=")
		if key == "version" {
			version, _ = strconv.ParseInt(value, 16, 64)
			continue
		}
		id, ok := strings.CutPrefix(key, "server.")
		if !ok {
			continue
		}
		sid, _ := strconv.Atoi(id)
		s, err := parseServerSpec(sid, value, false)
		if err != nil {
			panic(fmt.Sprintf("sim: a configuration's own text does not parse: %v", err))
		}
		servers = append(servers, s)
	}
	return newParsedConfig(servers, version, members)
}

// designatedLeader is Leader.getDesignatedLeader for a leader the
// reconfig at log index removed: among the new configuration's voters
// that acked it (a HashSet of ids, iterated lowest first), the one that
// acked most of the proposals after it.
func (e *Ensemble) designatedLeader(index int) int {
	lowest := func(mask uint32) int { return bits.TrailingZeros32(mask) + 1 }
	candidates := e.acks[index] & e.config.voters &^ (1 << (e.leader - 1))
	if candidates == 0 {
		panic(fmt.Sprintf("sim: the reconfig at entry %d committed with no voter of its configuration acking", index))
	}
	cur := lowest(candidates)
	for i := index + 1; i < len(e.acks); i++ {
		candidates &= e.acks[i]
		if candidates == 0 {
			return cur
		}
		cur = lowest(candidates)
		if bits.OnesCount32(candidates) == 1 {
			return cur
		}
	}
	return cur
}

// newMemberServer is a member's fresh state: ZooKeeper's initial tree,
// with the configuration the member starts with on /zookeeper/config
// (ZKDatabase.initConfigInZKDatabase: the data QuorumMaj.toString, the
// version -1, the configuration's version as mzxid, measured on 3.8.0).
// A restarted member then replays its log, reconfigs included. The mtime
// is the member's start on a real server (each member's differs); here
// it is the ensemble's start for every member, so that the members'
// trees stay comparable.
func (e *Ensemble) newMemberServer() *Server {
	s := NewServer(e.cfg)
	s.setConfigNode(e.initialConfigText, e.initialConfigVersion(), 0)
	return s
}

// isInitialConfigNode reports /zookeeper/config holding the initial
// configuration, whose mzxid, the first leader's NEWLEADER zxid, a member
// has before it applies any transaction.
func isInitialConfigNode(path string, n *znode) bool {
	return path == "/zookeeper/config" && n.mzxid == 1<<32
}

// liveSession reports whether the session is tracked and not closing
// (SessionTrackerImpl.checkSession passes).
func (s *Server) liveSession(id int64) bool {
	sess := s.sessions[id]
	return sess != nil && !sess.closing
}

// handOff ends the leader's epoch after a reconfig removed it, and the
// designated leader leads the next without an election
// (Leader.tryToCommit's COMMITANDACTIVATE names it; each member's
// QuorumPeer.processReconfig sees the leader change and restarts its
// role, closing its clients' connections; updateServerState makes the
// designated one LEADING and the others follow it). The old leader
// follows as a non-voting participant.
func (e *Ensemble) handOff(nowMs int64, designated int) {
	e.loseLeader(fmt.Sprintf("a reconfig removed it; s%d is the designated leader", designated), nil)
	if d := e.members[designated-1]; d.up && !d.cut {
		e.lead(nowMs, d)
	}
	// Otherwise the designated leader is gone: an election follows.
}

// handOffLogged is a new leader l's way out when a reconfig of the last
// epoch it logged, and has just committed, removed it: it hands over to
// the lowest voter of the new configuration that follows it, as a
// removed leader does, and steps down if no voter follows it. (A model
// choice: the ZooKeeper path, a leader finding itself out of the view it
// activates, was not measured.)
func (e *Ensemble) handOffLogged(nowMs int64, l *member) {
	for _, m := range e.members {
		if m != l && m.following == l.id && e.config.votes(m.id) {
			e.note("s%d is not in configuration %#x it committed: s%d is the designated leader", l.id, e.config.version, m.id)
			e.handOff(nowMs, m.id)
			e.checkQuorum()
			return
		}
	}
	e.loseLeader(fmt.Sprintf("it is not in configuration %#x and no voter of it follows", e.config.version), nil)
}
