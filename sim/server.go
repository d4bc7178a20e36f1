package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// ServerConfig holds the settings of a standalone ZooKeeper server that the
// simulation depends on. The zero value of each field means ZooKeeper's
// default.
type ServerConfig struct {
	// TickTimeMs is tickTime, the server's basic time unit; sessions expire
	// on tick boundaries (SessionTrackerImpl's expiration interval).
	TickTimeMs int64
	// MinSessionTimeoutMs and MaxSessionTimeoutMs bound the negotiated
	// session timeout; ZooKeeper defaults them to 2 and 20 ticks.
	MinSessionTimeoutMs int64
	MaxSessionTimeoutMs int64
	// EpochMs is the wall-clock time, in milliseconds since 1970, that
	// virtual time 0 stands for; it is what ctime and mtime count from.
	EpochMs int64
	// ContainerCheckIntervalMs is znode.container.checkIntervalMs, how often
	// the ContainerManager deletes empty containers (default 60 s).
	ContainerCheckIntervalMs int64
	// ExtendedTypes is zookeeper.extendedTypesEnabled, which TTL nodes need;
	// it is off by default, and a TTL create is then UNIMPLEMENTED.
	ExtendedTypes bool
	// MaxPacketBytes is jute.maxbuffer: a request packet longer than this
	// makes the server close the connection unread (NIOServerCnxn "Len
	// error"). Default 0xfffff.
	MaxPacketBytes int
	// SuperDigest is zookeeper.DigestAuthenticationProvider.superDigest,
	// "super:" and the base64 SHA-1 of "super:password" (DigestID): a
	// connection that authenticates with that digest passes every
	// permission check. Empty, there is no super user.
	SuperDigest string
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.TickTimeMs == 0 {
		c.TickTimeMs = 2000
	}
	if c.MinSessionTimeoutMs == 0 {
		c.MinSessionTimeoutMs = 2 * c.TickTimeMs
	}
	if c.MaxSessionTimeoutMs == 0 {
		c.MaxSessionTimeoutMs = 20 * c.TickTimeMs
	}
	if c.EpochMs == 0 {
		c.EpochMs = DefaultEpochMs
	}
	if c.ContainerCheckIntervalMs == 0 {
		c.ContainerCheckIntervalMs = 60_000
	}
	if c.MaxPacketBytes == 0 {
		c.MaxPacketBytes = 0xfffff
	}
	return c
}

// DefaultEpochMs is 2026-01-01T00:00:00Z: virtual time 0 as a wall clock.
const DefaultEpochMs = 1767225600000

// Ephemeral owners that are not sessions (EphemeralType in ZooKeeper).
const (
	containerOwner = math.MinInt64 // EphemeralType.CONTAINER
	ttlOwnerMask   = int64(-1) << 56
	ttlMaxMs       = int64(1)<<40 - 1 // EphemeralType.TTL's 40-bit field... bounded further by MAX_TTL
)

// znode is one node of the tree. Its Stat fields are stored, its counts are
// derived: dataLength from data and numChildren from children.
type znode struct {
	data           []byte
	children       *javaSet // nil until the first child
	czxid          int64
	mzxid          int64
	pzxid          int64
	ctime          int64
	mtime          int64
	ephemeralOwner int64
	version        int32
	cversion       int32 // children ever created: the sequence counter (see stat)
	aversion       int32
	acl            aclID
	// nameHash and pathHash are the javaSpreadHash of the node's last
	// name and, for a session's ephemeral, of its path, while hashed:
	// its create brought them from validation (write), and its delete
	// and the invariants' checks find it in its parent's children and
	// its owner's ephemerals with them, unhashed again (a lock node's
	// name and path are some fifty and ninety bytes). A node a snapshot
	// restored, or a system node, is not hashed (hashes).
	nameHash, pathHash uint32
	hashed             bool
}

// hashes returns the node's nameHash and pathHash for its path, hashing
// what it does not hold.
func (n *znode) hashes(path string, name string) (nameHash, pathHash uint32) {
	if n.hashed {
		return n.nameHash, n.pathHash
	}
	if ownerKind(n.ephemeralOwner) == ownerSession {
		pathHash = javaSpreadHash(path)
	}
	return javaSpreadHash(name), pathHash
}

func (n *znode) numChildren() int {
	if n.children == nil {
		return 0
	}
	return n.children.len()
}

// stat is the Stat a client sees, as DataNode.copyStat makes it. The node
// stores cversion as the number of children ever created, which is also
// the sequence counter; clients see the number of child changes,
// 2*creates - present children (every create but those still present has
// had its delete). Containers and TTL nodes show no ephemeral owner.
func (n *znode) stat() zk.Stat {
	var st zk.Stat
	n.statInto(&st)
	return st
}

// statInto writes the node's Stat into st, all eleven fields, one by
// one: a reply's Stat is written where the reply lies rather than built
// aside and copied there, for every write and read.
func (n *znode) statInto(st *zk.Stat) {
	numChildren := int32(n.numChildren())
	owner := n.ephemeralOwner
	if ownerKind(owner) != ownerSession {
		owner = 0
	}
	st.Czxid, st.Mzxid, st.Ctime, st.Mtime = n.czxid, n.mzxid, n.ctime, n.mtime
	st.Version, st.Cversion, st.Aversion = n.version, n.cversion*2-numChildren, n.aversion
	st.EphemeralOwner, st.DataLength = owner, int32(len(n.data))
	st.NumChildren, st.Pzxid = numChildren, n.pzxid
}

type serverSession struct {
	id         int64
	passwd     []byte
	timeoutMs  int64
	expiresMs  int64    // the tick boundary at which the session expires unless touched
	conn       ConnID   // the connection it is attached to, 0 if none
	ephemerals *javaSet // paths of its ephemeral nodes, in DataTree.ephemerals order
	closing    bool     // expired: its closeSession is queued, requests get SESSIONEXPIRED
	// passwdBuf holds passwd for a session the server made (newSession),
	// which needs no allocation of its own.
	passwdBuf [16]byte
}

// newSession returns a new session record, with its password.
func newSession(id, timeoutMs int64) *serverSession {
	sess := &serverSession{id: id, timeoutMs: timeoutMs}
	sess.passwd = sessionPasswdInto(id, sess.passwdBuf[:])
	return sess
}

// Server is a standalone ZooKeeper server as a pure state machine: requests,
// connection changes and the passage of time go in through its methods, and
// everything it sends comes out of Outputs, in order. It has no goroutines,
// reads no clock and draws no random numbers; every method takes the
// current virtual time in milliseconds since the server started.
//
// Its invariants are checked after every transaction, and a violation
// panics: it is a bug in the simulator, never a caller's mistake.
type Server struct {
	cfg      ServerConfig
	nodes    map[string]*znode
	lastZxid int64
	sessions map[int64]*serverSession
	// sessionsByID holds the sessions of the map in id order: the scans
	// at every tick (NextDeadlineMs, Tick) walk it, not the map, whose
	// iteration was 2% of an exploration (addSession, removeSession).
	sessionsByID []*serverSession
	// lastSession is the session the last request came on (nil for
	// none): a client's requests come in runs, and each asked the map
	// for its session (some forty instructions a request).
	// removeSession forgets it with the session, and CheckInvariants
	// asserts it is the server's.
	lastSession *serverSession
	conns       map[ConnID]int64 // live connections and their sessions (0 before connect)
	// connHint is the last connection connOf found open, and its
	// session; conn 0 (no connection has id 0) when none. Every change to
	// conns goes through setConn or deleteConn, which clear it, and
	// CheckInvariants asserts it agrees with conns.
	connHint struct {
		conn    ConnID
		session int64
	}
	dataWatches   *watchTable
	childWatches  *watchTable
	nextSessionID int64
	nextContainer int64   // when the ContainerManager runs next
	closingQueue  []int64 // expired sessions whose closeSession has not been applied yet
	outputs       []Output
	txn           txn             // the transaction being applied
	overlay       overlay         // reused by every multi: the ChangeRecords of one transaction
	records       [8]changeRecord // the records validation makes, reused by every write
	recordsUsed   int
	acls          *aclTable
	expiringNodes int // containers and TTL nodes, which the ContainerManager sweeps
	// checkEvery checks the whole tree after every transaction, not only
	// what it touched. It lies with the flags below, where it needs no
	// padding of its own: an exploration makes a server for every
	// schedule, and one of 1,544 bytes (and the allocator's header of 8)
	// took the allocator's class of 1,792 where 1,528 takes that of 1,536
	// (TestPerRunStructsFitTheirSizeClass).
	checkEvery bool
	// nodesCheckedElsewhere skips the check of the nodes a transaction
	// touched: another member applied it first and checked them
	// (ApplyRecord).
	nodesCheckedElsewhere bool
	// prep is set on a leader's prep server (newPrepServer): writeInto
	// keeps the last single write it validated in prepWrite, for
	// PrepRequest to hand to the members with its record.
	prep        bool
	prepWrite   checkedWrite
	treeChanges uint64 // nodes created and deleted since the server was made or restored (TreeChanges)
	// recentChanges holds the last treeChangesKept of them, change k at
	// k mod treeChangesKept (RecentTreeChange).
	recentChanges [treeChangesKept]TreeChange
	// freeNodes holds deleted nodes for the next creates to reuse, data
	// buffer and all: a create then allocates nothing of the tree's (a
	// node was most of BenchmarkSimThroughput's allocated bytes, and the
	// collector's cycles, write barriers and all, came with them).
	freeNodes []*znode
	// names is the rest of the block childList carves child lists from.
	names []string
	// hostAddr is the last connection's address, and its text as
	// javaHostAddress writes it: the clients of a run connect from a few
	// addresses, again and again.
	hostAddr struct {
		addr netip.Addr
		text string
	}
	// fired is fire's buffers for the connections each table's trigger
	// fired, reused: allocated for each trigger, they were 3% of the
	// allocations of an exploration.
	fired [2][]ConnID
	// lookups remembers the last few paths writes and reads looked up.
	lookups pathCache

	// auth holds each live connection's identities (ServerCnxn.authInfo);
	// caller is the connection whose request is being handled.
	auth   map[ConnID]*connAuth
	caller ConnID
	// replayAuth is the identities of the one connection a PrepRequest or
	// an ApplyRecord binds for the call, reused rather than allocated for
	// every transaction of an ensemble.
	replayAuth connAuth
}

// NewServer returns a server with ZooKeeper's initial tree: "/", and
// "/zookeeper" with its "quota" and "config" children.
func NewServer(cfg ServerConfig) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:          cfg,
		nodes:        make(map[string]*znode),
		sessions:     make(map[int64]*serverSession),
		conns:        make(map[ConnID]int64),
		dataWatches:  newWatchTable(),
		childWatches: newWatchTable(),
	}
	// SessionTrackerImpl.initializeNextSessionId, from the virtual wall
	// clock; a standalone server has id 1, the top byte of every session id
	// (0x10000076e640000 on a real 3.8.0).
	s.nextSessionID = int64(uint64(cfg.EpochMs<<24)>>8) | 1<<56
	s.nextContainer = cfg.ContainerCheckIntervalMs
	s.acls = newACLTable()
	// DataTree makes these nodes with new byte[0]: their data is empty,
	// not null, and a client reads it as empty non-nil data (measured on
	// 3.8.0 by the differential tests).
	s.nodes["/"] = &znode{data: []byte{}, acl: aclOpen}
	// The system nodes are not created by transactions: every Stat field
	// is 0, and they do not count as creates in their parent's cversion.
	s.addSystemNode("/zookeeper", &znode{data: []byte{}, acl: aclOpen})
	s.addSystemNode("/zookeeper/quota", &znode{data: []byte{}, acl: aclOpen})
	s.addSystemNode("/zookeeper/config", &znode{data: []byte{}, acl: aclReadOnly, aversion: -1})
	return s
}

// nameBlockLen is how many names childList allocates at a time.
const nameBlockLen = 64

// childList returns n's children in the order the server lists them, in
// a slice the caller owns: empty, not nil, for none. Lists of a few
// names are carved from a block of nameBlockLen: a list allocated for
// every getChildren was 8% of the allocations of an exploration. A list
// is capped at its length, so that an append to it, by the client that
// gets it, moves it rather than write over the next list; its names may
// be rewritten (sorted) in place, as they are the caller's alone.
func (s *Server) childList(n *znode) []string {
	if n.children == nil || n.children.len() == 0 {
		return []string{}
	}
	k := n.children.len()
	if k > nameBlockLen/4 {
		return n.children.appendOrdered(make([]string, 0, k))
	}
	if len(s.names) < k {
		s.names = make([]string, nameBlockLen)
	}
	names := n.children.appendOrdered(s.names[:0:k])
	s.names = s.names[k:]
	return names
}

func (s *Server) addSystemNode(path string, n *znode) {
	parent, name := parentOf(path)
	p := s.nodes[parent]
	if p.children == nil {
		p.children = newJavaSet(8)
	}
	p.children.add(name)
	s.nodes[path] = n
}

// Config returns the configuration with defaults filled in.
func (s *Server) Config() ServerConfig { return s.cfg }

// LastZxid is the zxid of the last transaction applied.
func (s *Server) LastZxid() int64 { return s.lastZxid }

// TreeChanges counts the nodes this server has created and deleted since
// it was made or restored (a snapshot does not keep the count): while
// it stays the same, every path names the node it named (the same czxid,
// owner and place among its siblings). A checker that follows the tree
// through the inspection calls skips looking again when it has not moved.
func (s *Server) TreeChanges() uint64 { return s.treeChanges }

// A TreeChange is one node created or deleted.
type TreeChange struct {
	Path    string
	Created bool // created; deleted if not
}

// treeChangesKept is how many of its last tree changes a server keeps.
const treeChangesKept = 8

// RecentTreeChange is the k-th change TreeChanges counted (1-based), if
// it is among the last few the server keeps. A checker that follows the
// tree looks at just the nodes that changed since its last look, rather
// than at every node it knows.
func (s *Server) RecentTreeChange(k uint64) (TreeChange, bool) {
	if k == 0 || k > s.treeChanges || s.treeChanges-k >= treeChangesKept {
		return TreeChange{}, false
	}
	return s.recentChanges[k%treeChangesKept], true
}

// noteTreeChange counts a node created or deleted at path.
func (s *Server) noteTreeChange(path string, created bool) {
	s.treeChanges++
	s.recentChanges[s.treeChanges%treeChangesKept] = TreeChange{Path: path, Created: created}
}

// NodeCount is the number of znodes, the root and /zookeeper included.
func (s *Server) NodeCount() int { return len(s.nodes) }

// Outputs returns what the server has sent since the last call, in order,
// and forgets it.
//
// The slice is reused: it is valid until the next call into the server.
func (s *Server) Outputs() []Output {
	out := s.outputs
	s.outputs = s.outputs[:0]
	return out
}

// KeepOutputs lets the caller keep the slice Outputs returned last, past
// the next call into the server, which writes its outputs into spare's
// storage from now on. A driver that queues a server's outputs whole
// trades its empty queue's storage for them this way, instead of copying
// each output (some 380 bytes) in.
func (s *Server) KeepOutputs(spare []Output) { s.outputs = spare[:0] }

func (s *Server) send(o Output) {
	if len(s.outputs) == cap(s.outputs) {
		s.growOutputs()
	}
	s.outputs = append(s.outputs, o)
}

// outputsFirstCap is the least room growOutputs makes for a server's
// outputs: a write's reply comes with the watch events it fires, and
// room for one grew at once to two in most worlds of an exploration (a
// new world's server, or a connection's queue, starts with none; their
// storage goes round, from world to world: moveOutputs, queueStores).
const outputsFirstCap = 2

// growOutputs makes room for at least one more output, outputsFirstCap
// at the least, doubling as append would past it.
func (s *Server) growOutputs() {
	grown := make([]Output, len(s.outputs), max(outputsFirstCap, 2*cap(s.outputs)))
	copy(grown, s.outputs)
	s.outputs = grown
}

func (s *Server) wallMs(nowMs int64) int64 { return s.cfg.EpochMs + nowMs }

// Open registers a new client connection (the TCP accept) from
// DefaultClientAddr.
func (s *Server) Open(conn ConnID) { s.OpenFrom(conn, DefaultClientAddr) }

// OpenFrom registers a new client connection from the peer address addr:
// the connection starts out authenticated as ip:addr, as NIOServerCnxn's
// constructor adds that id, and the ip scheme matches against it.
func (s *Server) OpenFrom(conn ConnID, addr netip.Addr) {
	if _, ok := s.conns[conn]; ok {
		panic(fmt.Sprintf("sim: connection %d opened twice", conn))
	}
	s.setConn(conn, 0)
	s.openAuth(conn, addr)
}

// Connect handles a ConnectRequest on an open connection: it creates a
// session, or reattaches the one asked for if it is still alive; an expired
// or unknown session is answered with session id 0 and the connection is
// closed (ZooKeeperServer.finishSessionInit). A client whose last seen zxid
// is ahead of the server's is refused: its connection is closed unanswered.
func (s *Server) Connect(nowMs int64, conn ConnID, req ConnectRequest) {
	if _, ok := s.conns[conn]; !ok {
		panic(fmt.Sprintf("sim: connect on unknown connection %d", conn))
	}
	if req.LastZxidSeen > s.lastZxid {
		// A client that has seen a later zxid than this server has applied
		// must not get a session here: the server closes the connection
		// without an answer (ZooKeeperServer.processConnectRequest,
		// "Refusing session request for client ... as it has seen zxid",
		// DisconnectReason.CLIENT_ZXID_AHEAD).
		s.dropConn(conn)
		s.send(Output{Conn: conn, Kind: OutClose})
		return
	}
	timeout := min(max(int64(req.TimeoutMs), s.cfg.MinSessionTimeoutMs), s.cfg.MaxSessionTimeoutMs)
	if req.SessionID == 0 {
		id := s.nextSessionID
		s.nextSessionID++
		sess := newSession(id, timeout)
		sess.conn = conn
		s.addSession(sess)
		s.setConn(conn, id)
		s.touch(nowMs, sess)
		s.commit(s.begin()) // createSession is a transaction
		s.send(Output{Conn: conn, Kind: OutConnect, Connect: ConnectResponse{SessionID: id, Passwd: sess.passwd, TimeoutMs: int32(timeout)}})
		return
	}
	sess, ok := s.sessions[req.SessionID]
	if ok && sess.conn != 0 && sess.conn != conn {
		// A connection asks for a session another connection holds: the
		// server closes the other one (ServerCnxnFactory.closeSession,
		// DisconnectReason.CLIENT_RECONNECT) before it checks the
		// password, so a wrong password too costs the holder its
		// connection, though not its session (measured on 3.8:
		// TestJudgedByRealServer in sim/wire, "wrong password").
		old := sess.conn
		s.dropConn(old)
		s.send(Output{Conn: old, Kind: OutClose})
	}
	if !ok || sess.closing || string(sess.passwd) != string(req.Passwd) {
		s.send(Output{Conn: conn, Kind: OutConnect})
		s.send(Output{Conn: conn, Kind: OutClose})
		return
	}
	sess.conn = conn
	sess.timeoutMs = timeout
	s.setConn(conn, sess.id)
	s.touch(nowMs, sess)
	s.send(Output{Conn: conn, Kind: OutConnect, Connect: ConnectResponse{SessionID: sess.id, Passwd: sess.passwd, TimeoutMs: int32(timeout)}})
}

// sessionPasswd derives a session's password from its id; a real server
// draws it at random, which a pure state machine may not.
func sessionPasswd(id int64) []byte { return sessionPasswdInto(id, make([]byte, 16)) }

// sessionPasswdInto is sessionPasswd written into p, 16 bytes.
func sessionPasswdInto(id int64, p []byte) []byte {
	x := uint64(id)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	for i := range p {
		x ^= x >> 29
		x *= 0xBF58476D1CE4E5B9
		p[i] = byte(x >> 56)
	}
	return p
}

// touch moves a session's expiry to the tick boundary after now+timeout,
// as ExpiryQueue.update does.
func (s *Server) touch(nowMs int64, sess *serverSession) {
	if sess.closing {
		return
	}
	sess.expiresMs = sessionExpiresMs(nowMs, sess.timeoutMs, s.cfg.TickTimeMs)
}

// sessionExpiresMs is when a session of timeoutMs last heard from at
// nowMs expires: at the tick boundary after nowMs+timeoutMs, as
// SessionTrackerImpl's ExpiryQueue rounds it (roundToNextInterval).
func sessionExpiresMs(nowMs, timeoutMs, tickMs int64) int64 {
	return (nowMs+timeoutMs)/tickMs*tickMs + tickMs
}

// Disconnect tells the server that a connection is gone (the client closed
// it or the network broke it). The session lives on until it expires; the
// watches that were registered on the connection are dropped, as a real
// server drops a closed ServerCnxn's watches.
func (s *Server) Disconnect(conn ConnID) {
	if _, ok := s.conns[conn]; !ok {
		return
	}
	s.dropConn(conn)
}

func (s *Server) dropConn(conn ConnID) {
	if id := s.conns[conn]; id != 0 {
		if sess, ok := s.sessions[id]; ok && sess.conn == conn {
			sess.conn = 0
		}
	}
	s.deleteConn(conn)
	delete(s.auth, conn)
	removeWatcher(s.dataWatches, conn)
	removeWatcher(s.childWatches, conn)
}

// NextDeadlineMs is the earliest virtual time at which Tick has work: a
// session expiry or a container sweep. It is math.MaxInt64 if there is none.
func (s *Server) NextDeadlineMs() int64 {
	next := int64(math.MaxInt64)
	for _, sess := range s.sessionsByID {
		if !sess.closing {
			next = min(next, sess.expiresMs)
		}
	}
	if s.expiringNodes > 0 {
		next = min(next, s.nextContainer)
	}
	return next
}

// Tick lets virtual time reach nowMs: every session whose expiry has come
// is marked closing and its closeSession queued, in session id order, as
// SessionTrackerImpl does (the transactions are applied by StepInternal);
// and the ContainerManager runs when its interval has passed.
func (s *Server) Tick(nowMs int64) {
	var due []int64
	for _, sess := range s.sessionsByID { // in id order
		if !sess.closing && sess.expiresMs <= nowMs {
			due = append(due, sess.id)
		}
	}
	for _, id := range due {
		s.expire(id)
	}
	if nowMs >= s.nextContainer {
		for s.nextContainer <= nowMs {
			s.nextContainer += s.cfg.ContainerCheckIntervalMs
		}
		s.sweepContainers(nowMs)
	}
}

// ExpireSession expires a session now, as if its timeout had run out: the
// fault a test injects to see what a client does about expiry.
func (s *Server) ExpireSession(nowMs int64, id int64) bool {
	sess, ok := s.sessions[id]
	if !ok || sess.closing {
		return false
	}
	s.expire(id)
	return true
}

func (s *Server) expire(id int64) {
	s.sessions[id].closing = true
	s.closingQueue = append(s.closingQueue, id)
}

// HasInternal reports whether the server has queued work of its own: the
// closeSession of an expired session. Until it is applied, the session's
// requests are answered with SESSIONEXPIRED; that window is the only place
// a go-zookeeper caller ever sees zk.ErrSessionExpired.
func (s *Server) HasInternal() bool { return len(s.closingQueue) > 0 }

// StepInternal applies the oldest queued closeSession and returns the
// session it closed.
func (s *Server) StepInternal(nowMs int64) int64 {
	id := s.closingQueue[0]
	s.closingQueue = s.closingQueue[1:]
	s.closeSession(nowMs, id, nil)
	return id
}

// NodeInfo is what the server holds of one znode, for inspection.
type NodeInfo struct {
	Path     string
	Stat     zk.Stat // as a client would see it
	Data     []byte
	Children []string // in the order the server lists them
	// Owner is the session of an ephemeral node, 0 for any other (the
	// Stat hides the owner of containers and TTL nodes, as a server does).
	Owner int64
}

// Node returns what the server holds of path, if it exists. It changes
// nothing and sends nothing: for checks and tests, not for clients.
func (s *Server) Node(path string) (NodeInfo, bool) {
	n := s.nodes[path]
	if n == nil {
		return NodeInfo{}, false
	}
	info := NodeInfo{Path: path, Stat: n.stat(), Data: slices.Clone(n.data), Children: []string{}}
	if n.children != nil {
		info.Children = n.children.ordered()
	}
	if ownerKind(n.ephemeralOwner) == ownerSession {
		info.Owner = n.ephemeralOwner
	}
	return info, true
}

// Sessions returns the ids of the live sessions, in order; a session whose
// expiry is decided but whose close is not yet applied is not live.
func (s *Server) Sessions() []int64 {
	var ids []int64
	for _, sess := range s.sessionsByID {
		if !sess.closing {
			ids = append(ids, sess.id)
		}
	}
	return ids
}

// connOf is s.conns[conn] through connHint: a client's requests come one
// after another on one connection, and the map lookup was some 35
// instructions of each (BenchmarkSimThroughput).
func (s *Server) connOf(conn ConnID) (session int64, open bool) {
	if conn == s.connHint.conn && conn != 0 {
		return s.connHint.session, true
	}
	session, open = s.conns[conn]
	if open {
		s.connHint.conn, s.connHint.session = conn, session
	}
	return session, open
}

// setConn binds open connection conn to session (0: none yet).
func (s *Server) setConn(conn ConnID, session int64) {
	s.conns[conn] = session
	s.connHint.conn = 0
}

// deleteConn forgets connection conn.
func (s *Server) deleteConn(conn ConnID) {
	delete(s.conns, conn)
	s.connHint.conn = 0
}

// HasConn reports whether the server still has the connection open; a
// message that reaches a connection it closed is lost.
func (s *Server) HasConn(conn ConnID) bool {
	_, ok := s.conns[conn]
	return ok
}

// Restart models a standalone server's restart: every connection is
// dropped, the tree and the sessions survive (they are in the snapshot and
// the transaction log), and each session gets its full timeout again from
// now, as a restarted SessionTracker gives the sessions it loads.
func (s *Server) Restart(nowMs int64) {
	conns := slices.Sorted(maps.Keys(s.conns))
	for _, c := range conns {
		s.dropConn(c)
	}
	// A session marked closing but not yet closed was only marked in
	// memory: the restarted server loads it alive.
	s.closingQueue = nil
	for _, sess := range s.sessionsByID {
		sess.closing = false
		s.touch(nowMs, sess)
	}
}

// addSession adds a session the server does not have.
func (s *Server) addSession(sess *serverSession) {
	if _, ok := s.sessions[sess.id]; ok {
		panic(fmt.Sprintf("sim: session %#x added twice", sess.id))
	}
	s.sessions[sess.id] = sess
	if s.sessionsByID == nil {
		// Room for a run's few clients at once: grown one by one, the
		// list took four allocations where one does.
		s.sessionsByID = make([]*serverSession, 0, 8)
	}
	i, _ := slices.BinarySearchFunc(s.sessionsByID, sess.id, func(x *serverSession, id int64) int { return cmp.Compare(x.id, id) })
	s.sessionsByID = slices.Insert(s.sessionsByID, i, sess)
}

// removeSession forgets a session the server has.
func (s *Server) removeSession(id int64) {
	delete(s.sessions, id)
	if s.lastSession != nil && s.lastSession.id == id {
		s.lastSession = nil
	}
	i, ok := slices.BinarySearchFunc(s.sessionsByID, id, func(x *serverSession, id int64) int { return cmp.Compare(x.id, id) })
	if !ok {
		panic(fmt.Sprintf("sim: session %#x removed but not listed", id))
	}
	s.sessionsByID = slices.Delete(s.sessionsByID, i, i+1)
}

// closeSession applies a closeSession transaction (explicit close or
// expiry): the session's ephemerals are deleted under one zxid, in the
// order ZooKeeper keeps them, firing their watches; then its connection is
// closed. A closeSession request is answered before the close.
func (s *Server) closeSession(nowMs int64, id int64, reply *Request) {
	sess := s.sessions[id]
	t := s.begin()
	if sess.ephemerals != nil {
		// The closeSession transaction lists the paths from a clone of the
		// session's set (DataTree.getEphemerals), so they go in the clone's
		// order.
		for _, path := range sess.ephemerals.clonedOrder() {
			s.deleteNode(t, path)
		}
	}
	s.removeSession(id)
	s.commit(t)
	if sess.conn != 0 {
		conn := sess.conn
		if reply != nil {
			s.reply(conn, Response{Xid: reply.Xid, Zxid: t.zxid})
		}
		s.dropConn(conn)
		s.send(Output{Conn: conn, Kind: OutClose})
	}
}

// Receive handles one request that arrived on a connection and queues its
// reply, and the watch events it fires, in Outputs.
func (s *Server) Receive(nowMs int64, conn ConnID, req Request) {
	s.receive(nowMs, conn, &req)
}

// receive is Receive with the request by pointer, not copied at each call
// on its way (a Request is some 360 bytes); the world hands it the request
// where it lies in the connection's queue. It keeps no pointer to req.
func (s *Server) receive(nowMs int64, conn ConnID, req *Request) {
	id, ok := s.connOf(conn)
	if !ok {
		panic(fmt.Sprintf("sim: request on closed connection %d", conn))
	}
	s.receiveOn(nowMs, conn, id, req, 0)
}

// receiveOn is receive for a caller that has looked the connection up
// already: it is open, bound to session id (s.conns[conn], 0 for none).
// The world looks it up to know whether the connection is open before it
// delivers a request, and handed the answer on rather than have receive
// look again (a map lookup, some 35 instructions a request). size is the
// request's packetLen when the caller has measured it (the sending client
// has), or 0.
func (s *Server) receiveOn(nowMs int64, conn ConnID, id int64, req *Request, size int) {
	if size == 0 {
		size = packetLen(req)
	}
	if size > s.cfg.MaxPacketBytes || crashesServer(req) || req.Op == OpAuth || req.Op == OpSASL {
		s.receiveUnsessioned(conn, req, size)
		return
	}
	s.caller = conn
	sess := s.lastSession
	if sess == nil || sess.id != id {
		sess = s.sessions[id]
		s.lastSession = sess
	}
	if sess == nil || sess.closing {
		// The session has expired and its closeSession is pending:
		// SessionTrackerImpl.checkSession throws SessionExpired.
		s.replyCode(conn, req.Xid, s.lastZxid, CodeSessionExpired)
		return
	}
	s.touch(nowMs, sess)
	if req.Malformed {
		s.receiveRare(nowMs, conn, sess, req)
		return
	}
	switch req.Op {
	case OpExists:
		s.exists(conn, req)
	case OpGetData:
		s.getData(conn, req)
	case OpGetChildren:
		s.getChildren(conn, req)
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL, OpDelete, OpSetData, OpCheck, OpSetACL:
		// The reply is written where it goes out, not built aside and
		// copied there (a Response is some 260 bytes); the watch events
		// the commit sends go out before it, and it is moved after them.
		t := s.begin()
		k := len(s.outputs)
		r := s.replySlot(conn)
		var w write
		s.writeInto(nowMs, sess, req, t, r, &w)
		r.Xid, r.Zxid = req.Xid, t.zxid
		s.commit(t)
		s.replyLast(k)
	default:
		s.receiveRare(nowMs, conn, sess, req)
	}
}

// receiveUnsessioned handles, for receiveOn, the requests it answers
// before it looks at their session: one too long or that crashes the
// server, and authentication. Kept out of receiveOn with every rarer
// request (receiveRare): their copies of the request and outputs built
// aside were most of its code, which took about 6 KB of the instruction
// cache's 32 KB on every request.
//
//go:noinline
func (s *Server) receiveUnsessioned(conn ConnID, req *Request, size int) {
	switch {
	case size > s.cfg.MaxPacketBytes || crashesServer(req):
		// NIOServerCnxn reads the length first and closes the connection
		// on a "Len error": the request is never read, nothing is answered.
		s.dropConn(conn)
		s.send(Output{Conn: conn, Kind: OutClose})
	case req.Op == OpAuth:
		s.authenticate(conn, *req)
	case req.Op == OpSASL:
		s.sasl(conn, *req)
	}
}

// receiveRare handles, for receiveOn, a malformed request and the ops
// other than reads and single writes (see receiveUnsessioned for why it
// is apart); the session is live.
//
//go:noinline
func (s *Server) receiveRare(nowMs int64, conn ConnID, sess *serverSession, req *Request) {
	if req.Malformed {
		s.marshallingError(conn, *req)
		return
	}
	switch req.Op {
	case OpPing:
		s.replyCode(conn, req.Xid, s.lastZxid, CodeOK)
	case OpCloseSession:
		s.closeSession(nowMs, sess.id, req)
	case OpSync:
		s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, Path: req.Path})
	case OpSetWatches:
		s.setWatches(conn, *req)
	case OpGetACL:
		s.getACL(conn, *req)
	case OpWhoAmI:
		s.whoAmI(conn, *req)
	case OpMulti:
		t := s.begin()
		resp := s.multi(nowMs, sess, *req, t)
		s.commit(t)
		resp.Xid, resp.Zxid = req.Xid, t.zxid
		s.reply(conn, resp)
	default:
		s.receiveMore(nowMs, conn, sess, *req)
	}
}

func (s *Server) reply(conn ConnID, r Response) {
	s.send(Output{Conn: conn, Kind: OutReply, Reply: r})
}

// replySlot queues a zero reply for conn and returns it, to be filled in
// place; it is good until the next output.
func (s *Server) replySlot(conn ConnID) *Response {
	return &s.outputSlot(conn, OutReply).Reply
}

// outputSlot queues a zero output of kind for conn and returns it, to be
// filled in place; it is good until the next output. An Output is some
// 400 bytes: built aside and handed down by value (reply, send), it was
// copied twice more on its way into the queue.
func (s *Server) outputSlot(conn ConnID, kind OutputKind) *Output {
	if len(s.outputs) == cap(s.outputs) {
		s.growOutputs()
	}
	s.outputs = append(s.outputs, Output{})
	o := &s.outputs[len(s.outputs)-1]
	o.Conn, o.Kind = conn, kind
	return o
}

// replyCode queues a reply of just a header: xid, zxid and code.
func (s *Server) replyCode(conn ConnID, xid int32, zxid int64, code Code) {
	r := s.replySlot(conn)
	r.Xid, r.Zxid, r.Err = xid, zxid, code
}

// replyLast moves the reply at outputs[k] after the outputs sent since
// (the events of its transaction), where a reply queued after its commit
// would be.
func (s *Server) replyLast(k int) {
	if len(s.outputs) == k+1 {
		return
	}
	reply := s.outputs[k]
	copy(s.outputs[k:], s.outputs[k+1:])
	s.outputs[len(s.outputs)-1] = reply
}

// --- reads ---

func (s *Server) exists(conn ConnID, req *Request) {
	if strings.IndexByte(req.Path, 0) >= 0 {
		// FinalRequestProcessor refuses a NUL in an exists path before it
		// looks (and sets no watch); the other reads just find nothing
		// (measured on 3.8.0).
		s.replyCode(conn, req.Xid, s.lastZxid, CodeBadArguments)
		return
	}
	n := s.readNode(req.Path)
	if req.Watch {
		// exists sets a data watch whether or not the node exists; on a
		// missing node it is the watch that fires on creation.
		addWatcher(s.dataWatches, req.Path, conn)
	}
	if n == nil {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoNode)
		return
	}
	r := s.replySlot(conn)
	r.Xid, r.Zxid = req.Xid, s.lastZxid
	n.statInto(&r.Stat)
}

func (s *Server) getData(conn ConnID, req *Request) {
	n := s.readNode(req.Path)
	if n == nil {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoNode)
		return
	}
	if !s.allowed(n.acl, zk.PermRead) {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoAuth)
		return
	}
	if req.Watch {
		addWatcher(s.dataWatches, req.Path, conn)
	}
	r := s.replySlot(conn)
	r.Xid, r.Zxid, r.Data = req.Xid, s.lastZxid, cloneData(n.data)
	n.statInto(&r.Stat)
}

func (s *Server) getChildren(conn ConnID, req *Request) {
	n := s.readNode(req.Path)
	if n == nil {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoNode)
		return
	}
	if !s.allowed(n.acl, zk.PermRead) {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoAuth)
		return
	}
	if req.Watch {
		addWatcher(s.childWatches, req.Path, conn)
	}
	children := s.childList(n)
	r := s.replySlot(conn)
	r.Xid, r.Zxid, r.Children = req.Xid, s.lastZxid, children
	n.statInto(&r.Stat)
}

// setWatches re-registers a reconnected client's watches, firing at once
// those whose trigger it missed since relativeZxid (DataTree.setWatches).
// An exist watch on a node that was created and deleted while the client
// was away is re-registered silently: the blind spot the Programmer's Guide
// warns about.
func (s *Server) setWatches(conn ConnID, req Request) {
	for _, path := range req.DataWatches {
		n := s.readNode(path)
		switch {
		case n == nil:
			s.event(conn, zk.EventNodeDeleted, path)
		case n.mzxid > req.RelativeZxid:
			s.event(conn, zk.EventNodeDataChanged, path)
		default:
			addWatcher(s.dataWatches, path, conn)
		}
	}
	for _, path := range req.ExistWatches {
		if s.readNode(path) != nil {
			s.event(conn, zk.EventNodeCreated, path)
		} else {
			addWatcher(s.dataWatches, path, conn)
		}
	}
	for _, path := range req.ChildWatches {
		n := s.readNode(path)
		switch {
		case n == nil:
			s.event(conn, zk.EventNodeDeleted, path)
		case n.pzxid > req.RelativeZxid:
			s.event(conn, zk.EventNodeChildrenChanged, path)
		default:
			addWatcher(s.childWatches, path, conn)
		}
	}
	s.replyCode(conn, req.Xid, s.lastZxid, CodeOK)
}

func (s *Server) event(conn ConnID, typ zk.EventType, path string) {
	e := &s.outputSlot(conn, OutEvent).Event
	e.Type, e.State, e.Path = typ, zk.StateSyncConnected, path
}

// --- writes ---

// txn is one transaction being applied: its zxid, the paths it touched
// (whose invariants are checked when it commits), and the watch events it
// fires when it commits.
type txn struct {
	zxid    int64
	touched []touchedNode
	events  []pendingEvent
}

// touchedNode is a node a transaction changed, with where its last name
// starts in its path for a node created or deleted (0 for a node changed
// in place): the invariants' check need not look for the last slash of a
// lock node's long name again, and checks the parent of a node created
// or deleted with it (checkNode).
//
// node and parent are the node and its parent as the change left the
// tree, where the change had them: node is nil for a node deleted (and
// for one changed in place whose change did not say). A transaction of
// one change leaves them so until it commits, and its check asks the
// tree for neither (commit).
type touchedNode struct {
	path         string
	nameAt       int
	node, parent *znode
}

type pendingEvent struct {
	path string
	typ  zk.EventType
	acl  aclID // the node's ACL when the event fired, which a watcher needs READ on
}

// begin starts a transaction. Transactions never overlap, so the server
// reuses one record for all of them.
func (s *Server) begin() *txn {
	s.lastZxid++
	t := &s.txn
	t.zxid = s.lastZxid
	t.touched = t.touched[:0]
	t.events = t.events[:0]
	return t
}

// commit fires the transaction's watches, in the order its changes were
// made, and checks the invariants of every node it touched.
func (s *Server) commit(t *txn) {
	if t.zxid != s.lastZxid {
		panic(fmt.Sprintf("sim: transaction %#x committed after %#x", t.zxid, s.lastZxid))
	}
	if len(t.events) > 0 {
		s.fire(t.events)
	}
	if !s.nodesCheckedElsewhere {
		// A transaction of one change (a single write) has changed the
		// tree no more since: the nodes it names are the tree's, and
		// its check need not look them up (some ninety instructions a
		// write in BenchmarkSimThroughput). After two, the first's may
		// be out of date: a multi's create and then delete of one node.
		alone := len(t.touched) == 1
		for i := range t.touched {
			s.checkNode(&t.touched[i], alone)
		}
	}
	if s.checkEvery {
		if err := s.CheckInvariants(); err != nil {
			panic(err)
		}
	}
}

// changeRecord is what a write sees of a node: the tree as the earlier ops of
// the same multi left it. It plays the part of ZooKeeper's ChangeRecord:
// every op of a multi is validated against it before any is applied, so a
// failing multi never touches the tree.
type changeRecord struct {
	path        string
	node        *znode // the node as the transaction found it, nil if there was none
	exists      bool
	version     int32
	cversion    int32
	numChildren int
	owner       int64
	acl         aclID // the ACL the ops of a multi check, a node's it creates included
}

// overlay holds the records of one multi. They are kept by pointer: a
// record handed out must stay the one in the overlay when later lookups
// add records (with records stored by value, a parent record fetched
// before its child's was lost when the slice grew, and two sequential
// creates in one multi got the same suffix).
type overlay []*changeRecord

// record returns the overlay's record of path, making it from the tree on
// first sight. Records come from a fixed array the server reuses (it never
// moves, so the pointers stay good), and from the heap past its size.
//
// A nil overlay is a single write's: its validation asks for each path
// once (a node and its parent, or one node), so a record is made from the
// tree every time and kept nowhere, without the search and the append a
// multi's overlay needs (TestSingleWriteNeedsNoOverlay holds the two
// alike). The one op that names a path twice, a create of "/" (parent
// and node), finds the node existing either way.
func (s *Server) record(o *overlay, path string) *changeRecord {
	if o != nil {
		for _, r := range *o {
			if r.path == path {
				return r
			}
		}
	}
	var r *changeRecord
	if s.recordsUsed < len(s.records) {
		r = &s.records[s.recordsUsed]
		s.recordsUsed++
	} else {
		r = new(changeRecord)
	}
	// Field by field, every one of them (TestRecordWritesEveryField): a
	// literal was built aside and copied in.
	n := s.lookup(path)
	r.path, r.node = path, n
	if n != nil {
		r.exists, r.version, r.cversion, r.numChildren, r.owner, r.acl = true, n.version, n.cversion, n.numChildren(), n.ephemeralOwner, n.acl
	} else {
		r.exists, r.version, r.cversion, r.numChildren, r.owner, r.acl = false, 0, 0, 0, 0, 0
	}
	if o != nil {
		*o = append(*o, r)
	}
	return r
}

// write is a validated op, ready to apply with its request. The request
// goes beside it by pointer rather than in it by value: a Request is some
// 350 bytes, and its copies were a tenth of writeOne's time
// (BenchmarkSimThroughput's profile). It is not a field either: the paths
// of a write leak into the transaction, and with them, to the compiler's
// escape analysis, every pointer in the write (the request would move to
// the heap, an allocation a write).
type write struct {
	path  string // the path to act on: with the sequence suffix for a sequential create
	owner int64  // a create's ephemeralOwner
	acl   aclID  // a create's or a setACL's ACL, validated and expanded
	// nameAt is where a create's or a delete's last name starts in path,
	// as validation found it: the path's last slash is some fifty bytes
	// from its end in a lock node's name, and apply and the invariants'
	// check looked for it again. It fills what was padding.
	nameAt int32
	// node and parent are the nodes at path and at its parent as the tree
	// held them when validation looked (nil where there was none, or where
	// it did not look): a single write is applied to the tree it was
	// validated against, so apply need not look them up again. A multi
	// clears them: its ops change the tree one after another.
	node, parent *znode
	// nameHash is a create's node name's javaSpreadHash, for its
	// parent's children set; pathHash an ephemeral create's path's, for
	// its session's ephemerals. Validation hashes them once, and every
	// member of an ensemble applies the create with them (each hashing
	// them again was a fiftieth of an exploration on three servers).
	nameHash, pathHash uint32
}

// validate checks one write op against the overlay and records its effect
// there. Its order of checks is PrepRequestProcessor.pRequest2Txn's, so
// that when several errors apply the same one is reported. It fills in
// the write, which is zero, when the op is valid, and leaves it zero when
// not: the write goes in where the caller keeps it rather than returned
// up through validateCreate and validate by value.
func (s *Server) validate(sess *serverSession, req *Request, o *overlay, w *write) Code {
	switch req.Op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL:
		return s.validateCreate(sess, req, o, w)
	case OpDelete:
		// A delete's path is not validated beyond a slash and no NUL: a
		// malformed one is simply not found (measured on 3.8.0: delete
		// "/a/" and "/\U0001D11E" give NONODE, "x" gives BADARGUMENTS).
		parentPath, ok := parentForWrite(req.Path)
		if !ok || isSpecialPath(req.Path) {
			return CodeBadArguments
		}
		parent := s.record(o, parentPath)
		if !parent.exists {
			return CodeNoNode
		}
		// The parent's DELETE permission is checked before the node is
		// looked up (measured on 3.8.0: deleting a missing child of a node
		// without DELETE gives NOAUTH).
		if !s.allowed(parent.acl, zk.PermDelete) {
			return CodeNoAuth
		}
		n := s.record(o, req.Path)
		if !n.exists {
			return CodeNoNode
		}
		if req.Version != -1 && req.Version != n.version {
			return CodeBadVersion
		}
		if n.numChildren > 0 {
			return CodeNotEmpty
		}
		n.exists = false
		parent.numChildren--
		w.path, w.node, w.parent, w.nameAt = req.Path, n.node, parent.node, int32(nameStart(parentPath))
		return CodeOK
	case OpSetData, OpCheck:
		if validateServerPath(req.Path, false) != nil {
			return CodeBadArguments
		}
		n := s.record(o, req.Path)
		if !n.exists {
			return CodeNoNode
		}
		perm := int32(zk.PermRead)
		if req.Op == OpSetData {
			perm = zk.PermWrite
		}
		if !s.allowed(n.acl, perm) {
			return CodeNoAuth
		}
		if req.Version != -1 && req.Version != n.version {
			return CodeBadVersion
		}
		if req.Op == OpSetData {
			n.version++
		}
		w.path, w.node = req.Path, n.node
		return CodeOK
	case OpSetACL:
		var code Code
		*w, code = s.validateSetACL(req, o)
		return code
	}
	panic(fmt.Sprintf("sim: %v is not a write", req.Op))
}

func (s *Server) validateCreate(sess *serverSession, req *Request, o *overlay, w *write) Code {
	mode := req.Mode
	owner, code := s.createOwner(sess, req)
	if code != CodeOK {
		return code
	}
	sequential := mode == zk.FlagSequence || mode == zk.FlagEphemeralSequential || mode == zk.FlagPersistentSequentialWithTTL
	// The common create is asked each of its questions once: a plain
	// path (plainPath) holds no NUL and passes the path rules, and so
	// does it with a sequential suffix (digits and a '-', no slash, a
	// digit last); and world:anyone with every permission is both its
	// own fixup and the table's aclOpen. Each was asked two or three
	// times, a lock node's path some ninety bytes long.
	plain := plainPath(req.Path)
	open := len(req.ACL) == 1 && req.ACL[0].Perms == zk.PermAll && isWorldAnyone(req.ACL[0])
	// validatePathForCreate only asks for a slash and no NUL; the full
	// path rules are applied after the parent and its ACL are checked, to
	// the path with its suffix (measured on 3.8.0: "m/bad" and
	// "/missing/." give NONODE, "/a/." gives BADARGUMENTS).
	var parentPath string
	var ok bool
	if plain {
		parentPath = parentOfPlain(req.Path)
	} else if parentPath, ok = parentForWrite(req.Path); !ok {
		return CodeBadArguments
	}
	acl := req.ACL
	if !open {
		if acl, ok = s.fixupACL(req.ACL); !ok {
			return CodeInvalidACL
		}
	}
	parent := s.record(o, parentPath)
	if !parent.exists {
		return CodeNoNode
	}
	if !s.allowed(parent.acl, zk.PermCreate) {
		return CodeNoAuth
	}
	path := req.Path
	if sequential {
		// The suffix is the parent's cversion before this create, as
		// PrepRequestProcessor formats it ("%010d"); past 2^31-1 the int
		// wraps and the suffix turns negative, as on a real server.
		path = sequentialPath(path, parent.cversion)
	}
	if !plain && validateServerPath(path, false) != nil {
		return CodeBadArguments
	}
	n := s.record(o, path)
	if n.exists {
		return CodeNodeExists
	}
	if ownerKind(parent.owner) == ownerSession {
		return CodeNoChildrenForEphemeral
	}
	id := aclOpen
	if !open {
		id = s.acls.intern(acl)
	}
	*n = changeRecord{path: path, exists: true, owner: owner, acl: id}
	parent.numChildren++
	parent.cversion++
	// The name starts after the parent's path and its slash: the suffix
	// made the path longer, not its parent.
	w.path, w.owner, w.acl, w.parent, w.nameAt = path, owner, id, parent.node, int32(nameStart(parentPath))
	w.nameHash = javaSpreadHash(path[w.nameAt:])
	if ownerKind(owner) == ownerSession {
		w.pathHash = javaSpreadHash(path)
	}
	return CodeOK
}

// split is a create's or a delete's parent's path and last name, as
// validation found them.
func (w *write) split() (parent, name string) {
	if w.nameAt == 0 {
		panic("sim: invariant: a create or a delete without its name's start")
	}
	return splitAt(w.path, int(w.nameAt))
}

// parentForWrite is PrepRequestProcessor's first look at a create's or a
// delete's path (validatePathForCreate, and the same test for delete): it
// must hold a slash and no NUL, and the parent is everything before the
// last slash, the empty string standing for the root as it does in
// DataTree's node map.
func parentForWrite(path string) (string, bool) {
	i := LastSlash(path)
	if i < 0 || strings.IndexByte(path, 0) >= 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return path[:i], true
}

// parentOfPlain is parentForWrite of a plain path (plainPath), which
// holds a slash first and no NUL.
func parentOfPlain(path string) string {
	if i := LastSlash(path); i > 0 {
		return path[:i]
	}
	return "/"
}

// apply performs a validated write within t; it cannot fail.
//
// Each write is held to the permission a real server requires for it, on
// the node as the tree holds it (assertPermitted).
func (s *Server) apply(nowMs int64, sess *serverSession, req *Request, w write, t *txn) Response {
	var resp Response
	s.applyInto(nowMs, sess, req, &w, t, &resp)
	return resp
}

// applyInto is apply that writes its reply into out, which is zero: the
// reply is written once, where the caller keeps it, not returned up
// through each call (a Response is some 260 bytes). It takes the write
// by pointer, as createNode does, which a copy at each call cost more
// than the write's own fields; it keeps no pointer to it.
func (s *Server) applyInto(nowMs int64, sess *serverSession, req *Request, w *write, t *txn, out *Response) {
	switch req.Op {
	case OpCreate, OpCreate2, OpCreateCont, OpCreateTTL:
		s.createNode(nowMs, sess, req, w, t, out)
		return
	case OpDelete:
		parentPath, _ := w.split()
		parent := w.parent
		if parent == nil {
			parent = s.nodes[parentPath]
		}
		s.assertPermitted(parentPath, parent, zk.PermDelete)
		n := w.node
		if n == nil {
			n = s.nodes[w.path]
		}
		s.deleteKnownNode(t, w.path, n, parentPath, parent)
		return
	case OpSetData:
		n := w.node
		if n == nil {
			n = s.nodes[w.path]
		}
		s.assertPermitted(w.path, n, zk.PermWrite)
		n.data = copyData(n.data, req.Data)
		n.version++
		n.mzxid = t.zxid
		n.mtime = s.wallMs(nowMs)
		t.touched = append(t.touched, touchedNode{path: w.path, node: n})
		if s.watched() {
			t.events = append(t.events, pendingEvent{w.path, zk.EventNodeDataChanged, n.acl})
		}
		n.statInto(&out.Stat)
		return
	case OpCheck:
		s.assertPermitted(w.path, s.nodes[w.path], zk.PermRead)
		return
	case OpSetACL:
		*out = s.setACL(*w, t)
		return
	}
	panic(fmt.Sprintf("sim: %v is not a write", req.Op))
}

// writeOne validates and applies a single write, and returns the write
// it applied (its zero value for a failed one). A failed write is still a
// transaction: PrepRequestProcessor turns it into an error txn with a zxid
// of its own.
func (s *Server) writeOne(nowMs int64, sess *serverSession, req Request, t *txn) (Response, write) {
	var resp Response
	var w write
	s.writeInto(nowMs, sess, &req, t, &resp, &w)
	return resp, w
}

// writeInto is writeOne with the request by pointer, writing its reply
// into out and the write it applied into w, both zero (w stays so for a
// failed write), rather than returning them; it keeps no pointer to any.
func (s *Server) writeInto(nowMs int64, sess *serverSession, req *Request, t *txn, out *Response, w *write) {
	s.recordsUsed = 0
	code := s.validate(sess, req, nil, w) // one op: no overlay (record)
	if s.prep {
		s.prepWrite = checkedWrite{ok: code == CodeOK, w: *w, valid: true}
	}
	if code != CodeOK {
		out.Err = code
		return
	}
	s.applyInto(nowMs, sess, req, w, t, out)
}

// multi applies the ops of a multi atomically in one transaction: either
// all succeed, or the tree is left as it was and every op reports an error
// result: OK before the failing op, its error, RUNTIMEINCONSISTENCY after
// (PrepRequestProcessor and DataTree.processTxn for OpCode.multi).
func (s *Server) multi(nowMs int64, sess *serverSession, req Request, t *txn) Response {
	o := s.overlay[:0]
	s.recordsUsed = 0
	defer func() { s.overlay = o[:0] }()
	writes := make([]write, len(req.Ops))
	results := make([]MultiResult, len(req.Ops))
	for _, op := range req.Ops {
		if !multiWriteOp(op.Op) {
			return Response{Err: CodeMarshallingError}
		}
	}
	ops := make([]Request, len(req.Ops)) // the requests the writes apply
	for i, op := range req.Ops {
		ops[i] = multiCreateOp(op)
		if multiCreateUnreadable(ops[i]) {
			return Response{Err: CodeMarshallingError}
		}
		var w write
		code := s.validate(sess, &ops[i], &o, &w)
		if code != CodeOK {
			for j := range results {
				switch {
				case j < i:
					results[j] = MultiResult{Err: CodeOK}
				case j == i:
					results[j] = MultiResult{Err: code}
				default:
					results[j] = MultiResult{Err: CodeRuntimeInconsistency}
				}
			}
			return Response{Multi: results}
		}
		// The ops apply one after another, each to the tree the ones
		// before it left: not to the nodes validation found.
		w.node, w.parent = nil, nil
		writes[i] = w
	}
	for i, w := range writes {
		resp := s.apply(nowMs, sess, &ops[i], w, t)
		results[i] = MultiResult{Op: multiResultOp(ops[i].Op), Path: resp.Path, Stat: resp.Stat}
	}
	return Response{Multi: results}
}

func (s *Server) createNode(nowMs int64, sess *serverSession, req *Request, w *write, t *txn, out *Response) {
	parentPath, name := w.split()
	parent := w.parent
	if parent == nil {
		parent = s.nodes[parentPath]
	}
	s.assertPermitted(parentPath, parent, zk.PermCreate)
	wall := s.wallMs(nowMs)
	n, buf := s.takeNode()
	// Field by field, every one of them (TestCreateWritesEveryField): a
	// literal was built aside and copied in.
	n.data, n.children = copyData(buf, req.Data), nil
	n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime = t.zxid, t.zxid, t.zxid, wall, wall
	n.ephemeralOwner, n.version, n.cversion, n.aversion, n.acl = w.owner, 0, 0, 0, w.acl
	n.nameHash, n.pathHash, n.hashed = w.nameHash, w.pathHash, true
	s.nodes[w.path] = n
	s.lookups.update(w.path, n)
	s.noteTreeChange(w.path, true)
	if parent.children == nil {
		parent.children = newJavaSet(8)
	}
	parent.children.addHashed(name, w.nameHash)
	parent.cversion++
	parent.pzxid = t.zxid
	switch ownerKind(w.owner) {
	case ownerSession:
		if sess.ephemerals == nil {
			sess.ephemerals = newJavaSet(16)
		}
		sess.ephemerals.addHashed(w.path, w.pathHash)
	case ownerContainer, ownerTTL:
		s.expiringNodes++
	}
	t.touched = append(t.touched, touchedNode{w.path, int(w.nameAt), n, parent})
	if s.watched() {
		t.events = append(t.events, pendingEvent{w.path, zk.EventNodeCreated, n.acl}, pendingEvent{parentPath, zk.EventNodeChildrenChanged, parent.acl})
	}
	out.Path = w.path
	n.statInto(&out.Stat)
}

type ownerKindType int

const (
	ownerNone ownerKindType = iota
	ownerSession
	ownerContainer
	ownerTTL
)

// ownerKind decodes an ephemeralOwner the way EphemeralType.get does.
func ownerKind(owner int64) ownerKindType {
	switch {
	case owner == 0:
		return ownerNone
	case owner == containerOwner:
		return ownerContainer
	case owner&ttlOwnerMask == ttlOwnerMask:
		return ownerTTL
	}
	return ownerSession
}

// isSpecialPath reports the nodes a client may not delete
// (DataTree.isSpecialPath).
func isSpecialPath(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

// deleteNode removes a childless node within t and queues its watch
// events: deleted on the node, children-changed on its parent.
func (s *Server) deleteNode(t *txn, path string) {
	parentPath, _ := parentOf(path)
	s.deleteKnownNode(t, path, s.nodes[path], parentPath, s.nodes[parentPath])
}

// deleteKnownNode is deleteNode for a caller that has the node and its
// parent at hand.
func (s *Server) deleteKnownNode(t *txn, path string, n *znode, parentPath string, parent *znode) {
	name := path[nameStart(parentPath):]
	delete(s.nodes, path)
	s.lookups.update(path, nil)
	s.noteTreeChange(path, false)
	nameHash, pathHash := n.hashes(path, name)
	if !parent.children.removeHashed(name, nameHash) {
		panic(fmt.Sprintf("sim: invariant: %s did not list %s, deleted", parentPath, name))
	}
	// DataTree.deleteNode only raises pzxid: a create applied with a
	// higher zxid may already have set it.
	if t.zxid > parent.pzxid {
		parent.pzxid = t.zxid
	}
	switch ownerKind(n.ephemeralOwner) {
	case ownerSession:
		if sess := s.sessions[n.ephemeralOwner]; sess != nil {
			if !sess.ephemerals.removeHashed(path, pathHash) {
				panic(fmt.Sprintf("sim: invariant: session %#x did not list its ephemeral %s, deleted", sess.id, path))
			}
		}
	case ownerContainer, ownerTTL:
		s.expiringNodes--
	}
	t.touched = append(t.touched, touchedNode{path, nameStart(parentPath), nil, parent})
	if s.watched() {
		t.events = append(t.events, pendingEvent{path, zk.EventNodeDeleted, n.acl}, pendingEvent{parentPath, zk.EventNodeChildrenChanged, parent.acl})
	}
	s.putNode(n)
}

// pathCache remembers the last few lookups of the tree by path, whether
// they found a node or not: one client's writes and reads come back to
// the same few paths (a node and its parent), and a lookup in the tree
// hashes the path, which was most of record's time and a tenth of
// BenchmarkSimThroughput's. Every create and delete updates the entry of
// its path (update), so an entry is always what the tree holds;
// CheckInvariants asserts it. Entries go round in a fixed order: nothing
// depends on a map's.
type pathCache struct {
	paths [4]string
	nodes [4]*znode
	next  int
}

// lookup is s.nodes[path] through the cache. The empty path is never
// cached: it marks a free entry.
func (s *Server) lookup(path string) *znode {
	if path == "" {
		return s.nodes[path]
	}
	c := &s.lookups
	for i := range c.paths {
		if c.paths[i] == path {
			return c.nodes[i]
		}
	}
	n := s.nodes[path]
	c.paths[c.next], c.nodes[c.next] = path, n
	c.next = (c.next + 1) % len(c.paths)
	return n
}

// update records that the tree now holds n at path (nil: no node).
func (c *pathCache) update(path string, n *znode) {
	for i := range c.paths {
		if c.paths[i] == path {
			c.nodes[i] = n
		}
	}
}

// check reports an entry that disagrees with the tree.
func (c *pathCache) check(nodes map[string]*znode) error {
	for i, path := range c.paths {
		if path != "" && nodes[path] != c.nodes[i] {
			return fmt.Errorf("sim: invariant: the lookup cache holds a stale node for %s", path)
		}
	}
	return nil
}

// maxFreeNodes bounds the deleted nodes kept for reuse, and
// maxReusedDataBytes the data buffer one keeps: past it the buffer goes,
// so a large value deleted long ago is not held for a small one.
const (
	maxFreeNodes       = 64
	maxReusedDataBytes = 256
)

// takeNode returns a node for a create, a deleted one when there is one,
// and the data buffer it had (nil for none) for copyData to reuse. The
// node's fields are the caller's to write, all of them.
func (s *Server) takeNode() (*znode, []byte) {
	k := len(s.freeNodes)
	if k == 0 {
		return new(znode), nil
	}
	n := s.freeNodes[k-1]
	s.freeNodes[k-1] = nil
	s.freeNodes = s.freeNodes[:k-1]
	return n, n.data
}

// putNode keeps a node deleteKnownNode took out of the tree for reuse.
// Nothing refers to a deleted node by then: the tree, the overlay and
// the writes of the transaction hold paths, and a write's node pointers
// serve only until it is applied. Its children set is dropped (a set
// keeps the capacity it grew to, which decides a Java HashSet's order: a
// new node's must start afresh), and so is a large data buffer.
func (s *Server) putNode(n *znode) {
	if len(s.freeNodes) >= maxFreeNodes {
		return
	}
	data := n.data
	if cap(data) > maxReusedDataBytes {
		data = nil
	}
	*n = znode{data: data}
	s.freeNodes = append(s.freeNodes, n)
}

// cloneData is slices.Clone(data) for a reply: a copy the client owns,
// nil for nil and empty for empty. It makes the copy at its length rather
// than appending to nothing, which sized the allocation through
// growslice (a getData's copy of five bytes cost as much as the rest of
// its reply).
func cloneData(data []byte) []byte {
	if data == nil {
		return nil
	}
	c := make([]byte, len(data))
	copy(c, data)
	return c
}

// copyData is slices.Clone(src) written into buf when buf can hold it:
// a node's data is its own (every read copies it out, and a snapshot
// encodes it before it returns), so a node may reuse its own buffer, or
// a deleted node's. Like slices.Clone it keeps nil apart from empty.
func copyData(buf, src []byte) []byte {
	if src == nil {
		return nil
	}
	if buf == nil || cap(buf) < len(src) {
		return slices.Clone(src)
	}
	return append(buf[:0], src...)
}

// watched reports whether any connection watches anything. The writes
// record the events they fire only then: without a watch, fire sends
// nothing, and none is set while a transaction applies (reads set them).
// Recording and walking events no one watches was a fiftieth of
// BenchmarkSimThroughput, whose client sets no watch.
func (s *Server) watched() bool {
	return len(s.dataWatches.paths) != 0 || len(s.childWatches.paths) != 0
}

// fire sends the events in order to the connections watching: created and
// data-changed go to data watches, children-changed to child watches, and
// deleted to both, once per connection (DataTree.createNode, deleteNode,
// setData).
func (s *Server) fire(events []pendingEvent) {
	for _, e := range events {
		switch e.typ {
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
			s.fired[0] = s.trigger(s.dataWatches, e.path, e.typ, e.acl, nil, s.fired[0][:0])
		case zk.EventNodeChildrenChanged:
			s.fired[0] = s.trigger(s.childWatches, e.path, e.typ, e.acl, nil, s.fired[0][:0])
		case zk.EventNodeDeleted:
			s.fired[0] = s.trigger(s.dataWatches, e.path, e.typ, e.acl, nil, s.fired[0][:0])
			s.fired[1] = s.trigger(s.childWatches, e.path, e.typ, e.acl, s.fired[0], s.fired[1][:0])
		}
	}
}

// sweepContainers deletes containers that once had children and have none
// now, and TTL nodes whose TTL has passed since their last change and that
// have no children, as ContainerManager.getCandidates selects them; each
// deletion is a transaction of its own (deleteContainer).
func (s *Server) sweepContainers(nowMs int64) {
	var candidates []string
	wall := s.wallMs(nowMs)
	for path, n := range s.nodes {
		if n.numChildren() != 0 {
			continue
		}
		switch ownerKind(n.ephemeralOwner) {
		case ownerContainer:
			if n.cversion > 0 {
				candidates = append(candidates, path)
			}
		case ownerTTL:
			ttl := n.ephemeralOwner &^ ttlOwnerMask
			if wall-n.mtime > ttl {
				candidates = append(candidates, path)
			}
		}
	}
	slices.Sort(candidates)
	for _, path := range candidates {
		t := s.begin()
		s.deleteNode(t, path)
		s.commit(t)
	}
}

// sequentialPath is path followed by v as fmt's "%010d" formats it (the
// sign counts in the width), built in one allocation.
func sequentialPath(path string, v int32) string {
	var digits [11]byte
	d := strconv.AppendInt(digits[:0], int64(v), 10)
	sign := 0
	if v < 0 {
		sign = 1
	}
	pad := max(10-len(d), 0)
	var b strings.Builder
	b.Grow(len(path) + pad + len(d))
	b.WriteString(path)
	b.Write(d[:sign])
	for range pad {
		b.WriteByte('0')
	}
	b.Write(d[sign:])
	return b.String()
}
