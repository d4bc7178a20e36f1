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

// EphemeralsOf lists a session's ephemeral nodes in the order ZooKeeper's
// dump lists them (a clone of DataTree's set), or nil for an unknown
// session. It changes nothing.
func (s *Server) EphemeralsOf(session int64) []string {
	sess := s.sessions[session]
	if sess == nil || sess.ephemerals == nil {
		return nil
	}
	return sess.ephemerals.clonedOrder()
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
