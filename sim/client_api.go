package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

var _ recipes.Conn = (*Client)(nil)

var errWallClockDeadline = errors.New("sim: the context has a wall-clock deadline; derive deadlines with Conn.WithTimeout so they run in virtual time")

// callable reports why a call cannot be made now, if it cannot. The
// common answer, for a live client and a task's own context, is given
// inline where callable is called (the call was some 10 instructions of
// each client call); callableSlow looks at the rest.
func (c *Client) callable(ctx context.Context) error {
	if ctx != taskCtx || c.crashed || c.closing || c.w.closed {
		return c.callableSlow(ctx)
	}
	return nil
}

// callableSlow is callable past its common case.
func (c *Client) callableSlow(ctx context.Context) error {
	if c.crashed || c.w.closed {
		if t := c.w.current; t != nil && t.killed {
			// The process is dead: its code does not go on.
			exitKilled()
		}
		return zk.ErrClosing
	}
	if c.closing {
		return zk.ErrConnectionClosed
	}
	if ctx == taskCtx {
		return nil // no deadline, never ends
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// waitable reports why the calling task cannot wait now: its process
// crashed (it does not come back), or ctx refuses. Waiting does not need a
// connection: a closed client still delivers the events it has and
// sleeps.
func (c *Client) waitable(ctx context.Context) error {
	if c.crashed || c.w.closed {
		if t := c.w.current; t != nil && t.killed {
			exitKilled()
		}
		return zk.ErrClosing
	}
	if err := checkContext(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// do sends a request and blocks the calling task until it is answered or
// fails. It returns the transport error, if any; the server's error code
// is in the response.
func (c *Client) do(ctx context.Context, req Request, onReply func(error)) (Response, error) {
	resp, _, err := c.doWatch(ctx, req, onReply, 0, 0)
	return resp, err
}

// doWatch is do for a call that sets a watch when its reply comes: of type
// onOK if it succeeded, of type onNoNode if the node was missing (0: none).
// It returns the watch's channel, nil if none was set.
func (c *Client) doWatch(ctx context.Context, req Request, onReply func(error), onOK, onNoNode watchType) (Response, <-chan zk.Event, error) {
	p, err := c.call(ctx, &req, onReply, onOK, onNoNode)
	if p == nil {
		return Response{}, nil, err
	}
	resp, ech := p.resp, p.watchCh
	c.freePending(p)
	return resp, ech, err
}

// noReply is the reply a call that failed before any reply reads: zero.
// Nothing writes it.
var noReply Response

// replyOf is the reply in a call's record, noReply for none.
func replyOf(p *pending) *Response {
	if p == nil {
		return &noReply
	}
	return &p.resp
}

// statBlockLen is how many Stats newStat allocates at a time.
const statBlockLen = 32

// newStat returns a copy of s of the caller's own, for a call to return.
// The copies are carved from a block allocated statBlockLen at a time: a
// Stat allocated for every get and set was nearly all of
// BenchmarkSimThroughput's allocation (80 bytes a call). A Stat the
// caller keeps keeps its block, some 2.5 KB, alive with it.
//
// The block is the world's, shared by its clients: a client of an
// exploration's schedule makes some 40 calls that return a Stat, so a
// block of its own left a third of its second block unused, and the
// unused Stats were an eighth of the bytes an exploration allocated.
func (c *Client) newStat(s *zk.Stat) *zk.Stat {
	w := c.w
	if len(w.stats) == 0 {
		w.stats = make([]zk.Stat, statBlockLen)
	}
	st := &w.stats[0]
	w.stats = w.stats[1:]
	*st = *s
	return st
}

// release gives back a record call returned, if any.
func (c *Client) release(p *pending) {
	if p != nil {
		c.freePending(p)
	}
}

// call is doWatch that leaves the reply where it came, in the call's
// record, for the caller to read what it needs of it (a Response is some
// 260 bytes, and each copy of one showed in BenchmarkSimThroughput). It
// returns the record, nil if the call failed before any reply (the error
// says why), and the error the call ends with: the transport's, or the
// server's code. The caller gives the record back with freePending once
// it has read it.
func (c *Client) call(ctx context.Context, req *Request, onReply func(error), onOK, onNoNode watchType) (*pending, error) {
	p, err := c.startCall(ctx)
	if p == nil {
		return nil, err
	}
	p.req = *req
	p.wide = true
	return c.sendCall(p, onReply, onOK, onNoNode)
}

// startCall is call up to its request, for a caller that writes the
// request in the call's record rather than copy one in (a Request is
// some 360 bytes, and the copy was a fiftieth of
// BenchmarkSimThroughput): it returns the record, whose request the
// caller writes whole, or nil and why no call can be made. sendCall
// makes the call.
func (c *Client) startCall(ctx context.Context) (*pending, error) {
	if err := c.callable(ctx); err != nil {
		return nil, err
	}
	return c.newPending(), nil
}

// sendCall is call from startCall's record, its request written.
func (c *Client) sendCall(p *pending, onReply func(error), onOK, onNoNode watchType) (*pending, error) {
	p.onReply = onReply
	p.watchOK, p.watchNoNode = onOK, onNoNode
	p.req.Xid = c.nextXid()
	if c.authed && !c.resending {
		c.transmit(p)
	} else {
		c.unsent = append(c.unsent, p)
	}
	p.task = c.w.current
	c.w.blockWoken(p, false)
	// Done: nothing refers to p any more (it left inflight or unsent when
	// it completed), so it can serve the next call once the caller has
	// read it.
	if p.err != nil {
		err := p.err
		c.freePending(p)
		return nil, err
	}
	if t := c.w.current; t != nil {
		t.replyZxid = p.resp.Zxid
	}
	return p, p.resp.Err.Error()
}

// begin records the invocation of an operation in the history, when the
// world keeps one; it returns a scratch record otherwise.
//
// A call neither kept nor traced is answered inline, where begin is
// called; beginRecord records the others (the call was some 8
// instructions of each client call, and end's as many).
func (c *Client) begin(op, path string) *Operation {
	if !c.w.recordsCalls() {
		return &c.w.scratch // end ignores it
	}
	return c.beginRecord(op, path)
}

// beginRecord is begin for a call kept in the history or traced.
func (c *Client) beginRecord(op, path string) *Operation {
	w := c.w
	if t := w.current; t != nil {
		t.replyZxid = 0
	}
	rec := Operation{Client: c.id, Session: c.sessionID, Op: op, Path: path, CallStep: w.step, CallTime: time.Duration(w.nowNs)}
	if w.trace.wants(kindCall) {
		w.emit(Event{Kind: "call", Client: c.id, Session: c.sessionID, Op: op, Path: path})
	}
	if !w.cfg.KeepHistory {
		// The trace of its return needs it; end gives it back for reuse.
		o := w.takeOperation()
		*o = rec
		return o
	}
	return w.history.add(rec)
}

// end records the return of an operation and lets fill add its outcome.
func (c *Client) end(o *Operation, err error, fill func(o *Operation)) {
	if c.w.recordsCalls() {
		c.endRecord(o, err, fill)
	}
}

// endRecord is end for a call kept in the history or traced.
func (c *Client) endRecord(o *Operation, err error, fill func(o *Operation)) {
	w := c.w
	o.Err = err
	o.Returned = true
	if t := w.current; t != nil {
		o.Zxid = t.replyZxid
	}
	o.ReturnStep = w.step
	o.ReturnTime = time.Duration(w.nowNs)
	if fill != nil {
		fill(o)
	}
	if w.trace.wants(kindReturn) {
		e := Event{Kind: "return", Client: c.id, Session: c.sessionID, Op: o.Op, Path: o.Path}
		if err != nil {
			e.Err = err.Error()
		}
		if o.OutPath != "" && o.OutPath != o.Path {
			e.Detail = "-> " + o.OutPath
		}
		w.emit(e)
	}
	if !w.cfg.KeepHistory {
		w.putOperation(o)
	}
}

// recordsCalls reports whether calls are recorded: kept in the history,
// or traced as "call" and "return" events. begin and end ask it alike.
func (w *World) recordsCalls() bool {
	return w.recordCalls
}

// takeOperation returns a blank record for a call that is traced but not
// kept in the history, reusing one a finished call gave back.
func (w *World) takeOperation() *Operation {
	if n := len(w.freeOps); n > 0 {
		o := w.freeOps[n-1]
		w.freeOps = w.freeOps[:n-1]
		return o
	}
	return new(Operation)
}

// putOperation gives back a record takeOperation returned, once its call
// has ended and its return is traced.
func (w *World) putOperation(o *Operation) {
	*o = Operation{}
	w.freeOps = append(w.freeOps, o)
}

func parseFlags(flags int32) (sequential, container, ttl bool, err error) {
	switch flags {
	case zk.FlagPersistent, zk.FlagEphemeral:
	case zk.FlagSequence, zk.FlagEphemeralSequential:
		sequential = true
	case zk.FlagContainer:
		container = true
	case zk.FlagTTL:
		ttl = true
	case zk.FlagPersistentSequentialWithTTL:
		sequential, ttl = true, true
	default:
		return false, false, false, fmt.Errorf("invalid flag value: [%v]", flags)
	}
	return
}

// Create is zk.Conn.Create.
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	i := c.begin("create", path)
	i.Data, i.Flags = data, flags
	created, err := c.create(ctx, OpCreate, path, data, flags, acl)
	c.end(i, err, func(o *Operation) { o.OutPath = created })
	return created, err
}

// CreateContainer is zk.Conn.CreateContainer.
func (c *Client) CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	i := c.begin("createContainer", path)
	i.Data, i.Flags = data, flags
	created, err := c.create(ctx, OpCreateCont, path, data, flags, acl)
	c.end(i, err, func(o *Operation) { o.OutPath = created })
	return created, err
}

func (c *Client) create(ctx context.Context, op OpCode, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	sequential, container, ttl, err := parseFlags(flags)
	if err != nil {
		return "", err
	}
	if !validateClientPath(path, sequential) {
		return "", zk.ErrInvalidPath
	}
	if op == OpCreateCont && !container {
		return "", fmt.Errorf("CreateContainer requires container flag: %w", zk.ErrInvalidFlags)
	}
	if op == OpCreate && ttl {
		return "", fmt.Errorf("Create with TTL flag disallowed: %w", zk.ErrInvalidFlags)
	}
	p, err := c.startCall(ctx)
	if p == nil {
		return "", err
	}
	p.setBasic(op, path, data, flags, 0, false, acl)
	if p, err = c.sendCall(p, nil, 0, 0); p == nil {
		return "", err
	}
	created := p.resp.Path
	c.freePending(p)
	if err != nil {
		return "", err
	}
	return created, nil
}

// Delete is zk.Conn.Delete.
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	i := c.begin("delete", path)
	i.Version = version
	var err error
	if !validateClientPath(path, false) {
		err = zk.ErrInvalidPath
	} else {
		var p *pending
		if p, err = c.startCall(ctx); p != nil {
			p.setBasic(OpDelete, path, nil, 0, version, false, nil)
			p, err = c.sendCall(p, nil, 0, 0)
			c.release(p)
		}
	}
	c.end(i, err, nil)
	return err
}

// Exists is zk.Conn.Exists.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	ok, stat, _, err := c.exists(ctx, path, false)
	return ok, stat, err
}

// ExistsW is zk.Conn.ExistsW: the watch fires on the node's creation if
// it is missing, and on its change or deletion if it exists.
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return c.exists(ctx, path, true)
}

func (c *Client) exists(ctx context.Context, path string, watch bool) (bool, *zk.Stat, <-chan zk.Event, error) {
	i := c.begin(opName("exists", watch), path)
	i.Watch = watch
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return false, nil, nil, zk.ErrInvalidPath
	}
	var onOK, onNoNode watchType
	if watch {
		onOK, onNoNode = watchData, watchExist
	}
	p, err := c.startCall(ctx)
	if p != nil {
		p.setBasic(OpExists, path, nil, 0, 0, watch, nil)
		p, err = c.sendCall(p, nil, onOK, onNoNode)
	}
	if err == zk.ErrConnectionClosed {
		c.release(p)
		c.end(i, err, nil)
		return false, nil, nil, err
	}
	exists := true
	if err == zk.ErrNoNode {
		exists, err = false, nil
	}
	stat, ech := replyOf(p).Stat, (<-chan zk.Event)(nil)
	if p != nil {
		ech = p.watchCh
	}
	c.release(p)
	if watch && err != nil {
		c.end(i, err, nil)
		return false, nil, nil, err
	}
	st := c.newStat(&stat)
	c.end(i, err, func(o *Operation) { o.Exists, o.Stat = exists, st })
	return exists, st, ech, err
}

func opName(op string, watch bool) string {
	if !watch {
		return op
	}
	switch op { // constants: no string built per call
	case "exists":
		return "existsW"
	case "get":
		return "getW"
	case "children":
		return "childrenW"
	}
	return op + "W"
}

// Get is zk.Conn.Get.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	data, stat, _, err := c.get(ctx, path, false)
	return data, stat, err
}

// GetW is zk.Conn.GetW.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	return c.get(ctx, path, true)
}

func (c *Client) get(ctx context.Context, path string, watch bool) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	i := c.begin(opName("get", watch), path)
	i.Watch = watch
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return nil, nil, nil, zk.ErrInvalidPath
	}
	var onOK watchType
	if watch {
		onOK = watchData
	}
	p, err := c.startCall(ctx)
	if p != nil {
		p.setBasic(OpGetData, path, nil, 0, 0, watch, nil)
		p, err = c.sendCall(p, nil, onOK, 0)
	}
	if err == zk.ErrConnectionClosed || (watch && err != nil) {
		c.release(p)
		c.end(i, err, nil)
		return nil, nil, nil, err
	}
	resp := replyOf(p)
	data, ech := resp.Data, (<-chan zk.Event)(nil)
	if p != nil {
		ech = p.watchCh
	}
	stat := c.newStat(&resp.Stat)
	c.release(p)
	c.end(i, err, func(o *Operation) { o.OutData, o.Stat = data, stat })
	return data, stat, ech, err
}

// Set is zk.Conn.Set.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	i := c.begin("set", path)
	i.Data, i.Version = data, version
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return nil, zk.ErrInvalidPath
	}
	p, err := c.startCall(ctx)
	if p != nil {
		p.setBasic(OpSetData, path, data, 0, version, false, nil)
		p, err = c.sendCall(p, nil, 0, 0)
	}
	if err == zk.ErrConnectionClosed {
		c.release(p)
		c.end(i, err, nil)
		return nil, err
	}
	stat := c.newStat(&replyOf(p).Stat)
	c.release(p)
	c.end(i, err, func(o *Operation) { o.Stat = stat })
	return stat, err
}

// Children is zk.Conn.Children: the names in the order the server keeps
// them, which is not sorted.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	children, stat, _, err := c.children(ctx, path, false)
	return children, stat, err
}

// ChildrenW is zk.Conn.ChildrenW.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return c.children(ctx, path, true)
}

func (c *Client) children(ctx context.Context, path string, watch bool) ([]string, *zk.Stat, <-chan zk.Event, error) {
	i := c.begin(opName("children", watch), path)
	i.Watch = watch
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return nil, nil, nil, zk.ErrInvalidPath
	}
	var onOK watchType
	if watch {
		onOK = watchChild
	}
	p, err := c.startCall(ctx)
	if p != nil {
		p.setBasic(OpGetChildren, path, nil, 0, 0, watch, nil)
		p, err = c.sendCall(p, nil, onOK, 0)
	}
	if err == zk.ErrConnectionClosed || (watch && err != nil) {
		c.release(p)
		c.end(i, err, nil)
		return nil, nil, nil, err
	}
	resp := replyOf(p)
	children, stat, ech := resp.Children, resp.Stat, (<-chan zk.Event)(nil)
	if p != nil {
		ech = p.watchCh
	}
	c.release(p)
	st := c.newStat(&stat)
	c.end(i, err, func(o *Operation) { o.Children, o.Stat = children, st })
	return children, st, ech, err
}

// Multi is zk.Conn.Multi. The paths of its ops are not checked by the
// client, as go-zookeeper checks none.
func (c *Client) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	i := c.begin("multi", "")
	reqs := make([]Request, 0, len(ops))
	for _, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			reqs = append(reqs, Request{Op: OpCreate, Path: op.Path, Data: op.Data, ACL: op.Acl, Mode: op.Flags})
		case *zk.SetDataRequest:
			reqs = append(reqs, Request{Op: OpSetData, Path: op.Path, Data: op.Data, Version: op.Version})
		case *zk.DeleteRequest:
			reqs = append(reqs, Request{Op: OpDelete, Path: op.Path, Version: op.Version})
		case *zk.CheckVersionRequest:
			reqs = append(reqs, Request{Op: OpCheck, Path: op.Path, Version: op.Version})
		default:
			err := fmt.Errorf("unknown operation type %T", op)
			c.end(i, err, nil)
			return nil, err
		}
	}
	resp, err := c.do(ctx, Request{Op: OpMulti, Ops: reqs}, nil)
	if err != nil && resp.Multi == nil {
		if resp.Err != CodeOK {
			// The server refused the whole multi (MARSHALLINGERROR):
			// go-zookeeper decodes no results and returns an empty,
			// non-nil slice with the error.
			out := []zk.MultiResponse{}
			c.end(i, err, func(o *Operation) { o.Multi = out })
			return out, err
		}
		c.end(i, err, nil)
		return nil, err
	}
	out := make([]zk.MultiResponse, len(resp.Multi))
	err = nil
	for j, r := range resp.Multi {
		if r.Err == CodeOK && r.Op == OpCreate2 {
			// go-zookeeper v1.0.4's multiResponse.Decode knows no
			// create2-typed result (a container made in a multi): it
			// stops there with ErrAPIError, keeping the results before.
			out, err = out[:j], zk.ErrAPIError
			break
		}
		switch {
		case r.Err != CodeOK || r.Op == 0:
			out[j].Error = r.Err.Error()
		case r.Op == OpCreate:
			out[j].String = r.Path
		case r.Op == OpSetData:
			stat := r.Stat
			out[j].Stat = &stat
		}
		if err == nil && r.Err != CodeOK {
			err = r.Err.Error()
		}
	}
	c.end(i, err, func(o *Operation) { o.Multi = out })
	return out, err
}

// Sync is zk.Conn.Sync.
func (c *Client) Sync(ctx context.Context, path string) (string, error) {
	i := c.begin("sync", path)
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return "", zk.ErrInvalidPath
	}
	resp, err := c.do(ctx, Request{Op: OpSync, Path: path}, nil)
	if err == zk.ErrConnectionClosed {
		c.end(i, err, nil)
		return "", err
	}
	c.end(i, err, func(o *Operation) { o.OutPath = resp.Path })
	return resp.Path, err
}

// Session returns what the client knows of its session.
func (c *Client) Session() recipes.Session {
	return recipes.Session{ID: c.sessionID, State: c.state, Generation: c.generation, TimeoutMs: c.timeoutMs}
}

// State is zk.Conn.State.
func (c *Client) State() zk.State { return c.state }

// SessionID is zk.Conn.SessionID.
func (c *Client) SessionID() int64 { return c.sessionID }

// LastZxid is the last zxid the client has seen in a reply header, which
// it sends as lastZxidSeen when it connects (go-zookeeper's lastZxid).
func (c *Client) LastZxid() int64 { return c.lastZxid }

// WaitSession blocks until the session differs from seen.
func (c *Client) WaitSession(ctx context.Context, seen recipes.Session) (recipes.Session, error) {
	if err := c.waitable(ctx); err != nil {
		return c.Session(), err
	}
	if c.closed && c.generation == seen.Generation {
		return c.Session(), zk.ErrClosing // nothing will change any more
	}
	var sw *sessionWait
	if t := c.w.current; t != nil {
		sw = &t.sessionWait // a task waits for one thing at a time: reuse its record
	} else {
		sw = new(sessionWait) // block refuses it
	}
	*sw = sessionWait{c: c, generation: seen.Generation, ctx: ctx}
	// A context that cannot end leaves the waiter to the client's state,
	// which wakes it (task.await): asked at every step, it was 1% of an
	// exploration, whose recipes wait for a session in every run.
	c.w.blockWoken(sw, canEnd(ctx))
	sw.c, sw.ctx = nil, nil
	if c.generation == seen.Generation {
		if err := ctx.Err(); err != nil {
			return c.Session(), err
		}
		return c.Session(), zk.ErrClosing
	}
	return c.Session(), nil
}

// sessionWait is what a task blocked in WaitSession waits for: a
// session of another generation than the one it saw, the client's end,
// or ctx. It is kept in the task, not made afresh as a closure: those
// were some 2% of the allocations of an exploration.
type sessionWait struct {
	c          *Client
	generation uint64
	ctx        context.Context
}

func (s *sessionWait) ready() bool {
	c := s.c
	return c.generation != s.generation || s.ctx.Err() != nil || c.crashed || c.closed
}

// Wait blocks until one of the watches fires, or ctx is done.
func (c *Client) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	if len(watches) == 0 {
		return zk.Event{}, errors.New("sim: Wait needs at least one watch")
	}
	if err := c.waitable(ctx); err != nil {
		return zk.Event{}, err
	}
	var ww *watchWait
	if t := c.w.current; t != nil {
		ww = &t.watchWait // a task waits for one thing at a time: reuse its record
	} else {
		ww = new(watchWait) // block refuses it
	}
	ww.c, ww.ctx, ww.ctxCanEnd = c, ctx, canEnd(ctx)
	if ww.watches == nil {
		ww.watches = ww.inline[:0]
	}
	ww.watches = append(ww.watches[:0], watches...)
	ww.simOnly = c.ownsWatches(watches)
	c.w.blockWoken(ww, !ww.simOnly || ww.ctxCanEnd)
	got, fired := ww.got, ww.fired
	ww.reset()
	if fired {
		return got, nil
	}
	if err := ctx.Err(); err != nil {
		return zk.Event{}, err
	}
	return zk.Event{}, zk.ErrClosing
}

// watchWait is what a task blocked in Wait waits for.
type watchWait struct {
	c         *Client
	ctx       context.Context
	ctxCanEnd bool
	watches   []<-chan zk.Event
	inline    [2]<-chan zk.Event // watches' first storage: a Wait has one or two as a rule
	got       zk.Event
	fired     bool
	// simOnly says every channel is one of the client's unfired watches,
	// which only the simulation's deliveries can make ready: the
	// scheduler then asks the waiter only when it is woken (task.await).
	simOnly bool
	// looked and lookedAt say that no watch was ready when the world's
	// channelChanges was lookedAt: none can be until it moves on.
	looked   bool
	lookedAt uint64
}

func (ww *watchWait) ready() bool {
	if ww.fired {
		return true
	}
	// The scheduler may ask a waiter at every step (task.await), and a
	// non-blocking receive on each channel was 6% of an exploration. A
	// channel turns ready only when it is sent on or closed, and only the
	// simulation and user code (each counted in channelChanges) do that;
	// a receive elsewhere can only empty it.
	if changes := ww.c.w.channelChanges; !ww.looked || ww.lookedAt != changes {
		for _, ch := range ww.watches {
			// The simulation is not running while this runs: a
			// non-blocking receive is exact.
			select {
			case ev := <-ch:
				ww.got, ww.fired = ev, true
				return true
			default:
			}
		}
		ww.looked, ww.lookedAt = true, changes
	}
	return ww.ctxCanEnd && ww.ctx.Err() != nil || ww.c.crashed
}

// reset clears the record for the task's next Wait, keeping the buffer.
func (ww *watchWait) reset() {
	clear(ww.watches)
	*ww = watchWait{watches: ww.watches[:0]}
}

// NewSession gives the client's session up and starts a new one
// (recipes.Conn): the old handle is closed without waiting, as Curator's
// reset of its ZooKeeper handle does, and a new one connects with no
// session. A closeSession goes out on the live connection, if there is
// one, unanswered; otherwise nothing reaches the server, and the old
// session lives, with its ephemerals, until the server expires it.
// Requests pending fail with zk.ErrClosing and every watch ends with
// EventNotWatching (zk.ErrClosing), as zk.Conn.Close makes them.
func (c *Client) NewSession(ctx context.Context) error {
	if err := c.callable(ctx); err != nil {
		return err
	}
	if c.w.trace.wants(kindCall) {
		c.w.emit(Event{Kind: "call", Client: c.id, Session: c.sessionID, Op: "newSession"})
	}
	if c.authed && !c.resending {
		c.w.sendToServer(c.conn, wireMsg{kind: wireRequest, req: Request{Xid: c.nextXid(), Op: OpCloseSession}})
	}
	c.w.stop(c.authTimer)
	c.w.stop(c.pingTimer)
	c.w.stop(c.recvTimer)
	c.w.stop(c.dialTimer)
	if c.conn != nil {
		c.w.closeClientEnd(c.conn)
		c.conn = nil
	}
	c.authed, c.resending = false, false
	c.failInflight(zk.ErrClosing)
	c.flushUnsent(zk.ErrClosing)
	c.invalidateWatches(zk.ErrClosing)
	c.sessionID, c.passwd, c.lastZxid = 0, nil, 0
	c.rounds = 0
	c.setState(zk.StateDisconnected)
	c.w.after(0, c, "connect", c.startRound)
	return nil
}

// Go runs fn as a task of the client's process (recipes.Conn's
// background work): scheduled like any task, killed with the process. On
// a world already closed it does nothing: the run is over.
func (c *Client) Go(name string, fn func(ctx context.Context)) {
	if c.w.closed {
		return
	}
	c.w.Go(c, name, fn)
}

// Sleep pauses the calling task for d of virtual time, or until ctx is
// done.
func (c *Client) Sleep(ctx context.Context, d time.Duration) error {
	if err := c.waitable(ctx); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	var s *sleep
	if t := c.w.current; t != nil {
		s = &t.sleep // a task sleeps once at a time: reuse its record and timer
		s.task = t
	} else {
		s = new(sleep) // block refuses it
	}
	s.c, s.ctx, s.ctxCanEnd, s.woke = c, ctx, canEnd(ctx), false
	if s.wake == nil {
		s.wake = func() {
			s.woke = true
			if s.task != nil {
				s.task.wakeUp()
			}
		}
	}
	c.w.arm(&s.timer, int64(d), c, "sleep", s.wake)
	c.w.blockWoken(s, s.ctxCanEnd)
	c.w.stop(&s.timer)
	woke := s.woke
	s.c, s.ctx = nil, nil
	if woke {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return zk.ErrClosing
}

// sleep is what a task blocked in Sleep waits for: its timer, or ctx.
type sleep struct {
	c         *Client
	ctx       context.Context
	ctxCanEnd bool
	woke      bool
	wake      func() // the timer's callback, made once per task
	task      *task  // the task whose record it is, woken by the timer
	timer     timer
}

func (s *sleep) ready() bool { return s.woke || s.ctxCanEnd && s.ctx.Err() != nil || s.c.crashed }

// canEnd reports whether ctx can ever be done. A waiter asked by the
// scheduler asked its context each time; a task's own context (taskCtx),
// or context.Background, never ends, and asking it was 1% of an
// exploration. A waiter whose context can end is asked at every step
// (task.await).
func canEnd(ctx context.Context) bool {
	return ctx != context.Context(taskCtx) && ctx != context.Background()
}

// WithTimeout is context.WithTimeout in virtual time.
func (c *Client) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancel(ctx)
	v := &virtualCtx{Context: inner, parent: ctx, deadline: c.w.wallTime().Add(d)}
	if parent, ok := ctx.Deadline(); ok && parent.Before(v.deadline) {
		v.deadline = parent
	}
	t := c.w.after(int64(max(d, 0)), c, "context deadline", func() {
		v.expired.Store(true)
		cancel()
	})
	return v, func() {
		c.w.stop(t)
		cancel()
	}
}

// Now is the virtual wall clock.
func (c *Client) Now() time.Time { return c.w.wallTime() }

// GUID draws 32 hex digits from the world's seeded source.
func (c *Client) GUID() string {
	hi, lo := c.w.rng.Uint64(), c.w.rng.Uint64() // in this order, as before
	var b [32]byte
	const digits = "0123456789abcdef"
	for i := range 16 {
		shift := 60 - 4*i
		b[i] = digits[hi>>shift&0xf]
		b[16+i] = digits[lo>>shift&0xf]
	}
	// The string is cut from a block of the world's: a string allocated
	// for every GUID was 5% of the allocations of an exploration. A
	// Builder's String is the bytes written so far, which it never
	// writes again, so each GUID cut from it stays as it was.
	g := &c.w.guids
	if g.Cap()-g.Len() < len(b) {
		*g = strings.Builder{}
		g.Grow(guidBlockLen * len(b))
	}
	start := g.Len()
	g.Write(b[:])
	return g.String()[start:]
}

// guidBlockLen is how many GUIDs one block of World.guids holds.
const guidBlockLen = 16
