package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// Node kinds of the read/write locks.
const (
	kindRead  = "read-"
	kindWrite = "write-"
)

// An RWLock is a read/write lock: many readers or one writer. rw-lock is
// seed 003's improved shared lock and Curator's InterProcessReadWriteLock;
// herd-rw-lock is seed 003's first shared lock.
//
// Every acquirer adds a protected EPHEMERAL_SEQUENTIAL node, read- or
// write-, to one directory. A reader holds the lock when no write node is
// lower than its node; a writer when its node is the lowest. In rw-lock a
// waiting reader watches the last write node below its own, and a waiting
// writer the node just below its own, whatever its kind (seed 003's
// improvement); in herd-rw-lock every waiter watches the children.
//
// Reentrancy is per handle, as in Curator: a handle holding the write
// lease gets more write leases at once, and read leases too (a write
// holder may also read); a handle holding a read lease gets more read
// leases at once; asking for the write lease while holding only read
// leases fails with ErrUpgrade (a reader never upgrades: it would wait on
// its own node). A read lease taken under the write lease stands on the
// write node: releasing the write lease first keeps the lock exclusive
// until that read lease goes too. Curator instead grants the read node at
// once, which lets a writer queued between the two nodes in while the
// downgraded reader still reads; this recipe does not downgrade.
//
// Guarantees: a writer excludes every other holder, readers exclude
// writers, among live sessions; grants follow node creation order except
// that consecutive readers share; no node left behind by a failed,
// timed-out or cancelled acquire; release until known. The fencing token
// is the czxid of the lease's node: a write grant's token is above the
// token of every grant before it and below those of every grant after it
// (every node lower than a write node is gone when it is granted, and
// every node granted after it is higher); concurrent readers' tokens are
// not ordered among themselves.
//
// It does not guarantee: holding past the session's expiry; fairness
// between a reader and the writer after it beyond creation order.
type RWLock struct {
	q     queue
	rs    removals
	write *hold
	read  *hold
	name  string
}

// NewRWLock returns an rw-lock handle on the lock in dir.
func NewRWLock(c Conn, dir string) *RWLock { return newRWLock("rw-lock", c, dir, waitPredecessor) }

// NewHerdRWLock returns a herd-rw-lock handle: as rw-lock, but every
// waiter watches the children of the directory, so every change wakes
// every waiter (N(N−1)/2 notifications for N queued writers).
func NewHerdRWLock(c Conn, dir string) *RWLock {
	return newRWLock("herd-rw-lock", c, dir, waitChildren)
}

func newRWLock(name string, c Conn, dir string, style waitStyle) *RWLock {
	return &RWLock{name: name, q: queue{nodeMaker: nodeMaker{conn: c, dir: dir, flags: zk.FlagEphemeral | zk.FlagSequence, protected: true}, style: style}}
}

// Read is the read side of the lock.
func (l *RWLock) Read() Lock { return rwSide{l: l, write: false} }

// Write is the write side of the lock.
func (l *RWLock) Write() Lock { return rwSide{l: l, write: true} }

type rwSide struct {
	l     *RWLock
	write bool
}

func (s rwSide) Acquire(ctx context.Context) (*Lease, error) { return s.l.acquire(ctx, s.write, true) }

func (s rwSide) TryAcquire(ctx context.Context) (*Lease, error) {
	return s.l.acquire(ctx, s.write, false)
}

// readPredicate grants a reader when no write node is below it; the node
// in the way is the last write node below it.
func readPredicate(kids []child, me int) (string, bool) {
	for i := me - 1; i >= 0; i-- {
		if kids[i].kind() == kindWrite {
			return kids[i].name, false
		}
	}
	return "", true
}

func (l *RWLock) acquire(ctx context.Context, write, block bool) (*Lease, error) {
	slot := &l.read
	switch {
	case write && l.write != nil:
		slot = &l.write
	case write && l.read != nil:
		return nil, ErrUpgrade
	case write:
		slot = &l.write
	case l.write != nil:
		slot = &l.write // a write holder reads under its write node
	}
	if *slot == nil {
		if err := l.rs.flush(ctx); err != nil {
			return nil, err
		}
		kind, pred := kindRead, predicate(readPredicate)
		if write {
			kind, pred = kindWrite, mutexPredicate
		}
		node, err := l.q.acquire(ctx, kind, pred, block)
		if err != nil {
			return nil, err
		}
		*slot = newHold(l.q.conn, node)
	}
	h := *slot
	return h.lease(l.q.conn, &l.rs, func() {
		if *slot == h {
			*slot = nil
		}
	}), nil
}
