package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// A MultiLock is the multi-lock recipe, Curator's InterProcessMultiLock:
// several locks taken as one, all or nothing. Each member is a
// reentrant-mutex on its own directory. Acquire takes the members one by
// one in the order of their paths (sorted, so that two multi-locks over
// overlapping members cannot deadlock each other, which Curator leaves to
// the caller); if one fails, times out or is cancelled, the members
// already taken are released, in reverse order, and nothing is left
// behind. If the session expires in the middle (a member taken in the old
// session is lost), everything is released and it starts over.
//
// Guarantees: those of each member, and all members held together or
// none. The fencing token is the highest member token (each member's
// czxid grows with its grants, so their maximum does too); a protected
// resource per member should check that member's token, in Parts.
//
// It does not guarantee: holding past the session's expiry.
type MultiLock struct {
	conn    Conn
	paths   []string
	members []*ReentrantMutex
}

var _ Lock = (*MultiLock)(nil)

// NewMultiLock returns a multi-lock handle over the locks in dirs.
func NewMultiLock(c Conn, dirs []string) *MultiLock {
	paths := slices.Clone(dirs)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	m := &MultiLock{conn: c, paths: paths}
	for _, p := range paths {
		m.members = append(m.members, NewReentrantMutex(c, p))
	}
	return m
}

// Paths are the member directories, in acquisition order.
func (m *MultiLock) Paths() []string { return slices.Clone(m.paths) }

// Acquire takes every member, or none.
func (m *MultiLock) Acquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, true) }

// TryAcquire takes every member if each is free, or none.
func (m *MultiLock) TryAcquire(ctx context.Context) (*Lease, error) { return m.acquire(ctx, false) }

func (m *MultiLock) acquire(ctx context.Context, block bool) (*Lease, error) {
	for range sessionRestartsMax {
		var parts []*Lease
		var err error
		for _, member := range m.members {
			var l *Lease
			if l, err = member.acquire(ctx, block); err != nil {
				break
			}
			parts = append(parts, l)
		}
		lost := slices.ContainsFunc(parts, func(l *Lease) bool { return l.State() == LeaseLost })
		if err == nil && !lost {
			return m.lease(parts), nil
		}
		if rerr := releaseAll(ctx, m.conn, parts); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("acquiring %v: the session expired %d times: %w", m.paths, sessionRestartsMax, ErrGaveUp)
}

// releaseAll releases the leases in reverse order, with a cleanup context.
// Leases lost with their session are gone already, and not an error here.
func releaseAll(ctx context.Context, c Conn, leases []*Lease) error {
	cctx, cancel := cleanupContext(ctx, c)
	defer cancel()
	var errs []error
	for i := len(leases) - 1; i >= 0; i-- {
		if err := leases[i].Release(cctx); err != nil && !errors.Is(err, ErrLeaseLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *MultiLock) lease(parts []*Lease) *Lease {
	l := &Lease{conn: m.conn, session: parts[0].session, timeout: parts[0].timeout, parts: &parts}
	for _, p := range parts {
		l.token = max(l.token, p.token)
	}
	l.release = func(ctx context.Context) error {
		var errs []error
		lost := false
		for i := len(parts) - 1; i >= 0; i-- {
			err := parts[i].Release(ctx)
			switch {
			case errors.Is(err, ErrLeaseLost):
				lost = true
			case err != nil:
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if lost {
			return ErrLeaseLost
		}
		return nil
	}
	return l
}

// Parts are the member leases of a multi-lock lease, in acquisition
// order; nil for other leases.
func (l *Lease) Parts() []*Lease {
	if l.parts == nil {
		return nil
	}
	return slices.Clone(*l.parts)
}
