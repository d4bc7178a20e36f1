package sim

import (
	"strings"
	"testing"
)

// The permission checks answer from the ACL table's world permissions
// alone (assertPermitted): CheckInvariants refuses a table whose world
// permissions are not what its lists grant everyone.
func TestInvariantsCheckWorldPermissions(t *testing.T) {
	s := NewServer(ServerConfig{})
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	s.acls.world[aclReadOnly] |= 2 // write, which world:anyone:r does not grant
	err := s.CheckInvariants()
	if err == nil || !strings.Contains(err.Error(), "grants everyone") {
		t.Fatalf("CheckInvariants = %v, want the world permissions refused", err)
	}
}

// CheckInvariants finds a listed child that does not exist by counting
// the children listed, unless it checks every step, when it walks them:
// both ways report the same error, the first node's in path order.
func TestInvariantsFindMissingChild(t *testing.T) {
	for _, every := range []bool{false, true} {
		s := NewServer(ServerConfig{})
		s.checkEvery = every
		s.nodes["/zookeeper"].children.add("ghost")
		err := s.CheckInvariants()
		if err == nil || err.Error() != "sim: invariant: /zookeeper lists missing child ghost" {
			t.Errorf("checkEvery %v: CheckInvariants = %v, want /zookeeper's missing child", every, err)
		}
	}
}

// addHashed does not look a name up before it inserts it: the insertion
// of a name the set holds, which no create makes, panics.
func TestAddHashedRefusesAMember(t *testing.T) {
	s := newJavaSet(8)
	s.add("a")
	defer func() {
		if recover() == nil {
			t.Fatal("adding a member again did not panic")
		}
	}()
	s.addHashed("a", javaSpreadHash("a"))
}

// The server's two caches of a request's lookups, the last connection
// (connHint) and the last request's session (lastSession), are held to
// the tables they stand for: CheckInvariants refuses either when it
// disagrees.
func TestInvariantsCheckRequestCaches(t *testing.T) {
	connected := func() *Server {
		s := NewServer(ServerConfig{})
		s.Open(1)
		s.Connect(0, 1, ConnectRequest{TimeoutMs: 10000})
		s.Receive(0, 1, Request{Xid: 1, Op: OpExists, Path: "/"})
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		if s.connHint.conn != 1 || s.lastSession == nil {
			t.Fatalf("after a request: connHint %+v, lastSession %v; want both set", s.connHint, s.lastSession)
		}
		return s
	}
	s := connected()
	s.conns[1] = 0 // as if bound again without setConn
	if err := s.CheckInvariants(); err == nil || !strings.Contains(err.Error(), "connection hint") {
		t.Errorf("a stale connection hint: CheckInvariants = %v", err)
	}
	s = connected()
	delete(s.sessions, s.lastSession.id) // as if removed without removeSession
	if err := s.CheckInvariants(); err == nil || !strings.Contains(err.Error(), "last request's session") {
		t.Errorf("a stale last session: CheckInvariants = %v", err)
	}
}
