package recipes

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// An ExclusiveLock is the exclusive-lock recipe of seeds 001 and 003: one
// EPHEMERAL node per lock (dir/lock), whose creator holds the lock, with
// the acquirer's id (a GUID drawn per acquire) as its data. TryAcquire
// creates the node; Acquire retries after the node's deletion. A create
// or delete whose outcome a connection loss hid is settled by reading the
// node's data and stat (seed 001's tryLockWhenConnectionLoss, checkNode
// and checkRelease): the node is ours if it carries our id, our session as
// its ephemeral owner, and (on release) the czxid we were granted.
//
// Every waiter watches the one node, so each release wakes them all:
// the herd, by design (N(N−1)/2 notifications for N queued clients). The
// watch is set with getData, not with exists as in seed 001: exists on a
// node already gone leaves a watch for its creation behind.
//
// Guarantees: at most one holder among live sessions; a crashed holder's
// node goes with its session; an ambiguous create or delete is settled,
// never adopted across sessions; acquire can time out or be cancelled and
// leaves no node behind; release deletes until known (and never deletes
// another client's node: it deletes only in the session that created the
// node, where the node can only be its own). The fencing token is the
// czxid of the node: each grant's node is created after the previous
// grant's node was deleted.
//
// It does not guarantee: fairness (whoever creates first after a release
// wins); holding past the session's expiry; reentrancy.
type ExclusiveLock struct {
	conn Conn
	dir  string
	node string
	rs   removals
}

var _ Lock = (*ExclusiveLock)(nil)

// NewExclusiveLock returns an exclusive-lock handle on the lock in dir.
func NewExclusiveLock(c Conn, dir string) *ExclusiveLock {
	return &ExclusiveLock{conn: c, dir: dir, node: dir + "/lock"}
}

// TryAcquire creates the lock node, or returns ErrNotAcquired if another
// client holds it.
func (l *ExclusiveLock) TryAcquire(ctx context.Context) (*Lease, error) {
	if err := l.rs.flush(ctx); err != nil {
		return nil, err
	}
	return l.try(ctx)
}

// Acquire waits until it creates the lock node.
func (l *ExclusiveLock) Acquire(ctx context.Context) (*Lease, error) {
	if err := l.rs.flush(ctx); err != nil {
		return nil, err
	}
	losses := 0
	for range waitRoundsMax {
		lease, err := l.try(ctx)
		if !errors.Is(err, ErrNotAcquired) {
			return lease, err
		}
		_, _, watch, err := l.conn.GetW(ctx, l.node)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue // released meanwhile: no watch was set
		case isConnectionLoss(err) || isSessionLoss(err):
			if losses++; losses > connectionRetriesMax {
				return nil, fmt.Errorf("waiting for %s: %w", l.node, ErrGaveUp)
			}
			if _, err := awaitSession(ctx, l.conn); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("watching %s: %w", l.node, err)
		}
		losses = 0
		ev, err := l.conn.Wait(ctx, watch)
		if err != nil {
			return nil, err
		}
		if ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrClosing) {
			return nil, zk.ErrClosing
		}
	}
	return nil, fmt.Errorf("waiting for %s: %w", l.node, ErrGaveUp)
}

// try is one attempt to create the node, with its connection losses
// settled.
func (l *ExclusiveLock) try(ctx context.Context) (*Lease, error) {
	id := l.conn.GUID()
	ambiguous := int64(0)
	for range connectionRetriesMax {
		s, err := awaitSession(ctx, l.conn)
		if err != nil {
			l.settleAbandoned(ctx, id, ambiguous)
			return nil, err
		}
		if ambiguous != 0 && ambiguous == s.ID {
			// checkNode: is the node there, and ours?
			node, mine, err := l.checkAmbiguous(ctx, id, s.ID)
			switch {
			case isConnectionLoss(err) || isSessionLoss(err):
				continue
			case errors.Is(err, zk.ErrNoNode):
				// Not created: create again.
			case err != nil:
				l.settleAbandoned(ctx, id, ambiguous)
				return nil, err
			case mine:
				return l.lease(node), nil
			default:
				return nil, ErrNotAcquired
			}
		}
		ambiguous = 0
		_, err = l.conn.Create(ctx, l.node, []byte(id), zk.FlagEphemeral, openACL)
		switch {
		case err == nil:
			node, mine, err := l.check(ctx, id, s.ID)
			switch {
			case err == nil && mine:
				return l.lease(node), nil
			case err == nil, errors.Is(err, zk.ErrNoNode):
				// Gone already: the session went, and the node with it.
			case isConnectionLoss(err) || isSessionLoss(err):
				ambiguous = s.ID
			default:
				l.settleAbandoned(ctx, id, s.ID)
				return nil, err
			}
		case errors.Is(err, zk.ErrNodeExists):
			return nil, ErrNotAcquired
		case errors.Is(err, zk.ErrNoNode):
			if err := ensureDir(ctx, l.conn, l.dir); err != nil {
				return nil, err
			}
		case isConnectionLoss(err):
			ambiguous = s.ID // tryLockWhenConnectionLoss
		case isSessionLoss(err):
		default:
			return nil, fmt.Errorf("creating %s: %w", l.node, err)
		}
	}
	l.settleAbandoned(ctx, id, ambiguous)
	return nil, fmt.Errorf("creating %s: %w", l.node, ErrGaveUp)
}

// check reads the node: it is ours if it carries id and session.
func (l *ExclusiveLock) check(ctx context.Context, id string, session int64) (lockNode, bool, error) {
	data, stat, err := l.conn.Get(ctx, l.node)
	if err != nil {
		return lockNode{}, false, err
	}
	node := lockNode{path: l.node, session: session, czxid: stat.Czxid, ephemeral: true}
	return node, string(data) == id && stat.EphemeralOwner == session, nil
}

// checkAmbiguous is check after a create whose reply was lost, behind a
// sync: the client never saw the create's zxid, and a follower it
// reconnected to may not have applied it (nodeMaker.find says why).
// Without the sync the node reads as missing, the create is made again
// and fails with NODEEXISTS, and the client waits for its own node.
func (l *ExclusiveLock) checkAmbiguous(ctx context.Context, id string, session int64) (lockNode, bool, error) {
	if err := syncDir(ctx, l.conn, l.dir); err != nil {
		return lockNode{}, false, err
	}
	return l.check(ctx, id, session)
}

// settleAbandoned deletes the node of an ambiguous create given up on, if
// it is there and ours.
func (l *ExclusiveLock) settleAbandoned(ctx context.Context, id string, session int64) {
	if session == 0 {
		return
	}
	cctx, cancel := cleanupContext(ctx, l.conn)
	defer cancel()
	for range connectionRetriesMax {
		s, err := awaitSession(cctx, l.conn)
		if err != nil || s.ID != session {
			return
		}
		node, mine, err := l.checkAmbiguous(cctx, id, session)
		switch {
		case isConnectionLoss(err) || isSessionLoss(err):
			continue
		case err == nil && mine:
			l.remove(cctx, node)
		}
		return
	}
}

func (l *ExclusiveLock) lease(node lockNode) *Lease {
	r := &removal{run: func(ctx context.Context) error { return l.remove(ctx, node) }}
	return removalLease(l.conn, &l.rs, node, r)
}

// remove deletes the node until it is known gone; after a connection loss
// it reads the node before deleting again (checkRelease), so that a
// delete never hits the node of the next holder.
func (l *ExclusiveLock) remove(ctx context.Context, node lockNode) error {
	verify := false
	for range connectionRetriesMax {
		s := l.conn.Session()
		if sessionGone(s, node.session) {
			return ErrLeaseLost
		}
		if !s.Connected() {
			if _, err := l.conn.WaitSession(ctx, s); err != nil {
				return err
			}
			continue
		}
		if verify {
			_, stat, err := l.conn.Get(ctx, l.node)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				return nil
			case isConnectionLoss(err) || isSessionLoss(err):
				continue
			case err != nil:
				return fmt.Errorf("reading %s: %w", l.node, err)
			case stat.Czxid != node.czxid:
				return nil // ours is gone; this is the next holder's
			}
			verify = false
		}
		err := l.conn.Delete(ctx, l.node, -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case isConnectionLoss(err) || isSessionLoss(err):
			verify = true
		case errors.Is(err, zk.ErrClosing):
			return ErrLeaseLost
		default:
			return fmt.Errorf("deleting %s: %w", l.node, err)
		}
	}
	return fmt.Errorf("deleting %s: %w", l.node, ErrGaveUp)
}
