package sim

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"net/netip"
	"slices"
)

// Ensemble is a ZooKeeper ensemble of a leader and followers as a pure
// state machine: no goroutines, no clock, no random numbers; every method
// takes the virtual time. ZooKeeper's semantics stay in Server: each member
// holds a Server with the state it has applied, which serves its clients'
// reads and fires its own watches; the leader holds one more, its prep
// state (PrepRequestProcessor's outstandingChanges), where each write is
// validated and applied when it is proposed, and whose session tracker is
// the only one that expires sessions.
//
// The protocol follows ZooKeeper Internals ("Zab", "Leader Activation")
// and the Programmer's Guide's "Consistency Guarantees":
//   - a write goes to the leader (FollowerRequestProcessor forwards it),
//     becomes a transaction with zxid epoch<<32|counter, is proposed to
//     every follower, commits on a quorum of acks (the leader counts
//     itself), and every member applies committed transactions in zxid
//     order at its own pace: reads are served by the connected member and
//     may be stale;
//   - each connection's requests are answered in order: a read waits
//     behind the connection's own pending write (CommitProcessor), so a
//     session sees its own writes;
//   - sync makes the member catch up with what its leader had proposed
//     when it handled the sync (Leader.processSync answers once those
//     commit), not a quorum read;
//   - a member behind the client's last seen zxid refuses it (Server.Connect);
//     a session reattached on another member is revalidated by the leader
//     (Learner.validateSession), which records the new owner: a write on
//     the old connection, or any request if it is on the leader, gets no
//     answer and the connection is closed, while an old follower still
//     answers reads and syncs (SessionTrackerImpl.checkSession's
//     SessionMovedException, measured in
//     recipes/zkconn/zktest/ensemble_facts_test.go and sim/difftest's
//     SessionMoved cases);
//   - on leader failover the member with the highest logged zxid among a
//     quorum leads a new epoch, commits every proposal it has, and the
//     others discard the proposals it lacks; every session is re-tracked
//     with a full timeout (SessionTrackerImpl's constructor);
//   - a member without a leader closes its client connections and refuses
//     new ones; with no quorum there is no leader, so no writes and no
//     expiries.
//
// Members talk over one FIFO link per ordered pair; the world delivers
// each message, and each member's application of its next committed
// transaction, as a step of its own, so a strategy explores lag and
// interleavings. Time passes only through the world (election timers).
//
// Where the model is simpler than ZooKeeper, on purpose:
//   - a follower's session touches reach the leader's tracker at once
//     while it can reach the leader, not in its next ping;
//   - a leader cut off from its quorum steps down, and its followers notice,
//     at once; the time ZooKeeper takes to notice (syncLimit ticks) is part
//     of the election's 470-820 ms;
//   - a connection has one request at the leader at a time: the next waits
//     on the member, which orders it as CommitProcessor would but does not
//     pipeline writes;
//   - sync is answered once the member has applied what the leader had
//     proposed when it handled the sync (Leader.processSync waits for
//     those proposals to commit);
//   - no read-only mode, no observers, no local sessions; dynamic
//     reconfiguration (ensemble_reconfig.go) of participants only.
//
// The ensemble asserts its invariants as it goes and panics on a
// violation, a simulator bug: a committed transaction is never lost (each
// member's applied history is a prefix of the committed log), no two
// leaders share an epoch, and a member's applied zxid only grows.
type Ensemble struct {
	cfg     ServerConfig
	members []*member
	leader  int // 1-based; 0 while there is none
	epoch   int64
	// epochLeaders[e] is the server that led epoch e (0 for none).
	epochLeaders []int
	prep         *Server
	// acks[i] has bit m set when member m has logged the leader's log
	// entry i.
	acks      []uint32
	committed []*TxnRecord // every transaction ever committed, in order
	owner     map[int64]int
	// links[linkIndex(from, to)] is the link from member index from to
	// member index to (0-based): one array, indexed as busy's bits are,
	// rather than a slice of slices to look into twice for every message.
	links [maxLinkEnds * maxLinkEnds]fifo[peerMsg]
	most  *member // the member MostApplied names
	// busy has bit linkBit(from, to) set while that link holds a
	// message: Steps, which runs before every step of the world, visits
	// only those links rather than every pair (looking at each pair was
	// some 3% of an exploration's instructions on three servers).
	busy uint64
	// open has bit linkBit(from, to) set while that link could deliver
	// (deliverable), and canApply bit i while member i+1 could apply
	// (canApplyNow): Steps asks these rather than every member, before
	// every step of the world (a look at each member and busy link was
	// some 3% of an exploration's instructions on three servers). open
	// changes with a member's up, cut and lagging (noteReach); canApply
	// with those and its applied and commitIdx (noteCanApply).
	// checkStepMasks holds both to the members.
	open     uint64
	canApply uint32
	outputs  []Output
	notes    []string
	// conns holds the member each client connection is on and what
	// that member keeps of it.
	conns connTable

	// ensCfg is the ensemble's configuration as its zoo.cfg gave it;
	// config is the current quorum configuration, pending the one an
	// outstanding reconfig proposed (ensemble_reconfig.go).
	ensCfg            EnsembleConfig
	config, pending   *quorumConfig
	initialConfigText []byte // what /zookeeper/config holds at a member's start
	// needs[i] are the configurations besides the current one whose
	// quorums the leader's log entry i must have to commit: one proposed
	// while a reconfig is outstanding needs the old and the new. It is
	// as long as the log only from a reconfig's proposal on.
	needs [][2]*quorumConfig
	// handOffTo is the designated leader once a reconfig that removed
	// the leader committed: the leader commits nothing more, and hands
	// over when it has applied the reconfig, handOffZxid.
	handOffTo   int
	handOffZxid int64
	// freeRequests are forwarded requests the leader is done with, for
	// drain to forward the next ones in (forwardedRequest): a Request is
	// some 360 bytes, and copying each forwarded one to a new place on
	// the heap was a twelfth of what an exploration allocated on three
	// servers.
	freeRequests []*Request
	// recordSlab holds the slots the leader's next records come from
	// (takeRecordSlot).
	recordSlab []recordSlot
}

type member struct {
	id        int
	srv       *Server      // what it has applied, which it serves reads from
	log       []*TxnRecord // what it has logged
	commitIdx int          // how many of its log entries it knows committed
	applied   int          // how many it has applied
	up        bool
	cut       bool     // partitioned from the other servers
	lagging   bool     // receives nothing from its leader and applies nothing
	following int      // the leader it is in sync with, 0 for none
	waiters   []ConnID // connections whose sync or connect waits to catch up, in arrival order
}

// memberConn is what a member keeps of a client connection beyond what
// its Server does: the requests waiting behind one forwarded to the
// leader (CommitProcessor's per-session queue), and a connect or a sync
// waiting for the member to catch up.
type memberConn struct {
	outstanding bool // a forwarded request awaits its transaction or answer
	queue       fifo[Request]
	waitZxid    int64 // a sync or a revalidated connect is answered at this applied zxid
	sync        *Request
	connect     *ConnectRequest
	connectOK   bool
}

// connTable maps a client connection's id to the member it is on and
// what that member keeps of it. Connection ids are handed out one after
// another from 1 (World.connSeq, the wire server's journal), so the
// table is a slice indexed by id, and a map only for ids past
// maxDenseConnID or below 1, which keeps a long-lived server's slice
// small. The ensemble looked a connection up in two maps several times
// for every request and every message about one: some 1% of an
// exploration's instructions on three servers.
type connTable struct {
	dense  []connEntry // by id
	sparse map[ConnID]connEntry
}

// connEntry is what connTable holds of a connection.
type connEntry struct {
	member int         // 1-based; 0 for a connection on no member
	mc     *memberConn // nil once the member keeps nothing of it
}

// maxDenseConnID bounds the ids connTable keeps in its slice.
const maxDenseConnID = 1 << 12

func (t *connTable) get(conn ConnID) connEntry {
	if uint64(conn) < uint64(len(t.dense)) {
		return t.dense[conn]
	}
	if conn > 0 && conn < maxDenseConnID {
		return connEntry{}
	}
	return t.sparse[conn]
}

func (t *connTable) set(conn ConnID, c connEntry) {
	if conn > 0 && conn < maxDenseConnID {
		if n := int(conn) + 1; n > len(t.dense) {
			t.dense = slices.Grow(t.dense, n-len(t.dense))[:n]
		}
		t.dense[conn] = c
		return
	}
	if t.sparse == nil {
		t.sparse = make(map[ConnID]connEntry)
	}
	t.sparse[conn] = c
}

// remove forgets the connection.
func (t *connTable) remove(conn ConnID) {
	if conn > 0 && conn < maxDenseConnID {
		if int(conn) < len(t.dense) {
			t.dense[conn] = connEntry{}
		}
		return
	}
	delete(t.sparse, conn)
}

// forget drops what the connection's member keeps of it; the connection
// stays on the member.
func (t *connTable) forget(conn ConnID) {
	c := t.get(conn)
	if c.member != 0 {
		c.mc = nil
		t.set(conn, c)
	}
}

// forgetAllOn drops what member i keeps of every connection on it.
func (t *connTable) forgetAllOn(i int) {
	for j := range t.dense {
		if t.dense[j].member == i {
			t.dense[j].mc = nil
		}
	}
	for conn, c := range t.sparse {
		if c.member == i {
			c.mc = nil
			t.sparse[conn] = c
		}
	}
}

type peerKind uint8

const (
	msgForward     peerKind = iota + 1 // follower -> leader: a client's request
	msgConnect                         // follower -> leader: a new session for a connection
	msgRevalidate                      // follower -> leader: a session reattaches here
	msgProposal                        // leader -> follower: a transaction to log
	msgAck                             // follower -> leader: logged
	msgCommit                          // leader -> follower: committed
	msgAnswer                          // leader -> follower: the answer to a request that made no transaction
	msgSynced                          // leader -> follower: a sync's target zxid
	msgMoved                           // leader -> follower: the connection's session moved away
	msgRevalidated                     // leader -> follower: a reattach's verdict
)

// peerMsg is one message between members. What only a few kinds carry
// (a request, a connect, an answer) is held by pointer, so that the
// proposals, acks and commits that make most of the traffic are small: a
// message is copied onto its link and off it, and with those held by
// value every message was 744 bytes (copying and zeroing them was some 3%
// of an exploration's instructions on three servers). A message is never
// changed once sent, so a pointer may be passed on in the next message.
type peerMsg struct {
	kind    peerKind
	ok      bool
	conn    ConnID
	session int64
	zxid    int64
	rec     *TxnRecord
	req     *Request        // msgForward, msgSynced
	connect *ConnectRequest // msgConnect, msgRevalidate
	resp    *Response       // msgAnswer
	auth    []authID        // msgForward
}

// NewEnsemble returns an ensemble of n servers (3 or 5) with ZooKeeper's
// initial tree. The highest-numbered server leads epoch 1, as
// FastLeaderElection picks the highest server id among equal zxids.
func NewEnsemble(cfg ServerConfig, n int) *Ensemble {
	return NewEnsembleWith(cfg, n, EnsembleConfig{})
}

// NewEnsembleWith is NewEnsemble with the ensemble's configuration: its
// server.N lines (ec.Servers, one per member, ids 1..n) and whether
// reconfig is enabled.
func NewEnsembleWith(cfg ServerConfig, n int, ec EnsembleConfig) *Ensemble {
	if n != 3 && n != 5 || n > maxLinkEnds {
		panic(fmt.Sprintf("sim: an ensemble of %d servers", n))
	}
	if ec.Servers == nil {
		ec.Servers = defaultEnsembleServers(n)
	}
	if len(ec.Servers) != n {
		panic(fmt.Sprintf("sim: an ensemble of %d servers with %d server lines", n, len(ec.Servers)))
	}
	for i, s := range slices.SortedFunc(slices.Values(ec.Servers), func(a, b EnsembleServer) int { return a.ID - b.ID }) {
		if s.ID != i+1 {
			panic(fmt.Sprintf("sim: an ensemble of %d servers with a server.%d line", n, s.ID))
		}
	}
	e := &Ensemble{cfg: cfg.withDefaults(), owner: make(map[int64]int), ensCfg: ec}
	e.config = newParsedConfig(ec.Servers, e.initialConfigVersion(), n)
	e.initialConfigText = e.config.text()
	for i := range n {
		e.members = append(e.members, &member{id: i + 1, srv: e.newMemberServer(), up: true})
	}
	e.most = e.members[0]
	e.giveLinksRoom(n)
	e.noteReach()
	e.Elect(0)
	return e
}

// linkRoom is the room for messages each link between two members starts
// with.
const linkRoom = 4

// giveLinksRoom gives each link between the n members room for linkRoom
// messages, in one allocation for them all: grown from nothing by push,
// each link took three allocations to hold four messages, and this saves
// some eleven allocations a run on three servers. A link that needs more
// grows on its own, out of the shared room (its capacity ends at its
// share).
func (e *Ensemble) giveLinksRoom(n int) {
	room := make([]peerMsg, n*(n-1)*linkRoom)
	for from := range n {
		for to := range n {
			if from != to {
				e.links[linkIndex(from, to)].items = room[:0:linkRoom]
				room = room[linkRoom:]
			}
		}
	}
}

// Servers is the number of members.
func (e *Ensemble) Servers() int { return len(e.members) }

// Leader is the number of the leading member, 0 while there is none.
func (e *Ensemble) Leader() int { return e.leader }

// Epoch is the current (or last) leader's epoch.
func (e *Ensemble) Epoch() int64 { return e.epoch }

// Member is member i's applied state (1 for s1).
func (e *Ensemble) Member(i int) *Server { return e.members[i-1].srv }

// Up reports whether member i's process runs.
func (e *Ensemble) Up(i int) bool { return e.members[i-1].up }

// Serving reports whether member i answers clients: it runs and follows
// (or is) a leader it reaches. A driver reports it as the member's mode.
func (e *Ensemble) Serving(i int) bool { return e.serving(e.members[i-1]) }

// Committed is the number of transactions committed so far.
func (e *Ensemble) Committed() int { return len(e.committed) }

// View is the replica that stands for ZooKeeper's committed view: the
// leader's applied state, or, without a leader, the state of the member
// that has applied the most.
func (e *Ensemble) View() *Server {
	if e.leader != 0 {
		return e.members[e.leader-1].srv
	}
	best := e.members[0]
	for _, m := range e.members[1:] {
		if m.srv.lastZxid > best.srv.lastZxid {
			best = m
		}
	}
	return best.srv
}

// MostApplied is the member that has applied the most, the
// lowest-numbered among equals. A checker that follows the committed view
// asks after every event of a run: the ensemble keeps the answer as its
// members apply (noteApplied).
func (e *Ensemble) MostApplied() *Server { return e.most.srv }

// mostApplied finds MostApplied's member by looking at every member.
func (e *Ensemble) mostApplied() *member {
	best := e.members[0]
	for _, m := range e.members[1:] {
		if m.applied > best.applied {
			best = m
		}
	}
	return best
}

// noteApplied keeps MostApplied's member after m applied more: members
// apply prefixes of one committed log, so the most applied is the
// furthest along it.
func (e *Ensemble) noteApplied(m *member) {
	if m.applied > e.most.applied || m.applied == e.most.applied && m.id < e.most.id {
		e.most = m
	}
}

// TxnSession is the session of the committed transaction that took zxid
// (for a client's write, the session whose request it was; 0 for a
// container sweep), and whether a transaction committed with it.
func (e *Ensemble) TxnSession(zxid int64) (int64, bool) {
	i, ok := slices.BinarySearchFunc(e.committed, zxid, func(r *TxnRecord, z int64) int {
		switch {
		case r.LastZxid < z:
			return -1
		case r.Zxid > z:
			return 1
		}
		return 0
	})
	if !ok {
		return 0, false
	}
	return e.committed[i].Session, true
}

// quorum is a majority of the members (the world's lose-quorum fault
// takes that many down).
func (e *Ensemble) quorum() int { return len(e.members)/2 + 1 }

// Outputs returns what the members sent their clients since the last call,
// in order, and forgets it. The slice is valid until the next call.
func (e *Ensemble) Outputs() []Output {
	e.collect()
	out := e.outputs
	e.outputs = e.outputs[:0]
	return out
}

// soleOutputs returns the one member whose outputs are all there is to
// take (Outputs would return exactly its own), if one is; several reports
// that there is more than one member's to take. With neither, there is
// nothing.
func (e *Ensemble) soleOutputs() (sole *Server, several bool) {
	if len(e.outputs) > 0 {
		return nil, true
	}
	for _, m := range e.members {
		if len(m.srv.outputs) > 0 {
			if sole != nil {
				return nil, true
			}
			sole = m.srv
		}
	}
	return sole, false
}

func (e *Ensemble) collect() {
	for _, m := range e.members {
		// Most steps leave every member's outputs empty, and appending
		// nothing still cost a call.
		if len(m.srv.outputs) > 0 {
			e.outputs = append(e.outputs, m.srv.Outputs()...)
		}
	}
}

// Notes returns what the ensemble did that a trace should say (elections,
// crashes, discarded proposals), and forgets it.
func (e *Ensemble) Notes() []string {
	n := e.notes
	e.notes = nil
	return n
}

func (e *Ensemble) note(format string, args ...any) {
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

// --- connectivity ---

func (e *Ensemble) reachable(a, b *member) bool {
	return a == b || (a.up && b.up && !a.cut && !b.cut)
}

// serving reports whether member m answers clients: it is up and in sync
// with a leader it can reach (ZooKeeper runs a learner's
// ZooKeeperServer only while it follows a leader).
func (e *Ensemble) serving(m *member) bool {
	if !m.up || e.leader == 0 {
		return false
	}
	l := e.members[e.leader-1]
	return m == l || (m.following == e.leader && e.reachable(m, l))
}

// --- client connections ---

// Open accepts a client connection on member i (1-based) and reports
// whether it did: a member that is down or has no leader refuses it.
func (e *Ensemble) Open(i int, conn ConnID, addr netip.Addr) bool {
	m := e.members[i-1]
	if !e.serving(m) {
		return false
	}
	if c := e.conns.get(conn); c.mc != nil {
		panic(fmt.Sprintf("sim: connection %d opened on s%d, open on s%d already", conn, i, c.member))
	}
	m.srv.OpenFrom(conn, addr)
	e.conns.set(conn, connEntry{member: i, mc: &memberConn{}})
	return true
}

// ServerOf is the member a connection is open on, 0 if none.
func (e *Ensemble) ServerOf(conn ConnID) int { return e.conns.get(conn).member }

// HasConn reports whether the connection is open on its member.
func (e *Ensemble) HasConn(conn ConnID) bool {
	i := e.conns.get(conn).member
	return i != 0 && e.members[i-1].srv.HasConn(conn)
}

// memberConn is what member m keeps of a connection, nil if it keeps
// nothing.
func (e *Ensemble) memberConn(m *member, conn ConnID) *memberConn {
	if c := e.conns.get(conn); c.member == m.id {
		return c.mc
	}
	return nil
}

// Disconnect tells the connection's member it is gone.
func (e *Ensemble) Disconnect(conn ConnID) {
	i := e.conns.get(conn).member
	if i == 0 {
		return
	}
	m := e.members[i-1]
	m.srv.Disconnect(conn)
	e.conns.remove(conn)
}

// closeConn closes a connection from the member's side.
func (e *Ensemble) closeConn(m *member, conn ConnID) {
	if !m.srv.HasConn(conn) {
		return
	}
	m.srv.dropConn(conn)
	m.srv.send(Output{Conn: conn, Kind: OutClose})
	e.conns.remove(conn)
}

func (e *Ensemble) closeAllConns(m *member, why string) {
	conns := slices.Sorted(maps.Keys(m.srv.conns))
	if len(conns) > 0 {
		e.note("s%d closes %d client connections: %s", m.id, len(conns), why)
	}
	for _, c := range conns {
		e.closeConn(m, c)
	}
}

// Connect handles a ConnectRequest: a new session is a transaction the
// leader makes; a reattached session is revalidated by the leader first.
func (e *Ensemble) Connect(nowMs int64, conn ConnID, req ConnectRequest) {
	c := e.conns.get(conn)
	m := e.members[c.member-1]
	if !e.serving(m) {
		e.closeConn(m, conn)
		return
	}
	if req.LastZxidSeen > m.srv.lastZxid {
		m.srv.Connect(nowMs, conn, req) // refuses: the client tries another server
		return
	}
	mc := c.mc
	mc.outstanding = true
	if req.SessionID == 0 {
		e.toLeader(nowMs, m, peerMsg{kind: msgConnect, conn: conn, connect: &req})
		return
	}
	mc.connect = &req
	e.toLeader(nowMs, m, peerMsg{kind: msgRevalidate, conn: conn, connect: &req})
}

// Receive handles a request on a connection: what changes state (and
// sync) goes to the leader; the rest the member answers from what it has
// applied, in the connection's order.
func (e *Ensemble) Receive(nowMs int64, conn ConnID, req Request) {
	e.receive(nowMs, conn, &req)
}

// receive is Receive with the request by pointer, as Server.receive is:
// a Request is some 360 bytes, and it was copied at each call on its way
// to the member that answers it. It keeps no pointer to req.
func (e *Ensemble) receive(nowMs int64, conn ConnID, req *Request) {
	c := e.conns.get(conn)
	m, mc := e.members[c.member-1], c.mc
	id, open := m.srv.conns[conn]
	if id != 0 && e.leader != 0 && e.reachable(m, e.members[e.leader-1]) {
		// Followers report their sessions' activity to the leader in
		// their pings (LearnerSessionTracker.touchSession); the model
		// touches the leader's tracker at once.
		e.prep.TouchSession(nowMs, id)
	}
	if mc == nil {
		e.answerOn(nowMs, m, conn, id, open, req)
		return
	}
	if !mc.outstanding && mc.queue.len() == 0 {
		if !e.forwards(req) {
			e.answerOn(nowMs, m, conn, id, open, req)
			return
		}
		if open {
			// What drain would do with it as the queue's one request,
			// without the queue: most forwarded requests find nothing
			// ahead of them, and each was copied into the queue (some
			// 360 bytes) to be copied out again at once.
			e.forward(nowMs, m, mc, conn, id, req)
			return
		}
	}
	*mc.queue.pushSlot() = *req // one copy of the request, not two
	e.drain(nowMs, m, conn)
}

// forwards reports whether a member hands req to the leader; a request
// the connection layer refuses (too long, or one a 3.8 server dies of)
// the member handles itself.
func (e *Ensemble) forwards(req *Request) bool {
	return forwardedToLeader(req.Op) && packetLen(req) <= e.cfg.MaxPacketBytes && !crashesServer(req) && req.Op != OpAuth && req.Op != OpSASL
}

// answer has the member answer a request itself, from what it has
// applied. On the leader every request goes through
// PrepRequestProcessor, which checks the session's owner for reads and
// pings too (SessionTrackerImpl.checkSession, setting it if there is
// none): a session that moved to a follower gets SessionMovedException,
// on which FinalRequestProcessor closes the connection unanswered.
// A follower answers reads without asking the leader, whoever owns the
// session (measured: sim/difftest's SessionMovedThenReadOnTheOldFollower).
// Auth packets are handled before a request is made (processPacket).
func (e *Ensemble) answer(nowMs int64, m *member, conn ConnID, req *Request) {
	id, open := m.srv.conns[conn]
	e.answerOn(nowMs, m, conn, id, open, req)
}

// answerOn is answer for a caller that has looked the connection up in
// its member's table already (id, open := m.srv.conns[conn]), as receive
// has: it hands the member's Server what it found (Server.receiveOn),
// rather than have answer and the Server look again, two map look-ups a
// read.
func (e *Ensemble) answerOn(nowMs int64, m *member, conn ConnID, id int64, open bool, req *Request) {
	if id != 0 && m.id == e.leader && req.Op != OpAuth && req.Op != OpSASL {
		o, ok := e.owner[id]
		if ok && o != m.id {
			e.note("s%d closes conn%d: its session moved to another server", m.id, conn)
			e.closeConn(m, conn)
			return
		}
		if !ok {
			e.owner[id] = m.id
		}
	}
	if !open {
		m.srv.receive(nowMs, conn, req) // which panics: a request on a closed connection
		return
	}
	m.srv.receiveOn(nowMs, conn, id, req, 0)
}

// drain answers a connection's queued requests until one must wait for the
// leader.
func (e *Ensemble) drain(nowMs int64, m *member, conn ConnID) {
	for {
		mc := e.memberConn(m, conn)
		if mc == nil || !m.srv.HasConn(conn) || mc.outstanding || mc.queue.len() == 0 {
			return
		}
		// The request is handled where it lies in the queue, and dropped
		// after: answering it pushes nothing on the queue, and a forward
		// copies it before it goes on (a Request is some 360 bytes).
		req := mc.queue.front()
		if !e.forwards(req) {
			e.answer(nowMs, m, conn, req)
			mc.queue.drop()
			if e.memberConn(m, conn) == nil {
				return // closed: its session moved
			}
			continue
		}
		session := m.srv.conns[conn]
		fwd := e.forwardedRequest(req)
		mc.queue.drop()
		e.forwardCopy(nowMs, m, mc, conn, session, fwd)
	}
}

// forward hands a copy of req, a request of the connection on member m,
// bound to session, to the leader: it waits there (mc.outstanding) until
// its transaction applies here or its answer comes.
func (e *Ensemble) forward(nowMs int64, m *member, mc *memberConn, conn ConnID, session int64, req *Request) {
	e.forwardCopy(nowMs, m, mc, conn, session, e.forwardedRequest(req))
}

// forwardCopy is forward of fwd, a copy already made (forwardedRequest).
func (e *Ensemble) forwardCopy(nowMs int64, m *member, mc *memberConn, conn ConnID, session int64, fwd *Request) {
	mc.outstanding = true
	e.toLeader(nowMs, m, peerMsg{kind: msgForward, conn: conn, session: session, auth: m.srv.callerAuth(conn), req: fwd})
}

// forwardedRequest is a copy of req for a msgForward: a request the
// leader is done with, or a new one.
func (e *Ensemble) forwardedRequest(req *Request) *Request {
	r := popSpare(&e.freeRequests)
	if r == nil {
		r = new(Request)
	}
	*r = *req
	return r
}

// maxFreeRequests bounds the requests kept for reuse.
const maxFreeRequests = 16

// doneWithRequest keeps a forwarded request the leader has handled, and
// passed on to no message, for the next forward. Nothing refers to it:
// the leader took what it needed by value (a record's Req is a copy).
func (e *Ensemble) doneWithRequest(r *Request) {
	if len(e.freeRequests) < maxFreeRequests {
		e.freeRequests = append(e.freeRequests, r)
	}
}

// toLeader sends a message to the leader: over the link for a follower,
// at once for the leader's own connections.
func (e *Ensemble) toLeader(nowMs int64, m *member, msg peerMsg) {
	if e.leader == 0 {
		return // its connections are about to close
	}
	if m.id == e.leader {
		e.atLeader(nowMs, m, msg)
		return
	}
	e.push(m.id-1, e.leader-1, msg)
}

func (e *Ensemble) send(nowMs int64, to *member, msg peerMsg) {
	l := e.members[e.leader-1]
	if to == l {
		e.atFollower(nowMs, to, msg)
		return
	}
	e.push(l.id-1, to.id-1, msg)
}

// maxLinkEnds bounds the members whose links busy can follow.
const maxLinkEnds = 8

// linkIndex is the index in links, and the bit of busy, of the link from
// member index from to member index to (0-based): from-major, as Steps
// lists links.
func linkIndex(from, to int) int { return from*maxLinkEnds + to }

// linkBit is the bit of busy for the link from member index from to
// member index to.
func linkBit(from, to int) uint64 { return 1 << linkIndex(from, to) }

// push queues msg on the link from member index from to member index to.
func (e *Ensemble) push(from, to int, msg peerMsg) {
	e.links[linkIndex(from, to)].push(msg)
	e.busy |= linkBit(from, to)
}

// clearLink drops what is on the link from member index from to member
// index to.
func (e *Ensemble) clearLink(from, to int) {
	e.links[linkIndex(from, to)].clear()
	e.busy &^= linkBit(from, to)
}

// --- the leader ---

func (e *Ensemble) atLeader(nowMs int64, from *member, msg peerMsg) {
	switch msg.kind {
	case msgConnect:
		rec, _ := e.prep.PrepConnect(nowMs, msg.conn, msg.connect.TimeoutMs)
		e.owner[rec.Session] = from.id
		e.propose(nowMs, rec)
	case msgRevalidate:
		ok := e.prep.Revalidate(nowMs, msg.connect.SessionID, msg.connect.Passwd, msg.connect.TimeoutMs)
		if ok {
			e.owner[msg.connect.SessionID] = from.id
		}
		e.send(nowMs, from, peerMsg{kind: msgRevalidated, conn: msg.conn, ok: ok, zxid: e.lastCommitted()})
	case msgForward:
		o, owned := e.owner[msg.session]
		if !owned {
			e.owner[msg.session] = from.id
		}
		if msg.req.Op == OpSync {
			// Not checked for its session's owner: a sync from a follower
			// (LearnerSyncRequest) goes to Leader.processSync whatever
			// PrepRequestProcessor found, and the follower answers it
			// (measured: sim/difftest's SessionMovedThenSyncOnTheOldFollower).
			// A sync on the leader's own connection goes through
			// FinalRequestProcessor, which closes it for a moved session.
			if from.id == e.leader && owned && o != from.id {
				e.send(nowMs, from, peerMsg{kind: msgMoved, conn: msg.conn})
				return
			}
			// Leader.processSync: the follower answers once it has
			// committed what the leader last proposed, a zxid in its log.
			// Not prep.lastZxid: a new leader's is epoch<<32 until it
			// proposes, a zxid no member ever applies (a sync on a
			// follower right after a failover waited forever: seed 1 of
			// difftest's AnyServerLeaderKilled).
			e.send(nowMs, from, peerMsg{kind: msgSynced, conn: msg.conn, req: msg.req, zxid: lastLogged(e.members[e.leader-1])})
			return
		}
		if owned && o != from.id {
			e.send(nowMs, from, peerMsg{kind: msgMoved, conn: msg.conn})
			return
		}
		if msg.req.Op == OpReconfig && !msg.req.Malformed && e.ensCfg.ReconfigEnabled && e.prep.liveSession(msg.session) {
			e.propose(nowMs, e.prepReconfig(nowMs, msg.conn, msg.session, msg.auth, *msg.req))
			return
		}
		rec, resp := e.prep.prepRequest(nowMs, msg.conn, msg.session, msg.auth, msg.req, &e.recordSlab)
		e.doneWithRequest(msg.req)
		if rec == nil {
			// A copy of its own, so that resp stays off the heap for the
			// requests that do make a transaction, most of them.
			answer := resp
			e.send(nowMs, from, peerMsg{kind: msgAnswer, conn: msg.conn, resp: &answer})
			return
		}
		e.propose(nowMs, rec)
	case msgAck:
		l := e.members[e.leader-1]
		i := indexOfZxid(l.log, msg.zxid, l.commitIdx)
		e.acks[i] |= 1 << (from.id - 1)
		e.advanceCommit(nowMs)
	default:
		panic(fmt.Sprintf("sim: the leader got message kind %d", msg.kind))
	}
}

func (e *Ensemble) lastCommitted() int64 {
	if len(e.committed) == 0 {
		return 0
	}
	return e.committed[len(e.committed)-1].LastZxid
}

// indexOfZxid is the index of the log entry of zxid, looked for at hint
// first: a commit is for the entry after the last committed, and an ack
// most often for the oldest uncommitted (a search for each was half a
// percent of an exploration's instructions on three servers).
func indexOfZxid(log []*TxnRecord, zxid int64, hint int) int {
	if hint >= 0 && hint < len(log) && log[hint].Zxid == zxid {
		return hint
	}
	i, ok := slices.BinarySearchFunc(log, zxid, func(r *TxnRecord, z int64) int {
		switch {
		case r.Zxid < z:
			return -1
		case r.Zxid > z:
			return 1
		}
		return 0
	})
	if !ok {
		panic(fmt.Sprintf("sim: zxid %#x is not in the log", zxid))
	}
	return i
}

// minLogCap is the room a log starts with: the leader's and each
// follower's, the committed list, and the leader's acks. Grown from
// nothing by append, each took eight allocations to reach the hundred
// and some transactions of an exploration's run on three servers:
// starting with room saves some twenty-four allocations a run, one in
// fifty of the run's.
const minLogCap = 32

// appendLog appends rec to log, a log or the committed list, making
// room for minLogCap records at its first.
func appendLog(log []*TxnRecord, rec *TxnRecord) []*TxnRecord {
	if cap(log) == 0 {
		log = make([]*TxnRecord, 0, minLogCap)
	}
	return append(log, rec)
}

// propose logs a transaction on the leader and sends it to its followers.
func (e *Ensemble) propose(nowMs int64, rec *TxnRecord) {
	l := e.members[e.leader-1]
	l.log = appendLog(l.log, rec)
	e.acks = append(e.acks, 1<<(l.id-1))
	if e.pending != nil {
		for len(e.needs) < len(e.acks)-1 {
			e.needs = append(e.needs, [2]*quorumConfig{})
		}
		e.needs = append(e.needs, [2]*quorumConfig{e.config, e.pending})
	}
	for _, m := range e.members {
		if m != l && m.following == e.leader {
			e.send(nowMs, m, peerMsg{kind: msgProposal, rec: rec})
		}
	}
	e.advanceCommit(nowMs)
}

// advanceCommit commits, in order, the leader's proposals a quorum has
// logged, and tells the followers.
func (e *Ensemble) advanceCommit(nowMs int64) {
	l := e.members[e.leader-1]
	for e.handOffTo == 0 && l.commitIdx < len(l.log) && e.quorumAcked(l.commitIdx) {
		rec := l.log[l.commitIdx]
		if len(e.committed) != l.commitIdx {
			panic(fmt.Sprintf("sim: the leader commits entry %d with %d committed", l.commitIdx, len(e.committed)))
		}
		e.committed = appendLog(e.committed, rec)
		l.commitIdx++
		for _, m := range e.members {
			if m != l && m.following == e.leader {
				e.send(nowMs, m, peerMsg{kind: msgCommit, zxid: rec.Zxid})
			}
		}
		e.committedConfig(rec, l.commitIdx-1)
	}
	e.noteCanApply(l)
}

// quorumAcked reports whether the leader's log entry i has the acks of a
// quorum of the current configuration and of those it needs besides.
func (e *Ensemble) quorumAcked(i int) bool {
	if !e.config.hasQuorum(e.acks[i]) {
		return false
	}
	if i >= len(e.needs) {
		return true
	}
	for _, c := range e.needs[i] {
		if c != nil && !c.hasQuorum(e.acks[i]) {
			return false
		}
	}
	return true
}

// --- followers ---

func (e *Ensemble) atFollower(nowMs int64, m *member, msg peerMsg) {
	switch msg.kind {
	case msgProposal:
		if n := len(m.log); n > 0 && m.log[n-1].LastZxid >= msg.rec.Zxid {
			panic(fmt.Sprintf("sim: s%d logs %v after %v", m.id, msg.rec, m.log[n-1]))
		}
		m.log = appendLog(m.log, msg.rec)
		e.toLeader(nowMs, m, peerMsg{kind: msgAck, zxid: msg.rec.Zxid})
	case msgCommit:
		i := indexOfZxid(m.log, msg.zxid, m.commitIdx)
		if i != m.commitIdx {
			panic(fmt.Sprintf("sim: s%d told to commit entry %d with %d committed", m.id, i, m.commitIdx))
		}
		m.commitIdx = i + 1
		e.noteCanApply(m)
	case msgAnswer:
		if mc := e.memberConn(m, msg.conn); mc != nil {
			m.srv.reply(msg.conn, *msg.resp)
			mc.outstanding = false
			e.drain(nowMs, m, msg.conn)
		}
	case msgSynced:
		if mc := e.memberConn(m, msg.conn); mc != nil {
			req := *msg.req
			mc.waitZxid, mc.sync = msg.zxid, &req
			m.waiters = append(m.waiters, msg.conn)
			e.catchUp(nowMs, m, msg.conn)
		}
	case msgMoved:
		if e.memberConn(m, msg.conn) != nil {
			// FinalRequestProcessor: a SessionMovedException closes the
			// connection without an answer.
			e.note("s%d closes conn%d: its session moved to another server", m.id, msg.conn)
			e.closeConn(m, msg.conn)
		}
	case msgRevalidated:
		if mc := e.memberConn(m, msg.conn); mc != nil {
			mc.waitZxid, mc.connectOK = msg.zxid, msg.ok
			m.waiters = append(m.waiters, msg.conn)
			e.catchUp(nowMs, m, msg.conn)
		}
	default:
		panic(fmt.Sprintf("sim: a follower got message kind %d", msg.kind))
	}
}

// catchUp answers a connection's sync or connect once the member has
// applied up to the zxid it waits for.
func (e *Ensemble) catchUp(nowMs int64, m *member, conn ConnID) {
	mc := e.memberConn(m, conn)
	if mc == nil || (mc.sync == nil && mc.connect == nil) || m.srv.lastZxid < mc.waitZxid {
		return
	}
	if mc.sync != nil && !m.srv.HasConn(conn) {
		// What the member applied while catching up closed the
		// connection (its session's close or expiry): the sync has no one
		// to answer.
		e.conns.forget(conn)
		return
	}
	switch {
	case mc.sync != nil:
		req := *mc.sync
		mc.sync = nil
		m.srv.Receive(nowMs, conn, req)
	case mc.connectOK:
		req := *mc.connect
		mc.connect = nil
		m.srv.Connect(nowMs, conn, req)
	default:
		// The leader knows the session no more: expired
		// (ZooKeeperServer.finishSessionInit with valid false).
		mc.connect = nil
		m.srv.send(Output{Conn: conn, Kind: OutConnect})
		e.closeConn(m, conn)
		return
	}
	mc.outstanding = false
	e.drain(nowMs, m, conn)
}

// --- steps ---

// EnsembleStep is one thing an ensemble could do next.
type EnsembleStep struct {
	Kind     StepKind // StepApply, StepPeer or StepServerInternal
	Server   int      // the member that applies, or the link's sender (1-based)
	To       int      // the link's receiver
	internal bool
}

// Steps appends the enabled steps in a fixed order: each member's
// application of its next committed transaction, by member; the leader's
// queued session expiry; each link's next message, by sender and then
// receiver.
func (e *Ensemble) Steps(buf []EnsembleStep) []EnsembleStep {
	var steps []Step
	e.appendSteps(&steps)
	for _, st := range steps {
		buf = append(buf, EnsembleStep{Kind: st.Kind, Server: st.Server, To: st.To})
	}
	return buf
}

// appendSteps appends the enabled steps to a world's list, in Steps'
// order, each filled in place (addStep): the world lists them before
// every step, and listing them aside to copy them in was over 1% of an
// exploration's instructions on three servers. It appends where the list
// is kept, as enumerate does, rather than return the slice for the
// caller to store back.
func (e *Ensemble) appendSteps(buf *[]Step) {
	for b := e.canApply; b != 0; b &= b - 1 {
		st := addStep(buf)
		st.Kind, st.Server = StepApply, bits.TrailingZeros32(b)+1
	}
	if e.leader != 0 && e.prep.HasInternal() {
		st := addStep(buf)
		st.Kind, st.Server = StepServerInternal, e.leader
	}
	for b := e.busy & e.open; b != 0; b &= b - 1 {
		i := bits.TrailingZeros64(b)
		st := addStep(buf)
		st.Kind, st.Server, st.To = StepPeer, i/maxLinkEnds+1, i%maxLinkEnds+1
	}
}

// canApplyNow reports whether member m could apply its next transaction:
// it knows one committed that it has not applied, it is up and it does
// not lag. As a rule, applied is all it knows committed.
func canApplyNow(m *member) bool { return m.applied < m.commitIdx && m.up && !m.lagging }

// noteCanApply keeps m's bit of canApply after its applied, commitIdx,
// up or lagging changed.
func (e *Ensemble) noteCanApply(m *member) {
	bit := uint32(1) << (m.id - 1)
	if canApplyNow(m) {
		e.canApply |= bit
	} else {
		e.canApply &^= bit
	}
}

// noteReach keeps open after a member's up, cut or lagging changed: it
// looks at every link, as such changes are rare.
func (e *Ensemble) noteReach() { e.open = e.deliverableLinks() }

// deliverableLinks is open as it should be: the links that could deliver.
func (e *Ensemble) deliverableLinks() uint64 {
	var open uint64
	for from := range e.members {
		for to := range e.members {
			if e.deliverable(from+1, to+1) {
				open |= linkBit(from, to)
			}
		}
	}
	return open
}

// checkStepMasks holds open and canApply to what they stand for: a step
// Steps would wrongly list or leave out changes what a strategy explores.
// The world asks every 64 steps (World.checkUnwoken), CheckInvariants
// at the end of a run and in the tests.
func (e *Ensemble) checkStepMasks() error {
	var canApply uint32
	for _, m := range e.members {
		if canApplyNow(m) {
			canApply |= 1 << (m.id - 1)
		}
	}
	if canApply != e.canApply {
		return fmt.Errorf("sim: invariant: the members that could apply are %#b, marked %#b", canApply, e.canApply)
	}
	if open := e.deliverableLinks(); open != e.open {
		return fmt.Errorf("sim: invariant: the links that could deliver are %#x, marked %#x", open, e.open)
	}
	return nil
}

// deliverable reports whether a link's next message can arrive: the
// receiver runs, neither end is partitioned, and the receiver does not
// lag. The sender may have crashed since it sent.
func (e *Ensemble) deliverable(from, to int) bool {
	a, b := e.members[from-1], e.members[to-1]
	return b.up && !a.cut && !b.cut && !b.lagging
}

// Step takes one step Steps listed. It returns the transaction an apply
// step applied or an expiry step proposed, nil for a message.
func (e *Ensemble) Step(nowMs int64, st EnsembleStep) *TxnRecord {
	switch st.Kind {
	case StepApply:
		return e.applyNext(nowMs, e.members[st.Server-1])
	case StepServerInternal:
		rec := e.prep.PrepInternal(nowMs)
		e.propose(nowMs, rec)
		return rec
	case StepPeer:
		link := &e.links[linkIndex(st.Server-1, st.To-1)]
		msg := link.pop()
		if link.len() == 0 {
			e.busy &^= linkBit(st.Server-1, st.To-1)
		}
		to := e.members[st.To-1]
		if st.To == e.leader {
			e.atLeader(nowMs, e.members[st.Server-1], msg)
		} else {
			e.atFollower(nowMs, to, msg)
		}
		return nil
	}
	panic(fmt.Sprintf("sim: not an ensemble step: %v", st.Kind))
}

// applyNext applies the member's next committed transaction. The
// connection it came on, if it is here, gets its answer, and then its
// queued requests go on.
func (e *Ensemble) applyNext(nowMs int64, m *member) *TxnRecord {
	rec := m.log[m.applied]
	if e.committed[m.applied] != rec {
		panic(fmt.Sprintf("sim: s%d applies %v as entry %d, which committed as %v", m.id, rec, m.applied, e.committed[m.applied]))
	}
	m.srv.ApplyRecord(rec)
	m.applied++
	e.noteCanApply(m)
	e.noteApplied(m)
	if m.id == e.leader && rec.Zxid == e.handOffZxid && e.handOffTo != 0 {
		// The leader answered the reconfig on its own connection, if it
		// came there; now it hands over (ensemble_reconfig.go).
		e.handOff(nowMs, e.handOffTo)
		return rec
	}
	if mc := e.memberConn(m, rec.Conn); mc != nil && rec.Conn != 0 && mc.outstanding && mc.connect == nil && mc.sync == nil {
		mc.outstanding = false
		e.drain(nowMs, m, rec.Conn)
	}
	if len(m.waiters) > 0 {
		waiters := m.waiters
		m.waiters = nil
		for _, c := range waiters {
			e.catchUp(nowMs, m, c)
			if mc := e.memberConn(m, c); mc != nil && (mc.sync != nil || mc.connect != nil) {
				m.waiters = append(m.waiters, c)
			}
		}
	}
	return rec
}

// --- time ---

// Tick lets the leader's time reach nowMs: sessions it has not heard of
// for their timeout expire, and its container sweep runs.
func (e *Ensemble) Tick(nowMs int64) {
	if e.leader == 0 {
		return
	}
	if rec := e.prep.PrepTick(nowMs); rec != nil {
		e.propose(nowMs, rec)
	}
}

// NextDeadlineMs is the leader's next expiry or sweep, math.MaxInt64 with
// no leader.
func (e *Ensemble) NextDeadlineMs() int64 {
	if e.leader == 0 {
		return math.MaxInt64
	}
	return e.prep.NextDeadlineMs()
}

// ExpireSession expires a session on the leader now (the expire fault).
func (e *Ensemble) ExpireSession(nowMs int64, id int64) bool {
	return e.leader != 0 && e.prep.ExpireSession(nowMs, id)
}

// --- membership: faults and elections ---

// Crash stops member i's process: its client connections are gone (the
// caller resets them: it returns them), its links are cut, and what it
// logged stays on its disk. A leader's crash leaves the ensemble without
// a leader until an election.
func (e *Ensemble) Crash(i int) []ConnID {
	m := e.members[i-1]
	if !m.up {
		return nil
	}
	conns := slices.Sorted(maps.Keys(m.srv.conns))
	for _, c := range conns {
		m.srv.dropConn(c)
		e.conns.remove(c)
	}
	e.conns.forgetAllOn(m.id)
	m.waiters = nil
	m.up = false
	e.noteReach()
	e.noteCanApply(m)
	m.following = 0
	e.note("s%d crashed", i)
	// What it sent before it died still arrives: the kernel sends a
	// killed process's socket buffers before the FIN. A real leader
	// killed with a write in flight had it committed by the next leader
	// in every run (ensemble_facts_test.go). What was on its way to it is
	// lost.
	e.clearLinksTo(m)
	if i == e.leader {
		e.loseLeader("the leader crashed", m)
	} else {
		e.checkQuorum()
	}
	return conns
}

// Restart brings member i's process back with what it had logged: it
// applies the transactions it knew committed, and joins the leader if
// there is one it can reach.
func (e *Ensemble) Restart(nowMs int64, i int) {
	m := e.members[i-1]
	if m.up {
		return
	}
	m.up = true
	e.clearLinks(m) // its connections to the others are new
	m.srv = e.newMemberServer()
	m.srv.checkEvery = e.members[0].srv.checkEvery
	for _, rec := range m.log[:m.commitIdx] {
		m.srv.ApplyRecord(rec)
	}
	m.srv.Outputs()
	m.applied = m.commitIdx
	e.noteReach()
	e.noteCanApply(m)
	e.noteApplied(m)
	e.note("s%d restarted at zxid %#x", i, m.srv.lastZxid)
	e.join(nowMs, m)
}

// SetCut partitions member i from the other servers, or heals it.
func (e *Ensemble) SetCut(nowMs int64, i int, cut bool) {
	m := e.members[i-1]
	if m.cut == cut {
		return
	}
	m.cut = cut
	e.noteReach()
	if !cut {
		e.note("s%d reaches the other servers again", i)
		e.join(nowMs, m)
		return
	}
	e.note("s%d cut off from the other servers", i)
	e.clearLinks(m)
	switch {
	case i == e.leader:
		e.loseLeader("the leader lost its quorum", nil)
	case m.following != 0:
		m.following = 0
		e.closeAllConns(m, "lost its leader")
		e.checkQuorum()
	}
}

// SetLag makes member i receive nothing from its leader and apply nothing,
// or ends that.
func (e *Ensemble) SetLag(i int, lag bool) {
	m := e.members[i-1]
	m.lagging = lag
	e.noteReach()
	e.noteCanApply(m)
}

// Lagging reports whether member i lags.
func (e *Ensemble) Lagging(i int) bool { return e.members[i-1].lagging }

func (e *Ensemble) clearLinks(m *member) {
	for j := range e.members {
		e.clearLink(m.id-1, j)
		e.clearLink(j, m.id-1)
	}
}

func (e *Ensemble) clearLinksTo(m *member) {
	for j := range e.members {
		e.clearLink(j, m.id-1)
	}
}

// checkQuorum makes a leader that can no longer reach a quorum of
// followers step down (Leader.lead's "not sufficient acks").
func (e *Ensemble) checkQuorum() {
	if e.leader == 0 {
		return
	}
	l := e.members[e.leader-1]
	var mask uint32
	for _, m := range e.members {
		if m == l || (m.following == e.leader && e.reachable(m, l)) {
			mask |= 1 << (m.id - 1)
		}
	}
	if !e.config.hasQuorum(mask) {
		e.loseLeader("the leader lost its quorum", nil)
	}
}

// loseLeader ends the current epoch: no member has a leader, every member
// closes its client connections, messages in flight are lost but for
// those a crashed leader sent (crashed), which still arrive.
func (e *Ensemble) loseLeader(why string, crashed *member) {
	e.note("s%d no longer leads epoch %d: %s", e.leader, e.epoch, why)
	e.leader = 0
	e.prep = nil
	e.acks = nil
	e.needs = nil
	e.pending = nil
	e.handOffTo, e.handOffZxid = 0, 0
	clear(e.owner)
	for _, m := range e.members {
		m.following = 0
		if m.up {
			e.closeAllConns(m, "no leader")
		}
		for _, to := range e.members {
			if m != crashed {
				e.clearLink(m.id-1, to.id-1)
			}
		}
	}
}

// CanElect reports whether an election would find a leader now: there is
// none, and a quorum of members are up and reach one another.
func (e *Ensemble) CanElect() bool {
	var mask uint32
	for _, m := range e.electorate() {
		mask |= 1 << (m.id - 1)
	}
	return e.leader == 0 && e.config.hasQuorum(mask)
}

func (e *Ensemble) electorate() []*member {
	var voters []*member
	for _, m := range e.members {
		if m.up && !m.cut {
			voters = append(voters, m)
		}
	}
	return voters
}

func lastLogged(m *member) int64 {
	if len(m.log) == 0 {
		return 0
	}
	return m.log[len(m.log)-1].LastZxid
}

// Elect runs a leader election (FastLeaderElection): among the members
// that are up and reach one another, if they are a quorum, the one with
// the highest logged zxid leads, the higher server id among equals. It
// starts a new epoch, commits every proposal it logged, and the others
// sync to it, discarding proposals it lacks (ZooKeeper Internals, "Leader
// Activation"). Its session tracker re-tracks every session with a full
// timeout. It reports whether a leader was elected.
func (e *Ensemble) Elect(nowMs int64) bool {
	if !e.CanElect() {
		return false
	}
	var l *member
	for _, m := range e.electorate() {
		// Only voters are elected (FastLeaderElection counts the votes
		// of the configuration's voting members).
		if e.config.votes(m.id) && (l == nil || lastLogged(m) > lastLogged(l) || lastLogged(m) == lastLogged(l)) {
			l = m
		}
	}
	e.lead(nowMs, l)
	return true
}

// lead makes l the leader of a new epoch: it commits every proposal it
// logged, and the members it reaches sync to it.
func (e *Ensemble) lead(nowMs int64, l *member) {
	e.epoch++
	for len(e.epochLeaders) <= int(e.epoch) {
		e.epochLeaders = append(e.epochLeaders, 0)
	}
	if e.epochLeaders[e.epoch] != 0 {
		panic(fmt.Sprintf("sim: two leaders in epoch %d: s%d and s%d", e.epoch, e.epochLeaders[e.epoch], l.id))
	}
	e.epochLeaders[e.epoch] = l.id
	// The last epoch's messages still on their way die with its
	// connections.
	for _, m := range e.members {
		e.clearLinks(m)
	}
	// Every committed transaction is in the new leader's log: a quorum
	// logged it, and the leader has the highest zxid of a quorum.
	if len(l.log) < len(e.committed) {
		panic(fmt.Sprintf("sim: s%d leads with %d logged, %d committed", l.id, len(l.log), len(e.committed)))
	}
	for i, rec := range e.committed {
		if l.log[i] != rec {
			panic(fmt.Sprintf("sim: s%d leads without the committed %v", l.id, rec))
		}
	}
	if extra := len(l.log) - len(e.committed); extra > 0 {
		e.note("s%d commits %d proposals of the last epoch", l.id, extra)
	}
	for _, rec := range l.log[len(e.committed):] {
		e.committed = appendLog(e.committed, rec)
		if rec.Kind == RecReconfig {
			e.pending = nil
			e.config = configFromText(rec.Req.Data, len(e.members))
			e.note("configuration %#x is the ensemble's", rec.Zxid)
		}
	}
	// A new leader's configuration is the one it read from the text
	// (QuorumPeer.configFromString): a map in id order.
	if !e.config.parsed {
		e.config = configFromText(e.config.text(), len(e.members))
	}
	l.commitIdx = len(l.log)
	e.noteCanApply(l)
	e.leader = l.id
	l.following = l.id
	e.acks = make([]uint32, len(l.log), max(len(l.log), minLogCap))
	e.needs = nil
	e.prep = newPrepServer(e.cfg, l.log, l.id, e.epoch, nowMs)
	e.note("s%d leads epoch %d from zxid %#x", l.id, e.epoch, lastLogged(l))
	for _, m := range e.electorate() {
		if m != l {
			e.join(nowMs, m)
		}
	}
	if !e.config.votes(l.id) {
		e.handOffLogged(nowMs, l)
	}
}

// join syncs member m with the leader if it can reach it (LearnerHandler:
// DIFF, TRUNC or SNAP): its log becomes the leader's, proposals the leader
// lacks discarded, and it counts as having logged the leader's
// outstanding proposals.
func (e *Ensemble) join(nowMs int64, m *member) {
	if e.leader == 0 || !m.up || m.id == e.leader || !e.reachable(m, e.members[e.leader-1]) {
		return
	}
	l := e.members[e.leader-1]
	for i := range m.applied {
		if m.log[i] != l.log[i] {
			panic(fmt.Sprintf("sim: s%d applied %v, which the leader's log has not: a committed transaction lost", m.id, m.log[i]))
		}
	}
	kept := 0
	for kept < len(m.log) && kept < len(l.log) && m.log[kept] == l.log[kept] {
		kept++
	}
	if d := len(m.log) - kept; d > 0 {
		e.note("s%d discards %d uncommitted proposals", m.id, d)
	}
	m.log = append(make([]*TxnRecord, 0, max(len(l.log), minLogCap)), l.log...)
	m.commitIdx = l.commitIdx
	e.noteCanApply(m)
	m.following = l.id
	for i := l.commitIdx; i < len(l.log); i++ {
		e.acks[i] |= 1 << (m.id - 1)
	}
	e.advanceCommit(nowMs)
}

// CheckInvariants checks every member's tree, that each member's applied
// history is the committed log's prefix, and that busy marks exactly the
// links that hold messages.
func (e *Ensemble) CheckInvariants() error {
	if err := e.checkStepMasks(); err != nil {
		return err
	}
	if most := e.mostApplied(); most != e.most {
		return fmt.Errorf("sim: s%d has applied the most (%d), MostApplied says s%d (%d)", most.id, most.applied, e.most.id, e.most.applied)
	}
	for from := range maxLinkEnds {
		for to := range maxLinkEnds {
			link := &e.links[linkIndex(from, to)]
			if busy := e.busy&linkBit(from, to) != 0; busy != (link.len() > 0) {
				return fmt.Errorf("sim: the link s%d->s%d holds %d messages, marked busy %v", from+1, to+1, link.len(), busy)
			}
		}
	}
	for _, m := range e.members {
		if err := m.srv.CheckInvariants(); err != nil {
			return fmt.Errorf("s%d: %w", m.id, err)
		}
		if m.applied > len(e.committed) || m.applied > m.commitIdx {
			return fmt.Errorf("sim: s%d applied %d transactions, %d committed, it knows of %d", m.id, m.applied, len(e.committed), m.commitIdx)
		}
		for i := range m.applied {
			if m.log[i] != e.committed[i] {
				return fmt.Errorf("sim: s%d applied %v where %v committed", m.id, m.log[i], e.committed[i])
			}
		}
	}
	return nil
}
