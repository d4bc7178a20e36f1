package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// NewSyncResumeLock returns a sync-resume-lock handle: fair-lock that
// calls Sync on the lock's directory before each listing it decides on
// (whether its node is the lowest; whether a create whose reply was lost
// made its node, found again by its GUID). On one server it behaves as
// fair-lock. On an ensemble a read is answered by the server the client
// is connected to, which may lag behind the leader (Programmer's Guide,
// "Consistency Guarantees": no "simultaneously consistent cross-client
// views"; "if it needs to see the latest state, use sync"). fair-lock
// resumes its node after a lost create reply by listing the directory:
// reconnected to a lagging follower, it may not see the node the leader
// made, create a second one, and wait behind its own orphan for the
// session's life (exploration on 3 servers finds it). After a sync the
// follower has applied at least what the leader had committed when it
// answered, the lost create included. A client paused past its session
// timeout that wakes on a follower which has not applied the expiry
// finds, after a sync, its session closed instead of a stale queue.
func NewSyncResumeLock(c Conn, dir string) *QueueLock {
	l := newQueueLock("sync-resume-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, true, waitPredecessor)
	l.q.syncReads = true
	return l
}

// sync makes the connected server catch up with its leader before a
// read a decision rests on, for a maker with syncReads.
func (m *nodeMaker) sync(ctx context.Context) error {
	if !m.syncReads {
		return nil
	}
	return syncDir(ctx, m.conn, m.dir)
}

// syncDir makes the connected server catch up with its leader before a
// read of dir.
func syncDir(ctx context.Context, c Conn, dir string) error {
	_, err := c.Sync(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // no directory yet: the listing says so
	}
	return err
}

// A ResumeLock is stale-resume-lock, a flawed variant for teaching:
// fair-lock with one economy. A holder that releases while no one waits
// behind it keeps its lock node, and its next acquire resumes that node,
// without a write, if a plain exists still finds it and a plain listing
// shows it alone. Uncontended, a client pays one create for many cycles.
// A kept node is not kept for long: if the next acquire does not come
// within keepGrace, background work of the client deletes it.
//
// On one server the two reads are the truth: a session that expired has
// had its connection closed and its node deleted by the time the reads
// are answered. On an ensemble they are answered by the server the
// client is connected to, which may lag behind the leader. A holder
// whose process paused past its session timeout wakes on its old
// connection to a follower that has not applied the expiry (and so has
// not closed that connection): the leader expired the session, deleted
// the node, and another client took the lock, but the follower still
// shows the node alone, and the holder keeps it and resumes it. Two
// holders, the second on a node ZooKeeper deleted. A resumed lease also
// has the token it had, which breaks zklab's promise that every grant's
// token is higher than the last; a fenced store refuses the stale holder
// all the same, its token being older than the new holder's.
//
// It breaks the recipes' promise that a release leaves no node behind
// (for keepGrace), as the economy means to.
type ResumeLock struct {
	QueueLock
	// mu guards kept, which the handle's owner and the background
	// deletion share.
	mu   sync.Mutex
	kept *lockNode // the node kept by the last release, if any
}

// keepGrace is how long a release keeps its node for the next acquire.
const keepGrace = time.Second

// NewStaleResumeLock returns a stale-resume-lock handle.
func NewStaleResumeLock(c Conn, dir string) *ResumeLock {
	return &ResumeLock{QueueLock: *newQueueLock("stale-resume-lock", c, dir, zk.FlagEphemeral|zk.FlagSequence, true, waitPredecessor)}
}

// Acquire resumes the kept node if it can, and otherwise queues as
// fair-lock does.
func (l *ResumeLock) Acquire(ctx context.Context) (*Lease, error) { return l.acquire(ctx, true) }

// TryAcquire resumes the kept node if it can, and otherwise tries as
// fair-lock does.
func (l *ResumeLock) TryAcquire(ctx context.Context) (*Lease, error) {
	return l.acquire(ctx, false)
}

func (l *ResumeLock) acquire(ctx context.Context, block bool) (*Lease, error) {
	if node, ok := l.take(); ok {
		held, err := l.resume(ctx, node)
		if held {
			return l.lease(node), nil
		}
		// The node may still be there: remove it before queueing again,
		// or the handle would queue behind itself.
		if rerr := l.rs.settle(ctx, nodeRemoval(l.q.conn, node)); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			return nil, errors.Join(err, rerr)
		}
	}
	if err := l.rs.flush(ctx); err != nil {
		return nil, err
	}
	node, err := l.q.acquire(ctx, "lock-", mutexPredicate, block)
	if err != nil {
		return nil, err
	}
	return l.lease(node), nil
}

// resume reports whether the kept node still holds the lock, by plain
// reads (the flaw): it exists and is alone. Otherwise, or on an error,
// the caller removes it.
func (l *ResumeLock) resume(ctx context.Context, node lockNode) (bool, error) {
	EnterPhase(l.q.conn, "resuming")
	defer EnterPhase(l.q.conn, "")
	if sessionGone(l.q.conn.Session(), node.session) {
		return false, nil // the client knows: the node went with its session
	}
	ok, _, err := l.q.conn.Exists(ctx, node.path)
	if err != nil || !ok {
		return false, err
	}
	return l.alone(ctx, node)
}

// alone reports whether a plain listing shows node alone.
func (l *ResumeLock) alone(ctx context.Context, node lockNode) (bool, error) {
	kids, err := l.q.list(ctx, nil)
	if err != nil {
		return false, err
	}
	return len(kids) == 1 && indexOf(kids, node.name()) == 0, nil
}

// lease is the lease on node: its release keeps the node when a plain
// listing shows it alone, and deletes it otherwise.
func (l *ResumeLock) lease(node lockNode) *Lease {
	r := nodeRemoval(l.q.conn, node)
	return newLease(l.q.conn, node, func(ctx context.Context) error {
		if !sessionGone(l.q.conn.Session(), node.session) {
			if alone, err := l.alone(ctx, node); err == nil && alone {
				l.keep(node)
				return nil
			}
		}
		return l.rs.settle(ctx, r)
	})
}

// keep keeps node for the next acquire, and deletes it after keepGrace
// unless that acquire took it.
func (l *ResumeLock) keep(node lockNode) {
	l.mu.Lock()
	l.kept = &node
	l.mu.Unlock()
	l.q.conn.Go("resume-lock-expire", func(ctx context.Context) {
		if l.q.conn.Sleep(ctx, keepGrace) != nil {
			return
		}
		if _, ok := l.takeIf(node); ok {
			cctx, cancel := cleanupContext(ctx, l.q.conn)
			defer cancel()
			removeNode(cctx, l.q.conn, node) // gone, or gone with its session
		}
	})
}

// take hands the kept node to an acquire.
func (l *ResumeLock) take() (lockNode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept == nil {
		return lockNode{}, false
	}
	node := *l.kept
	l.kept = nil
	return node, true
}

// takeIf takes the kept node if it is node still.
func (l *ResumeLock) takeIf(node lockNode) (lockNode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept == nil || l.kept.path != node.path {
		return lockNode{}, false
	}
	l.kept = nil
	return node, true
}
