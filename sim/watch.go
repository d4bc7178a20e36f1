package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// watchMode is how a connection watches a path in one table
// (server.watch.WatcherMode): standard watches are one-shot, persistent
// ones stay after they fire, and persistent-recursive ones also fire for
// every node below the path.
type watchMode uint8

const (
	watchStandard watchMode = iota
	watchPersistent
	watchPersistentRecursive
)

// connWatchKey names one connection's watch on one path.
type connWatchKey struct {
	path string
	conn ConnID
}

// watchTable is one of ZooKeeper 3.8's two WatchManagers (DataTree's
// dataWatches and childWatches): the connections watching each path, and
// the mode of each (connection, path) that is not standard, which
// WatcherModeManager keeps apart from the table.
//
// ZooKeeper 3.8 keeps one mode per (connection, path) per table, so the
// last watch set wins: a getData watch on a path that already has a
// persistent watch of the same connection turns its data-table half into a
// one-shot watch, and an addWatch turns a one-shot watch persistent
// (WatchManager.addWatch calls setWatcherMode, which for the standard mode
// removes the entry). 3.9 keeps the modes apart (ZOOKEEPER-4466); 3.8 does
// not, and the differential tests hold the simulator to 3.8.
type watchTable struct {
	paths     map[string][]ConnID // in the order the connections were added
	modes     map[connWatchKey]watchMode
	recursive int // entries of modes that are recursive (WatcherModeManager.recursiveQty)
	// spare holds the storage of paths' lists that emptied, for the
	// next path watched to reuse: most watches fire once and are gone,
	// and a list allocated for each was 2% of the allocations of an
	// exploration.
	spare [][]ConnID
}

func newWatchTable() *watchTable {
	return &watchTable{paths: make(map[string][]ConnID), modes: make(map[connWatchKey]watchMode)}
}

// len is the number of watched paths.
func (t *watchTable) len() int { return len(t.paths) }

// add registers conn's watch on path in the given mode, replacing the mode
// of a watch it already has there.
func (t *watchTable) add(path string, conn ConnID, mode watchMode) {
	conns := t.paths[path]
	if !slices.Contains(conns, conn) {
		if conns == nil {
			conns = t.takeSpare()
		}
		t.paths[path] = append(conns, conn)
	}
	t.setMode(connWatchKey{path, conn}, mode)
}

// takeSpare returns an empty list with the storage of one that emptied,
// nil if there is none.
func (t *watchTable) takeSpare() []ConnID {
	return popSpare(&t.spare)
}

// forget deletes path's list, which has emptied, keeping its storage.
func (t *watchTable) forget(path string, conns []ConnID) {
	delete(t.paths, path)
	t.spare = append(t.spare, conns[:0])
}

func (t *watchTable) setMode(k connWatchKey, mode watchMode) {
	old := t.modes[k]
	if mode == watchStandard {
		delete(t.modes, k)
	} else {
		t.modes[k] = mode
	}
	if (old == watchPersistentRecursive) != (mode == watchPersistentRecursive) {
		if mode == watchPersistentRecursive {
			t.recursive++
		} else {
			t.recursive--
		}
	}
}

// addWatcher registers a standard (one-shot) watch: what exists, getData
// and getChildren set.
func addWatcher(t *watchTable, path string, conn ConnID) { t.add(path, conn, watchStandard) }

// removeWatcher drops every watch of a connection (a closed ServerCnxn).
// The paths are visited in map order, which decides nothing: each is
// handled alone.
func removeWatcher(t *watchTable, conn ConnID) {
	for path, conns := range t.paths {
		if i := slices.Index(conns, conn); i >= 0 {
			t.removeAt(path, conns, i)
		}
	}
}

// removeAt removes the watch conns[i] on path, with its mode.
func (t *watchTable) removeAt(path string, conns []ConnID, i int) {
	conn := conns[i]
	conns = slices.Delete(conns, i, i+1)
	if len(conns) == 0 {
		t.forget(path, conns)
	} else {
		t.paths[path] = conns
	}
	t.setMode(connWatchKey{path, conn}, watchStandard)
}

// remove removes conn's watch on path, as WatchManager.removeWatcher(path,
// watcher) does for removeWatches; it reports whether there was one.
func (t *watchTable) remove(path string, conn ConnID) bool {
	conns := t.paths[path]
	i := slices.Index(conns, conn)
	if i < 0 {
		return false
	}
	t.removeAt(path, conns, i)
	return true
}

// contains is WatchManager.containsWatcher as ZooKeeper 3.8 has it, for
// checkWatches. It walks path and, while the table has a recursive watch,
// its ancestors, with a PathParentIterator; at the path itself it asks
// whether anyone watches it, not whether conn does (the leaf test looks at
// the path's watcher set, not for the watcher in it), and at every step
// whether conn's own watch on path is recursive. The walk yields nothing
// for the empty path, so a watch on "" is never found (removeWatches,
// which looks the path up directly, removes it). Computing the parent of a
// non-empty path without a slash throws (substring(0, -1)), which the
// server reports as MARSHALLINGERROR: failed says so. Measured on 3.8.0.
func (t *watchTable) contains(path string, conn ConnID) (found, failed bool) {
	recursiveHere := t.modes[connWatchKey{path, conn}] == watchPersistentRecursive
	for level, p := 0, path; p != "" && (level == 0 || t.recursive > 0); level++ {
		local := p
		switch i := strings.LastIndexByte(p, '/'); {
		case p == "/":
			p = ""
		case i < 0:
			return false, true
		case i == 0:
			p = "/"
		default:
			p = p[:i]
		}
		if level == 0 && len(t.paths[local]) > 0 {
			return true, false
		}
		if recursiveHere {
			return true, false
		}
	}
	return false, false
}

// trigger fires the watches of table for an event of type typ on path and
// returns the connections it fired, each once (WatchManager.triggerWatch),
// appended to fired (a buffer of the caller's, empty: the list is the
// caller's to read until it reuses the buffer).
// The path's own watches fire whatever their mode, and the one-shot ones
// are removed; the recursive watches of the path and of every ancestor
// fire too, for every type but NodeChildrenChanged. A connection in skip
// (the ones the other table already told of this deletion) is not sent
// the event again, though its one-shot watch is used up all the same.
//
// ZooKeeper delivers to a HashSet of connections, an order no client can
// rely on; the simulator delivers in connection order.
//
// A connection without READ on the node's ACL (acl) is not sent the event,
// though its one-shot watch is used up too (eventVisible).
func (s *Server) trigger(t *watchTable, path string, typ zk.EventType, acl aclID, skip, fired []ConnID) []ConnID {
	if len(t.paths) == 0 {
		// No watch at all (then none is recursive either): nothing to
		// look up, sort or send, for every write of a run without watches.
		return fired
	}
	for local := path; ; {
		if conns := t.paths[local]; len(conns) > 0 {
			atPath := local == path
			kept := conns[:0]
			for _, c := range conns {
				mode := t.modes[connWatchKey{local, c}]
				switch {
				case mode == watchPersistentRecursive:
					if typ != zk.EventNodeChildrenChanged {
						fired = appendOnce(fired, c)
					}
				case atPath:
					fired = appendOnce(fired, c)
					if mode == watchStandard {
						continue // one-shot: used up
					}
				}
				kept = append(kept, c)
			}
			if len(kept) == 0 {
				t.forget(local, kept)
			} else {
				t.paths[local] = kept
			}
		}
		// PathParentIterator.forPathOnly unless a recursive watch exists.
		if local == "/" || t.recursive == 0 || !isAbsPath(local) {
			break
		}
		local, _ = parentOf(local)
	}
	slices.Sort(fired)
	for _, c := range fired {
		if !slices.Contains(skip, c) && s.eventVisible(c, acl) {
			s.event(c, typ, path)
		}
	}
	return fired
}

func appendOnce(conns []ConnID, c ConnID) []ConnID {
	if slices.Contains(conns, c) {
		return conns
	}
	return append(conns, c)
}

// isAbsPath reports whether path starts with a slash: a triggered path
// always does, and its ancestors are walked up to the root.
func isAbsPath(path string) bool { return len(path) > 0 && path[0] == '/' }

// checkWatchTable asserts the table's own invariants: no empty path
// entry, no connection twice on a path, every mode entry for a watch in
// the table and of a live connection, and the recursive count right.
func (s *Server) checkWatchTable(name string, t *watchTable) error {
	recursive := 0
	for k, mode := range t.modes {
		if mode == watchStandard {
			return invariantErr("%s watch table stores a standard mode for %q on %d", name, k.path, k.conn)
		}
		if !slices.Contains(t.paths[k.path], k.conn) {
			return invariantErr("%s watch table has a mode for %q on %d without the watch", name, k.path, k.conn)
		}
		if mode == watchPersistentRecursive {
			recursive++
		}
	}
	if recursive != t.recursive {
		return invariantErr("%s watch table counts %d recursive watches, has %d", name, t.recursive, recursive)
	}
	for path, conns := range t.paths {
		if len(conns) == 0 {
			return invariantErr("%s watch table keeps %q with no watcher", name, path)
		}
		for i, c := range conns {
			if slices.Contains(conns[:i], c) {
				return invariantErr("%s watch table lists connection %d twice on %q", name, c, path)
			}
			if _, ok := s.conns[c]; !ok {
				return invariantErr("%s watch table holds closed connection %d on %q", name, c, path)
			}
		}
	}
	return nil
}

func invariantErr(format string, args ...any) error {
	return fmt.Errorf("sim: invariant: "+format, args...)
}
