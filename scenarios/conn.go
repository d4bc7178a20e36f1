package scenarios

import (
	"context"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// observedConn is the recipes.Conn a workload hands its recipe: the
// client (simulated or real), with what the checks need noted on the way:
// the herd figures, dead watches, the calls each client made (where a
// fault found on the simulator is anchored on a real server), and on a
// real server the deletes and the faults that stop a client's process.
type observedConn struct {
	recipes.Conn
	r      *runner
	client int
}

var _ recipes.Conn = (*observedConn)(nil)

// begin counts an operation of the client's (a data call, a sleep, a
// wait on watches)
// and returns its number. On a real server it first holds a paused
// client and ends a crashed one's task (beginReal). The count is where a
// fault found on the simulator is anchored on a real server, which has
// no steps.
//
// Its callers, enter and beginWait, ask for a real server themselves and
// call beginReal out of line: every call of every client begins here,
// and with the real server's call in it begin was past the inliner's
// budget.
func (c *observedConn) begin() int64 {
	n := &c.r.obs.ops[c.client]
	*n++
	return *n
}

// beginReal is begin on a real server, whose clients' tasks run at once.
func (c *observedConn) beginReal() int64 {
	c.r.real.gate(c.client)
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.obs.ops[c.client]++
	return c.r.obs.ops[c.client]
}

// enter begins a data call, noting its request for a real server's
// trace.
func (c *observedConn) enter(op, p string) int64 {
	if c.r.real != nil {
		return c.enterReal(op, p)
	}
	n := c.begin()
	c.r.cov.setOp(c.client, op)
	return n
}

// enterReal is enter on a real server: it notes the request for the
// server's trace.
func (c *observedConn) enterReal(op, p string) int64 {
	n := c.beginReal()
	c.r.cov.setOp(c.client, op)
	c.r.real.event(sim.Event{Kind: "send", Client: c.client, Op: op, Path: p})
	return n
}

// leave ends data call n. On a real server it notes the reply, and the
// faults that struck during the call on the simulator strike now, before
// the task sees the result: a fault that strikes while a request is in
// flight acts on the next one.
func (c *observedConn) leave(op, p string, err error, n int64) {
	c.r.cov.setOp(c.client, "")
	if c.r.real != nil {
		c.leaveReal(op, p, err, n)
	}
}

// leaveReal is leave's work on a real server.
func (c *observedConn) leaveReal(op, p string, err error, n int64) {
	e := sim.Event{Kind: "recv", Client: c.client, Op: op, Path: p}
	if err != nil {
		e.Err = err.Error()
	}
	c.r.real.event(e)
	c.r.real.strike(c.client, n)
	c.r.real.gate(c.client)
}

// beginWait begins a sleep or a wait. On a real server the faults that
// struck during it on the simulator strike as it begins.
func (c *observedConn) beginWait() {
	if c.r.real != nil {
		c.r.real.strike(c.client, c.beginReal())
		return
	}
	c.begin()
}

// settle runs after a sleep or a wait: on a real server a pause holds the
// task until it ends, and a crash ends it.
func (c *observedConn) settle() {
	if c.r.real != nil {
		c.r.real.gate(c.client)
	}
}

// Close closes the client's session.
func (c *observedConn) Close() {
	if cl, ok := c.Conn.(interface{ Close() }); ok {
		if c.r.real != nil {
			c.r.real.closing(c.client, cl.Close)
			return
		}
		cl.Close()
	}
}

// Create notes the directories where the recipe makes persistent nodes.
func (c *observedConn) Create(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	n := c.enter("create", p)
	if flags&zk.FlagEphemeral == 0 {
		c.r.lock()
		c.r.obs.persistentDirs[path.Dir(p)] = true
		c.r.unlock()
	}
	rec := createRec{client: c.client, session: c.Conn.Session().ID, path: p, call: c.r.step()}
	name, err := c.Conn.Create(ctx, p, data, flags, acl)
	rec.name, rec.err, rec.ret = name, err, c.r.step()
	c.r.lock()
	c.r.obs.creates = append(c.r.obs.creates, rec)
	c.r.unlock()
	c.leave("create", p, err, n)
	return name, err
}

func (c *observedConn) CreateContainer(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	n := c.enter("createContainer", p)
	c.r.lock()
	c.r.obs.persistentDirs[path.Dir(p)] = true
	c.r.unlock()
	name, err := c.Conn.CreateContainer(ctx, p, data, flags, acl)
	c.leave("createContainer", p, err, n)
	return name, err
}

// Delete notes, on a real server, when a delete took effect: the
// server's own record of it is out of reach there.
func (c *observedConn) Delete(ctx context.Context, p string, version int32) error {
	n := c.enter("delete", p)
	call := c.r.step()
	err := c.Conn.Delete(ctx, p, version)
	c.noteDelete(p, call, err)
	c.leave("delete", p, err, n)
	return err
}

func (c *observedConn) noteDelete(p string, call uint64, err error) {
	if c.r.real == nil || (err != nil && err != zk.ErrNoNode) {
		return
	}
	c.r.real.noteDelete(c.client, p, call, c.r.step(), err == nil)
}

func (c *observedConn) Exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	n := c.enter("exists", p)
	ok, st, err := c.Conn.Exists(ctx, p)
	c.leave("exists", p, err, n)
	return ok, st, err
}

// ExistsW notes a watch that can never fire: an exists watch on a
// sequential node that is gone. ZooKeeper never hands out a sequence
// number twice, so nothing will create that node again.
func (c *observedConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	n := c.enter("exists", p)
	ok, st, ch, err := c.Conn.ExistsW(ctx, p)
	if err == nil && !ok && sequentialName(path.Base(p)) {
		c.r.lock()
		c.r.obs.deadWatches = append(c.r.obs.deadWatches, deadWatch{client: c.client, path: p, step: c.r.step(), time: c.r.now()})
		c.r.unlock()
	}
	c.leave("exists", p, err, n)
	return ok, st, ch, err
}

func (c *observedConn) count(names []string) {
	c.r.lock()
	c.r.obs.childrenCalls++
	for _, n := range names {
		c.r.obs.bytesReturned += int64(len(n))
	}
	c.r.unlock()
}

func (c *observedConn) countBytes(data []byte) {
	c.r.lock()
	c.r.obs.bytesReturned += int64(len(data))
	c.r.unlock()
}

func (c *observedConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	n := c.enter("getChildren", p)
	names, st, err := c.Conn.Children(ctx, p)
	c.count(names)
	c.leave("getChildren", p, err, n)
	return names, st, err
}

func (c *observedConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	n := c.enter("getChildren", p)
	names, st, ch, err := c.Conn.ChildrenW(ctx, p)
	c.count(names)
	c.leave("getChildren", p, err, n)
	return names, st, ch, err
}

func (c *observedConn) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	n := c.enter("getData", p)
	data, st, err := c.Conn.Get(ctx, p)
	c.countBytes(data)
	c.leave("getData", p, err, n)
	return data, st, err
}

func (c *observedConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	n := c.enter("getData", p)
	data, st, ch, err := c.Conn.GetW(ctx, p)
	c.countBytes(data)
	c.leave("getData", p, err, n)
	return data, st, ch, err
}

func (c *observedConn) Set(ctx context.Context, p string, data []byte, version int32) (*zk.Stat, error) {
	n := c.enter("setData", p)
	st, err := c.Conn.Set(ctx, p, data, version)
	c.leave("setData", p, err, n)
	return st, err
}

// Multi notes the deletes of a multi that took effect, as Delete does.
func (c *observedConn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	n := c.enter("multi", "")
	call := c.r.step()
	res, err := c.Conn.Multi(ctx, ops...)
	if err == nil {
		for _, op := range ops {
			if d, ok := op.(*zk.DeleteRequest); ok {
				c.noteDelete(d.Path, call, nil)
			}
		}
	}
	c.leave("multi", "", err, n)
	return res, err
}

func (c *observedConn) Sync(ctx context.Context, p string) (string, error) {
	n := c.enter("sync", p)
	s, err := c.Conn.Sync(ctx, p)
	c.leave("sync", p, err, n)
	return s, err
}

// WaitSession is not counted among the client's operations: how often a
// recipe waits for its session hangs on timing (a real server's clients
// are connected before their tasks start; the simulator's connect as they
// go).
func (c *observedConn) WaitSession(ctx context.Context, seen recipes.Session) (recipes.Session, error) {
	c.settle()
	c.r.cov.setOp(c.client, "session")
	s, err := c.Conn.WaitSession(ctx, seen)
	c.r.cov.setOp(c.client, "")
	c.settle()
	return s, err
}

// Wait counts, on a real server, the watch notifications the recipe
// received; the simulator counts them as its trace delivers them.
func (c *observedConn) Wait(ctx context.Context, watches ...<-chan zk.Event) (zk.Event, error) {
	c.beginWait()
	if c.r.real != nil {
		c.r.real.settled(c.client)
	}
	c.r.cov.setOp(c.client, "wait")
	ev, err := c.Conn.Wait(ctx, watches...)
	c.r.cov.setOp(c.client, "")
	if c.r.real != nil && err == nil && ev.Type != zk.EventNotWatching && ev.Type != zk.EventSession && ev.Type != 0 {
		c.r.lock()
		c.r.obs.notifications++
		c.r.unlock()
		c.r.real.event(sim.Event{Kind: "watch", Client: c.client, Op: ev.Type.String(), Path: ev.Path})
	}
	c.settle()
	return ev, err
}

// EnterPhase notes the recipe's own phase for coverage
// (recipes.EnterPhase).
func (c *observedConn) EnterPhase(name string) { c.r.cov.setOwn(c.client, name) }

func (c *observedConn) Sleep(ctx context.Context, d time.Duration) error {
	c.beginWait()
	err := c.Conn.Sleep(ctx, d)
	c.settle()
	return err
}

func sequentialName(name string) bool {
	if len(name) < 10 {
		return false
	}
	for _, r := range name[len(name)-10:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

type deadWatch struct {
	client int
	path   string
	step   uint64
	time   time.Duration
}
