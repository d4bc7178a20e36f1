package scenarios_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

// queueLock is a small user's lock for the checks' own tests: an
// ephemeral-sequential queue under the lock's path, each waiter watching
// its predecessor. Its flaw, if any, is one of the fields: each makes the
// liveness check find one cause, or makes the lease lie about itself.
type queueLock struct {
	c    recipes.Conn
	path string
	// badVersion releases with a version the node never has: the delete
	// fails (zk: version conflict) and the release returns that error.
	badVersion bool
	// giveUp makes the handle's first acquire, when it is not first,
	// fail at once (a try-lock that forgets its node); later acquires
	// wait.
	giveUp bool
	tries  int
	// fullPath compares the children's names with the node's full path,
	// so it never sees itself first, and when first watches itself.
	fullPath bool
	// wrongSession makes the lease report a session that is not its own.
	wrongSession bool
	// lostRelease makes a release give up before its delete, with an
	// error.
	lostRelease bool
	// retake makes an acquire first look for a node of its own session
	// left in the queue (by a failed release) and stand on it again.
	retake bool
}

// ownNode is a node of the queue that the client's session owns.
func (l *queueLock) ownNode(ctx context.Context) (string, error) {
	names, _, err := l.c.Children(ctx, l.path)
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	for _, n := range names {
		ok, st, err := l.c.Exists(ctx, l.path+"/"+n)
		if err != nil {
			return "", err
		}
		if ok && st.EphemeralOwner == l.c.Session().ID {
			return l.path + "/" + n, nil
		}
	}
	return "", nil
}

var errBusy = errors.New("queue-lock: busy")

func (l *queueLock) Acquire(ctx context.Context) (scenarios.Lease, error) {
	for _, dir := range []string{"/zklab", l.path} {
		if _, err := l.c.Create(ctx, dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
	}
	var node string
	if l.retake {
		own, err := l.ownNode(ctx)
		if err != nil {
			return nil, err
		}
		node = own
	}
	if node == "" {
		created, err := l.c.Create(ctx, l.path+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			return nil, err
		}
		node = created
	}
	l.tries++
	for {
		names, _, err := l.c.Children(ctx, l.path)
		if err != nil {
			return nil, err
		}
		slices.Sort(names)
		mine := slices.Index(names, strings.TrimPrefix(node, l.path+"/"))
		if l.fullPath {
			mine = slices.Index(names, node) // the bug: names are not paths
			if mine < 0 {
				mine = max(slices.Index(names, strings.TrimPrefix(node, l.path+"/")), 1)
			}
		}
		if mine < 0 {
			return nil, errors.New("queue-lock: my node is gone")
		}
		if mine == 0 {
			lease, err := scenarios.NodeLease(ctx, l.c, node)
			if err != nil {
				return nil, err
			}
			return &queueLease{Lease: lease, c: l.c, node: node, lock: l}, nil
		}
		if l.giveUp && l.tries == 1 {
			return nil, errBusy // the bug: the node stays
		}
		ok, _, watch, err := l.c.ExistsW(ctx, l.path+"/"+names[mine-1])
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := l.c.Wait(ctx, watch); err != nil {
				return nil, err
			}
		}
	}
}

type queueLease struct {
	scenarios.Lease
	c    recipes.Conn
	node string
	lock *queueLock
}

func (l *queueLease) SessionID() int64 {
	if l.lock.wrongSession {
		return 0x5e55 // the bug: not the session that owns the node
	}
	return l.Lease.SessionID()
}

func (l *queueLease) Release(ctx context.Context) error {
	if l.lock.lostRelease {
		return errors.New("queue-lock: release gave up") // the bug: the node stays
	}
	if l.lock.badVersion {
		return l.c.Delete(ctx, l.node, 7) // the bug: the node is at version 0
	}
	return l.Lease.Release(ctx)
}

// queueLocks are the test's recipes, by the names their scenario files
// give.
var queueLocks = map[string]func(c recipes.Conn, path string) *queueLock{
	"queue-lock":               func(c recipes.Conn, p string) *queueLock { return &queueLock{c: c, path: p} },
	"bad-version-release-lock": func(c recipes.Conn, p string) *queueLock { return &queueLock{c: c, path: p, badVersion: true} },
	"give-up-lock":             func(c recipes.Conn, p string) *queueLock { return &queueLock{c: c, path: p, giveUp: true} },
	"full-path-lock":           func(c recipes.Conn, p string) *queueLock { return &queueLock{c: c, path: p, fullPath: true} },
	"wrong-session-lock":       func(c recipes.Conn, p string) *queueLock { return &queueLock{c: c, path: p, wrongSession: true} },
	"retake-lock": func(c recipes.Conn, p string) *queueLock {
		return &queueLock{c: c, path: p, lostRelease: true, retake: true}
	},
}

func queueConstructor(name string) scenarios.Constructor {
	return func(c recipes.Conn, path string, _ recipes.Options) scenarios.Lock { return queueLocks[name](c, path) }
}

// TestLivenessCauses replays a scenario for each cause of a stuck queue
// and checks that the liveness verdict names it from the facts: the node
// at the head, the session that owns it, and the history that left it.
func TestLivenessCauses(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"testdata/lost-reply-unprotected.scenario", []string{
			"queue head /zklab/lock/lock-0000000001 is owned by session 0x19b76daa8000001 of c2",
			"c2's create at step 33 asked for it and lost its reply (zk: connection closed)",
			"(a lost create reply); c2 waits behind it"}},
		{"testdata/causes/failed-release.scenario", []string{
			"queue head /zklab/lock/n-0000000000 is owned by session 0x19b76daa8000000 of c1",
			"c1's release at step", "failed (zk: version conflict) and left it (a failed release)"}},
		{"testdata/causes/error-after-create.scenario", []string{
			"queue head /zklab/lock/n-0000000001 is owned by session 0x19b76daa8000001 of c2",
			"c2's acquire from step 2 created it", "then failed at step", "(queue-lock: busy) without removing it (an error after create)"}},
		{"testdata/causes/waits-on-itself.scenario", []string{
			"queue head /zklab/lock/n-0000000000 is owned by session 0x19b76daa8000000 of c1",
			"c1's own node, made by the acquire that waits (from step 1): the waiter waits on itself"}},
	} {
		t.Run(strings.TrimSuffix(filepath.Base(tc.file), ".scenario"), func(t *testing.T) {
			res := replayQueueScenario(t, tc.file)
			live := res.Verdict.Check(scenarios.CheckLiveness)
			if live.Outcome != scenarios.Fail {
				t.Fatalf("liveness %s, want fail:\n%s", live.Outcome, res.Verdict)
			}
			for _, w := range tc.want {
				if !strings.Contains(live.Detail, w) {
					t.Errorf("the liveness verdict lacks %q:\n%s", w, live.Detail)
				}
			}
		})
	}
}

// TestWrongSessionJudgedOnTheServersTruth: a lease that reports a session
// not its own is judged on the owner the server has for its node. Its
// holder's session expires while it holds; the server removes the node
// then, so in ZooKeeper's view the next holder does not overlap it (a
// check that believed the lease would hold it to the end of the run), and
// the clients' overlapping belief names the real owner and the lie.
func TestWrongSessionJudgedOnTheServersTruth(t *testing.T) {
	res := replayQueueScenario(t, "testdata/causes/wrong-session.scenario")
	if zk := res.Verdict.Check(scenarios.CheckZKHolders); zk.Outcome != scenarios.Pass {
		t.Errorf("zk-holders %s %s, want pass", zk.Outcome, zk.Detail)
	}
	sb := res.Verdict.Check(scenarios.CheckSplitBrain)
	if sb.Outcome != scenarios.Fail {
		t.Fatalf("split-brain %s, want fail:\n%s", sb.Outcome, res.Verdict)
	}
	for _, w := range []string{"c1 (token 0x4, session 0x19b76daa8000000, the lease said 0x5e55", "c2 (token 0x8, session 0x19b76daa8000001, the lease said 0x5e55"} {
		if !strings.Contains(sb.Detail, w) {
			t.Errorf("split-brain lacks %q:\n%s", w, sb.Detail)
		}
	}
}

func replayQueueScenario(t *testing.T, file string) *scenarios.Result {
	t.Helper()
	sc, err := scenarios.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var o scenarios.RunOptions // a recipe of zklab's own, or one of the test's
	if queueLocks[sc.Recipe] != nil {
		o.Recipe = queueConstructor(sc.Recipe)
	}
	res, err := scenarios.Replay(sc, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range res.Verdict.Expectations(sc.Expect) {
		t.Errorf("%s: %s", file, bad)
	}
	return res
}

// TestOneClientOneNodeIsOneHolder: a careful recipe whose release failed
// retakes its own node on its next acquire. Its two leases stand on one
// node of the server's: one holder in ZooKeeper's view, not "c1 and c1".
func TestOneClientOneNodeIsOneHolder(t *testing.T) {
	res := replayQueueScenario(t, "testdata/causes/retake-own-node.scenario")
	if zk := res.Verdict.Check(scenarios.CheckZKHolders); zk.Outcome != scenarios.Pass || zk.Detail != "2 leases" {
		t.Errorf("zk-holders %s %s, want pass with 2 leases", zk.Outcome, zk.Detail)
	}
}

// grantAll grants every acquire at once, on no node.
type grantAll struct{ c recipes.Conn }

func (l grantAll) Acquire(ctx context.Context) (scenarios.Lease, error) {
	return nodeless{session: l.c.Session().ID}, nil
}

type nodeless struct{ session int64 }

func (nodeless) Token() int64                      { return 1 }
func (l nodeless) SessionID() int64                { return l.session }
func (nodeless) Nodes() []string                   { return nil }
func (nodeless) Release(ctx context.Context) error { return nil }

// TestNodelessLeasesAreHoldersEach: leases that name no node are not one
// holder for sharing "no node": each client that holds one is a holder.
func TestNodelessLeasesAreHoldersEach(t *testing.T) {
	sc := &scenarios.Scenario{Recipe: "grant-all", Clients: 2, Hold: 100 * time.Millisecond}
	res, err := scenarios.Run(sc, scenarios.RunOptions{Recipe: func(c recipes.Conn, _ string, _ recipes.Options) scenarios.Lock { return grantAll{c} }})
	if err != nil {
		t.Fatal(err)
	}
	if zk := res.Verdict.Check(scenarios.CheckZKHolders); zk.Outcome != scenarios.Fail || !strings.Contains(zk.Detail, "c1 (token 0x1") || !strings.Contains(zk.Detail, "c2 (token 0x1") {
		t.Errorf("zk-holders %s %s, want c1 and c2 to hold", zk.Outcome, zk.Detail)
	}
}

// TestLeaseJudgedOnItsOwnNodeOfAReusedPath: a lease is judged on the
// node its token names. exclusive-lock makes one path again and again; a
// holder paused past its session returns, on waking, the lease of its own
// node, which the server deleted with the session, while another client
// holds the path's next node. That lease is empty, not a second holder of
// the other client's node (the file's expectations: lock-linearizable and
// zk-holders pass, split-brain fails).
func TestLeaseJudgedOnItsOwnNodeOfAReusedPath(t *testing.T) {
	res := replayQueueScenario(t, "testdata/causes/reused-path-after-expiry.scenario")
	sb := res.Verdict.Check(scenarios.CheckSplitBrain)
	if want := "c2 (token 0x100000007, session 0x39b76daa8000001, node /zklab/lock/lock, from step 204)"; !strings.Contains(sb.Detail, want) {
		t.Errorf("split-brain lacks %q:\n%s", want, sb.Detail)
	}
}
