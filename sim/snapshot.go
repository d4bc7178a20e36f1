package sim

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Snapshot serializes the server's whole state between two inputs: the
// tree, ACLs, sessions, live connections with their identities and
// watches, the expired sessions waiting to close, and the counters. The
// server RestoreServer makes of it answers every later input exactly as
// this one does, byte for byte: a durable driver (wire's journal) writes a
// snapshot instead of replaying its whole log, as ZooKeeper writes its
// DataTree and sessions to snapshot.<zxid> every snapCount transactions.
// Unlike ZooKeeper's fuzzy snapshot it is taken between inputs, so it
// holds exactly the inputs before it; and it keeps connections and
// watches, which ZooKeeper does not need (its log holds transactions, this
// driver's log holds requests, which need their connection to be
// interpreted).
//
// The bytes are the same for the same state. It fails only if the
// server's outputs have not been taken (Outputs): they would be lost.
func (s *Server) Snapshot() ([]byte, error) {
	if len(s.outputs) > 0 {
		return nil, fmt.Errorf("sim: snapshot with %d outputs not taken", len(s.outputs))
	}
	st := snapshotState{
		Config:        s.cfg,
		LastZxid:      s.lastZxid,
		NextSessionID: s.nextSessionID,
		NextContainer: s.nextContainer,
		ClosingQueue:  s.closingQueue,
		ExpiringNodes: s.expiringNodes,
		CheckEvery:    s.checkEvery,
		ACLs:          s.acls.lists,
		ACLNil:        make([]bool, len(s.acls.lists)),
		DataWatches:   snapWatches(s.dataWatches),
		ChildWatches:  snapWatches(s.childWatches),
	}
	for i, acl := range s.acls.lists {
		st.ACLNil[i] = acl == nil
	}
	for _, path := range slices.Sorted(maps.Keys(s.nodes)) {
		n := s.nodes[path]
		st.Nodes = append(st.Nodes, snapNode{
			Path: path, Data: n.data, DataSet: n.data != nil, Children: snapSet(n.children),
			Czxid: n.czxid, Mzxid: n.mzxid, Pzxid: n.pzxid, Ctime: n.ctime, Mtime: n.mtime,
			EphemeralOwner: n.ephemeralOwner, Version: n.version, Cversion: n.cversion, Aversion: n.aversion,
			ACL: uint32(n.acl),
		})
	}
	for _, sess := range s.sessionsByID {
		id := sess.id
		st.Sessions = append(st.Sessions, snapSession{
			ID: id, Passwd: sess.passwd, PasswdSet: sess.passwd != nil, TimeoutMs: sess.timeoutMs, ExpiresMs: sess.expiresMs,
			Conn: sess.conn, Ephemerals: snapSet(sess.ephemerals), Closing: sess.closing,
		})
	}
	for _, id := range slices.Sorted(maps.Keys(s.conns)) {
		c := snapConn{ID: id, Session: s.conns[id]}
		if a := s.auth[id]; a != nil {
			c.HasAuth = true
			c.Addr = a.addr
			for _, x := range a.ids {
				c.AuthIDs = append(c.AuthIDs, [2]string{x.scheme, x.id})
			}
		}
		st.Conns = append(st.Conns, c)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&st); err != nil {
		return nil, fmt.Errorf("sim: snapshot: %v", err)
	}
	return b.Bytes(), nil
}

// RestoreServer makes the server a Snapshot was taken of. A snapshot that
// does not decode, or decodes to a state that breaks the server's
// invariants, is an error, never a panic.
func RestoreServer(snapshot []byte) (*Server, error) {
	var st snapshotState
	if err := gob.NewDecoder(bytes.NewReader(snapshot)).Decode(&st); err != nil {
		return nil, fmt.Errorf("sim: snapshot does not decode: %v", err)
	}
	if len(st.ACLs) < 2 || len(st.ACLNil) != len(st.ACLs) {
		return nil, errors.New("sim: snapshot has no ACL table")
	}
	s := &Server{
		cfg:           st.Config,
		nodes:         make(map[string]*znode, len(st.Nodes)),
		lastZxid:      st.LastZxid,
		sessions:      make(map[int64]*serverSession, len(st.Sessions)),
		conns:         make(map[ConnID]int64, len(st.Conns)),
		dataWatches:   restoreWatches(st.DataWatches),
		childWatches:  restoreWatches(st.ChildWatches),
		nextSessionID: st.NextSessionID,
		nextContainer: st.NextContainer,
		closingQueue:  st.ClosingQueue,
		acls:          &aclTable{index: make(map[string]aclID)},
		expiringNodes: st.ExpiringNodes,
		checkEvery:    st.CheckEvery,
	}
	for i, acl := range st.ACLs {
		if acl == nil && !st.ACLNil[i] {
			acl = []zk.ACL{} // gob reads an empty list back as nil
		}
		s.acls.lists = append(s.acls.lists, acl)
		s.acls.world = append(s.acls.world, worldPerms(acl))
		s.acls.index[aclKey(acl)] = aclID(i)
	}
	for _, n := range st.Nodes {
		if int(n.ACL) >= len(s.acls.lists) {
			return nil, fmt.Errorf("sim: snapshot: node %s has ACL %d of %d", n.Path, n.ACL, len(s.acls.lists))
		}
		data := n.Data
		if data == nil && n.DataSet {
			data = []byte{}
		}
		s.nodes[n.Path] = &znode{
			data: data, children: restoreSet(n.Children),
			czxid: n.Czxid, mzxid: n.Mzxid, pzxid: n.Pzxid, ctime: n.Ctime, mtime: n.Mtime,
			ephemeralOwner: n.EphemeralOwner, version: n.Version, cversion: n.Cversion, aversion: n.Aversion,
			acl: aclID(n.ACL),
		}
	}
	for _, x := range st.Sessions {
		passwd := x.Passwd
		if passwd == nil && x.PasswdSet {
			passwd = []byte{}
		}
		s.addSession(&serverSession{
			id: x.ID, passwd: passwd, timeoutMs: x.TimeoutMs, expiresMs: x.ExpiresMs,
			conn: x.Conn, ephemerals: restoreSet(x.Ephemerals), closing: x.Closing,
		})
	}
	for _, c := range st.Conns {
		s.setConn(c.ID, c.Session)
		if c.HasAuth {
			if s.auth == nil {
				s.auth = make(map[ConnID]*connAuth)
			}
			a := &connAuth{addr: c.Addr}
			for _, x := range c.AuthIDs {
				a.ids = append(a.ids, authID{x[0], x[1]})
			}
			s.auth[c.ID] = a
		}
	}
	if s.nodes["/"] == nil {
		return nil, errors.New("sim: snapshot has no root node")
	}
	if err := s.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("sim: snapshot: %v", err)
	}
	return s, nil
}

// snapshotState is the serialized form of a Server: every field that
// lasts from one input to the next. The fields a single input uses and
// leaves empty (outputs, txn, overlay, records, caller) are not in it.
type snapshotState struct {
	Config        ServerConfig
	LastZxid      int64
	NextSessionID int64
	NextContainer int64
	ClosingQueue  []int64
	ExpiringNodes int
	CheckEvery    bool
	ACLs          [][]zk.ACL // by aclID
	ACLNil        []bool     // by aclID: gob reads nil and empty alike; jute does not
	Nodes         []snapNode // by path
	Sessions      []snapSession
	Conns         []snapConn
	DataWatches   snapWatchTable
	ChildWatches  snapWatchTable
}

type snapNode struct {
	Path string
	Data []byte
	// DataSet tells empty data from none: gob reads an empty slice back
	// as nil, and a client tells them apart.
	DataSet                     bool
	Children                    *snapJavaSet
	Czxid, Mzxid, Pzxid         int64
	Ctime, Mtime                int64
	EphemeralOwner              int64
	Version, Cversion, Aversion int32
	ACL                         uint32
}

type snapSession struct {
	ID         int64
	Passwd     []byte
	PasswdSet  bool
	TimeoutMs  int64
	ExpiresMs  int64
	Conn       ConnID
	Ephemerals *snapJavaSet
	Closing    bool
}

type snapConn struct {
	ID      ConnID
	Session int64
	HasAuth bool
	Addr    netip.Addr
	AuthIDs [][2]string // insertion order
}

// snapJavaSet keeps what decides a javaSet's iteration order: each
// member's insertion number and the table's capacity history.
type snapJavaSet struct {
	Names    []string // by insertion number
	Seqs     []uint32
	Capacity uint32
	Initial  uint32
	Inserted uint32
}

type snapWatchTable struct {
	Paths     []snapWatchPath // by path
	Modes     []snapWatchMode // by path, then connection
	Recursive int
}

type snapWatchPath struct {
	Path  string
	Conns []ConnID // in the order they were added
}

type snapWatchMode struct {
	Path string
	Conn ConnID
	Mode watchMode
}

func snapSet(s *javaSet) *snapJavaSet {
	if s == nil {
		return nil
	}
	out := &snapJavaSet{Capacity: s.capacity(), Initial: s.initial, Inserted: s.inserted}
	out.Names, out.Seqs = s.bySeq()
	return out
}

func restoreSet(x *snapJavaSet) *javaSet {
	if x == nil {
		return nil
	}
	return restoredJavaSet(x.Names, x.Seqs, x.Capacity, x.Initial, x.Inserted)
}

func snapWatches(t *watchTable) snapWatchTable {
	out := snapWatchTable{Recursive: t.recursive}
	for _, path := range slices.Sorted(maps.Keys(t.paths)) {
		out.Paths = append(out.Paths, snapWatchPath{Path: path, Conns: t.paths[path]})
	}
	keys := slices.SortedFunc(maps.Keys(t.modes), func(a, b connWatchKey) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.conn, b.conn))
	})
	for _, k := range keys {
		out.Modes = append(out.Modes, snapWatchMode{Path: k.path, Conn: k.conn, Mode: t.modes[k]})
	}
	return out
}

func restoreWatches(x snapWatchTable) *watchTable {
	t := newWatchTable()
	t.recursive = x.Recursive
	for _, p := range x.Paths {
		t.paths[p.Path] = p.Conns
	}
	for _, m := range x.Modes {
		t.modes[connWatchKey{m.Path, m.Conn}] = m.Mode
	}
	return t
}
