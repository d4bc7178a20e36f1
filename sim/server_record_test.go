package sim

import (
	"reflect"
	"testing"
)

// record writes a reused change record field by field: it leaves it as
// the literal of the node it found, or of none, whatever the record held
// before. A field added to changeRecord must be written there too; the
// count below fails the test until this one knows it.
func TestRecordWritesEveryField(t *testing.T) {
	if n := reflect.TypeFor[changeRecord]().NumField(); n != 8 {
		t.Fatalf("changeRecord has %d fields; record and this test write 8", n)
	}
	s := NewServer(ServerConfig{})
	for _, path := range []string{"/zookeeper/config", "/zookeeper", "/missing"} {
		s.records[0] = changeRecord{path: "/stale", node: &znode{}, exists: true, version: 7, cversion: 8, numChildren: 9, owner: 10, acl: 11}
		s.recordsUsed = 0
		var o overlay
		got := *s.record(&o, path)
		want := changeRecord{path: path}
		if n := s.nodes[path]; n != nil {
			want = changeRecord{path: path, node: n, exists: true, version: n.version, cversion: n.cversion, numChildren: n.numChildren(), owner: n.ephemeralOwner, acl: n.acl}
		}
		if got != want {
			t.Errorf("record(%q) = %+v, want %+v", path, got, want)
		}
	}
}

// createNode writes a reused node field by field: the node a create makes
// out of a deleted one holds what a literal of the create's fields would,
// whatever the deleted node held. A field added to znode must be written
// there too; the count below fails the test until this one knows it.
func TestCreateWritesEveryField(t *testing.T) {
	if n := reflect.TypeFor[znode]().NumField(); n != 15 {
		t.Fatalf("znode has %d fields; createNode and this test write 15", n)
	}
	h := newHarness(t, ServerConfig{})
	c, _ := h.connect(10000)
	h.ok(c, mkCreate("/a", []byte("x"), 0))
	stale := &znode{data: []byte("stale data"), children: newJavaSet(8), czxid: 1, mzxid: 2, pzxid: 3, ctime: 4, mtime: 5,
		ephemeralOwner: 6, version: 7, cversion: 8, aversion: 9, acl: aclReadOnly, nameHash: 10, pathHash: 11}
	h.s.freeNodes = append(h.s.freeNodes[:0], stale)
	h.ok(c, mkCreate("/a/b", []byte("new"), 0))
	n := h.s.nodes["/a/b"]
	if n != stale {
		t.Fatalf("the create did not reuse the free node")
	}
	want := znode{data: []byte("new"), czxid: h.s.lastZxid, mzxid: h.s.lastZxid, pzxid: h.s.lastZxid,
		ctime: n.ctime, mtime: n.ctime, acl: aclOpen, nameHash: javaSpreadHash("b"), hashed: true}
	if !reflect.DeepEqual(*n, want) {
		t.Fatalf("created %+v, want %+v", *n, want)
	}
}
