package sim

import (
	"slices"

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
