package recipes

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// connectionTimeoutDivisor relates the connection timeout after which a
// Curator client gives its ZooKeeper handle up to the session timeout:
// Curator's defaults are 15 s and 60 s, a quarter. Curator 2's
// ConnectionState.checkTimeouts resets the handle (a new session) once
// the connection has been down that long, while the old session may
// still live on the server, with its nodes.
const connectionTimeoutDivisor = 4

// A sessionRenewal is a connection-state listener of a handle's
// campaigns: while the client is disconnected from a live session for a
// connection timeout (a quarter of the session timeout), it gives the
// session up and starts a new one (Conn.NewSession), as Curator does. It
// counts its renewals, so that the campaign tells a handle it replaced
// (its requests fail and its watches end with zk.ErrClosing) from a
// client closed.
//
// It counts each renewal twice: once as it begins, before NewSession, and
// once it is done. On a real server the old handle's requests can fail
// before NewSession has returned (zkconn closes the old handle on a
// goroutine of its own), and a request sent as NewSession runs can still
// go out on the old handle after the round that sent it began. A round
// reads done at its start, and an ErrClosing is the listener's when begun
// has passed that count since (replacedSince).
type sessionRenewal struct {
	begun atomic.Uint64
	done  atomic.Uint64
}

// count is the number of renewals done so far.
func (rn *sessionRenewal) count() uint64 {
	if rn == nil {
		return 0
	}
	return rn.done.Load()
}

// replacedSince reports whether a renewal has begun since count was done:
// whether a handle the caller used after it read count may have been
// replaced.
func (rn *sessionRenewal) replacedSince(count uint64) bool {
	return rn != nil && rn.begun.Load() > count
}

// listen starts the listener as background work of c (Conn.Go) for as
// long as ctx lives; stop ends it.
func (rn *sessionRenewal) listen(ctx context.Context, c Conn) (stop func()) {
	lctx, cancel := context.WithCancel(ctx)
	// The listener ends with the campaign (lctx), or when the client is
	// closed (WaitSession fails).
	c.Go("connection-timeout", func(context.Context) { rn.run(lctx, c) })
	return cancel
}

func (rn *sessionRenewal) run(ctx context.Context, c Conn) {
	for range waitRoundsMax {
		s := c.Session()
		if s.Connected() || s.ID == 0 || s.State == zk.StateExpired {
			// Connected, or no session yet to give up.
			if _, err := c.WaitSession(ctx, s); err != nil {
				return
			}
			continue
		}
		timeout := time.Duration(s.TimeoutMs) * time.Millisecond / connectionTimeoutDivisor
		wctx, cancel := c.WithTimeout(ctx, timeout)
		back := awaitReconnect(wctx, c, s.ID)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if back {
			continue
		}
		rn.begun.Add(1)
		if err := c.NewSession(ctx); err != nil {
			return
		}
		rn.done.Add(1)
	}
}

// awaitReconnect reports whether the client is connected again, or out
// of session id (expired, or another), before ctx ends.
func awaitReconnect(ctx context.Context, c Conn, id int64) bool {
	for range sessionChangesMax {
		s := c.Session()
		if s.Connected() || s.ID != id || s.State == zk.StateExpired {
			return true
		}
		if _, err := c.WaitSession(ctx, s); err != nil {
			return false
		}
	}
	return false
}
