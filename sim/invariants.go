package sim

import (
	"fmt"
	"maps"
	"slices"
)

// checkNode asserts the invariants of one node after a transaction touched
// it, those the change could have broken. A violation is a simulator bug
// and panics. It takes the node and its parent from the change when the
// change was the transaction's only one (known: the tree has not changed
// since), and looks them up otherwise, through the server's lookup cache
// (a write touches a node and its parent, which its own lookups have just
// cached), which CheckInvariants holds to the tree itself.
//
// A node created or deleted (nameAt, where path's last name starts, is
// not 0) changed its own existence and its parent's children, cversion
// and pzxid: if it exists, its parent exists and lists it and an
// ephemeral has a live owner that lists it; if it does not, its parent
// (when there is one) does not list it; and the zxids of both are not
// past the last. A node changed in place (nameAt 0: its data or ACL)
// changed none of what ties it to its parent, and is checked for its
// zxids only, if it still exists. A node's ties to its parent were
// checked when it was created, and only its deletion, or its parent's,
// changes them: the parent of a create or a delete, which was checked as
// one more touched node of its own, costs its check no second lookup of
// the tree (the parents' checks were a third of every commit's, in
// BenchmarkSimThroughput).
func (s *Server) checkNode(tn *touchedNode, known bool) {
	path := tn.path
	if tn.nameAt == 0 {
		n := tn.node
		if n == nil || !known {
			n = s.lookup(path)
		}
		// A node a multi changed and then deleted is gone: its
		// deletion's check covers it.
		if n != nil {
			s.checkZxids(path, n)
		}
		return
	}
	parentPath, name := splitAt(path, tn.nameAt)
	n, parent := tn.node, tn.parent
	if !known {
		n, parent = s.lookup(path), s.lookup(parentPath)
	}
	if n == nil {
		if parent != nil && parent.children != nil && parent.children.has(name) {
			panic(fmt.Sprintf("sim: invariant: %s lists deleted child %s", parentPath, name))
		}
		if parent != nil {
			s.checkZxids(parentPath, parent)
		}
		return
	}
	if parent == nil {
		panic(fmt.Sprintf("sim: invariant: %s exists without its parent", path))
	}
	if parent.children == nil || !parent.children.has(name) {
		panic(fmt.Sprintf("sim: invariant: %s does not list its child %s", parentPath, name))
	}
	s.checkZxids(path, n)
	s.checkZxids(parentPath, parent)
	if ownerKind(n.ephemeralOwner) == ownerSession {
		sess := s.sessions[n.ephemeralOwner]
		if sess == nil || sess.ephemerals == nil || !sess.ephemerals.has(path) {
			panic(fmt.Sprintf("sim: invariant: ephemeral %s has no live owner %#x", path, n.ephemeralOwner))
		}
	}
}

// checkZxids asserts that no zxid of the node at path is past the last
// one, and that it was not changed before it was created.
//
// It is small enough to be inlined where it is made (every commit makes
// it for each node it touched, and the call was some 10 instructions of
// each): the one exception, the initial configuration node, and the
// panic are looked at apart (checkZxidsFurther), when a zxid is past.
func (s *Server) checkZxids(path string, n *znode) {
	if n.mzxid > s.lastZxid || n.czxid > n.mzxid || n.pzxid > s.lastZxid {
		s.checkZxidsFurther(path, n)
	}
}

//go:noinline
func (s *Server) checkZxidsFurther(path string, n *znode) {
	if (n.mzxid > s.lastZxid && !isInitialConfigNode(path, n)) || n.czxid > n.mzxid || n.pzxid > s.lastZxid {
		panic(fmt.Sprintf("sim: invariant: %s has zxids czxid=%#x mzxid=%#x pzxid=%#x past the last zxid %#x", path, n.czxid, n.mzxid, n.pzxid, s.lastZxid))
	}
}

// CheckInvariants checks the whole tree: every node's parent exists and
// lists it, every listed child exists, every ephemeral has a live owner
// session that lists it and every session's ephemerals exist and are its
// own, no zxid is past the last one, and no ephemeral has children. It
// costs time in the size of the tree; the simulator runs it at the end of
// a run and the tests after every step.
func (s *Server) CheckInvariants() error {
	// The nodes are checked in map order, which is fast; only when one
	// breaks an invariant are they checked again in path order, so that
	// the error reported is the same on every run.
	//
	// That every listed child exists is checked by counting, unless every
	// step is checked (when each child's hash is checked too): every node
	// but the root is listed by its parent, each under its own name, so
	// the children listed are as many as those nodes exactly when each of
	// them is one (walking every node's children and looking each up was
	// most of the check at every run's end).
	walkChildren := s.checkEvery
	listed, expiring := 0, 0
	for path, n := range s.nodes {
		if err := s.checkNodeInvariants(path, n, walkChildren); err != nil {
			return s.firstNodeError(err)
		}
		listed += n.numChildren()
		switch ownerKind(n.ephemeralOwner) {
		case ownerContainer, ownerTTL:
			expiring++
		}
	}
	if listed != len(s.nodes)-1 {
		return s.firstNodeError(fmt.Errorf("sim: invariant: %d children listed, %d nodes besides the root", listed, len(s.nodes)-1))
	}
	if expiring != s.expiringNodes {
		return fmt.Errorf("sim: invariant: %d containers and TTL nodes, counted %d", expiring, s.expiringNodes)
	}
	if err := s.lookups.check(s.nodes); err != nil {
		return err
	}
	if sess := s.lastSession; sess != nil && s.sessions[sess.id] != sess {
		return fmt.Errorf("sim: invariant: the last request's session %#x is not the server's", sess.id)
	}
	if h := s.connHint; h.conn != 0 {
		if session, ok := s.conns[h.conn]; !ok || session != h.session {
			return fmt.Errorf("sim: invariant: the connection hint binds conn%d to session %#x, the server's table %#x (open %v)", h.conn, h.session, session, ok)
		}
	}
	if err := s.acls.check(); err != nil {
		return err
	}
	return s.checkSessionInvariants()
}

// firstNodeError is the error of the first node, in path order, that
// breaks an invariant, every one of them checked; err if none does.
func (s *Server) firstNodeError(err error) error {
	for _, path := range slices.Sorted(maps.Keys(s.nodes)) {
		if err := s.checkNodeInvariants(path, s.nodes[path], true); err != nil {
			return err
		}
	}
	return err
}

// checkNodeInvariants checks one node of CheckInvariants; its children's
// existence only if walkChildren.
func (s *Server) checkNodeInvariants(path string, n *znode, walkChildren bool) error {
	if path != "/" {
		parentPath, name := parentOf(path)
		parent := s.nodes[parentPath]
		nameHash, _ := n.hashes(path, name)
		if parent == nil || parent.children == nil || !parent.children.hasHashed(name, nameHash) {
			return fmt.Errorf("sim: invariant: %s is not listed by its parent", path)
		}
		if ownerKind(parent.ephemeralOwner) == ownerSession {
			return fmt.Errorf("sim: invariant: ephemeral %s has child %s", parentPath, name)
		}
	}
	if n.children != nil {
		if !n.children.lastAgrees() || s.checkEvery && !n.children.lastHashAgrees() {
			return fmt.Errorf("sim: invariant: %s's children set answers wrongly for %s, the last name it took or lost", path, n.children.last)
		}
		if walkChildren {
			if err := n.children.checkTable(); err != nil {
				return fmt.Errorf("%w (the children of %s)", err, path)
			}
			for name, hash := range n.children.all() {
				// The child's path is built aside and looked up without a
				// copy: a path allocated for every node at every run's end
				// was a hundredth of an exploration. It is built on the
				// stack (a longer one is allocated): a buffer of the
				// server's made every server of an exploration a size
				// class larger (Server).
				var buf [256]byte
				childPath := AppendPath(buf[:0], path, name)
				if s.nodes[string(childPath)] == nil {
					return fmt.Errorf("sim: invariant: %s lists missing child %s", path, name)
				}
				// A create brings its name's hash from its validation
				// (javaSet.addHashed): the order of the children rests on it.
				// Checked by the servers that check every step, as hashing
				// every name at every run's end showed in explorations.
				if s.checkEvery && hash != javaSpreadHash(name) {
					return fmt.Errorf("sim: invariant: %s holds child %s with hash %#x, not %#x", path, name, hash, javaSpreadHash(name))
				}
			}
		}
	}
	if n.czxid > s.lastZxid || (n.mzxid > s.lastZxid && !isInitialConfigNode(path, n)) || n.pzxid > s.lastZxid {
		return fmt.Errorf("sim: invariant: %s has a zxid past the last zxid %#x", path, s.lastZxid)
	}
	if ownerKind(n.ephemeralOwner) == ownerSession {
		sess := s.sessions[n.ephemeralOwner]
		_, pathHash := n.hashes(path, "")
		if sess == nil || sess.ephemerals == nil || !sess.ephemerals.hasHashed(path, pathHash) {
			return fmt.Errorf("sim: invariant: ephemeral %s has no live owner %#x", path, n.ephemeralOwner)
		}
	}
	return nil
}

// checkSessionInvariants checks the sessions and connections of
// CheckInvariants.
func (s *Server) checkSessionInvariants() error {
	if len(s.sessionsByID) != len(s.sessions) {
		return fmt.Errorf("sim: invariant: %d sessions listed in id order, %d held", len(s.sessionsByID), len(s.sessions))
	}
	for i, sess := range s.sessionsByID {
		if s.sessions[sess.id] != sess || (i > 0 && s.sessionsByID[i-1].id >= sess.id) {
			return fmt.Errorf("sim: invariant: session %#x is listed out of order or is not the one held", sess.id)
		}
	}
	for _, sess := range s.sessionsByID {
		id := sess.id
		if sess.ephemerals == nil {
			continue
		}
		if !sess.ephemerals.lastAgrees() || s.checkEvery && !sess.ephemerals.lastHashAgrees() {
			return fmt.Errorf("sim: invariant: session %#x's ephemerals answer wrongly for %s, the last path they took or lost", id, sess.ephemerals.last)
		}
		if s.checkEvery {
			if err := sess.ephemerals.checkTable(); err != nil {
				return fmt.Errorf("%w (the ephemerals of session %#x)", err, id)
			}
		}
		for path, hash := range sess.ephemerals.all() {
			if n := s.nodes[path]; n == nil || n.ephemeralOwner != id {
				return fmt.Errorf("sim: invariant: session %#x lists ephemeral %s it does not own", id, path)
			}
			if s.checkEvery && hash != javaSpreadHash(path) {
				return fmt.Errorf("sim: invariant: session %#x holds ephemeral %s with hash %#x, not %#x", id, path, hash, javaSpreadHash(path))
			}
		}
	}
	if err := s.checkWatchTable("data", s.dataWatches); err != nil {
		return err
	}
	if err := s.checkWatchTable("child", s.childWatches); err != nil {
		return err
	}
	for conn, id := range s.conns {
		if id == 0 {
			continue
		}
		if sess := s.sessions[id]; sess != nil && sess.conn != conn {
			return fmt.Errorf("sim: invariant: connection %d is bound to session %#x, which is not bound to it", conn, id)
		}
	}
	return nil
}
