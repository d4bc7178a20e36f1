package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// A ReentrantMutex is the reentrant-mutex recipe: Curator's
// InterProcessMutex. It is fair-lock (the same protected
// EPHEMERAL_SEQUENTIAL nodes and predecessor watch) made reentrant for
// its handle: the handle that holds the lock gets it again at once, with
// a count, and the node is deleted when the last of its leases is
// released. Go has no thread identity, so the owner is the handle, not a
// goroutine: share a handle only with code that may hold the lock
// together.
//
// Guarantees: those of fair-lock (mutual exclusion among live sessions,
// creation order, no herd, no node left behind by a failed acquire,
// release until known); every lease of one hold carries the hold's
// fencing token, the czxid of its node. A release that fails (its
// context ended while the client could not reach the server) goes on in
// the background (Conn.Go) until the node is known gone: Curator's
// guaranteed() delete, so no node is left behind once the faults stop,
// even by a handle that never acquires again. fair-lock finishes such a
// release only at its handle's next acquire.
//
// It does not guarantee: that a hold outlives its session (watch
// Lease.State); a reentrant acquire does not check the session, as
// Curator's does not.
type ReentrantMutex struct {
	q    queue
	rs   removals
	hold *hold
}

var _ Lock = (*ReentrantMutex)(nil)

// NewReentrantMutex returns a reentrant-mutex handle on the lock in dir.
func NewReentrantMutex(c Conn, dir string) *ReentrantMutex {
	return &ReentrantMutex{
		q:  queue{nodeMaker: nodeMaker{conn: c, dir: dir, flags: zk.FlagEphemeral | zk.FlagSequence, protected: true}, style: waitPredecessor},
		rs: guaranteedRemovals(c),
	}
}

// Acquire takes the lock, or takes it again if the handle holds it.
func (m *ReentrantMutex) Acquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, true) }

// TryAcquire takes the lock if it is free or held by this handle.
func (m *ReentrantMutex) TryAcquire(ctx context.Context) (*Lease, error) {
	return m.acquire(ctx, false)
}

// Holds reports how many unreleased leases the handle holds.
func (m *ReentrantMutex) Holds() int {
	if m.hold == nil {
		return 0
	}
	return m.hold.count
}

func (m *ReentrantMutex) acquire(ctx context.Context, block bool) (*Lease, error) {
	if m.hold == nil {
		if err := m.rs.flush(ctx); err != nil {
			return nil, err
		}
		node, err := m.q.acquire(ctx, "lock-", mutexPredicate, block)
		if err != nil {
			return nil, err
		}
		m.hold = newHold(m.q.conn, node)
	}
	h := m.hold
	return h.lease(m.q.conn, &m.rs, func() {
		if m.hold == h {
			m.hold = nil
		}
	}), nil
}
