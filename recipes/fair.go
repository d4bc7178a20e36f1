package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// A QueueLock is an exclusive lock made of a queue of sequential nodes in
// one directory: each acquirer adds a node, and the lowest node holds the
// lock. fair-lock, herd-lock and the three flawed variants are QueueLocks
// that differ only in how their nodes are made and how their waiters
// wait. A QueueLock is not reentrant: a second Acquire on a handle that
// holds the lock queues behind itself (until its context ends).
type QueueLock struct {
	q    queue
	rs   removals
	name string
}

var _ Lock = (*QueueLock)(nil)

// NewFairLock returns a fair-lock handle on the lock whose nodes live in
// dir. fair-lock is ZooKeeper's own lock recipe (seed 000; seed 002's
// improved algorithm; seed 004's improved lock; Curator's
// InterProcessMutex without reentrancy):
//
//   - Each acquire creates an EPHEMERAL_SEQUENTIAL node with a protected
//     name (a GUID and the session id), lists the children without a
//     watch, holds the lock if its node is the lowest, and otherwise sets
//     a watch on its immediate predecessor only, with getData, which sets
//     no watch if the predecessor is already gone (so none leaks, and the
//     next listing sees the change); on the notification it lists again.
//
// Guarantees: at most one holder among clients whose sessions live;
// grants in creation order of the nodes (fairness); one notification per
// release (no herd: N−1 for N queued clients); a crashed holder's node
// goes with its session; a create whose reply was lost is found again by
// its GUID, in the same session only; acquire can time out or be
// cancelled and leaves no node behind; release deletes until the node is
// known gone. The fencing token is the czxid of the lock node; grants go
// in node creation order, hence in czxid order.
//
// It does not guarantee: that a holder still holds the lock after its
// session expired (a pause or partition longer than the session timeout:
// seed 000's warning; watch Lease.State and check the fencing token at
// the protected resource); reentrancy (see ReentrantMutex).
func NewFairLock(c Conn, dir string) *QueueLock {
	return newQueueLock("fair-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, true, waitPredecessor)
}

// NewHerdLock returns a herd-lock handle: seed 002's first algorithm and
// seed 004's ordinary lock. Nodes are EPHEMERAL_SEQUENTIAL (protected, as
// in fair-lock) and the lowest holds the lock, but every waiter watches
// the children of the directory, so every release (and every arrival)
// wakes every waiter: N(N−1)/2 notifications until N queued clients have
// each held the lock, the herd effect the seeds warn of. It is correct
// (mutual exclusion, creation order, no node left behind) and slow at
// scale; the fencing token is the czxid, as in fair-lock.
func NewHerdLock(c Conn, dir string) *QueueLock {
	return newQueueLock("herd-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, true, waitChildren)
}

// NewPersistentLock returns a persistent-lock handle, a flawed variant
// for teaching: fair-lock with PERSISTENT_SEQUENTIAL nodes. Seed 000:
// "同样使用PERSISTENT同样会存在一个死锁的风险,进程异常退出后,对应的竞争资源id一直没有删除,下一个id一直无法获取到锁对象。"
// (PERSISTENT nodes risk a deadlock: after a process exits abnormally its
// node is never deleted, and the next in line never gets the lock.) A
// holder that crashes blocks everyone forever.
func NewPersistentLock(c Conn, dir string) *QueueLock {
	return newQueueLock("persistent-lock", c, dir, zk.FlagSequence, true, waitPredecessor)
}

// NewUnprotectedLock returns an unprotected-lock handle, a flawed variant
// for teaching: fair-lock whose node names carry no GUID. After a create
// whose reply was lost it cannot find its node again and creates a
// second one; the first is orphaned for the life of the session, and it
// is lower than the second, so the client waits behind its own orphan and
// so does everyone after it. Seed 004 names the node "_locknode_/guid-lock-"
// without saying what the guid is for; ZooKeeper's recipe says it: a
// create can succeed on the server while the client sees a connection
// loss, so after a recoverable error the client must list the children
// and look for its GUID.
func NewUnprotectedLock(c Conn, dir string) *QueueLock {
	return newQueueLock("unprotected-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, false, waitPredecessor)
}

// NewLostWakeupLock returns a lost-wakeup-lock handle, a flawed variant
// for teaching: fair-lock that watches its predecessor with exists and
// waits on the watch whatever exists answered. Seed 002 reassures the
// reader that reading and watching are one atomic call, so no event is
// lost ("设置监听器的操作与读操作是原子执行的…保证不会丢失事件"); but in the
// improved algorithm the listing and the watch are two calls. If the
// predecessor goes away between them, exists answers that it is gone and
// sets a watch for its creation, which never comes: the waiter sleeps
// forever although the lock is free, and everyone behind it too.
func NewLostWakeupLock(c Conn, dir string) *QueueLock {
	return newQueueLock("lost-wakeup-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, true, waitLostWakeup)
}

func newQueueLock(name string, c Conn, dir string, flags int32, protected bool, style waitStyle) *QueueLock {
	return &QueueLock{
		name: name,
		q:    queue{nodeMaker: nodeMaker{conn: c, dir: dir, flags: flags, protected: protected}, style: style},
	}
}

// Name is the recipe's name.
func (l *QueueLock) Name() string { return l.name }

// Acquire waits until the handle's node is the lowest.
func (l *QueueLock) Acquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, true) }

// TryAcquire adds a node and takes the lock if it is the lowest; else it
// removes the node and returns ErrNotAcquired.
func (l *QueueLock) TryAcquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, false) }

func (l *QueueLock) acquire(ctx context.Context, block bool) (*Lease, error) {
	if err := l.rs.flush(ctx); err != nil {
		return nil, err
	}
	node, err := l.q.acquire(ctx, "lock-", mutexPredicate, block)
	if err != nil {
		return nil, err
	}
	return nodeLease(l.q.conn, &l.rs, node), nil
}
