package sim

import (
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// A call's record is reused, and setBasic writes only the basic fields of
// its request: after any run of whole writes (call's, wide) and basic
// ones, the request setBasic leaves is the one a whole write of the same
// fields leaves, but for the Xid, which sendCall writes next.
func TestSetBasicIsWholeWrite(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &pending{}
		str := rapid.StringMatching(`/[a-c]{0,3}`)
		for i := range rapid.IntRange(1, 30).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "wide") {
				p.req = Request{
					Op: OpCode(rapid.IntRange(-11, 107).Draw(t, "op")), Path: str.Draw(t, "path"),
					TTLMs: rapid.Int64().Draw(t, "ttl"), Malformed: rapid.Bool().Draw(t, "malformed"),
					AuthScheme: str.Draw(t, "scheme"), DataWatches: rapid.SliceOf(str).Draw(t, "watches"),
					Ops: []Request{{Op: OpCheck}}, RelativeZxid: rapid.Int64().Draw(t, "zxid"),
					AddWatchMode: AddWatchMode(rapid.Int32().Draw(t, "mode")), NewMembersNull: rapid.Bool().Draw(t, "null"),
				}
				p.wide = true
			} else {
				var data []byte
				if rapid.Bool().Draw(t, "hasData") {
					data = []byte(str.Draw(t, "data"))
				}
				var acl []zk.ACL
				if rapid.Bool().Draw(t, "hasACL") {
					acl = zk.WorldACL(zk.PermAll)
				}
				op := OpCode(rapid.SampledFrom([]OpCode{OpCreate, OpDelete, OpExists, OpGetData, OpSetData, OpGetChildren}).Draw(t, "basicOp"))
				path, mode, version, watch := str.Draw(t, "path"), rapid.Int32().Draw(t, "mode"), rapid.Int32().Draw(t, "version"), rapid.Bool().Draw(t, "watch")
				p.setBasic(op, path, data, mode, version, watch, acl)
				want := Request{Op: op, Path: path, Data: data, Mode: mode, Version: version, Watch: watch, ACL: acl}
				got := p.req
				got.Xid = 0
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: setBasic left %+v, want %+v", i, got, want)
				}
			}
			p.req.Xid = rapid.Int32().Draw(t, "xid") // sendCall's
		}
	})
}
