package sim

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// ensHarness drives a pure Ensemble by hand: it takes the steps the
// ensemble lists in the order a test asks for, and sorts what the members
// send by connection.
type ensHarness struct {
	t     *testing.T
	e     *Ensemble
	nowMs int64
	conn  ConnID
	xid   int32
	out   map[ConnID][]Output
}

func newEnsHarness(t *testing.T, n int) *ensHarness {
	e := NewEnsemble(ServerConfig{}, n)
	for _, m := range e.members {
		m.srv.checkEvery = true
	}
	return &ensHarness{t: t, e: e, out: map[ConnID][]Output{}}
}

func (h *ensHarness) collect() {
	for _, o := range h.e.Outputs() {
		h.out[o.Conn] = append(h.out[o.Conn], o)
	}
	if err := h.e.CheckInvariants(); err != nil {
		h.t.Fatal(err)
	}
}

// settle takes enabled steps, the first listed each time, skipping those
// skip names, until none is left.
func (h *ensHarness) settle(skip func(EnsembleStep) bool) {
	for range 100000 {
		var next *EnsembleStep
		for _, st := range h.e.Steps(nil) {
			if skip == nil || !skip(st) {
				next = &st
				break
			}
		}
		if next == nil {
			return
		}
		h.e.Step(h.nowMs, *next)
		h.collect()
	}
	h.t.Fatal("the ensemble never settles")
}

// notApplyingOn skips member i's apply steps: it logs and acks, but lags
// in applying.
func notApplyingOn(i int) func(EnsembleStep) bool {
	return func(st EnsembleStep) bool { return st.Kind == StepApply && st.Server == i }
}

func (h *ensHarness) open(i int) ConnID {
	h.conn++
	if !h.e.Open(i, h.conn, DefaultClientAddr) {
		h.t.Fatalf("s%d refused a connection", i)
	}
	return h.conn
}

func (h *ensHarness) connect(i int, timeoutMs int32) (ConnID, int64) {
	c := h.open(i)
	h.e.Connect(h.nowMs, c, ConnectRequest{TimeoutMs: timeoutMs, Passwd: make([]byte, 16)})
	h.collect()
	h.settle(nil)
	out := h.take(c)
	if len(out) != 1 || out[0].Kind != OutConnect || out[0].Connect.SessionID == 0 {
		h.t.Fatalf("connect on s%d: %+v", i, out)
	}
	return c, out[0].Connect.SessionID
}

func (h *ensHarness) send(c ConnID, req Request) int32 {
	h.xid++
	req.Xid = h.xid
	h.e.Receive(h.nowMs, c, req)
	h.collect()
	return h.xid
}

func (h *ensHarness) take(c ConnID) []Output {
	o := h.out[c]
	delete(h.out, c)
	return o
}

// reply takes the one reply c has, failing if it has anything else.
func (h *ensHarness) reply(c ConnID) Response {
	out := h.take(c)
	if len(out) != 1 || out[0].Kind != OutReply {
		h.t.Fatalf("conn%d: want one reply, got %+v", c, out)
	}
	return out[0].Reply
}

func (h *ensHarness) do(c ConnID, req Request) Response {
	h.send(c, req)
	h.settle(nil)
	return h.reply(c)
}

func TestEnsembleStartsWithTheHighestServerLeadingEpochOne(t *testing.T) {
	h := newEnsHarness(t, 3)
	if h.e.Leader() != 3 || h.e.Epoch() != 1 {
		t.Fatalf("leader s%d epoch %d", h.e.Leader(), h.e.Epoch())
	}
	c, sid := h.connect(1, 10000)
	r := h.do(c, mkCreate("/a", []byte("x"), 0))
	if r.Err != CodeOK || r.Zxid != 1<<32|2 {
		t.Fatalf("create: %v zxid %#x, want zxid epoch 1 counter 2 (after createSession)", r.Err, r.Zxid)
	}
	for i := 1; i <= 3; i++ {
		if n, ok := h.e.Member(i).Node("/a"); !ok || n.Stat.Czxid != r.Zxid {
			t.Fatalf("s%d: /a %v %+v", i, ok, n)
		}
	}
	if sid>>56 != 3 {
		t.Fatalf("session %#x: the leader s3's id belongs in its top byte", sid)
	}
}

// A follower that has not applied a committed delete serves the stale
// children list while the leader's is fresh (Programmer's Guide,
// "Consistency Guarantees": no simultaneously consistent cross-client
// views); sync on it, then the read, is fresh.
func TestALaggingFollowerServesStaleChildrenUntilSync(t *testing.T) {
	h := newEnsHarness(t, 3)
	onLeader, _ := h.connect(3, 10000)
	onFollower, _ := h.connect(1, 10000)
	h.do(onLeader, mkCreate("/lock", nil, 0))
	h.do(onLeader, mkCreate("/lock/n1", nil, 0))
	h.send(onLeader, mkDelete("/lock/n1", -1))
	h.settle(notApplyingOn(1))
	h.take(onLeader)
	h.send(onLeader, Request{Op: OpGetChildren, Path: "/lock"})
	if c := h.reply(onLeader).Children; len(c) != 0 {
		t.Fatalf("the leader's children: %q", c)
	}
	h.send(onFollower, Request{Op: OpGetChildren, Path: "/lock"})
	if c := h.reply(onFollower).Children; len(c) != 1 || c[0] != "n1" {
		t.Fatalf("the lagging follower's children: %q, want the stale [n1]", c)
	}
	syncXid := h.send(onFollower, Request{Op: OpSync, Path: "/lock"})
	readXid := h.send(onFollower, Request{Op: OpGetChildren, Path: "/lock"})
	if out := h.take(onFollower); len(out) != 0 {
		t.Fatalf("answered before the follower caught up: %+v", out)
	}
	h.settle(nil)
	out := h.take(onFollower)
	if len(out) != 2 || out[0].Reply.Xid != syncXid || out[1].Reply.Xid != readXid {
		t.Fatalf("after sync: %+v", out)
	}
	if c := out[1].Reply.Children; len(c) != 0 {
		t.Fatalf("children after sync: %q", c)
	}
}

// A lag fault stops a follower applying; its clients' reads grow stale,
// and it catches up when the lag ends.
func TestALagFaultStopsAFollowerApplying(t *testing.T) {
	h := newEnsHarness(t, 3)
	onLeader, _ := h.connect(3, 10000)
	onFollower, _ := h.connect(2, 10000)
	h.e.SetLag(2, true)
	h.do(onLeader, mkCreate("/a", nil, 0))
	if r := h.do(onFollower, Request{Op: OpExists, Path: "/a"}); r.Err != CodeNoNode {
		t.Fatalf("exists on the lagging follower: %v", r.Err)
	}
	h.e.SetLag(2, false)
	h.settle(nil)
	if r := h.do(onFollower, Request{Op: OpExists, Path: "/a"}); r.Err != CodeOK {
		t.Fatalf("exists after the lag: %v", r.Err)
	}
}

// Each session sees its own writes in order: a read behind the session's
// own write on a follower waits for the follower to apply it
// (CommitProcessor).
func TestASessionSeesItsOwnWritesOnAFollower(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, _ := h.connect(1, 10000)
	w := h.send(c, mkCreate("/mine", []byte("v"), 0))
	r := h.send(c, Request{Op: OpGetData, Path: "/mine"})
	if out := h.take(c); len(out) != 0 {
		t.Fatalf("the read was answered before the write: %+v", out)
	}
	h.settle(nil)
	out := h.take(c)
	if len(out) != 2 || out[0].Reply.Xid != w || out[1].Reply.Xid != r || out[1].Reply.Err != CodeOK || string(out[1].Reply.Data) != "v" {
		t.Fatalf("write then read: %+v", out)
	}
}

// A session reattached on another server moves: the leader records the
// new owner, and a write on the old connection gets no answer and closes
// it (measured: ErrConnectionClosed on go-zookeeper,
// ensemble_facts_test.go).
func TestAMovedSessionsOldConnectionIsClosed(t *testing.T) {
	h := newEnsHarness(t, 3)
	old, sid := h.connect(1, 10000)
	moved := h.open(2)
	h.e.Connect(h.nowMs, moved, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 10000})
	h.settle(nil)
	h.collect()
	if out := h.take(moved); len(out) != 1 || out[0].Connect.SessionID != sid {
		t.Fatalf("reattach on s2: %+v", out)
	}
	h.send(old, mkCreate("/x", nil, 0))
	h.settle(nil)
	out := h.take(old)
	if len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("a write on the old connection: %+v, want the connection closed unanswered", out)
	}
	if _, ok := h.e.View().Node("/x"); ok {
		t.Fatal("the moved session's old connection wrote")
	}
	if r := h.do(moved, mkCreate("/x", nil, 0)); r.Err != CodeOK {
		t.Fatalf("a write on the new connection: %v", r.Err)
	}
}

// A client that has seen a later zxid than a member has applied is
// refused there (ZooKeeperServer.processConnectRequest).
func TestAMemberBehindTheClientRefusesIt(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, sid := h.connect(3, 10000)
	h.e.SetLag(1, true)
	r := h.do(c, mkCreate("/a", nil, 0))
	behind := h.open(1)
	h.e.Connect(h.nowMs, behind, ConnectRequest{SessionID: sid, Passwd: sessionPasswd(sid), TimeoutMs: 10000, LastZxidSeen: r.Zxid})
	h.collect()
	if out := h.take(behind); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("connect on a member behind the client: %+v", out)
	}
}

// Only the leader expires sessions: a session a follower hears from stays
// alive at the leader, and one nobody hears from expires there; its close
// is a transaction every member applies.
func TestOnlyTheLeaderExpiresSessions(t *testing.T) {
	h := newEnsHarness(t, 3)
	busy, busySid := h.connect(1, 4000)
	idle, idleSid := h.connect(2, 4000)
	h.do(idle, mkCreate("/e", nil, zk.FlagEphemeral))
	for h.nowMs = 1000; h.nowMs <= 12000; h.nowMs += 1000 {
		h.do(busy, Request{Op: OpPing, Xid: -2})
		h.e.Tick(h.nowMs)
		h.settle(nil)
	}
	for i := 1; i <= 3; i++ {
		s := h.e.Member(i)
		if _, ok := s.sessions[idleSid]; ok {
			t.Fatalf("s%d still has the idle session", i)
		}
		if _, ok := s.sessions[busySid]; !ok {
			t.Fatalf("s%d lost the session its follower heard from", i)
		}
		if _, ok := s.Node("/e"); ok {
			t.Fatalf("s%d kept the expired session's ephemeral", i)
		}
	}
	if out := h.take(idle); len(out) == 0 || out[len(out)-1].Kind != OutClose {
		t.Fatalf("the expired session's connection: %+v", out)
	}
}

// Without a quorum there is no leader: no writes, no expiries, and a
// member without a leader closes its client connections and refuses new
// ones (go-zookeeper sees ErrNoServer; nothing expires: measured).
func TestQuorumLossExpiresNothingAndClosesConnections(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, sid := h.connect(1, 4000)
	before := h.e.Committed()
	h.e.Crash(3)
	h.e.Crash(2)
	h.collect()
	if h.e.Leader() != 0 || h.e.CanElect() {
		t.Fatalf("leader s%d, can elect %v", h.e.Leader(), h.e.CanElect())
	}
	if out := h.take(c); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("the survivor's client connection: %+v", out)
	}
	if h.e.Open(1, 99, DefaultClientAddr) {
		t.Fatal("a member without a leader accepted a connection")
	}
	h.nowMs = 60000
	h.e.Tick(h.nowMs)
	h.settle(nil)
	if h.e.Committed() != before || h.e.NextDeadlineMs() != 1<<63-1 {
		t.Fatalf("committed %d -> %d during quorum loss", before, h.e.Committed())
	}
	// The quorum comes back: the session survives with a fresh timeout.
	h.e.Restart(h.nowMs, 2)
	if !h.e.Elect(h.nowMs) {
		t.Fatal("no leader with two of three up")
	}
	if _, ok := h.e.prep.sessions[sid]; !ok {
		t.Fatal("the session did not survive the quorum loss")
	}
}

// A new leader re-tracks every session with a full fresh timeout
// (SessionTrackerImpl's constructor), measured: every session gets its
// full timeout again after a failover.
func TestANewLeaderGivesEverySessionAFreshFullTimeout(t *testing.T) {
	h := newEnsHarness(t, 3)
	_, sid := h.connect(1, 4000)
	h.nowMs = 3000
	h.e.Crash(3)
	h.nowMs = 3600
	if !h.e.Elect(h.nowMs) || h.e.Leader() != 2 || h.e.Epoch() != 2 {
		t.Fatalf("leader s%d epoch %d", h.e.Leader(), h.e.Epoch())
	}
	if got := h.e.prep.sessions[sid].expiresMs; got < h.nowMs+4000 {
		t.Fatalf("the session expires at %d, want a full 4 s from %d", got, h.nowMs)
	}
	if h.e.prep.lastZxid != 2<<32 {
		t.Fatalf("the new leader's zxid %#x, want epoch 2 counter 0", h.e.prep.lastZxid)
	}
}

// A proposal only the crashed leader logged is discarded by the next
// leader; the client saw its connection close (indeterminate), and the
// old leader drops it when it rejoins (ZooKeeper Internals, "Leader
// Activation").
func TestAProposalLoggedOnlyOnTheCrashedLeaderIsDiscarded(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, _ := h.connect(3, 10000)
	h.send(c, mkCreate("/lost", nil, 0))
	if len(h.e.members[2].log) == len(h.e.members[0].log) {
		t.Fatal("the leader did not log the proposal")
	}
	h.e.Crash(3)
	h.collect()
	if !h.e.Elect(h.nowMs) {
		t.Fatal("no new leader")
	}
	h.e.Restart(h.nowMs, 3)
	h.settle(nil)
	for i := 1; i <= 3; i++ {
		if _, ok := h.e.Member(i).Node("/lost"); ok {
			t.Fatalf("s%d has the discarded write", i)
		}
	}
	if got := len(h.e.members[2].log); got != len(h.e.members[0].log) {
		t.Fatalf("the old leader kept %d entries, the new one has %d", got, len(h.e.members[0].log))
	}
}

// A proposal a quorum logged survives the leader's crash: the follower
// that logged it has the highest zxid, leads, and commits it.
func TestAProposalLoggedOnAQuorumSurvivesTheLeadersCrash(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, _ := h.connect(3, 10000)
	h.send(c, mkCreate("/kept", nil, 0))
	// Only the proposal to s1 is delivered; no ack reaches the leader.
	for _, st := range h.e.Steps(nil) {
		if st.Kind == StepPeer && st.Server == 3 && st.To == 1 {
			h.e.Step(h.nowMs, st)
		}
	}
	h.e.Crash(3)
	if !h.e.Elect(h.nowMs) || h.e.Leader() != 1 {
		t.Fatalf("leader s%d, want s1, which logged the proposal", h.e.Leader())
	}
	h.settle(nil)
	for i := 1; i <= 2; i++ {
		if _, ok := h.e.Member(i).Node("/kept"); !ok {
			t.Fatalf("s%d lacks the write a quorum logged", i)
		}
	}
}

// A partitioned leader steps down and the others elect a new one; the
// partitioned server's clients are disconnected.
func TestAPartitionedLeaderStepsDown(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, _ := h.connect(3, 10000)
	h.e.SetCut(h.nowMs, 3, true)
	h.collect()
	if h.e.Leader() != 0 {
		t.Fatal("a leader cut off from every follower still leads")
	}
	if out := h.take(c); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("the old leader's client: %+v", out)
	}
	if !h.e.Elect(h.nowMs) || h.e.Leader() != 2 {
		t.Fatalf("leader s%d, want s2", h.e.Leader())
	}
	h.e.SetCut(h.nowMs, 3, false)
	if !h.e.serving(h.e.members[2]) {
		t.Fatal("the healed server does not follow the new leader")
	}
}

// A write whose proposal the leader had sent when it crashed is committed
// by the next leader: what a killed process sent still arrives (measured:
// a write in flight when the leader died was committed in every run,
// ensemble_facts_test.go). Its client saw its connection close: the write
// was indeterminate to it.
func TestAWriteProposedBeforeTheLeaderCrashedIsCommitted(t *testing.T) {
	h := newEnsHarness(t, 3)
	c, _ := h.connect(3, 10000)
	h.send(c, mkCreate("/inflight", nil, 0))
	h.e.Crash(3)
	h.collect()
	h.settle(nil) // the proposals on their way arrive; the acks go nowhere
	if !h.e.Elect(h.nowMs) {
		t.Fatal("no new leader")
	}
	h.settle(nil)
	for i := 1; i <= 2; i++ {
		if _, ok := h.e.Member(i).Node("/inflight"); !ok {
			t.Fatalf("s%d lacks the write the crashed leader had proposed", i)
		}
	}
}

// A sync on a follower right after a failover, before the new leader has
// proposed anything, is answered once the follower has what the leader
// logged: the target is the last zxid in the leader's log, not the new
// epoch's zxid base, which no member ever applies (difftest's
// AnyServerLeaderKilled, seed 1: the sync was never answered and the
// client's read timed out).
func TestASyncOnAFollowerRightAfterAFailoverIsAnswered(t *testing.T) {
	h := newEnsHarness(t, 3)
	onFollower, sid := h.connect(1, 10000)
	h.do(onFollower, mkCreate("/a", []byte("v"), 0))
	h.e.Crash(3)
	h.collect()
	h.take(onFollower) // closed: no leader
	if !h.e.Elect(h.nowMs) || h.e.Leader() != 2 || h.e.Epoch() != 2 {
		t.Fatalf("leader s%d epoch %d", h.e.Leader(), h.e.Epoch())
	}
	h.settle(nil)
	c := h.open(1)
	h.e.Connect(h.nowMs, c, ConnectRequest{SessionID: sid, TimeoutMs: 10000, Passwd: sessionPasswd(sid), LastZxidSeen: h.e.Member(1).lastZxid})
	h.collect()
	h.settle(nil)
	if out := h.take(c); len(out) != 1 || out[0].Kind != OutConnect || out[0].Connect.SessionID != sid {
		t.Fatalf("reconnect on s1: %+v", out)
	}
	syncXid := h.send(c, Request{Op: OpSync, Path: "/a"})
	readXid := h.send(c, Request{Op: OpGetData, Path: "/a"})
	h.settle(nil)
	out := h.take(c)
	if len(out) != 2 || out[0].Kind != OutReply || out[0].Reply.Xid != syncXid || out[0].Reply.Err != CodeOK ||
		out[1].Reply.Xid != readXid || string(out[1].Reply.Data) != "v" {
		t.Fatalf("sync then read on the follower after the failover: %+v", out)
	}
}

// A write a follower forwarded to a leader that crashes before it arrives
// is never answered silently forever: the follower closes the connection
// (no leader), and the client's write is indeterminate to it; the next
// leader never sees it.
func TestAWriteForwardedToALeaderThatCrashedClosesItsConnection(t *testing.T) {
	h := newEnsHarness(t, 3)
	onFollower, _ := h.connect(1, 10000)
	h.send(onFollower, mkCreate("/forwarded", nil, 0))
	readXid := h.send(onFollower, Request{Op: OpExists, Path: "/"})
	if out := h.take(onFollower); len(out) != 0 {
		t.Fatalf("answered before the leader had the write: %+v", out)
	}
	h.e.Crash(3)
	h.collect()
	if out := h.take(onFollower); len(out) != 1 || out[0].Kind != OutClose {
		t.Fatalf("the follower's client after its write's leader crashed: %+v (exists xid %d queued behind it)", out, readXid)
	}
	if !h.e.Elect(h.nowMs) {
		t.Fatal("no new leader")
	}
	h.settle(nil)
	for i := 1; i <= 2; i++ {
		if _, ok := h.e.Member(i).Node("/forwarded"); ok {
			t.Fatalf("s%d has a write that never reached a leader", i)
		}
	}
	if out := h.take(onFollower); len(out) != 0 {
		t.Fatalf("the closed connection got %+v", out)
	}
}
