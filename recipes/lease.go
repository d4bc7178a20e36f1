package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A Lock is one client's handle on a lock of the ZooKeeper tree. Handles
// are not safe for concurrent use: a simulated task, or one goroutine,
// owns each.
type Lock interface {
	// Acquire blocks until the lock is granted, or ctx is done, or the
	// recipe fails. A failed, timed-out or cancelled acquire leaves no
	// lock node behind.
	Acquire(ctx context.Context) (*Lease, error)
	// TryAcquire does not wait: it returns a lease, or ErrNotAcquired
	// when the lock is taken, leaving nothing behind.
	TryAcquire(ctx context.Context) (*Lease, error)
}

// LeaseState is what a holder can know of its lease.
type LeaseState int

const (
	// LeaseHeld: the client is connected in the session that holds the
	// lease.
	LeaseHeld LeaseState = iota + 1
	// LeaseSuspended: the client is disconnected; the session may still
	// live, and the lease with it, or not (Curator's SUSPENDED). A holder
	// should pause work that needs the lock.
	LeaseSuspended
	// LeaseLost: the session is gone, or has been out of touch for longer
	// than its timeout, so the server has expired it (Curator's LOST).
	// Another client may hold the lock now.
	LeaseLost
	// LeaseReleased: the holder released the lease.
	LeaseReleased
)

func (s LeaseState) String() string {
	switch s {
	case LeaseHeld:
		return "held"
	case LeaseSuspended:
		return "suspended"
	case LeaseLost:
		return "lost"
	case LeaseReleased:
		return "released"
	}
	return fmt.Sprintf("LeaseState(%d)", int(s))
}

// A Lease is one grant of a lock. Its token is a fencing token: it grows
// strictly over the successive grants of one lock, so a protected
// resource that remembers the highest token it has seen can refuse a
// holder whose lease was lost (Kleppmann's fencing). The token is the
// czxid of the lock node: zxids grow strictly with every write of the
// ensemble, and a grant's node was created after the node of every
// earlier grant of the same lock (see each recipe for why), so its czxid
// is higher. Unlike a node's sequence number it survives the deletion and
// re-creation of the lock's directory, and it does not wrap at 2^31.
type Lease struct {
	// mu guards the state the holder and a listener (Listen, background
	// work) both see: done, result, lost, suspended, since; and handedOut.
	mu      sync.Mutex
	conn    Conn
	token   int64
	session int64
	timeout time.Duration
	// node is the path of a lease on one node; a multi-lock lease stands
	// on its parts' nodes. (A nodes slice, and done apart from the other
	// flags, made a lease 192 bytes without out; with out it was 176, and
	// 160 with parts behind a pointer: only a multi-lock lease has them.)
	node    string
	parts   *[]*Lease // multi-lock: the member leases
	release func(ctx context.Context) error
	result  error
	done    bool
	lost    bool
	// suspended: seen disconnected since, not yet held again.
	suspended bool
	// ephemeral: the node is ephemeral (a lease on one node).
	ephemeral bool
	// handedOut: the first Nodes call has taken out.
	handedOut bool
	since     time.Time // when the lease was first seen suspended
	// out is the array the first Nodes call of a lease on one node hands
	// out, allocated with the lease: that caller owns it, and the lease
	// never reads or writes it again. A grant's one call (the checks')
	// allocated a slice of its own.
	out [1]string

	// rs and removal are the release of a lease when release is nil,
	// without closures allocated per grant: rs settles removal
	// (removalLease). A nodeLease starts without a removal, and its first
	// release deletes the node itself (firstRemoval).
	rs      *removals
	removal *removal
}

func newLease(c Conn, node lockNode, release func(ctx context.Context) error) *Lease {
	l := &Lease{}
	l.init(c, node, release)
	return l
}

// init makes l, a zero Lease, a lease on node.
func (l *Lease) init(c Conn, node lockNode, release func(ctx context.Context) error) {
	s := c.Session()
	l.conn = c
	l.token = node.czxid
	l.session = node.session
	l.timeout = time.Duration(s.TimeoutMs) * time.Millisecond
	l.ephemeral = node.ephemeral
	l.node = node.path
	l.release = release
}

// Token is the lease's fencing token (the lock node's czxid).
func (l *Lease) Token() int64 { return l.token }

// Nodes are the paths of the lock nodes the lease stands on.
func (l *Lease) Nodes() []string {
	if l.parts == nil {
		// A lease on one node, as most are: the lease's own array the
		// first time (out), then a one-string array, without append's
		// growth of a nil slice (a copy of every grant's nodes for the
		// checks was 0.4% of an exploration).
		l.mu.Lock()
		first := !l.handedOut
		l.handedOut = true
		l.mu.Unlock()
		if first {
			l.out[0] = l.node
			return l.out[:]
		}
		return []string{l.node}
	}
	return l.appendNodes(nil)
}

// appendNodes appends the paths of the lease's nodes to nodes.
func (l *Lease) appendNodes(nodes []string) []string {
	if l.parts == nil {
		return append(nodes, l.node)
	}
	for _, p := range *l.parts {
		nodes = p.appendNodes(nodes)
	}
	return nodes
}

// SessionID is the session the lease was granted in.
func (l *Lease) SessionID() int64 { return l.session }

// State reports what the client knows of the lease now, from its
// session. It notices a suspension only when called; WaitState watches.
// A lease lost stays lost.
func (l *Lease) State() LeaseState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return LeaseReleased
	}
	if l.parts != nil {
		worst := LeaseHeld
		for _, p := range *l.parts {
			worst = max(worst, p.State())
		}
		return worst
	}
	if l.lost {
		return LeaseLost
	}
	s := l.conn.Session()
	switch {
	case sessionGone(s, l.session):
		l.lost = true
		return LeaseLost
	case s.Connected():
		l.suspended = false
		return LeaseHeld
	}
	now := l.conn.Now()
	if !l.suspended {
		l.suspended, l.since = true, now
	}
	if l.timeout > 0 && now.Sub(l.since) >= l.timeout {
		// Out of touch for a whole session timeout: the server has
		// expired the session, whether or not the client has heard.
		l.lost = true
		return LeaseLost
	}
	return LeaseSuspended
}

// suspendedSince is when the lease was first seen suspended (for a
// multi-lock lease, the earliest of its suspended parts).
func (l *Lease) suspendedSince() time.Time {
	if l.parts == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.since
	}
	var since time.Time
	for _, p := range *l.parts {
		p.mu.Lock()
		if p.suspended && (since.IsZero() || p.since.Before(since)) {
			since = p.since
		}
		p.mu.Unlock()
	}
	return since
}

// Listen calls fn with each new state of the lease as the client sees it:
// SUSPENDED, back to held, LOST, released (Curator's
// ConnectionStateListener, for one lease). It runs as background work of
// the client (Conn.Go: a simulated task, a goroutine on a real server),
// not on the caller's task, until the lease is lost or released or ctx
// ends; fn must not block.
func (l *Lease) Listen(ctx context.Context, fn func(LeaseState)) {
	seen := l.State()
	l.conn.Go("lease-listener", func(context.Context) {
		for seen != LeaseLost && seen != LeaseReleased {
			st, err := l.WaitState(ctx, seen)
			if err != nil {
				return
			}
			if st != seen {
				fn(st)
				seen = st
			}
		}
	})
}

// WaitState blocks until the lease's state differs from seen, and returns
// the new state; or ctx's error. A final state (lost, released) is
// returned at once.
func (l *Lease) WaitState(ctx context.Context, seen LeaseState) (LeaseState, error) {
	for range sessionChangesMax {
		st := l.State()
		if st != seen {
			return st, nil
		}
		if st == LeaseReleased || st == LeaseLost {
			return st, nil // final: nothing will change it
		}
		s := l.conn.Session()
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if st == LeaseSuspended && l.timeout > 0 {
			// Wake when the suspension has lasted a session timeout.
			left := l.timeout - l.conn.Now().Sub(l.suspendedSince())
			wctx, cancel = l.conn.WithTimeout(ctx, max(left, 0))
		}
		_, err := l.conn.WaitSession(wctx, s)
		cancel()
		if err != nil && ctx.Err() != nil {
			return st, ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return st, err
		}
	}
	return l.State(), fmt.Errorf("watching a lease: %w", ErrGaveUp)
}

// Release gives the lease back. It is idempotent: once the lock node is
// known gone, every call returns the same result. It returns nil when it
// deleted the node, and ErrLeaseLost when the session that held the node
// was gone first (the node went with it, and another client may have held
// the lock meanwhile). If ctx ends first it returns ctx's error and the
// lease keeps the node: call Release again (the handle also finishes the
// job at its next acquire).
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	done, result := l.done, l.result
	l.mu.Unlock()
	if done {
		return result
	}
	var err error
	switch {
	case l.release != nil:
		err = l.release(ctx)
	case l.removal != nil:
		err = l.rs.settle(ctx, l.removal)
	default:
		err = l.firstRemoval(ctx)
	}
	if err == nil || errors.Is(err, ErrLeaseLost) {
		l.mu.Lock()
		l.done, l.result = true, err
		l.mu.Unlock()
	}
	return err
}

// firstRemoval is a nodeLease's first release: it deletes the node until
// known gone, as settling a new removal would, and makes the removal the
// handle keeps pending only if that could not finish. A removal made with
// every grant was 40% of the grant's bytes, and almost every release
// finishes at once.
func (l *Lease) firstRemoval(ctx context.Context) error {
	node := lockNode{path: l.node, session: l.session, czxid: l.token, ephemeral: l.ephemeral}
	err := removeNode(ctx, l.conn, node)
	if removed(err) {
		return err
	}
	l.removal = nodeRemoval(l.conn, node)
	return l.rs.keep(l.removal, err)
}

// removed reports whether a removal's attempt left the node known gone:
// deleted (nil), or gone with its session (ErrLeaseLost).
func removed(err error) bool { return err == nil || errors.Is(err, ErrLeaseLost) }

// --- the pending removals of a handle ---

// A removal is the deletion of a lock node that a handle must see
// through: a released lease's node whose delete has not been settled yet.
// The handle keeps it until the node is known gone, so that a failed
// release is finished later and never forgotten (CURATOR-486).
type removal struct {
	// run deletes until known gone; when nil, removeNode deletes node
	// through conn (nodeRemoval), without a closure to allocate.
	run  func(ctx context.Context) error
	conn Conn
	node lockNode
	// mu guards done and err, which a guaranteed delete's background
	// task settles too.
	mu   sync.Mutex
	done bool
	err  error
	// background: a guaranteed delete runs for it (the handle's task
	// alone reads and sets it).
	background bool
}

// remove deletes r's node until known gone.
func (r *removal) remove(ctx context.Context) error {
	if r.run != nil {
		return r.run(ctx)
	}
	return removeNode(ctx, r.conn, r.node)
}

// result reports whether r is settled, and how.
func (r *removal) result() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done, r.err
}

// finish settles r with err (nil, or ErrLeaseLost).
func (r *removal) finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.done, r.err = true, err
	}
}

// Limits of a guaranteed delete's background task.
const (
	// guaranteedRoundsMax bounds the rounds of a guaranteed delete; each
	// round tries until the node is known gone or a limit is hit, and a
	// session ends within a few of them.
	guaranteedRoundsMax = 1 << 10
	// guaranteedPause is the pause between two rounds.
	guaranteedPause = time.Second
)

// removals are a handle's unsettled removals.
type removals struct {
	pending []*removal
	// guaranteed: a removal that a release could not finish goes on in
	// the background (Conn.Go) until the node is known gone, or its
	// session is, or the client closes: Curator's guaranteed() delete
	// (FailedDeleteManager), which InterProcessMutex's release uses, so
	// that a release that failed leaves no node behind once the faults
	// stop, even if the handle never acquires again.
	guaranteed bool
	conn       Conn
}

// guaranteedRemovals are the removals of a handle whose failed releases
// are retried in the background.
func guaranteedRemovals(c Conn) removals { return removals{guaranteed: true, conn: c} }

// forget drops r from the pending removals.
func (rs *removals) forget(r *removal) {
	rs.pending = slices.DeleteFunc(rs.pending, func(o *removal) bool { return o == r })
}

// settle runs r, and keeps it pending if it could not finish; a
// guaranteed handle then starts its background retry.
func (rs *removals) settle(ctx context.Context, r *removal) error {
	if done, err := r.result(); done {
		rs.forget(r)
		return err
	}
	err := r.remove(ctx)
	if removed(err) {
		r.finish(err)
		rs.forget(r)
		return err
	}
	return rs.keep(r, err)
}

// keep keeps r pending after an attempt that failed with err, unless the
// background retry settled it meanwhile; a guaranteed handle then starts
// its background retry. It returns the result for the release.
func (rs *removals) keep(r *removal, err error) error {
	if done, derr := r.result(); done {
		// The background retry settled it meanwhile.
		rs.forget(r)
		return derr
	}
	if !slices.Contains(rs.pending, r) {
		rs.pending = append(rs.pending, r)
	}
	if rs.guaranteed && !r.background {
		r.background = true
		rs.conn.Go("guaranteed-delete", r.retry(rs.conn))
	}
	return err
}

// retry is a guaranteed delete's background task: r's deletion, round
// after round, until the node is known gone (deleted, or gone with its
// session) or the task's context ends (the client closed) or an error
// that no retry cures.
func (r *removal) retry(c Conn) func(ctx context.Context) {
	return func(ctx context.Context) {
		for range guaranteedRoundsMax {
			if done, _ := r.result(); done {
				return
			}
			err := r.remove(ctx)
			switch {
			case err == nil, errors.Is(err, ErrLeaseLost):
				r.finish(err)
				return
			case ctx.Err() != nil, !errors.Is(err, ErrGaveUp) && !isConnectionLoss(err):
				return
			}
			if c.Sleep(ctx, guaranteedPause) != nil {
				return
			}
		}
	}
}

// flush settles the pending removals before a new acquire: a node left
// behind would queue the handle behind itself.
func (rs *removals) flush(ctx context.Context) error {
	for _, r := range slices.Clone(rs.pending) {
		if err := rs.settle(ctx, r); err != nil && !errors.Is(err, ErrLeaseLost) {
			return fmt.Errorf("removing a node an earlier release left: %w", err)
		}
	}
	return nil
}

// nodeRemoval deletes node until known gone.
func nodeRemoval(c Conn, node lockNode) *removal {
	return &removal{conn: c, node: node}
}

// nodeLease returns a lease on node whose release deletes the node until
// known gone, through the handle's removals.
func nodeLease(c Conn, rs *removals, node lockNode) *Lease {
	// No removal yet: the first release makes one only if it needs to
	// keep it (firstRemoval).
	l := newLease(c, node, nil)
	l.rs = rs
	return l
}

// removalLease returns a lease on node whose release settles r through
// the handle's removals rs.
func removalLease(c Conn, rs *removals, node lockNode, r *removal) *Lease {
	l := newLease(c, node, nil)
	l.rs, l.removal = rs, r
	return l
}

// A hold is a lock node held by a reentrant handle, with the number of
// leases that stand on it.
type hold struct {
	node    lockNode
	count   int
	removal *removal
}

func newHold(c Conn, node lockNode) *hold {
	return &hold{node: node, removal: nodeRemoval(c, node)}
}

// lease hands out one more lease on the hold. Releasing the last lease
// removes the node; clear is called then, so the handle forgets the hold.
func (h *hold) lease(c Conn, rs *removals, clear func()) *Lease {
	h.count++
	counted := false
	l := newLease(c, h.node, func(ctx context.Context) error {
		if !counted {
			counted = true
			h.count--
			if h.count == 0 {
				clear()
			}
		}
		if h.count > 0 {
			return nil
		}
		return rs.settle(ctx, h.removal)
	})
	return l
}
