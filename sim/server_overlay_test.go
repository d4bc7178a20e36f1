package sim

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// A single write is validated without an overlay (record makes each
// record from the tree and keeps it nowhere): on every tree the random
// writes leave, a write validated so gets the code and the write that
// validation with a multi's overlay gives it, for every kind of write,
// path and version, "/" and paths that do not parse among them.
func TestSingleWriteNeedsNoOverlay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := newHarness(t, ServerConfig{ExtendedTypes: true})
		c, id := h.connect(10000)
		sess := h.s.sessions[id]
		path := rapid.SampledFrom([]string{"/", "/a", "/a/b", "/a/b/c", "/e", "/e/x", "/zookeeper", "/zookeeper/config", "", "a", "/a/", "/a/."})
		acl := rapid.SampledFrom([][]zk.ACL{zk.WorldACL(zk.PermAll), zk.WorldACL(zk.PermRead), zk.WorldACL(zk.PermCreate | zk.PermRead)})
		req := rapid.Custom(func(t *rapid.T) Request {
			r := Request{Path: path.Draw(t, "path"), Version: rapid.Int32Range(-1, 2).Draw(t, "version"), TTLMs: -1}
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				r.Op, r.Mode, r.ACL = OpCreate, rapid.SampledFrom([]int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential}).Draw(t, "mode"), acl.Draw(t, "acl")
			case 1:
				r.Op = OpDelete
			case 2:
				r.Op, r.Data = OpSetData, []byte("d")
			case 3:
				r.Op = OpCheck
			case 4:
				r.Op, r.ACL = OpSetACL, acl.Draw(t, "acl")
			case 5:
				r.Op, r.Mode, r.ACL, r.TTLMs = OpCreateCont, zk.FlagContainer, acl.Draw(t, "acl"), -1
			}
			return r
		})
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			r := req.Draw(t, "req")
			h.s.caller = c
			h.s.recordsUsed = 0
			var single write
			singleCode := h.s.validate(sess, &r, nil, &single)
			h.s.recordsUsed = 0
			var o overlay
			var multi write
			multiCode := h.s.validate(sess, &r, &o, &multi)
			if singleCode != multiCode || single != multi {
				t.Fatalf("step %d: %+v: without an overlay %v %+v, with one %v %+v", i, r, singleCode, single, multiCode, multi)
			}
			h.do(c, r) // the tree moves on
		}
	})
}
