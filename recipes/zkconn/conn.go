// Package zkconn implements recipes.Conn over a real ZooKeeper, through
// go-zookeeper/zk. It is the real backend of the recipes: the same recipe
// code runs here and in the simulator (package sim). Unlike recipe code,
// this package uses goroutines and the real clock.
package zkconn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

var _ recipes.Conn = (*Conn)(nil)

// timeoutReportWait bounds how long the event goroutine waits, on a new
// session, for go-zookeeper's "authenticated" log line that carries the
// negotiated session timeout. zk.Conn sets StateHasSession and logs that
// line right after, on the same goroutine, so the wait is microseconds.
const timeoutReportWait = 200 * time.Millisecond

// An Option configures Dial.
type Option func(*options)

type options struct {
	dialer zk.Dialer
	logger zk.Logger
}

// WithDialer makes the client connect through dialer (zk.WithDialer), for
// example through a zktest.Proxy.
func WithDialer(dialer zk.Dialer) Option { return func(o *options) { o.dialer = dialer } }

// WithLogger sends go-zookeeper's log lines to logger; by default they are
// discarded.
func WithLogger(logger zk.Logger) Option { return func(o *options) { o.logger = logger } }

// Conn is a recipes.Conn over a *zk.Conn. Its session view is built from
// zk's event channel by one internal goroutine; its data calls are zk's,
// with the context checked before each is sent (zk takes no context, so a
// sent request runs to its reply or to the loss of the connection).
type Conn struct {
	// servers, timeout, logger and dialer are what a new handle
	// (NewSession) is made with.
	servers []string
	timeout time.Duration
	logger  zk.Logger
	dial    zk.Dialer

	mu sync.Mutex
	// zk is the current handle, and dialer its dialer: NewSession
	// replaces them.
	zk         *zk.Conn
	dialer     *handleDialer
	changed    chan struct{} // closed and replaced at every session change
	session    recipes.Session
	closed     bool  // the event channel is closed: the client is closed
	reportedID int64 // from the "authenticated" log line
	reportedMs int32
	reported   chan struct{} // closed and replaced at every such line
	done       chan struct{} // closed when the current handle's event goroutine ends
	// background is the context of the recipes' background work (Go):
	// cancelled by Close.
	background     context.Context
	stopBackground context.CancelFunc
}

// Dial connects to servers as zk.Connect does: in the background. The
// session appears in Session once the client has one; use WaitSession or
// WaitConnected to wait for it.
func Dial(servers []string, sessionTimeout time.Duration, opts ...Option) (*Conn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Conn{
		changed:  make(chan struct{}),
		reported: make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.background, c.stopBackground = context.WithCancel(context.Background())
	c.session.State = zk.StateDisconnected
	c.session.TimeoutMs = int32(sessionTimeout / time.Millisecond)
	dialer := o.dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	c.servers, c.timeout = servers, sessionTimeout
	c.logger, c.dial = &logTap{c: c, next: o.logger}, dialer
	conn, d, events, err := c.connect()
	if err != nil {
		return nil, err
	}
	c.zk, c.dialer = conn, d
	go c.watchSession(conn, events, c.done)
	return c, nil
}

// connect makes a new go-zookeeper handle, with a dialer of its own.
func (c *Conn) connect() (*zk.Conn, *handleDialer, <-chan zk.Event, error) {
	d := &handleDialer{next: c.dial}
	conn, events, err := zk.Connect(c.servers, c.timeout, zk.WithLogger(c.logger), zk.WithDialer(d.Dial))
	return conn, d, events, err
}

// errAbandoned: a handle NewSession gave up while disconnected dials no
// more.
var errAbandoned = errors.New("zkconn: the handle was given up for a new session")

// A handleDialer dials for one handle, and can cut it off: a handle given
// up while disconnected must not connect again to send its closeSession
// (go-zookeeper's Close would send it on a connection that was being
// made), as a client that abandons its handle does not.
type handleDialer struct {
	next zk.Dialer

	mu        sync.Mutex
	abandoned bool
	last      net.Conn
}

// Dial is a zk.Dialer.
func (d *handleDialer) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	abandoned := d.abandoned
	d.mu.Unlock()
	if abandoned {
		return nil, errAbandoned
	}
	conn, err := d.next(network, address, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.abandoned {
		conn.Close()
		return nil, errAbandoned
	}
	d.last = conn
	return conn, nil
}

// abandon closes the handle's connection and refuses its dials.
func (d *handleDialer) abandon() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.abandoned = true
	if d.last != nil {
		d.last.Close()
	}
}

// ZK returns the underlying go-zookeeper connection: the current handle.
func (c *Conn) ZK() *zk.Conn { return c.handle() }

// handle is the current go-zookeeper handle.
func (c *Conn) handle() *zk.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.zk
}

// Close closes the session (zk.Conn.Close) and waits for the event
// goroutine to end.
func (c *Conn) Close() {
	c.stopBackground()
	c.mu.Lock()
	h, done := c.zk, c.done
	c.mu.Unlock()
	h.Close()
	<-done
}

// NewSession gives the current handle up and opens a new one, with a new
// session (recipes.Conn): Curator's reset of its ZooKeeper handle, a new
// zk.Connect. The old handle is closed in the background, not waited
// for: its closeSession reaches the server only if it is connected, and
// otherwise the old session lives until the server expires it, with its
// ephemeral nodes (the old handle's dialer is cut off, so that it does
// not connect again to send the close). Its requests fail and its watches end
// (EventNotWatching, zk.ErrClosing) as zk.Conn.Close makes them.
func (c *Conn) NewSession(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zk.ErrClosing
	}
	conn, d, events, err := c.connect()
	if err != nil {
		c.mu.Unlock()
		return err
	}
	old, oldDialer, connected := c.zk, c.dialer, c.session.Connected()
	c.zk, c.dialer, c.done = conn, d, make(chan struct{})
	c.session.ID = 0
	c.session.State = zk.StateDisconnected
	c.session.TimeoutMs = int32(c.timeout / time.Millisecond)
	c.session.Generation++
	c.broadcastLocked()
	done := c.done
	c.mu.Unlock()
	go c.watchSession(conn, events, done)
	if !connected {
		// Nothing reaches the server: the old session lives until it
		// expires.
		oldDialer.abandon()
	}
	go old.Close()
	return nil
}

// Go runs fn on a goroutine of its own, with a context that Close
// cancels: a recipe's background work (recipes.Conn).
func (c *Conn) Go(name string, fn func(ctx context.Context)) {
	go fn(c.background)
}

// WaitConnected waits until the client has a live session.
func (c *Conn) WaitConnected(ctx context.Context) error {
	if _, err := c.WaitUntil(ctx, recipes.Session.Connected); err != nil {
		return fmt.Errorf("zkconn: waiting for a session: %w", err)
	}
	return nil
}

// WaitUntil waits until the client's session satisfies ok, or ctx is
// done; it returns the session it saw last.
func (c *Conn) WaitUntil(ctx context.Context, ok func(recipes.Session) bool) (recipes.Session, error) {
	s := c.Session()
	for !ok(s) {
		var err error
		if s, err = c.WaitSession(ctx, s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// watchSession is the goroutine that reads handle h's event channel.
// Every session event of the current handle updates the session view and
// bumps its generation; a handle NewSession gave up is heard no more.
func (c *Conn) watchSession(h *zk.Conn, events <-chan zk.Event, done chan struct{}) {
	defer close(done)
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		if ev.State == zk.StateHasSession {
			c.awaitReport(h)
		}
		c.mu.Lock()
		if c.zk != h {
			c.mu.Unlock()
			continue
		}
		c.session.State = ev.State
		c.session.Generation++
		switch ev.State {
		case zk.StateHasSession:
			c.session.ID = h.SessionID()
			if c.reportedID == c.session.ID && c.reportedMs > 0 {
				c.session.TimeoutMs = c.reportedMs
			}
		case zk.StateExpired:
			c.session.ID = 0
		}
		c.broadcastLocked()
		c.mu.Unlock()
	}
	c.mu.Lock()
	if c.zk != h {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.session.State = zk.StateDisconnected
	c.session.Generation++
	c.broadcastLocked()
	c.mu.Unlock()
}

// awaitReport waits, briefly, for the log line of h's session.
func (c *Conn) awaitReport(h *zk.Conn) {
	timer := time.NewTimer(timeoutReportWait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		ok := c.reportedID != 0 && c.reportedID == h.SessionID()
		ch := c.reported
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		}
	}
}

func (c *Conn) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// logTap reads the negotiated session of go-zookeeper's "authenticated"
// log line (zk.Conn has no accessor for the negotiated timeout) and passes
// every line on.
type logTap struct {
	c    *Conn
	next zk.Logger
}

const authenticatedFormat = "authenticated: id=%d, timeout=%d"

func (l *logTap) Printf(format string, args ...any) {
	if format == authenticatedFormat && len(args) == 2 {
		id, idOK := args[0].(int64)
		ms, msOK := args[1].(int32)
		if idOK && msOK {
			l.c.mu.Lock()
			l.c.reportedID, l.c.reportedMs = id, ms
			close(l.c.reported)
			l.c.reported = make(chan struct{})
			l.c.mu.Unlock()
		}
	}
	if l.next != nil {
		l.next.Printf(format, args...)
	}
}

// Session returns what the client knows of its session now.
func (c *Conn) Session() recipes.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// WaitSession blocks until the session's generation differs from seen's,
// or ctx is done. On a closed client with nothing new it fails with
// zk.ErrClosing.
func (c *Conn) WaitSession(ctx context.Context, seen recipes.Session) (recipes.Session, error) {
	for {
		c.mu.Lock()
		s, closed, changed := c.session, c.closed, c.changed
		c.mu.Unlock()
		if s.Generation != seen.Generation {
			return s, nil
		}
		if closed {
			return s, zk.ErrClosing
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return c.Session(), ctx.Err()
		}
	}
}

// Wait blocks until one of the watches fires, or ctx is done. A watch
// that has fired before (its channel closed) yields the zero Event.
func (c *Conn) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	if len(watches) == 0 {
		return zk.Event{}, errors.New("zkconn: Wait needs at least one watch")
	}
	if err := ctx.Err(); err != nil {
		return zk.Event{}, err
	}
	if len(watches) == 1 {
		select {
		case ev := <-watches[0]:
			return ev, nil
		case <-ctx.Done():
			return zk.Event{}, ctx.Err()
		}
	}
	cases := make([]reflect.SelectCase, 0, len(watches)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, ch := range watches {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	chosen, v, ok := reflect.Select(cases)
	if chosen == 0 {
		return zk.Event{}, ctx.Err()
	}
	if !ok {
		return zk.Event{}, nil
	}
	return v.Interface().(zk.Event), nil
}

// Sleep pauses for d, or until ctx is done.
func (c *Conn) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithTimeout is context.WithTimeout.
func (c *Conn) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// Now is time.Now.
func (c *Conn) Now() time.Time { return time.Now() }

// GUID returns 32 hex digits from crypto/rand.
func (c *Conn) GUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}
