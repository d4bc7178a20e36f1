package difftest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// A Backend runs the steps of its clients: the simulator or a real server.
type Backend interface {
	// Clients is the number of clients.
	Clients() int
	// Do runs fn as a step of client i and returns once it has returned.
	Do(i int, fn func(ctx context.Context, c recipes.Conn)) error
}

// A Faulter injects faults (FaultDisconnect, FaultDropReply, FaultExpire)
// on client i, between steps.
type Faulter interface {
	Inject(i int, fault string) error
}

// closer is the Close both backends' clients have (sim.Client,
// zkconn.Conn); it is not part of recipes.Conn.
type closer interface{ Close() }

// sessionWaitMax bounds WaitSession on a real server: a reconnect takes
// go-zookeeper's one-second backoff and a handshake.
const sessionWaitMax = 20 * time.Second

// A Run applies operations to a backend and renders every result as text
// that does not depend on the backend.
type Run struct {
	b        Backend
	root     string
	base     int64            // the root's czxid: zxids are shown relative to it
	sessions map[int64]string // session id -> "cN"
	firstSID []int64
	closed   []bool
	watches  []*watchRec
	// Lines is the transcript: one line per result, event and note.
	Lines []string
}

type watchRec struct {
	id     int // the number of the op that set it
	client int
	ch     <-chan zk.Event
	fired  bool
}

// Start begins a run: it records the clients' sessions and creates the
// run's root (a persistent node named root, as client 0) whose czxid is the
// baseline of every zxid shown.
func Start(b Backend, root string) (*Run, error) {
	r := &Run{b: b, root: root, sessions: make(map[int64]string), closed: make([]bool, b.Clients())}
	for i := range b.Clients() {
		var s recipes.Session
		if err := b.Do(i, func(ctx context.Context, c recipes.Conn) { s = c.Session() }); err != nil {
			return nil, err
		}
		if !s.Connected() {
			return nil, fmt.Errorf("difftest: client %d has no session: %+v", i+1, s)
		}
		r.sessions[s.ID] = fmt.Sprintf("c%d", i+1)
		r.firstSID = append(r.firstSID, s.ID)
	}
	var err error
	var stat *zk.Stat
	if doErr := b.Do(0, func(ctx context.Context, c recipes.Conn) {
		if _, err = c.Create(ctx, root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			return
		}
		_, stat, err = c.Exists(ctx, root)
	}); doErr != nil {
		return nil, doErr
	}
	if err != nil {
		return nil, fmt.Errorf("difftest: creating the root %s: %w", root, err)
	}
	r.base = stat.Czxid
	return r, nil
}

func (r *Run) logf(format string, args ...any) {
	r.Lines = append(r.Lines, fmt.Sprintf(format, args...))
}

// Apply runs one operation, the n-th of its sequence, then lets every
// client with a watch set see the events due to it (a barrier request on
// that client: ZooKeeper sends a client its events before the reply to a
// later request), and renders it all.
func (r *Run) Apply(n int, op Op) error {
	var line string
	if err := r.b.Do(op.Client, func(ctx context.Context, c recipes.Conn) {
		line = r.exec(ctx, n, op, c)
	}); err != nil {
		return fmt.Errorf("op %d (%v): %w", n, op, err)
	}
	r.logf("#%d %v -> %s", n, op, line)
	return r.observe()
}

// observe collects the events of every watch, after a barrier on each live
// client that has a watch waiting.
func (r *Run) observe() error {
	for i := range r.b.Clients() {
		if r.closed[i] || !slices.ContainsFunc(r.watches, func(w *watchRec) bool { return w.client == i && !w.fired }) {
			continue
		}
		var err error
		if doErr := r.b.Do(i, func(ctx context.Context, c recipes.Conn) {
			_, _, err = c.Exists(ctx, r.root)
		}); doErr != nil {
			return doErr
		}
		if err != nil {
			r.logf("   barrier c%d: %v", i+1, err)
		}
	}
	r.drain()
	return nil
}

func (r *Run) drain() {
	for _, w := range r.watches {
		if w.fired {
			continue
		}
		select {
		case ev := <-w.ch:
			w.fired = true
			r.logf("   c%d watch#%d <- %s", w.client+1, w.id, r.event(ev))
		default:
		}
	}
}

func (r *Run) exec(ctx context.Context, n int, op Op, c recipes.Conn) string {
	p := op.Path.full(r.root)
	switch op.Kind {
	case Create:
		got, err := c.Create(ctx, p, op.Data.bytes(), op.Flags, op.ACL.acl())
		return fmt.Sprintf("%q %s", r.rel(got), errText(err))
	case CreateContainer:
		got, err := c.CreateContainer(ctx, p, op.Data.bytes(), op.Flags, op.ACL.acl())
		return fmt.Sprintf("%q %s", r.rel(got), errText(err))
	case Delete:
		return errText(c.Delete(ctx, p, op.Version))
	case Exists:
		ok, stat, err := c.Exists(ctx, p)
		return fmt.Sprintf("%v %s %s", ok, r.stat(stat), errText(err))
	case ExistsW:
		ok, stat, ch, err := c.ExistsW(ctx, p)
		r.addWatch(n, op.Client, ch)
		return fmt.Sprintf("%v %s watch=%v %s", ok, r.stat(stat), ch != nil, errText(err))
	case Get:
		data, stat, err := c.Get(ctx, p)
		return fmt.Sprintf("%s %s %s", dataText(data), r.stat(stat), errText(err))
	case GetW:
		data, stat, ch, err := c.GetW(ctx, p)
		r.addWatch(n, op.Client, ch)
		return fmt.Sprintf("%s %s watch=%v %s", dataText(data), r.stat(stat), ch != nil, errText(err))
	case Set:
		stat, err := c.Set(ctx, p, op.Data.bytes(), op.Version)
		return fmt.Sprintf("%s %s", r.stat(stat), errText(err))
	case Children:
		kids, stat, err := c.Children(ctx, p)
		return fmt.Sprintf("%s %s %s", childrenText(kids), r.stat(stat), errText(err))
	case ChildrenW:
		kids, stat, ch, err := c.ChildrenW(ctx, p)
		r.addWatch(n, op.Client, ch)
		return fmt.Sprintf("%s %s watch=%v %s", childrenText(kids), r.stat(stat), ch != nil, errText(err))
	case Multi:
		reqs := make([]any, len(op.Ops))
		for i, s := range op.Ops {
			reqs[i] = s.request(r.root)
		}
		resps, err := c.Multi(ctx, reqs...)
		return r.multi(resps, err)
	case Sync:
		got, err := c.Sync(ctx, p)
		return fmt.Sprintf("%q %s", r.rel(got), errText(err))
	case Close:
		if r.closed[op.Client] {
			return "already closed"
		}
		c.(closer).Close()
		r.closed[op.Client] = true
		s := c.Session()
		return fmt.Sprintf("closed state=%v", s.State)
	case WaitSession:
		return r.waitSession(ctx, op.Client, c)
	case Fault:
		return r.fault(ctx, op, c)
	case AddAuth, GetACL, SetACL:
		return r.execACL(ctx, op, c)
	}
	panic(fmt.Sprintf("difftest: unknown op kind %q", op.Kind))
}

func (r *Run) waitSession(ctx context.Context, i int, c recipes.Conn) string {
	ctx, cancel := c.WithTimeout(ctx, sessionWaitMax)
	defer cancel()
	s := c.Session()
	for !s.Connected() || !handleHasSession(c) {
		var err error
		if s, err = c.WaitSession(ctx, s); err != nil {
			return "no session: " + errText(err)
		}
	}
	return r.sessionText(i, s)
}

// sessionText shows a session as first (the client's first) or new; a
// new one is named for the owner column of later stats.
func (r *Run) sessionText(i int, s recipes.Session) string {
	if s.ID == r.firstSID[i] {
		return fmt.Sprintf("connected session=first timeout=%d", s.TimeoutMs)
	}
	if _, ok := r.sessions[s.ID]; !ok {
		r.sessions[s.ID] = fmt.Sprintf("c%d'", i+1)
	}
	return fmt.Sprintf("connected session=new(%s) timeout=%d", r.sessions[s.ID], s.TimeoutMs)
}

// fault injects op.Fault on the client and, but for FaultDropReply, waits
// until the client has lost its connection (and, for FaultExpire, its
// session) and has a session again.
func (r *Run) fault(ctx context.Context, op Op, c recipes.Conn) string {
	f, ok := r.b.(Faulter)
	if !ok {
		return "no faults on this backend"
	}
	before := c.Session()
	if err := f.Inject(op.Client, op.Fault); err != nil {
		return "inject: " + errText(err)
	}
	if op.Fault == FaultDropReply {
		return "armed"
	}
	ctx, cancel := c.WithTimeout(ctx, sessionWaitMax)
	defer cancel()
	s := c.Session()
	lost := false
	for !lost || !s.Connected() || (op.Fault != FaultDisconnect && s.ID == before.ID) {
		var err error
		if s, err = c.WaitSession(ctx, s); err != nil {
			return "no session: " + errText(err)
		}
		lost = lost || !s.Connected()
	}
	return r.sessionText(op.Client, s)
}

func (r *Run) addWatch(n, client int, ch <-chan zk.Event) {
	if ch != nil {
		r.watches = append(r.watches, &watchRec{id: n, client: client, ch: ch})
	}
}

func (r *Run) multi(resps []zk.MultiResponse, err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s nil=%v [", errText(err), resps == nil)
	for i, m := range resps {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "{%q %s %s}", r.rel(m.String), r.stat(m.Stat), errText(m.Error))
	}
	b.WriteString("]")
	return b.String()
}

// rel shows a path relative to the run's root.
func (r *Run) rel(p string) string {
	if rest, ok := strings.CutPrefix(p, r.root); ok && (rest == "" || rest[0] == '/') {
		return "~" + rest
	}
	return p
}

func (r *Run) zxid(z int64) string {
	if z == 0 {
		return "0"
	}
	return fmt.Sprintf("B%+d", z-r.base)
}

func (r *Run) owner(id int64) string {
	if id == 0 {
		return "0"
	}
	if name, ok := r.sessions[id]; ok {
		return name
	}
	return fmt.Sprintf("%#x", id)
}

// stat renders every field of a Stat: zxids relative to the root's, the
// owner as a client, and the times by what holds on both backends (zero or
// not; mtime equal to ctime while the version is 0).
func (r *Run) stat(s *zk.Stat) string {
	if s == nil {
		return "stat=nil"
	}
	return fmt.Sprintf("{cz=%s mz=%s pz=%s ct=%s mt=%s v=%d cv=%d av=%d owner=%s len=%d kids=%d}",
		r.zxid(s.Czxid), r.zxid(s.Mzxid), r.zxid(s.Pzxid), timeText(s.Ctime), mtimeText(s),
		s.Version, s.Cversion, s.Aversion, r.owner(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

func timeText(t int64) string {
	if t == 0 {
		return "0"
	}
	return "t"
}

// mtimeText shows mtime by its relation to ctime that holds on both
// backends: equal while the version is 0, not earlier after.
func mtimeText(s *zk.Stat) string {
	switch {
	case s.Mtime == 0:
		return "0"
	case s.Mtime < s.Ctime:
		return "<ct"
	case s.Version == 0 && s.Mtime == s.Ctime:
		return "=ct"
	case s.Version == 0:
		return ">ct(v0)"
	}
	return "t"
}

func (r *Run) event(ev zk.Event) string {
	return fmt.Sprintf("{%v %v %q %s}", ev.Type, ev.State, r.rel(ev.Path), errText(ev.Err))
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline"
	}
	return "err=" + err.Error()
}

func dataText(d []byte) string {
	if d == nil {
		return "data=nil"
	}
	if len(d) > 32 {
		return fmt.Sprintf("data=len%d", len(d))
	}
	return fmt.Sprintf("data=%q", d)
}

func childrenText(kids []string) string {
	if kids == nil {
		return "children=nil"
	}
	sorted := slices.Sorted(slices.Values(kids))
	return fmt.Sprintf("children=%q order=%q", sorted, kids)
}
