package sim

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// aclID names an ACL in the server's table. ZooKeeper too keeps each
// distinct ACL once and stores a reference in the node
// (ReferenceCountedACLCache), which keeps a million znodes small.
type aclID uint16

const (
	aclOpen     aclID = 0 // world:anyone, every permission
	aclReadOnly aclID = 1 // world:anyone, read: /zookeeper/config
)

// aclTable interns ACLs. The simulator does not model authentication:
// world:anyone entries are enforced, and an entry of any other scheme
// (digest, ip, auth, ...) is taken to grant its permissions to every
// session, as if each had the credentials.
type aclTable struct {
	lists [][]zk.ACL
}

func newACLTable() *aclTable {
	return &aclTable{lists: [][]zk.ACL{
		zk.WorldACL(zk.PermAll),
		zk.WorldACL(zk.PermRead),
	}}
}

// valid reports whether a create's ACL is acceptable: ZooKeeper's
// fixupACL refuses an empty one.
func (t *aclTable) valid(acl []zk.ACL) bool { return len(acl) > 0 }

func (t *aclTable) intern(acl []zk.ACL) aclID {
	for i, l := range t.lists {
		if slices.Equal(l, acl) {
			return aclID(i)
		}
	}
	if len(t.lists) >= 1<<16 {
		panic("sim: more than 65536 distinct ACLs")
	}
	t.lists = append(t.lists, slices.Clone(acl))
	return aclID(len(t.lists) - 1)
}

func (t *aclTable) allows(n *znode, perm int32) bool {
	if n == nil {
		return true
	}
	for _, a := range t.lists[n.acl] {
		if a.Perms&perm != 0 {
			return true
		}
	}
	return false
}

// DefaultClientAddr is the address a connection opened with Open comes
// from: a client on the server's own machine, as in the differential tests.
var DefaultClientAddr = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// authID is one identity of a connection: ZooKeeper's Id, a scheme and an
// id ("ip" and "127.0.0.1", "digest" and "alice:<base64 SHA-1>").
type authID struct {
	scheme, id string
}

// connAuth is what the server knows of a connection's identities
// (ServerCnxn.authInfo): its peer address, and the ids it holds, in the
// order they were added.
type connAuth struct {
	addr netip.Addr
	ids  []authID
}

func (s *Server) openAuth(conn ConnID, addr netip.Addr) {
	if s.auth == nil {
		s.auth = make(map[ConnID]*connAuth)
	}
	addr = addr.Unmap()
	s.auth[conn] = &connAuth{addr: addr, ids: []authID{{"ip", javaHostAddress(addr)}}}
}

// javaHostAddress formats addr as InetAddress.getHostAddress does: dotted
// quads for IPv4, eight uncompressed lowercase hex groups for IPv6.
func javaHostAddress(addr netip.Addr) string {
	if addr.Is4() || !addr.IsValid() {
		return addr.String()
	}
	b := addr.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := addr.Zone(); z != "" {
		sb.WriteByte('%')
		sb.WriteString(z)
	}
	return sb.String()
}
