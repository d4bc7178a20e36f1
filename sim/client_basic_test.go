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
		for i := range rapid.IntRange(1, 30).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "wide") {
				p.req = drawWideRequest(t)
				p.wide = true
			} else {
				want := drawBasicRequest(t)
				want.Xid = 0
				p.setBasic(want.Op, want.Path, want.Data, want.Mode, want.Version, want.Watch, want.ACL)
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

// testPathText draws the short paths, data and names of the basic-write
// tests.
var testPathText = rapid.StringMatching(`/[a-c]{0,3}`)

// drawBasicRequest draws a request with only the basic fields set, those
// pending.setBasic and sendRequest's basic write write.
func drawBasicRequest(t *rapid.T) Request {
	var data []byte
	if rapid.Bool().Draw(t, "hasData") {
		data = []byte(testPathText.Draw(t, "data"))
	}
	var acl []zk.ACL
	if rapid.Bool().Draw(t, "hasACL") {
		acl = zk.WorldACL(zk.PermAll)
	}
	return Request{
		Xid: rapid.Int32().Draw(t, "xid"), Op: rapid.SampledFrom([]OpCode{OpCreate, OpDelete, OpExists, OpGetData, OpSetData, OpGetChildren}).Draw(t, "basicOp"),
		Path: testPathText.Draw(t, "path"), Data: data, Mode: rapid.Int32().Draw(t, "mode"), Version: rapid.Int32().Draw(t, "version"),
		Watch: rapid.Bool().Draw(t, "watch"), ACL: acl,
	}
}

// drawWideRequest draws a request with fields besides the basic ones set.
func drawWideRequest(t *rapid.T) Request {
	return Request{
		Xid: rapid.Int32().Draw(t, "xid"), Op: OpCode(rapid.IntRange(-11, 107).Draw(t, "op")), Path: testPathText.Draw(t, "path"),
		TTLMs: rapid.Int64().Draw(t, "ttl"), Malformed: rapid.Bool().Draw(t, "malformed"),
		AuthScheme: testPathText.Draw(t, "scheme"), DataWatches: rapid.SliceOf(testPathText).Draw(t, "watches"),
		Ops: []Request{{Op: OpCheck}}, RelativeZxid: rapid.Int64().Draw(t, "zxid"),
		AddWatchMode: AddWatchMode(rapid.Int32().Draw(t, "addMode")), NewMembersNull: rapid.Bool().Draw(t, "null"),
	}
}
