package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// A LeaderElection is one candidate's handle on a leader election: an
// ephemeral-sequential candidate node per campaign in one directory, the
// lowest node's owner leads. leader-latch, election and herd-election are
// LeaderElections that differ in how their nodes are named and how a
// candidate waits for its turn.
//
// Leadership is a Lease: Acquire campaigns until the handle leads and
// returns the term; the lease's Token is the term's fencing token, its
// epoch (the czxid of the candidate node: every later leader's node was
// created after this one, so its czxid is higher); State is the leader's
// view of its term in Curator's words (held, SUSPENDED while disconnected,
// LOST once the session is gone or out of touch for a whole session
// timeout); Release abdicates, deleting the node until it is known gone.
// A leader whose lease is suspended or lost must stop acting as leader:
// another candidate may lead already. Only the fencing token, checked at
// the resource, keeps a leader that has not noticed from doing harm.
type LeaderElection struct {
	q    queue
	rs   removals
	name string
	kind string
}

var _ Lock = (*LeaderElection)(nil)

// NewLeaderLatch returns a leader-latch handle: Curator's LeaderLatch.
// Each candidate creates a protected EPHEMERAL_SEQUENTIAL "latch-" node
// (Curator's withProtection: a GUID finds it again after a create whose
// reply was lost), lists the children, leads if its node is the lowest,
// and otherwise watches its predecessor with getData (LeaderLatch's
// checkLeadership), which sets no watch on a node already gone, so the
// candidate lists again. When its session expires it starts over with a
// new node in the new session (LeaderLatch's reset on RECONNECTED after
// LOST). One notification per change of leader: no herd.
//
// While it campaigns, a connection-state listener (Conn.Go) gives the
// session up once the client has been disconnected for a connection
// timeout, a quarter of the session timeout, and starts a new one
// (Conn.NewSession), as Curator resets its ZooKeeper handle; the old
// session, and its node, may live on the server for a while. The latch
// then compares its node's owner (its ephemeralOwner, the session its
// create ran in) with its current session before it leads: a node of the
// old session is not its own, and it starts over with a new node, behind
// the old one until the server expires it.
func NewLeaderLatch(c Conn, dir string) *LeaderElection {
	e := newLeaderElection("leader-latch", "latch-", c, dir, waitPredecessor)
	e.q.renew = new(sessionRenewal)
	return e
}

// NewOldSessionLatch returns an old-session-latch handle, a variant for
// teaching: leader-latch that, after its client starts a new session,
// keeps the candidate node of its previous session and leads on it when
// it is the lowest, without comparing the node's ephemeralOwner with its
// current session. The old session lives on the server until it expires;
// when it does, the server deletes the node and elects the next
// candidate, while this one still believes it leads: two leaders
// (split-brain), on one server.
func NewOldSessionLatch(c Conn, dir string) *LeaderElection {
	e := newLeaderElection("old-session-latch", "latch-", c, dir, waitPredecessor)
	e.q.renew = new(sessionRenewal)
	e.q.trustOldNode = true
	return e
}

// NewElection returns an election handle: the leader election of
// ZooKeeper's recipes page and kazoo's Election. Each candidate creates a
// protected EPHEMERAL_SEQUENTIAL "n_" node (the page's name; kazoo
// protects its nodes with a uuid, as here), and the lowest leads; a
// candidate that does not lead watches the next lower node and, if it is
// already gone, lists again. The page watches with exists; kazoo's lock,
// under its Election, watches with get, and so does this recipe: an
// exists on a sequential node already gone leaves a watch for a creation
// that never comes, since sequence numbers are never reused (zklab's
// dead-watches check flags it; exploring an exists version found one in
// 14 s, seed 1).
func NewElection(c Conn, dir string) *LeaderElection {
	return newLeaderElection("election", "n_", c, dir, waitPredecessor)
}

// NewHerdElection returns a herd-election handle, a variant for teaching:
// election whose candidates all watch the directory's children,
// as ZooKeeper's recipes page warns against ("the herd effect"): each
// change of leader, and each candidate that joins or leaves, wakes every
// candidate, N(N−1)/2 notifications until N candidates have each led. It
// elects one leader at a time, in order; it is the notifications that are
// wrong, as with herd-lock, so its finding is the herd figures rather
// than a violation.
func NewHerdElection(c Conn, dir string) *LeaderElection {
	return newLeaderElection("herd-election", "n_", c, dir, waitChildren)
}

func newLeaderElection(name, kind string, c Conn, dir string, style waitStyle) *LeaderElection {
	return &LeaderElection{
		name: name,
		kind: kind,
		q:    queue{nodeMaker: nodeMaker{conn: c, dir: dir, flags: zk.FlagEphemeral | zk.FlagSequence, protected: true}, style: style},
	}
}

// Name is the recipe's name.
func (e *LeaderElection) Name() string { return e.name }

// Acquire campaigns until the handle leads, or ctx is done, or the recipe
// fails; the lease is the term of leadership.
func (e *LeaderElection) Acquire(ctx context.Context) (*Lease, error) { return e.campaign(ctx, true) }

// TryAcquire leads if the handle's new candidate node is the lowest at
// once; else it withdraws the node and returns ErrNotAcquired.
func (e *LeaderElection) TryAcquire(ctx context.Context) (*Lease, error) {
	return e.campaign(ctx, false)
}

func (e *LeaderElection) campaign(ctx context.Context, block bool) (*Lease, error) {
	if err := e.rs.flush(ctx); err != nil {
		return nil, err
	}
	if e.q.renew != nil {
		stop := e.q.renew.listen(ctx, e.q.conn)
		defer stop()
	}
	node, err := e.q.acquire(ctx, e.kind, mutexPredicate, block)
	if err != nil {
		return nil, err
	}
	return nodeLease(e.q.conn, &e.rs, node), nil
}

// A LeaderSelector is the leader-selector recipe: Curator's
// LeaderSelector, leadership as the holding of a mutex (Curator builds it
// on InterProcessMutex, the reentrant-mutex recipe here) for as long as
// the leader's work runs. Lead runs the work as leader and gives
// leadership up when the work returns. Acquire and the
// lease are the mutex's: the fencing token is the czxid of the mutex
// node.
type LeaderSelector struct {
	m *ReentrantMutex
}

var _ Lock = (*LeaderSelector)(nil)

// NewLeaderSelector returns a leader-selector handle on the election in
// dir.
func NewLeaderSelector(c Conn, dir string) *LeaderSelector {
	return &LeaderSelector{m: NewReentrantMutex(c, dir)}
}

// Acquire waits for leadership; Release on the lease gives it up.
func (s *LeaderSelector) Acquire(ctx context.Context) (*Lease, error) { return s.m.Acquire(ctx) }

// TryAcquire takes leadership only if it is free now.
func (s *LeaderSelector) TryAcquire(ctx context.Context) (*Lease, error) {
	return s.m.TryAcquire(ctx)
}

// Lead waits for leadership, runs work as leader and gives leadership up
// when work returns (LeaderSelector's takeLeadership: "leadership is
// relinquished when this method returns"). A listener on the term, in
// the background (Lease.Listen), cancels work's context as soon as the
// term is SUSPENDED or LOST, as Curator's default listener interrupts
// takeLeadership; work must stop acting as leader when its context ends.
// Lead returns work's error, or else the error of taking or giving up
// leadership.
func (s *LeaderSelector) Lead(ctx context.Context, work func(ctx context.Context, term *Lease) error) error {
	term, err := s.m.Acquire(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	term.Listen(wctx, func(st LeaseState) {
		if st == LeaseSuspended || st == LeaseLost {
			cancel()
		}
	})
	workErr := work(wctx, term)
	cancel()
	if err := term.Release(ctx); err != nil && workErr == nil {
		return err
	}
	return workErr
}
