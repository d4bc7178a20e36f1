package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// zop is one operation of session (client c's) on /n, from call to ret.
func zop(c int, session int64, in ZnodeInput, out ZnodeOutput, call, ret int64) porcupine.Operation {
	in.Client, in.Session = c, session
	if in.Path == "" {
		in.Path = "/n"
	}
	if in.Op == "set" || in.Op == "delete" {
		in.Version = -1
	}
	return op(c, in, out, call, ret)
}

func TestSessionReads(t *testing.T) {
	create := func(c int, s int64, data string, call, ret int64) porcupine.Operation {
		return zop(c, s, ZnodeInput{Op: "create", Data: data}, ZnodeOutput{}, call, ret)
	}
	set := func(c int, s int64, data string, version int32, call, ret int64) porcupine.Operation {
		return zop(c, s, ZnodeInput{Op: "set", Data: data}, ZnodeOutput{Version: version}, call, ret)
	}
	get := func(c int, s int64, data string, version int32, call, ret int64) porcupine.Operation {
		return zop(c, s, ZnodeInput{Op: "get"}, ZnodeOutput{Data: data, Version: version}, call, ret)
	}
	exists := func(c int, s int64, present bool, call, ret int64) porcupine.Operation {
		return zop(c, s, ZnodeInput{Op: "exists"}, ZnodeOutput{Exists: present}, call, ret)
	}
	// c1 writes a, then b; c2, on a lagging follower, reads a after b
	// was written, then b: stale but moving forward.
	staleMonotonic := []porcupine.Operation{
		create(1, 0x1, "a", 0, 1),
		set(1, 0x1, "b", 1, 2, 3),
		get(2, 0x2, "a", 0, 4, 5),
		get(2, 0x2, "b", 1, 6, 7),
	}
	check(t, "stale but monotonic", SessionReads(), staleMonotonic, porcupine.Ok)
	check(t, "the same history is not linearizable", Znode(), staleMonotonic, porcupine.Illegal)

	// c2 reads b, then a: back in time within one session.
	backInTime := []porcupine.Operation{
		create(1, 0x1, "a", 0, 1),
		set(1, 0x1, "b", 1, 2, 3),
		get(2, 0x2, "b", 1, 4, 5),
		get(2, 0x2, "a", 0, 6, 7),
	}
	check(t, "back in time", SessionReads(), backInTime, porcupine.Illegal)

	// Another session may still see a after c2 saw b.
	otherSession := append(backInTime[:3:3], get(3, 0x3, "a", 0, 6, 7))
	check(t, "another session's stale read", SessionReads(), otherSession, porcupine.Ok)

	// The same client with a new session (its old one expired) may go
	// back: go-zookeeper forgets its last zxid with its session.
	newSession := append(backInTime[:3:3], get(2, 0x4, "a", 0, 6, 7))
	check(t, "a new session of the same client", SessionReads(), newSession, porcupine.Ok)

	// A session sees its own writes: c1 cannot read a after writing b.
	ownWrite := []porcupine.Operation{
		create(1, 0x1, "a", 0, 1),
		set(1, 0x1, "b", 1, 2, 3),
		get(1, 0x1, "a", 0, 4, 5),
	}
	check(t, "own write missed", SessionReads(), ownWrite, porcupine.Illegal)

	// A read may not see the future: c2 reads b before anyone wrote it.
	future := []porcupine.Operation{
		create(1, 0x1, "a", 0, 1),
		get(2, 0x2, "b", 1, 2, 3),
		set(1, 0x1, "b", 1, 4, 5),
	}
	check(t, "a read from the future", SessionReads(), future, porcupine.Illegal)

	// Writes stay linearizable: a set that answers version 1 twice is not.
	twoSets := []porcupine.Operation{
		create(1, 0x1, "a", 0, 1),
		set(1, 0x1, "b", 1, 2, 3),
		set(2, 0x2, "c", 1, 4, 5),
	}
	check(t, "writes not linearizable", SessionReads(), twoSets, porcupine.Illegal)

	// The story of the stale resume: c1's ephemeral vanished with its
	// expired session and c2 created the node; c1's new session, on a
	// follower behind both, still sees its old node. Allowed.
	ephemeral := func(c int, s int64, call, ret int64) porcupine.Operation {
		return zop(c, s, ZnodeInput{Op: "create", Data: "x", Vanishes: true}, ZnodeOutput{}, call, ret)
	}
	resume := []porcupine.Operation{
		ephemeral(1, 0x1, 0, 1),
		ephemeral(2, 0x2, 4, 5),
		exists(1, 0x3, true, 6, 7),
		exists(1, 0x3, false, 8, 9),
		exists(1, 0x3, true, 10, 11),
	}
	check(t, "a new session behind a vanished node", SessionReads(), resume[:4], porcupine.Ok)
	// ... but after it saw the node gone, it cannot see the older one
	// again, while a newer (c2's) is fine.
	check(t, "gone then back (c2's node)", SessionReads(), resume, porcupine.Ok)
	goneForGood := []porcupine.Operation{
		ephemeral(1, 0x1, 0, 1),
		exists(2, 0x2, true, 2, 3),
		zop(1, 0x1, ZnodeInput{Op: "delete"}, ZnodeOutput{}, 4, 5),
		exists(2, 0x2, false, 6, 7),
		exists(2, 0x2, true, 8, 9),
	}
	check(t, "gone then back, with nothing newer", SessionReads(), goneForGood, porcupine.Illegal)
	// Without the first exists, its "absent" may be the version before
	// the create: stale, then newer.
	withoutFirst := append([]porcupine.Operation{goneForGood[0]}, goneForGood[2:]...)
	check(t, "absent, then present", SessionReads(), withoutFirst, porcupine.Ok)
}

func TestWritesOnly(t *testing.T) {
	h := []porcupine.Operation{
		zop(1, 1, ZnodeInput{Op: "create", Data: "a"}, ZnodeOutput{}, 0, 1),
		zop(2, 2, ZnodeInput{Op: "get"}, ZnodeOutput{Data: "a"}, 2, 3),
		zop(1, 1, ZnodeInput{Op: "delete"}, ZnodeOutput{}, 4, 5),
		zop(2, 2, ZnodeInput{Op: "exists"}, ZnodeOutput{Exists: true}, 6, 7),
	}
	check(t, "a stale exists", Znode(), h, porcupine.Illegal)
	w := WritesOnly(h)
	if len(w) != 2 || len(h) != 4 {
		t.Fatalf("WritesOnly kept %d of %d (and left %d)", len(w), 4, len(h))
	}
	check(t, "the writes", Znode(), w, porcupine.Ok)
	check(t, "the reads, per session", SessionReads(), h, porcupine.Ok)
}

func TestSessionReadsDescriptions(t *testing.T) {
	m := SessionReads()
	in := ZnodeInput{Client: 2, Session: 0x2a, Op: "get", Path: "/n"}
	if got := m.DescribeOperation(in, ZnodeOutput{Data: "a", Version: 3}); got != `session 0x2a: c2 get /n -> "a" v=3` {
		t.Errorf("describe: %q", got)
	}
	st := encodeState([]ZnodeState{{}, {Exists: true, Known: true, Data: "a\n"}}, []sessionMark{{0x2a, 1}})
	if got := describeSessionReads(st); got != `now present data="a\n" version=0 (2 versions); marks 2a:1,` {
		t.Errorf("state: %q", got)
	}
	if back := encodeVersions(decodeVersions(st.versions)); back != st.versions {
		t.Errorf("versions do not round-trip: %q -> %q", st.versions, back)
	}
}
