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
