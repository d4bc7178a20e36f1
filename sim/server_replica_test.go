package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// replicaDigest is everything a server holds that replication must
// reproduce: every node with its Stat, data, children in their order and
// ACL; every session with its timeout and ephemerals in their order; and
// the last zxid.
func replicaDigest(s *Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "zxid %#x\n", s.lastZxid)
	for _, p := range slices.Sorted(maps.Keys(s.nodes)) {
		info, _ := s.Node(p)
		fmt.Fprintf(&b, "%s %+v %q %q %v\n", p, info.Stat, info.Data, info.Children, s.acls.lists[s.nodes[p].acl])
	}
	for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
		sess := s.sessions[id]
		var eph []string
		if sess.ephemerals != nil {
			eph = sess.ephemerals.ordered()
		}
		fmt.Fprintf(&b, "session %#x timeout %d ephemerals %q\n", id, sess.timeoutMs, eph)
	}
	return b.String()
}

// replicationRun drives a leader's prep server with random requests and
// keeps the records it makes.
type replicationRun struct {
	leader   *Server
	log      []*TxnRecord
	nowMs    int64
	conn     ConnID
	sessions []int64
	auth     [][]authID
}

var aliceACL = zk.DigestACL(zk.PermAll, "alice", "secret")

func (r *replicationRun) keep(rec *TxnRecord) {
	if rec != nil {
		r.log = append(r.log, rec)
	}
}

func (r *replicationRun) newSession(i int) {
	r.conn++
	rec, _ := r.leader.PrepConnect(r.nowMs, r.conn, 30000)
	r.keep(rec)
	r.sessions[i] = rec.Session
}

func (r *replicationRun) request(t *rapid.T, i int, req Request) Response {
	r.conn++
	req.Xid = int32(r.conn)
	rec, resp := r.leader.PrepRequest(r.nowMs, r.conn, r.sessions[i], r.auth[i], req)
	r.keep(rec)
	return resp
}

func (r *replicationRun) drawPath(t *rapid.T, label string) string {
	return drawPathAmong(t, label, slices.Sorted(maps.Keys(r.leader.nodes)))
}

func (r *replicationRun) drawWrite(t *rapid.T) Request {
	version := rapid.SampledFrom([]int32{-1, -1, 0, 1}).Draw(t, "version")
	switch rapid.IntRange(0, 4).Draw(t, "kind") {
	case 0:
		modes := []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer}
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		req := mkCreate(r.drawPath(t, "path"), rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "data"), mode)
		if mode == zk.FlagContainer {
			req.Op = OpCreateCont
		}
		if rapid.Bool().Draw(t, "alice") {
			req.ACL = aliceACL // only session 0 may change it
		}
		return req
	case 1:
		return mkDelete(r.drawPath(t, "path"), version)
	case 2:
		return mkSet(r.drawPath(t, "path"), rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "data"), version)
	case 3:
		return Request{Op: OpSetACL, Path: r.drawPath(t, "path"), ACL: zk.WorldACL(zk.PermAll), Version: -1}
	default:
		return mkCheck(r.drawPath(t, "path"), version)
	}
}

// TestReplicasReExecutingTheLeadersRecordsEndIdentical feeds a leader's
// records of random request sequences (sessions opened, closed and
// expired, ephemerals, sequential nodes, containers and their sweeps,
// multis, ACL-denied writes) to two replicas, one as they come and one all
// at the end: both hold exactly what the leader holds, and every answer a
// replica makes is the leader's (ApplyRecord asserts it). The first
// re-executes every write; the late one applies the writes the first
// validated (TxnRecord.checked), but for multis.
func TestReplicasReExecutingTheLeadersRecordsEndIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &replicationRun{leader: NewServer(ServerConfig{}), sessions: make([]int64, 3), auth: make([][]authID, 3)}
		r.auth[0] = []authID{{"digest", aliceACL[0].ID}}
		follower, late := NewServer(ServerConfig{}), NewServer(ServerConfig{})
		applied := 0
		catchUp := func(n int) {
			for ; applied < n; applied++ {
				follower.ApplyRecord(r.log[applied])
			}
			follower.Outputs()
		}
		for i := range r.sessions {
			r.newSession(i)
		}
		r.request(t, 0, mkCreate("/t", nil, 0))
		r.request(t, 0, mkCreateACL("/t/alice", aliceACL))
		if resp := r.request(t, 1, mkSet("/t/alice", []byte("x"), -1)); resp.Err != CodeNoAuth {
			t.Fatalf("a write without alice's identity: %v", resp.Err)
		}
		t.Repeat(map[string]func(*rapid.T){
			"write": func(t *rapid.T) {
				r.nowMs += 10
				r.request(t, rapid.IntRange(0, 2).Draw(t, "session"), r.drawWrite(t))
			},
			"multi": func(t *rapid.T) {
				ops := make([]Request, rapid.IntRange(1, 3).Draw(t, "ops"))
				for j := range ops {
					ops[j] = r.drawWrite(t)
				}
				r.request(t, rapid.IntRange(0, 2).Draw(t, "session"), mkMulti(ops...))
			},
			"closeOrExpire": func(t *rapid.T) {
				i := rapid.IntRange(0, 2).Draw(t, "session")
				if rapid.Bool().Draw(t, "expire") {
					r.leader.ExpireSession(r.nowMs, r.sessions[i])
					if resp := r.request(t, i, Request{Op: OpSetData, Path: "/t", Version: -1}); resp.Err != CodeSessionExpired {
						t.Fatalf("a write of an expiring session: %v", resp.Err)
					}
					r.keep(r.leader.PrepInternal(r.nowMs))
				} else {
					r.request(t, i, Request{Op: OpCloseSession})
				}
				r.newSession(i)
			},
			"sweep": func(t *rapid.T) {
				r.nowMs += 60_000
				r.keep(r.leader.PrepTick(r.nowMs))
				for _, id := range r.sessions {
					r.leader.TouchSession(r.nowMs, id)
				}
			},
			"catchUp": func(t *rapid.T) {
				catchUp(rapid.IntRange(applied, len(r.log)).Draw(t, "upTo"))
			},
		})
		catchUp(len(r.log))
		for _, rec := range r.log {
			late.ApplyRecord(rec)
		}
		want := replicaDigest(r.leader)
		for name, s := range map[string]*Server{"follower": follower, "late": late} {
			if got := replicaDigest(s); got != want {
				t.Fatalf("%s differs from the leader:\n%s\nleader:\n%s", name, got, want)
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}

// TestAReplicaAnswersOnlyTheConnectionsItHolds: the server a request came
// through answers it as it applies the transaction, with the leader's
// answer; another replica applies it silently but fires its own watches.
func TestAReplicaAnswersOnlyTheConnectionsItHolds(t *testing.T) {
	leader := NewServer(ServerConfig{})
	through, other := NewServer(ServerConfig{}), NewServer(ServerConfig{})
	through.Open(7)
	other.Open(8)
	rec, _ := leader.PrepConnect(0, 7, 10000)
	for _, s := range []*Server{through, other} {
		s.ApplyRecord(rec)
	}
	if out := through.Outputs(); len(out) != 1 || out[0].Kind != OutConnect || out[0].Connect.SessionID != rec.Session {
		t.Fatalf("the member the client is on: %+v", out)
	}
	if out := other.Outputs(); len(out) != 0 {
		t.Fatalf("another member: %+v", out)
	}
	// A client of the other member watches /a; the write comes through
	// the first member.
	other.Connect(0, 8, ConnectRequest{SessionID: rec.Session, Passwd: sessionPasswd(rec.Session), TimeoutMs: 10000})
	other.Receive(0, 8, Request{Xid: 1, Op: OpExists, Path: "/a", Watch: true})
	other.Outputs()
	w, resp := leader.PrepRequest(5, 7, rec.Session, nil, Request{Xid: 3, Op: OpCreate, Path: "/a", Data: []byte("x"), ACL: zk.WorldACL(zk.PermAll)})
	through.ApplyRecord(w)
	other.ApplyRecord(w)
	if out := through.Outputs(); len(out) != 1 || out[0].Kind != OutReply || out[0].Reply.Xid != 3 || out[0].Reply.Path != "/a" || out[0].Reply.Zxid != resp.Zxid {
		t.Fatalf("the member the write came through: %+v (leader %+v)", out, resp)
	}
	if out := other.Outputs(); len(out) != 1 || out[0].Kind != OutEvent || out[0].Event.Type != zk.EventNodeCreated {
		t.Fatalf("the watcher's member: %+v", out)
	}
}

// TestTxnRecordText holds TxnRecord.String, which formats without fmt,
// to what fmt's %#x and %v write, over every kind, any zxid and session
// (negative ones too) and any op, path and error code.
func TestTxnRecordText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &TxnRecord{
			Kind:     TxnKind(rapid.IntRange(0, 7).Draw(t, "kind")),
			Zxid:     rapid.Int64().Draw(t, "zxid"),
			LastZxid: rapid.Int64().Draw(t, "last"),
			Session:  rapid.Int64().Draw(t, "session"),
			Req:      Request{Op: OpCode(rapid.IntRange(-20, 120).Draw(t, "op")), Path: rapid.String().Draw(t, "path")},
			Resp:     Response{Err: Code(rapid.IntRange(-130, 5).Draw(t, "err"))},
		}
		var want string
		switch r.Kind {
		case RecCreateSession:
			want = fmt.Sprintf("%#x createSession %#x", r.Zxid, r.Session)
		case RecCloseSession:
			want = fmt.Sprintf("%#x closeSession %#x", r.Zxid, r.Session)
		case RecWrite:
			want = fmt.Sprintf("%#x %v %s session %#x err=%v", r.Zxid, r.Req.Op, r.Req.Path, r.Session, r.Resp.Err)
		case RecError:
			want = fmt.Sprintf("%#x error %v session %#x", r.Zxid, r.Req.Op, r.Session)
		case RecSweep:
			want = fmt.Sprintf("%#x..%#x container sweep", r.Zxid, r.LastZxid)
		case RecReconfig:
			want = fmt.Sprintf("%#x reconfig session %#x", r.Zxid, r.Session)
		default:
			want = "?"
		}
		if got := r.String(); got != want {
			t.Fatalf("got %q, fmt writes %q", got, want)
		}
		if got := string(r.appendText([]byte("s2 applied "))); got != "s2 applied "+want {
			t.Fatalf("appended %q, want %q", got, "s2 applied "+want)
		}
	})
}
