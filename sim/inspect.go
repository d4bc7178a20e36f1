package sim

import (
	"cmp"
	"slices"
)

// Watch is one registered watch, for inspection (the four-letter words
// wchs, wchc and wchp).
type Watch struct {
	Path  string
	Conn  ConnID
	Child bool // in the child table (getChildren); otherwise the data table (getData, exists)
	// Persistent and Recursive say an addWatch's mode; both false is a
	// one-shot watch.
	Persistent, Recursive bool
}

// Watches lists the registered watches, by path, then kind, then
// connection. It changes nothing.
func (s *Server) Watches() []Watch {
	var list []Watch
	for _, table := range []*watchTable{s.dataWatches, s.childWatches} {
		for path, conns := range table.paths {
			for _, c := range conns {
				mode := table.modes[connWatchKey{path, c}]
				list = append(list, Watch{
					Path: path, Conn: c, Child: table == s.childWatches,
					Persistent: mode != watchStandard, Recursive: mode == watchPersistentRecursive,
				})
			}
		}
	}
	slices.SortFunc(list, func(a, b Watch) int {
		if c := cmp.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if a.Child != b.Child {
			if a.Child {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Conn, b.Conn)
	})
	return list
}

// ApproximateDataSize is the sum of every znode's path and data lengths,
// as DataTree.approximateDataSize counts them (mntr's
// zk_approximate_data_size). It changes nothing.
func (s *Server) ApproximateDataSize() int64 {
	var n int64
	for path, node := range s.nodes {
		n += int64(len(path) + len(node.data))
	}
	return n
}

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

// EachChild calls fn with each child name of path, in the order the
// server lists them (Node's Children), and reports whether path exists.
// It changes nothing and copies nothing: a checker that looks at the tree
// after every write (scenarios' serverTree) would otherwise copy every
// list. fn must not change the server.
func (s *Server) EachChild(path string, fn func(name string)) bool {
	n := s.nodes[path]
	if n == nil {
		return false
	}
	if n.children != nil {
		for name := range n.children.all() {
			fn(name)
		}
	}
	return true
}

// NodeIdentity is what tells one life of path from another: its czxid
// and its owner session (Node's Stat.Czxid and Owner), and whether it
// exists. It changes nothing and, unlike Node, copies nothing.
func (s *Server) NodeIdentity(path string) (czxid, owner int64, ok bool) {
	n := s.nodes[path]
	if n == nil {
		return 0, 0, false
	}
	if ownerKind(n.ephemeralOwner) == ownerSession {
		owner = n.ephemeralOwner
	}
	return n.czxid, owner, true
}
