package recipes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// A Semaphore is the semaphore recipe (Curator's InterProcessSemaphoreV2,
// kazoo's Semaphore), and with one lease the semaphore-mutex recipe
// (Curator's InterProcessSemaphoreMutex).
//
// Its directory has two children: locks, a fair-lock that serialises the
// acquirers (the gate), and leases, where each holder has an
// EPHEMERAL_SEQUENTIAL protected node. An acquirer takes the gate, adds
// its lease node, and waits while the leases outnumber the limit,
// watching the children of leases; then it leaves the gate. Only the
// acquirer in the gate watches leases, and the others wait in the gate's
// queue on their predecessor: no herd.
//
// Guarantees: never more than the limit holders among live sessions (a
// lease node is only added in the gate, and its adder leaves the gate
// only once the count is within the limit); grants in gate order; no node
// left behind by a failed, timed-out or cancelled acquire (neither gate
// nor lease node); release until known. The fencing token is the czxid
// of the lease node: lease nodes are created one at a time in the gate,
// each grant after the previous one, so tokens grow with grants. With
// more than one lease the token orders grants, it does not exclude.
//
// It does not guarantee: that the limit was agreed (two handles with
// different limits on one directory each enforce their own, as in
// Curator); reentrancy (a handle asking again takes another lease, so a
// semaphore-mutex handle asking twice waits on itself); holding a lease
// past the session's expiry. TryAcquire fails when another acquirer is in
// the gate even if a lease is free.
type Semaphore struct {
	conn   Conn
	limit  int
	gate   queue
	leases queue
	rs     removals
}

var _ Lock = (*Semaphore)(nil)

// NewSemaphore returns a semaphore handle admitting at most limit holders
// of the semaphore in dir (limit < 1 counts as 1).
func NewSemaphore(c Conn, dir string, limit int) *Semaphore {
	limit = max(limit, 1)
	flags := int32(zk.FlagEphemeral | zk.FlagSequence)
	return &Semaphore{
		conn:   c,
		limit:  limit,
		gate:   queue{nodeMaker: nodeMaker{conn: c, dir: dir + "/locks", flags: flags, protected: true}, style: waitPredecessor},
		leases: queue{nodeMaker: nodeMaker{conn: c, dir: dir + "/leases", flags: flags, protected: true}, style: waitChildren},
	}
}

// NewSemaphoreMutex returns a semaphore-mutex handle: a semaphore of one
// lease, a mutex that is not reentrant.
func NewSemaphoreMutex(c Conn, dir string) *Semaphore { return NewSemaphore(c, dir, 1) }

// Limit is the number of holders the semaphore admits.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire waits for a lease.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) { return s.acquire(ctx, true) }

// TryAcquire takes a lease if one is free and the gate is too.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) { return s.acquire(ctx, false) }

func (s *Semaphore) acquire(ctx context.Context, block bool) (*Lease, error) {
	if err := s.rs.flush(ctx); err != nil {
		return nil, err
	}
	within := func(kids []child, me int) (string, bool) { return "", len(kids) <= s.limit }
	for range sessionRestartsMax {
		gate, err := s.gate.acquireOnce(ctx, "lock-", mutexPredicate, block)
		if errors.Is(err, errSessionGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		// The lease node is made in the gate's session only. The gate
		// node is ephemeral: once its session is gone, so is the gate,
		// and a lease node made in the next session would be added
		// outside the gate, and left behind by the restart below, which
		// counts on the lease node going with the gate's session. That
		// was the liveness bug of scenarios/testdata/
		// semaphore-mutex-expiry.scenario: a create of the lease node
		// whose reply was lost, the session expired, the create made
		// again in the new session (granted, the other holder gone),
		// then the gate found gone and the acquire started over behind
		// its own live lease node, waiting on itself forever. Curator's
		// InterProcessSemaphoreV2 handles a lost session the same way in
		// effect: an attempt that did not succeed returns its lease node
		// (returnLease in a finally) and releases the gate, and a lease
		// node gone with its session makes the whole acquire start over
		// (RETRY_DUE_TO_MISSING_NODE), gate first.
		leases := s.leases
		leases.session = gate.session
		lease, err := leases.acquireOnce(ctx, "lease-", within, block)
		// Leave the gate whatever happened; a gate node whose delete is
		// not settled is kept and deleted before the next acquire.
		cctx, cancel := cleanupContext(ctx, s.conn)
		gerr := s.rs.settle(cctx, nodeRemoval(s.conn, gate))
		cancel()
		if errors.Is(err, errSessionGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if gerr != nil && !errors.Is(gerr, ErrLeaseLost) {
			leases.abandon(ctx, lease)
			return nil, fmt.Errorf("leaving the gate of %s: %w", s.gate.dir, gerr)
		}
		if errors.Is(gerr, ErrLeaseLost) {
			// The gate's session went, and with it the lease node, made
			// in the same session.
			continue
		}
		return nodeLease(s.conn, &s.rs, lease), nil
	}
	return nil, fmt.Errorf("acquiring %s: the session expired %d times: %w", s.gate.dir, sessionRestartsMax, ErrGaveUp)
}
