package recipes_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// The recipe table on a real three-server ZooKeeper (issue 13): the
// package's shared ensemble (zktest.SharedEnsemble, started once for the
// test binary), each client pinned to one server through a proxy of its
// own, so that its faults are injected as on one server (real_test.go)
// and the clients of one lock talk to different servers: writes go
// through the leader, while each client's reads (the children lists and
// exists/get watches every recipe decides on) are served by its own
// server, a follower for most of them, and may be stale.
//
// Each client syncs once, when it is made, before any task runs: a
// client made after the others' work (the tests' inspection clients,
// listLockNodes) starts from everything the others were acknowledged,
// which ZooKeeper does not promise a new session on another server
// otherwise. The recipes' own reads are never synced for them.

// ensembleConnectMax bounds a client's connect and first sync.
const ensembleConnectMax = 30 * time.Second

// spreadOverServers pins the k-th client of an env to server k mod 3 + 1:
// the clients of one lock are on all three servers.
func spreadOverServers(_ *testing.T, _ *zktest.Ensemble, k int) int { return k%3 + 1 }

// allOnOneFollower pins every client to one follower (the server after
// the leader).
func allOnOneFollower(t *testing.T, e *zktest.Ensemble, _ int) int {
	leader, err := e.WaitLeader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return leader%3 + 1
}

// ensembleBackend runs the table on the shared ensemble, with clients
// placed on servers by place.
func ensembleBackend(name string, place func(t *testing.T, e *zktest.Ensemble, k int) int) backend {
	return backend{
		name:       name,
		faults:     true,
		open:       func(t *testing.T, _ uint64) env { return openEnsemble(t, place) },
		lossKinds:  realBackend.lossKinds,
		concurrent: true,
	}
}

func openEnsemble(t *testing.T, place func(t *testing.T, e *zktest.Ensemble, k int) int) env {
	ens := zktest.SharedEnsemble(t)
	var mu sync.Mutex
	made := 0
	dial := func(t *testing.T) (*zkconn.Conn, *zktest.Proxy) {
		mu.Lock()
		k := made
		made++
		mu.Unlock()
		id := place(t, ens, k)
		addr := ens.Member(id).Addr
		p := zktest.NewProxy(t, addr)
		c, err := zkconn.Dial([]string{addr}, sessionTimeout, zkconn.WithDialer(p.Dialer()))
		if err != nil {
			t.Fatalf("dial s%d: %v", id, err)
		}
		t.Cleanup(c.Close)
		ctx, cancel := context.WithTimeout(context.Background(), ensembleConnectMax)
		defer cancel()
		if err := c.WaitConnected(ctx); err != nil {
			t.Fatalf("s%d: %v", id, err)
		}
		// A connection lost under load (the server silent past two
		// thirds of the session timeout) fails the sync; go-zookeeper
		// reconnects, and the sync is sent again.
		for {
			_, err := c.Sync(ctx, "/")
			if err == nil {
				break
			}
			if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) || ctx.Err() != nil {
				t.Fatalf("sync on s%d: %v", id, err)
			}
		}
		return c, p
	}
	return newRealEnv(t, ens.Dial(t, sessionTimeout), dial)
}

// exclusionCycles: clients on all three servers take turns on the lock
// (or the leadership) of recipe r; never two holders, every grant made,
// the fencing tokens growing in grant order, nothing left behind.
func exclusionCycles(t *testing.T, b backend, r recipes.Recipe) {
	takeTurns(t, b.open(t, 1), r, 6, 3, 20*time.Millisecond, "")
}

// TestEnsembleRecipeTable runs every registered recipe on a real
// three-server ensemble, with the outcomes it has on one server:
//   - each correct recipe: six clients, two per server, take turns three
//     times each: mutual exclusion (one leader for the elections), every
//     grant, growing fencing tokens, no node left;
//   - persistent-lock: a crashed holder's node outlives its session and
//     the next client, on another server, waits forever (fair-lock
//     beside it comes through when the leader expires the session);
//   - unprotected-lock: a create whose reply was lost is made again and
//     the client waits behind its own orphan (fair-lock comes through);
//   - lost-wakeup-lock: with the holder and the waiter on the same
//     follower, the holder's release between the waiter's listing and
//     its exists watch leaves the waiter asleep on a free lock (fair-lock
//     wakes). With the two on different servers the window depends on
//     whether the waiter's server has applied the delete yet, a race on
//     a real ensemble: that run is logged, not asserted.
func TestEnsembleRecipeTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server ZooKeeper")
	}
	start := time.Now()
	ens := zktest.SharedEnsemble(t)
	leader, err := ens.WaitLeader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the shared ensemble serves with leader s%d (%v to start or find it)", leader, time.Since(start).Round(time.Millisecond))
	epochBefore := epochOf(t, ens, leader)
	defer func() {
		// The table asserts nothing about elections; a new epoch means
		// the machine's load cost the leader its quorum meanwhile, and
		// the clients rode through a failover too.
		now, err := ens.WaitLeader(time.Minute)
		if err != nil {
			t.Errorf("after the table: %v", err)
			return
		}
		t.Logf("after the table: leader s%d, epoch %d (was s%d, epoch %d)", now, epochOf(t, ens, now), leader, epochBefore)
	}()
	spread := ensembleBackend("spread", spreadOverServers)
	oneFollower := ensembleBackend("one-follower", allOnOneFollower)
	g := newGroup(t, spread)
	defer g.wait()
	for _, r := range recipes.Recipes() {
		if r.Flawed() {
			continue
		}
		g.run(r.Name, func(t *testing.T) { exclusionCycles(t, spread, r) })
	}
	g.run("persistent-lock", func(t *testing.T) {
		if got, left := crashedHolder(t, spread, "fair-lock"); !got || len(left) != 0 {
			t.Errorf("fair-lock after a crashed holder on another server: got the lock %v, left %v", got, left)
		}
		if got, left := crashedHolder(t, spread, "persistent-lock"); got || len(left) != 1 {
			t.Errorf("persistent-lock after a crashed holder on another server: got the lock %v, left %v; want it blocked behind the orphan", got, left)
		}
	})
	g.run("unprotected-lock", func(t *testing.T) {
		if got, left := lostCreateReply(t, spread, "fair-lock"); !got || len(left) != 0 {
			t.Errorf("fair-lock after a lost create reply: got the lock %v, left %v", got, left)
		}
		if got, left := lostCreateReply(t, spread, "unprotected-lock"); got || len(left) != 1 {
			t.Errorf("unprotected-lock after a lost create reply: got the lock %v, left %v; want it stuck behind its orphan", got, left)
		}
	})
	g.run("lost-wakeup-lock", func(t *testing.T) {
		if !vanishingPredecessor(t, oneFollower, "fair-lock", "getW") {
			t.Error("fair-lock on one follower missed the release of its predecessor")
		}
		if vanishingPredecessor(t, oneFollower, "lost-wakeup-lock", "existsW") {
			t.Error("lost-wakeup-lock on one follower got the lock: the flaw did not show")
		}
		if !vanishingPredecessor(t, spread, "fair-lock", "getW") {
			t.Error("fair-lock on two servers missed the release of its predecessor")
		}
		woke := vanishingPredecessor(t, spread, "lost-wakeup-lock", "existsW")
		t.Logf("lost-wakeup-lock with the holder on s1 and the waiter on s2: got the lock %v (true: s2 had not applied the release when the watch was set)", woke)
	})
}

// epochOf is the epoch of server id's last zxid (its high 32 bits).
func epochOf(t *testing.T, e *zktest.Ensemble, id int) int64 {
	zxid, err := e.Zxid(id)
	if err != nil {
		t.Logf("s%d: %v", id, err)
		return -1
	}
	return zxid >> 32
}
