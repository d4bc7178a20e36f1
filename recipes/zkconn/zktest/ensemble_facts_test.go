// Ensemble facts: what a real three-server ZooKeeper 3.8 (Debian's
// package) does in the situations issue 13's simulated ensemble must
// reproduce, measured by TestEnsembleFacts on StartEnsemble's servers
// (tickTime 200 ms, syncLimit 10 ticks, sessions of 4 s unless said) on
// the 2-core test machine, shared with other work. Each fact asserts what
// is deterministic and logs the figures; run
//
//	go test -count=1 -v -run TestEnsembleFacts ./recipes/zkconn/zktest/
//	ZKLAB_ENSEMBLE_LONG=1 go test -count=1 -v -run TestEnsemble ./recipes/zkconn/zktest/
//
// Figures measured 2026-11-23 (three or four runs):
//   - Start-up: three JVMs in parallel serve sessions with a leader in
//     6.4 to 20 s (8 s typical; the spread is the machine's load). Five
//     JVMs: 34 s (TestEnsembleOfFive, ZKLAB_ENSEMBLE_LONG=1).
//   - Reads on a follower after sync: always fresh (50 of 50, asserted).
//     Without sync, a read on a follower right after the leader acked a
//     write: 0 of 50 stale in four runs, 1 of 50 in one (the leader sends
//     COMMIT to the followers as it acks, and loopback is fast): stale
//     reads happen without a fault, rarely and by a race.
//   - A follower paused (SIGSTOP): writes through the leader still commit
//     with the other follower, in 5 to 46 ms (one of 141 ms). A read on
//     the paused follower is stale by at most the write made meanwhile:
//     sent while it was paused, stale in 3 of 10 and 1 of 10 rounds; sent
//     right after SIGCONT, in 0 of 5, 1 of 5 and 0 of 10. A real stale
//     read, but a race (the follower's learner thread against its request
//     pipeline). Holding the follower's peer traffic instead (Ensemble.Lag)
//     makes it the same every run: sim/difftest's
//     StaleReadOnALaggingFollower.
//   - A client whose lastZxidSeen is ahead of the server: the server
//     closes the connection without any ConnectResponse (EOF); at the
//     server's own zxid the same server grants a session.
//   - A session moved (reattached on another follower by a second
//     connection with its id and password): on the old follower a read
//     still succeeds (served locally); a write is refused by the leader
//     with SessionMoved and ZooKeeper sends no reply: the old server
//     closes the connection, go-zookeeper reports zk.ErrConnectionClosed
//     (not zk.ErrSessionMoved), the write is not applied. go-zookeeper
//     reconnects (3.0 s later with one server in its list) and takes the
//     session back under the same id; the other connection is not closed
//     within 2 s of that.
//   - A follower killed: the client is served again on another server
//     54 to 92 ms after SIGKILL, same session, ephemeral node there.
//   - The leader killed: a new leader within 470 to 820 ms of SIGKILL
//     (srvr polled every 50 ms). A session whose client went silent 1 s
//     before the leader died (timeout 4 s) ended 4.7 to 4.9 s after the
//     SIGKILL, 5.8 to 5.9 s after its client went silent: the new leader
//     re-tracked it with a full fresh timeout, past its original
//     deadline. A live client on a surviving follower keeps its session.
//   - A write in flight when the leader died (both followers paused, so
//     the leader could propose but not commit; no reply in 300 ms): the
//     client saw zk.ErrConnectionClosed; a new leader in 450 to 830 ms;
//     the client served again 270 to 600 ms later, same session; the write
//     was committed in every run (the paused followers had the PROPOSAL
//     in their socket buffers and logged it on SIGCONT, so the new leader
//     had it). The discard case needs a proposal that reached no
//     follower: not reproducible without partitioning peer traffic.
//   - A quorum lost (two of three killed for 8 s, twice the session
//     timeout): the survivor stops serving at once (srvr has no Mode line
//     within 2 to 7 ms); reads and writes fail (go-zookeeper:
//     zk.ErrNoServer, "could not connect to a server") while the client
//     reconnects about twice a second (14 connections accepted and closed
//     in 8 s); nothing expires: after the two restart (a leader in 11 to 12 s,
//     JVM start included) the client is served within 6 ms, same session,
//     its ephemeral node still there.

package zktest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
)

// electionWaitMax bounds a real ensemble's election after its leader is
// killed. It takes seconds on an idle machine (the figures above); under
// make test, beside race-detector builds and other JVMs on two cores, two
// followers just resumed from a pause once took more than 20 s.
const electionWaitMax = 60 * time.Second

var worldACL = zk.WorldACL(zk.PermAll)

// factsSessionTimeout is the session timeout of the facts' clients; the
// ensemble's tick is 200 ms.
const factsSessionTimeout = 4 * time.Second

// dialOnly connects a go-zookeeper client to server id alone.
func dialOnly(t *testing.T, e *Ensemble, id int) *zk.Conn {
	t.Helper()
	return e.Dial(t, factsSessionTimeout, id).ZK()
}

// serverOf returns the id of the server c is connected to.
func serverOf(t *testing.T, e *Ensemble, c *zk.Conn) int {
	t.Helper()
	addr := c.Server()
	for _, m := range e.Members {
		if m.Addr == addr {
			return m.ID
		}
	}
	t.Fatalf("the client is on %q, no server of the ensemble", addr)
	return 0
}

// waitConnected waits, at most d, for c to be connected.
func waitConnected(t *testing.T, c *zkconn.Conn, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatalf("reconnecting: %v", err)
	}
}

// restore brings every server back and waits for a leader, so that the
// next fact starts from a whole ensemble.
func restore(t *testing.T, e *Ensemble) {
	t.Helper()
	for _, m := range e.Members {
		if !m.Running() {
			if err := e.Restart(m.ID); err != nil {
				t.Fatal(err)
			}
		}
		_ = e.Resume(m.ID)
	}
	if err := e.waitServing(e.all(), ensembleStartTimeoutMax); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WaitLeader(ensembleStartTimeoutMax); err != nil {
		t.Fatal(err)
	}
	for _, m := range e.Members {
		m.Proxy.Heal()
	}
}

// rawConnect sends a ConnectRequest to addr with the given lastZxidSeen,
// session and password, and returns the connection and the server's
// answer (an error when the server closed without one).
func rawConnect(addr string, lastZxidSeen int64, timeoutMs int32, id int64, passwd []byte) (net.Conn, connectResponse, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, connectResponse{}, err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	body := binary.BigEndian.AppendUint32(nil, protocolVersion)
	body = binary.BigEndian.AppendUint64(body, uint64(lastZxidSeen))
	body = binary.BigEndian.AppendUint32(body, uint32(timeoutMs))
	body = binary.BigEndian.AppendUint64(body, uint64(id))
	body = binary.BigEndian.AppendUint32(body, uint32(len(passwd)))
	body = append(body, passwd...)
	body = append(body, 0)
	if _, err := conn.Write(withLengthPrefix(body)); err != nil {
		conn.Close()
		return nil, connectResponse{}, err
	}
	f, err := readFrameMax(conn, connectResponseBytesMax)
	if err != nil {
		conn.Close()
		return nil, connectResponse{}, err
	}
	r, err := parseConnectResponse(f[4:])
	if err != nil {
		conn.Close()
		return nil, connectResponse{}, err
	}
	return conn, r, nil
}

func mustCreate(t *testing.T, c *zk.Conn, path, data string, flags int32) {
	t.Helper()
	if _, err := c.Create(path, []byte(data), flags, worldACL); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

func mustGet(t *testing.T, c *zk.Conn, path string) string {
	t.Helper()
	b, _, err := c.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return string(b)
}

// TestEnsembleFacts measures a real three-server ZooKeeper 3.8 on the
// behaviours issue 13's simulator must reproduce; the figures are in
// doc comments on each fact, and the package's ensemble doc.
func TestEnsembleFacts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	start := time.Now()
	e := StartEnsemble(t, 3)
	t.Logf("ensemble of 3 serving, leader s%d, in %v", leaderNow(t, e), time.Since(start).Round(time.Millisecond))
	checkModes(t, e)
	setup := dialOnly(t, e, 1)
	mustCreate(t, setup, "/facts", "", 0)

	for _, fact := range []struct {
		name string
		run  func(*testing.T, *Ensemble)
	}{
		{"SyncThenReadOnFollower", factSyncThenReadOnFollower},
		{"PausedFollower", factPausedFollower},
		{"ClientZxidAheadRefused", factClientZxidAheadRefused},
		{"SessionMoved", factSessionMoved},
		{"FollowerKilled", factFollowerKilled},
		{"LeaderKilled", factLeaderKilled},
		{"WriteInFlightWhenLeaderDies", factWriteInFlight},
		{"QuorumLostAndRegained", factQuorumLost},
	} {
		if long[fact.name] && os.Getenv(EnvEnsembleLong) != "1" {
			t.Logf("%s: skipped, set %s=1 to run it", fact.name, EnvEnsembleLong)
			continue
		}
		t.Run(fact.name, func(t *testing.T) { fact.run(t, e) })
		restore(t, e)
	}
}

// long are the facts that take the longest (QuorumLostAndRegained: 2x
// the session timeout without a quorum, then two JVMs restarted, about
// 20 s); they run with ZKLAB_ENSEMBLE_LONG=1.
var long = map[string]bool{"QuorumLostAndRegained": true}

// checkModes asserts that srvr shows one leader and followers.
func checkModes(t *testing.T, e *Ensemble) {
	t.Helper()
	leader := leaderNow(t, e)
	for _, m := range e.Members {
		mode, err := e.Mode(m.ID)
		want := "follower"
		if m.ID == leader {
			want = "leader"
		}
		if err != nil || mode != want {
			t.Errorf("s%d (%s): srvr Mode %q, %v; want %q", m.ID, m.Addr, mode, err, want)
		}
	}
}

// leaderNow returns the leader, or fails the test.
func leaderNow(t *testing.T, e *Ensemble) int {
	t.Helper()
	id, err := e.WaitLeader(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Reads on a follower after sync see every write the leader acknowledged
// before the sync (50 of 50, deterministic: the follower forwards SYNC to
// the leader and answers after applying what the leader committed before
// it). Without sync, a read sent to the follower right after the leader
// acknowledged a write is stale now and then; the count is measured and
// logged, not asserted (it depends on scheduling).
func factSyncThenReadOnFollower(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	follower := e.Follower(t)
	w, r := dialOnly(t, e, leader), dialOnly(t, e, follower)
	mustCreate(t, w, "/facts/sync", "0", 0)
	const rounds = 50
	stale := 0
	for i := 1; i <= rounds; i++ {
		want := fmt.Sprint(i)
		if _, err := w.Set("/facts/sync", []byte(want), -1); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, r, "/facts/sync"); got != want {
			stale++
		}
	}
	t.Logf("reads without sync on follower s%d right after the leader's ack: %d of %d stale", follower, stale, rounds)
	for i := 1; i <= rounds; i++ {
		want := fmt.Sprint(rounds + i)
		if _, err := w.Set("/facts/sync", []byte(want), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Sync("/facts/sync"); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, r, "/facts/sync"); got != want {
			t.Fatalf("after sync, follower s%d read %q, want %q", follower, got, want)
		}
	}
}

// A follower paused with SIGSTOP does not hold writes up: the leader
// commits with the other follower (asserted; latency logged). A read on
// the paused follower's client, sent while it is paused (it waits in the
// socket) or right after SIGCONT, races the follower's own catching up
// (the PROPOSAL and COMMIT wait in its socket buffer from the leader): it
// is stale by at most that one write (asserted: the value read is the
// write's or the one before), and whether it is stale is logged per
// round, not asserted. After sync it is fresh (asserted).
func factPausedFollower(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	follower := e.Follower(t)
	w, r := dialOnly(t, e, leader), dialOnly(t, e, follower)
	mustCreate(t, w, "/facts/paused", "0", 0)
	if _, err := r.Sync("/facts/paused"); err != nil {
		t.Fatal(err)
	}
	const rounds = 10
	staleQueued, staleAfter := 0, 0
	for i := 1; i <= rounds; i++ {
		before, want := fmt.Sprint(i-1), fmt.Sprint(i)
		if err := e.Pause(follower); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := w.Set("/facts/paused", []byte(want), -1)
		took := time.Since(start)
		queued := make(chan string, 1)
		go func() {
			b, _, err := r.Get("/facts/paused")
			if err != nil {
				queued <- err.Error()
				return
			}
			queued <- string(b)
		}()
		time.Sleep(200 * time.Millisecond)
		if rerr := e.Resume(follower); rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			t.Fatalf("round %d: a write with follower s%d paused: %v", i, follower, err)
		}
		gotQueued := <-queued
		gotAfter := mustGet(t, r, "/facts/paused")
		for _, got := range []string{gotQueued, gotAfter} {
			if got != want && got != before {
				t.Errorf("round %d: read %q on s%d, want %q or the stale %q", i, got, follower, want, before)
			}
		}
		if gotQueued != want {
			staleQueued++
		}
		if gotAfter != want {
			staleAfter++
		}
		t.Logf("round %d: write with s%d paused acknowledged in %v; on s%d a read sent while paused: %q, right after SIGCONT: %q (want %q)",
			i, follower, took.Round(time.Microsecond), follower, gotQueued, gotAfter, want)
		if _, err := r.Sync("/facts/paused"); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, r, "/facts/paused"); got != want {
			t.Fatalf("round %d: after sync, s%d read %q, want %q", i, follower, got, want)
		}
	}
	t.Logf("stale reads on the paused follower: sent while paused %d of %d, sent right after SIGCONT %d of %d", staleQueued, rounds, staleAfter, rounds)
}

// A server whose last processed zxid is behind the client's lastZxidSeen
// refuses the client: it closes the connection without a ConnectResponse
// (asserted), and a client whose lastZxidSeen is not ahead gets a session
// from the same server (asserted). go-zookeeper sends the lastZxid of its
// latest reply header, so a go-zookeeper client moving to a lagging
// follower meets this and tries its next server.
func factClientZxidAheadRefused(t *testing.T, e *Ensemble) {
	follower := e.Follower(t)
	addr := e.Member(follower).Addr
	zxid, err := e.Zxid(follower)
	if err != nil {
		t.Fatal(err)
	}
	conn, r, err := rawConnect(addr, zxid+1000, 4000, 0, nil)
	if err == nil {
		conn.Close()
		t.Fatalf("s%d (zxid %#x) granted session %#x to a client that saw zxid %#x", follower, zxid, r.sessionID, zxid+1000)
	}
	t.Logf("s%d at zxid %#x, client at %#x: %v", follower, zxid, zxid+1000, err)
	conn, r, err = rawConnect(addr, zxid, 4000, 0, nil)
	if err != nil {
		t.Fatalf("s%d (zxid %#x) refused a client at its own zxid: %v", follower, zxid, err)
	}
	conn.Close()
	if r.sessionID == 0 {
		t.Fatalf("s%d answered session 0 to a client at its own zxid", follower)
	}
}

// A session reattached on another server moves there (the leader records
// the new owner). Then, on the old connection to a follower:
//   - a read succeeds: the follower serves it locally and never asks
//     the leader who owns the session (asserted);
//   - a write is refused by the leader with SessionMovedException, and
//     ZooKeeper 3.8 sends no reply for it: the old server closes the
//     connection (FinalRequestProcessor), so go-zookeeper reports
//     zk.ErrConnectionClosed, not zk.ErrSessionMoved (asserted), and the
//     write is not applied (asserted).
//
// The client reconnects (to its one server here, after go-zookeeper's
// backoff: about 3 s measured) and takes the session back, same id
// (asserted). The reattached connection on the other server is not
// closed when that happens (no frame in 2 s, logged).
func factSessionMoved(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	var followers []int
	for _, m := range e.Members {
		if m.ID != leader {
			followers = append(followers, m.ID)
		}
	}
	oldServer, newServer := followers[0], followers[1]
	c := e.Dial(t, 10*time.Second, oldServer)
	z := c.ZK()
	mustCreate(t, z, "/facts/moved", "", 0)
	id, passwd, ok := e.Member(oldServer).Proxy.Session()
	if !ok || id != z.SessionID() {
		t.Fatalf("the proxy saw session %#x (%v), the client has %#x", id, ok, z.SessionID())
	}
	raw, r, err := rawConnect(e.Member(newServer).Addr, 0, 10000, id, passwd)
	if err != nil {
		t.Fatalf("reattaching session %#x on s%d: %v", id, newServer, err)
	}
	defer raw.Close()
	if r.sessionID != id {
		t.Fatalf("s%d answered session %#x to a reattach of %#x", newServer, r.sessionID, id)
	}
	_, _, getErr := z.Get("/facts/moved")
	t.Logf("session %#x reattached on s%d; a read on the old connection to s%d: %v", id, newServer, oldServer, getErr)
	_, createErr := z.Create("/facts/moved/w", nil, 0, worldACL)
	t.Logf("a write on the old connection to s%d: %v", oldServer, createErr)
	if getErr != nil {
		t.Errorf("a read on the old connection to follower s%d after the session moved: %v, want it served", oldServer, getErr)
	}
	if !errors.Is(createErr, zk.ErrConnectionClosed) {
		t.Errorf("a write on the old connection after the session moved: %v, want %v", createErr, zk.ErrConnectionClosed)
	}
	start := time.Now()
	waitConnected(t, c, 20*time.Second)
	if _, err := z.Create("/facts/moved/back", nil, 0, worldACL); err != nil {
		t.Fatalf("a write after the client reconnected: %v", err)
	}
	if z.SessionID() != id {
		t.Fatalf("the client's session is %#x after the move, want %#x", z.SessionID(), id)
	}
	if ok, _, err := z.Exists("/facts/moved/w"); err != nil || ok {
		t.Errorf("the write refused with SessionMoved: exists %v, %v; want it not applied", ok, err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, rawErr := readFrameMax(raw, replyBytesMax)
	t.Logf("the client wrote again on s%d, session %#x, %v after the failed write; the reattached connection on s%d then reads: %v",
		serverOf(t, e, z), id, time.Since(start).Round(time.Millisecond), newServer, rawErr)
}

// eventually retries op every 50 ms until it succeeds, at most d, and
// returns how long that took.
func eventually(t *testing.T, d time.Duration, what string, op func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := op()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: still failing after %v: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A follower killed: its clients reconnect to another server with their
// session (same id, its ephemeral node still there: asserted); the time
// from SIGKILL to the first request served again is logged.
func factFollowerKilled(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	var followers []int
	for _, m := range e.Members {
		if m.ID != leader {
			followers = append(followers, m.ID)
		}
	}
	z := e.Dial(t, factsSessionTimeout, followers...).ZK()
	id := z.SessionID()
	mustCreate(t, z, "/facts/follower-killed", "", zk.FlagEphemeral)
	victim := serverOf(t, e, z)
	e.Kill(victim)
	took := eventually(t, 20*time.Second, "a request after the follower died", func() error {
		ok, _, err := z.Exists("/facts/follower-killed")
		if err == nil && !ok {
			t.Fatal("the ephemeral node is gone after the follower died")
		}
		return err
	})
	if z.SessionID() != id {
		t.Fatalf("session %#x became %#x", id, z.SessionID())
	}
	t.Logf("follower s%d killed: the client served again on s%d after %v, same session %#x", victim, serverOf(t, e, z), took.Round(time.Millisecond), id)
}

// The leader killed:
//   - a new leader is elected among the two others (time from SIGKILL to
//     srvr showing a leader and a follower: logged);
//   - the new leader re-tracks every session with a full fresh timeout:
//     a session whose client went silent (its connection cut for good)
//     1 s before the leader died expires no sooner than the new leader's
//     start plus its timeout, past its original deadline (asserted: its
//     ephemeral node is deleted at or after the SIGKILL plus the session
//     timeout, and within 15 s after);
//   - a live client on a surviving follower keeps its session (asserted).
func factLeaderKilled(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	follower := e.Follower(t)
	watcher := dialOnly(t, e, follower)
	watcherID := watcher.SessionID()
	silentProxy := NewProxy(t, e.Member(follower).Addr)
	silent, err := zkconn.Dial([]string{e.Member(follower).Addr}, factsSessionTimeout, zkconn.WithDialer(silentProxy.Dialer()))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waitConnected(t, silent, 20*time.Second)
	mustCreate(t, silent.ZK(), "/facts/silent", "", zk.FlagEphemeral)
	ok, _, deleted, err := watcher.ExistsW("/facts/silent")
	if err != nil || !ok {
		t.Fatalf("exists /facts/silent: %v, %v", ok, err)
	}
	silentProxy.Kill()
	crashed := time.Now()
	time.Sleep(time.Second)
	e.Kill(leader)
	killed := time.Now()
	newLeader, err := e.WaitLeader(electionWaitMax)
	if err != nil {
		t.Fatal(err)
	}
	elected := time.Since(killed)
	var ev zk.Event
	select {
	case ev = <-deleted:
	case <-time.After(factsSessionTimeout + 15*time.Second):
		t.Fatal("the silent session's ephemeral node was not deleted")
	}
	gone := time.Now()
	t.Logf("leader s%d killed: s%d leads after %v (srvr poll every 50 ms); the silent session (timeout %v, silent 1 s before) ended %v after the SIGKILL, %v after its client went silent (event %v)",
		leader, newLeader, elected.Round(time.Millisecond), factsSessionTimeout, gone.Sub(killed).Round(time.Millisecond), gone.Sub(crashed).Round(time.Millisecond), ev.Type)
	if ev.Type != zk.EventNodeDeleted {
		t.Fatalf("watch event %v, want a deletion", ev)
	}
	if gone.Sub(killed) < factsSessionTimeout {
		t.Errorf("the silent session ended %v after the leader died, before a fresh timeout of %v", gone.Sub(killed), factsSessionTimeout)
	}
	if _, _, err := watcher.Exists("/facts"); err != nil {
		t.Fatal(err)
	}
	if watcher.SessionID() != watcherID {
		t.Fatalf("the live client's session %#x became %#x", watcherID, watcher.SessionID())
	}
}

// A write in flight when the leader dies: with both followers paused the
// leader logs and proposes the write but cannot commit it (no reply
// within 300 ms: asserted). The leader is killed and the followers
// resumed: the client sees its connection close with the write
// unanswered (zk.ErrConnectionClosed, asserted), reconnects to the new
// leader's ensemble with its session, and the write's fate is decided by
// the new leader: committed or discarded (logged; the followers had the
// PROPOSAL in their socket buffers, so they logged it). Every server
// agrees on it after sync (asserted).
func factWriteInFlight(t *testing.T, e *Ensemble) {
	leader := leaderNow(t, e)
	var followers []int
	for _, m := range e.Members {
		if m.ID != leader {
			followers = append(followers, m.ID)
			m.Proxy.Refuse(time.Minute) // so that the client lands on the leader
		}
	}
	c := e.Dial(t, 10*time.Second)
	z := c.ZK()
	for _, id := range followers {
		e.Member(id).Proxy.Heal()
	}
	if on := serverOf(t, e, z); on != leader {
		t.Fatalf("the client is on s%d, want the leader s%d", on, leader)
	}
	id := z.SessionID()
	for _, f := range followers {
		if err := e.Pause(f); err != nil {
			t.Fatal(err)
		}
	}
	result := make(chan error, 1)
	go func() {
		_, err := z.Create("/facts/inflight", nil, 0, worldACL)
		result <- err
	}()
	select {
	case err := <-result:
		t.Fatalf("a write with both followers paused answered: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	e.Kill(leader)
	for _, f := range followers {
		if err := e.Resume(f); err != nil {
			t.Fatal(err)
		}
	}
	var writeErr error
	select {
	case writeErr = <-result:
	case <-time.After(20 * time.Second):
		t.Fatal("the write in flight never answered")
	}
	if !errors.Is(writeErr, zk.ErrConnectionClosed) {
		t.Errorf("the write in flight when the leader died: %v, want %v", writeErr, zk.ErrConnectionClosed)
	}
	killed := time.Now()
	newLeader, err := e.WaitLeader(electionWaitMax)
	if err != nil {
		t.Fatal(err)
	}
	elected := time.Since(killed)
	var committed bool
	took := eventually(t, 20*time.Second, "a request after the failover", func() error {
		var err error
		committed, _, err = z.Exists("/facts/inflight")
		return err
	})
	if z.SessionID() != id {
		t.Fatalf("session %#x became %#x", id, z.SessionID())
	}
	t.Logf("leader s%d killed with a write in flight: the client saw %v; s%d leads after %v; the client served again on s%d %v later, same session; the write committed: %v",
		leader, writeErr, newLeader, elected.Round(time.Millisecond), serverOf(t, e, z), took.Round(time.Millisecond), committed)
	for _, f := range followers {
		r := dialOnly(t, e, f)
		if _, err := r.Sync("/facts"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := r.Exists("/facts/inflight"); err != nil || ok != committed {
			t.Errorf("s%d: /facts/inflight exists %v (%v), the client saw %v", f, ok, err, committed)
		}
	}
}

// A quorum lost and regained: two of three servers killed for twice the
// session timeout.
//   - The survivor stops serving: srvr has no Mode line ("not currently
//     serving requests"), it closes its clients' connections, and reads
//     and writes fail (asserted) while the client keeps reconnecting
//     (connections the survivor accepted and closed: logged).
//   - No session expires meanwhile: when the two are back and a leader is
//     elected, the client's session is the same and its ephemeral node is
//     there (asserted), though it was cut off for 2x its timeout.
func factQuorumLost(t *testing.T, e *Ensemble) {
	survivor := e.Follower(t)
	c := e.Dial(t, factsSessionTimeout, survivor)
	z := c.ZK()
	id := z.SessionID()
	mustCreate(t, z, "/facts/quorum", "", zk.FlagEphemeral)
	accepted := e.Member(survivor).Proxy.Accepted()
	for _, m := range e.Members {
		if m.ID != survivor {
			e.Kill(m.ID)
		}
	}
	lost := time.Now()
	closed := eventually(t, 10*time.Second, "the survivor to stop serving", func() error {
		if mode, err := e.Mode(survivor); err == nil {
			return fmt.Errorf("s%d still %s", survivor, mode)
		}
		return nil
	})
	_, _, readErr := z.Get("/facts")
	_, writeErr := z.Create("/facts/quorum-write", nil, 0, worldACL)
	if readErr == nil || writeErr == nil {
		t.Errorf("without a quorum: read %v, write %v; want both to fail", readErr, writeErr)
	}
	time.Sleep(2*factsSessionTimeout - time.Since(lost))
	reconnects := e.Member(survivor).Proxy.Accepted() - accepted
	for _, m := range e.Members {
		if m.ID != survivor {
			if err := e.Restart(m.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	restarted := time.Now()
	newLeader, err := e.WaitLeader(ensembleStartTimeoutMax)
	if err != nil {
		t.Fatal(err)
	}
	leaderAfter := time.Since(restarted)
	var exists bool
	took := eventually(t, 30*time.Second, "a request after the quorum came back", func() error {
		var err error
		exists, _, err = z.Exists("/facts/quorum")
		return err
	})
	t.Logf("quorum lost for %v: s%d stopped serving after %v; read: %v; write: %v; the client's connections to s%d meanwhile: %d; after restarting two JVMs s%d leads after %v, the client served again %v later",
		restarted.Sub(lost).Round(time.Millisecond), survivor, closed.Round(time.Millisecond), readErr, writeErr, survivor, reconnects,
		newLeader, leaderAfter.Round(time.Millisecond), took.Round(time.Millisecond))
	if reconnects < 1 {
		t.Errorf("the client did not reconnect to s%d while it had no leader", survivor)
	}
	if z.SessionID() != id || !exists {
		t.Errorf("after the quorum came back: session %#x (was %#x), ephemeral node there: %v; want the same session and its node", z.SessionID(), id, exists)
	}
}
