package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// An Attachment is a second connection that took a client's session on a
// server of the client's choosing, as a second process given the
// session's id and password does (zktest.AttachSession on a real
// ensemble, Curator's and ZooKeeper's own tests of SessionMovedException).
// On an ensemble the session moves: the leader records the attaching
// member as its owner (Learner.validateSession), and the client's own
// connection is closed on its next request the leader checks
// (SessionTrackerImpl.checkSession's SessionMovedException). On one
// server the server closes the client's connection at once
// (ServerCnxnFactory.closeSession). The attachment sends nothing after
// its handshake; Close closes it.
type Attachment struct {
	w       *World
	conn    *netConn
	session int64
	server  int
	// state: attachPending until the server answers the handshake.
	state attachState
	why   string // what closed it or refused it
}

type attachState uint8

const (
	attachPending attachState = iota
	attachAttached
	attachRefused // closed unanswered: the server is behind the zxid seen, down or without a leader
	attachExpired // answered session 0: the session is gone
	attachClosed  // closed after it attached
)

// ErrAttachRefused: the server closed the attaching connection without an
// answer (it has not applied the zxid the attacher had seen, or serves no
// clients) or refused it; the attacher should try another server.
var ErrAttachRefused = errors.New("sim: the server refused the attaching connection")

// ErrAttachExpired: the server answered the attach with session 0, the
// session is gone.
var ErrAttachExpired = errors.New("sim: the session to attach has expired")

// AttachSession opens a connection from c's host to server (1-based; 1 on
// a single server) and sends a ConnectRequest with c's session id,
// password and timeout, and lastZxidSeen as its last seen zxid (a real
// ZooKeeper refuses a client ahead of what it has applied:
// ZooKeeperServer.processConnectRequest; zktest.AttachSession sends 0).
// It must run in a task (World.Go); it waits until the server answers,
// and returns the attachment, or ErrAttachRefused, ErrAttachExpired, or
// ctx's error. A caller's mistake (no session, no such server, not in a
// task) is an error.
func (w *World) AttachSession(ctx context.Context, c *Client, server int, lastZxidSeen int64) (*Attachment, error) {
	switch {
	case w.current == nil:
		return nil, errors.New("sim: AttachSession outside a simulated task (use World.Go)")
	case c == nil || c.w != w:
		return nil, errors.New("sim: AttachSession: the client is not of this world")
	case c.sessionID == 0:
		return nil, fmt.Errorf("sim: AttachSession: client %d has no session", c.id)
	case server < 1 || server > w.Servers():
		return nil, fmt.Errorf("sim: AttachSession: server %d, want 1 to %d", server, w.Servers())
	}
	if err := c.waitable(ctx); err != nil {
		return nil, err
	}
	a := &Attachment{w: w, session: c.sessionID, server: server}
	id := w.connSeq + 1
	switch {
	case c.partitioned():
		a.state, a.why = attachRefused, "the client's host is partitioned"
	case !w.serverUp:
		a.state, a.why = attachRefused, "the server is down"
	case w.ens != nil && !w.ens.Open(server, id, c.addr()):
		a.state, a.why = attachRefused, fmt.Sprintf("s%d refuses connections", server)
	}
	if a.state == attachRefused {
		w.emit(Event{Kind: "session", Client: c.id, Session: a.session, Detail: "attach: " + a.why})
		return nil, fmt.Errorf("%w: %s", ErrAttachRefused, a.why)
	}
	w.connSeq = id
	if w.ens == nil {
		w.server.OpenFrom(id, c.addr())
	}
	a.conn = &netConn{id: id, client: c, attach: a}
	w.conns = append(w.conns, a.conn)
	w.sendToServer(a.conn, wireMsg{kind: wireConnect, connect: ConnectRequest{SessionID: c.sessionID, Passwd: c.passwd, TimeoutMs: c.timeoutMs, LastZxidSeen: lastZxidSeen}})
	if w.trace.wants(kindSend) {
		w.emit(Event{Kind: "send", Client: c.id, Session: a.session, Op: "connect", Detail: fmt.Sprintf("attach: conn%d to s%d, last zxid seen %#x", id, server, lastZxidSeen)})
	}
	w.block(cond(func() bool { return a.state != attachPending || ctx.Err() != nil || w.closed }))
	switch a.state {
	case attachAttached:
		return a, nil
	case attachExpired:
		return nil, ErrAttachExpired
	case attachRefused, attachClosed:
		return nil, fmt.Errorf("%w: %s", ErrAttachRefused, a.why)
	}
	a.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, zk.ErrClosing
}

// Attached reports whether the attachment holds its connection: it was
// answered with the session and neither end has closed it since.
func (a *Attachment) Attached() bool { return a.state == attachAttached }

// Server is the server the attachment connected to.
func (a *Attachment) Server() int { return a.server }

// Close closes the attachment's connection; the server learns of it after
// what is on its way. The session stays.
func (a *Attachment) Close() {
	if a.conn == nil || a.conn.clientClosed {
		return
	}
	if a.state == attachAttached || a.state == attachPending {
		a.state, a.why = attachClosed, "closed by the attacher"
	}
	a.w.closeClientEnd(a.conn)
}

// receive handles what the server sent the attaching connection: the
// handshake's answer, or its close. Replies and events cannot come (it
// sends no request and sets no watch).
func (a *Attachment) receive(o *Output) {
	c := a.conn.client
	switch o.Kind {
	case OutConnect:
		if o.Connect.SessionID != a.session {
			a.state, a.why = attachExpired, "session expired"
			if a.w.trace.wants(kindRecv) {
				a.w.emit(Event{Kind: "recv", Client: c.id, Session: a.session, Op: "connect", Detail: fmt.Sprintf("attach: conn%d: session expired", a.conn.id)})
			}
			return
		}
		a.state = attachAttached
		if a.w.trace.wants(kindRecv) {
			a.w.emit(Event{Kind: "recv", Client: c.id, Session: a.session, Op: "connect", Detail: fmt.Sprintf("attach: conn%d holds the session on s%d", a.conn.id, a.server)})
		}
	case OutClose:
		a.closed("closed by the server")
	default:
		panic(fmt.Sprintf("sim: an attaching connection got %s", describeOutput(*o)))
	}
}

// closed records that the server closed or reset the connection.
func (a *Attachment) closed(why string) {
	switch a.state {
	case attachPending:
		a.state, a.why = attachRefused, why
	case attachAttached:
		a.state, a.why = attachClosed, why
	}
	if !a.conn.clientClosed {
		a.w.emit(Event{Kind: "session", Client: a.conn.client.id, Session: a.session, Detail: fmt.Sprintf("attach: conn%d %s", a.conn.id, why)})
		a.w.closeClientEnd(a.conn)
	}
}
