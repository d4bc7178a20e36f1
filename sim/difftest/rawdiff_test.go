package difftest

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// A rawStep is one request by one client, sent as it is: on the simulator
// to sim.Server.Receive, on the real server through a rawConn. Paths that
// start with "R" are under the run's root ("R/a" is <root>/a); others are
// used as they are.
type rawStep struct {
	client int
	req    sim.Request
	// zxidFromBase makes req.RelativeZxid an offset from the zxid of the
	// root's creation, so that setWatches can name a point in the run.
	zxidFromBase bool
}

func step(client int, req sim.Request) rawStep { return rawStep{client: client, req: req} }

var openACL = zk.WorldACL(zk.PermAll)

func rCreate(path string, data string, mode int32) sim.Request {
	return sim.Request{Op: sim.OpCreate, Path: path, Data: []byte(data), Mode: mode, ACL: openACL}
}

func rCreate2(path string, mode int32) sim.Request {
	return sim.Request{Op: sim.OpCreate2, Path: path, Data: []byte("c2"), Mode: mode, ACL: openACL}
}

func rCreateTTL(op sim.OpCode, path string, mode int32, ttl int64) sim.Request {
	return sim.Request{Op: op, Path: path, Mode: mode, TTLMs: ttl, ACL: openACL}
}

func rSet(path, data string) sim.Request {
	return sim.Request{Op: sim.OpSetData, Path: path, Data: []byte(data), Version: -1}
}

func rDelete(path string) sim.Request { return sim.Request{Op: sim.OpDelete, Path: path, Version: -1} }

func rRead(op sim.OpCode, path string, watch bool) sim.Request {
	return sim.Request{Op: op, Path: path, Watch: watch}
}

func rAddWatch(path string, mode sim.AddWatchMode) sim.Request {
	return sim.Request{Op: sim.OpAddWatch, Path: path, AddWatchMode: mode}
}

func rWatches(op sim.OpCode, path string, typ sim.WatcherType) sim.Request {
	return sim.Request{Op: op, Path: path, WatcherType: typ}
}

// resolve rewrites the request's root-relative paths.
func resolve(req sim.Request, root string) sim.Request {
	fix := func(p string) string {
		if strings.HasPrefix(p, "R") {
			return root + p[1:]
		}
		return p
	}
	fixAll := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = fix(p)
		}
		return out
	}
	req.Path = fix(req.Path)
	req.DataWatches = fixAll(req.DataWatches)
	req.ExistWatches = fixAll(req.ExistWatches)
	req.ChildWatches = fixAll(req.ChildWatches)
	req.PersistentWatches = fixAll(req.PersistentWatches)
	req.PersistentRecursiveWatches = fixAll(req.PersistentRecursiveWatches)
	if req.Ops != nil {
		ops := make([]sim.Request, len(req.Ops))
		for i, op := range req.Ops {
			ops[i] = resolve(op, root)
		}
		req.Ops = ops
	}
	return req
}

// rawRenderer turns responses and events into text that does not depend
// on the backend: zxids relative to the root's creation, session ids as
// client numbers, the root as "R", times left out.
type rawRenderer struct {
	root     string
	base     int64
	sessions map[int64]string
}

func (r *rawRenderer) zxid(z int64) string {
	if z <= 0 {
		return fmt.Sprint(z)
	}
	return fmt.Sprintf("B%+d", z-r.base)
}

func (r *rawRenderer) path(p string) string {
	if strings.HasPrefix(p, r.root) {
		return "R" + p[len(r.root):]
	}
	return p
}

func (r *rawRenderer) stat(s zk.Stat) string {
	owner := fmt.Sprintf("%#x", s.EphemeralOwner)
	if name, ok := r.sessions[s.EphemeralOwner]; ok {
		owner = name
	}
	return fmt.Sprintf("{czxid=%s mzxid=%s pzxid=%s v=%d cv=%d av=%d owner=%s len=%d kids=%d}",
		r.zxid(s.Czxid), r.zxid(s.Mzxid), r.zxid(s.Pzxid), s.Version, s.Cversion, s.Aversion, owner, s.DataLength, s.NumChildren)
}

func (r *rawRenderer) paths(ps []string) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = r.path(p)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// reply renders every field of a reply that the request's type carries.
func (r *rawRenderer) reply(req sim.Request, resp sim.Response) string {
	var b strings.Builder
	fmt.Fprintf(&b, "err=%v zxid=%s", resp.Err, r.zxid(resp.Zxid))
	if resp.Err != sim.CodeOK {
		return b.String()
	}
	switch req.Op {
	case sim.OpCreate, sim.OpSync:
		fmt.Fprintf(&b, " path=%s", r.path(resp.Path))
	case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		fmt.Fprintf(&b, " path=%s stat=%s", r.path(resp.Path), r.stat(resp.Stat))
	case sim.OpSetData, sim.OpExists:
		fmt.Fprintf(&b, " stat=%s", r.stat(resp.Stat))
	case sim.OpGetData, sim.OpReconfig:
		fmt.Fprintf(&b, " data=%q nil=%v stat=%s", resp.Data, resp.Data == nil, r.stat(resp.Stat))
	case sim.OpGetChildren:
		fmt.Fprintf(&b, " children=%v stat=%s", resp.Children, r.stat(resp.Stat))
	case sim.OpGetChildrenNoStat:
		fmt.Fprintf(&b, " children=%v", resp.Children)
	case sim.OpGetACL:
		fmt.Fprintf(&b, " acl=%v stat=%s", resp.ACL, r.stat(resp.Stat))
	case sim.OpGetEphemerals:
		fmt.Fprintf(&b, " ephemerals=%s", r.paths(resp.Ephemerals))
	case sim.OpGetAllChildrenNum:
		fmt.Fprintf(&b, " total=%d", resp.TotalNumber)
	case sim.OpMulti, sim.OpMultiRead:
		for _, m := range resp.Multi {
			fmt.Fprintf(&b, " [%v %v", m.Op, m.Err)
			switch m.Op {
			case sim.OpCreate:
				fmt.Fprintf(&b, " %s", r.path(m.Path))
			case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
				fmt.Fprintf(&b, " %s %s", r.path(m.Path), r.stat(m.Stat))
			case sim.OpSetData:
				fmt.Fprintf(&b, " %s", r.stat(m.Stat))
			case sim.OpGetData:
				fmt.Fprintf(&b, " %q nil=%v %s", m.Data, m.Data == nil, r.stat(m.Stat))
			case sim.OpGetChildrenNoStat:
				fmt.Fprintf(&b, " %v", m.Children)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

func (r *rawRenderer) event(e zk.Event) string {
	return fmt.Sprintf("event %v %s", e.Type, r.path(e.Path))
}

// barrier is the read each client sends after every step: its reply comes
// after every event the step fired for that client.
var barrier = sim.Request{Op: sim.OpExists, Path: "/zookeeper"}

// rawSide runs steps on one backend.
type rawSide interface {
	// do sends req on client c and returns its reply, or ok false if the
	// server closed the connection instead of replying.
	do(c int, req sim.Request) (events []zk.Event, resp sim.Response, ok bool, err error)
	sessionID(c int) int64
	closed(c int) bool
}

// rawTranscript runs the steps on one side and renders them.
func rawTranscript(t TB, side rawSide, clients int, root string, steps []rawStep) []string {
	t.Helper()
	r := &rawRenderer{root: root, sessions: map[int64]string{}}
	for c := range clients {
		r.sessions[side.sessionID(c)] = fmt.Sprintf("c%d", c+1)
	}
	var lines []string
	_, resp, _, err := side.do(0, sim.Request{Op: sim.OpCreate, Path: root, ACL: openACL})
	if err != nil || resp.Err != sim.CodeOK {
		t.Fatalf("creating the root %s: %v %v", root, err, resp.Err)
	}
	r.base = resp.Zxid
	reported := make([]bool, clients) // closed, and said so
	for i, st := range steps {
		req := resolve(st.req, root)
		if st.zxidFromBase {
			req.RelativeZxid += r.base
		}
		events, resp, ok, err := side.do(st.client, req)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		for _, e := range events {
			lines = append(lines, fmt.Sprintf("#%d c%d %s", i+1, st.client+1, r.event(e)))
		}
		if ok {
			lines = append(lines, fmt.Sprintf("#%d c%d %v %s: %s", i+1, st.client+1, st.req.Op, r.path(req.Path), r.reply(req, resp)))
		} else {
			lines = append(lines, fmt.Sprintf("#%d c%d %v %s: connection closed", i+1, st.client+1, st.req.Op, r.path(req.Path)))
		}
		for c := range clients {
			if reported[c] {
				continue
			}
			ok := !side.closed(c)
			if ok {
				var events []zk.Event
				events, _, ok, err = side.do(c, barrier)
				if err != nil {
					t.Fatalf("step %d barrier on c%d: %v", i+1, c+1, err)
				}
				for _, e := range events {
					lines = append(lines, fmt.Sprintf("#%d c%d %s", i+1, c+1, r.event(e)))
				}
			}
			if !ok {
				lines = append(lines, fmt.Sprintf("#%d c%d closed", i+1, c+1))
				reported[c] = true
			}
		}
	}
	return lines
}

// realSide is a real server through rawConns.
type realSide struct{ conns []*rawConn }

func (s *realSide) do(c int, req sim.Request) ([]zk.Event, sim.Response, bool, error) {
	msgs, err := s.conns[c].do(req)
	var events []zk.Event
	for _, m := range msgs {
		if m.event != nil {
			events = append(events, *m.event)
			continue
		}
		if m.reply.Xid == s.conns[c].xid {
			if m.reply.Err == sim.CodeUnimplemented && m.reply.Zxid == -1 && err == nil {
				// An unknown opcode: UnimplementedRequestProcessor replies
				// with the unset zxid, -1, then asks for
				// the connection's close (sendCloseSession): a request
				// sent at once may be read, and answered, before the
				// close, which the simulated server makes with its
				// reply. Wait for the close, so that what follows does
				// not depend on that race.
				err = s.conns[c].awaitClose()
			}
			return events, m.reply, true, err
		}
	}
	return events, sim.Response{}, false, err
}

func (s *realSide) sessionID(c int) int64 { return s.conns[c].sessionID }
func (s *realSide) closed(c int) bool     { return s.conns[c].closed }

// simSide is a sim.Server driven directly, its invariants checked after
// every request.
type simSide struct {
	s        *sim.Server
	ids      []int64
	isClosed []bool
	pending  [][]zk.Event // events sent to each client not yet taken
	xid      int32
}

func newSimSide(t TB, cfg sim.ServerConfig, clients int) *simSide {
	s := &simSide{s: sim.NewServer(cfg), isClosed: make([]bool, clients), pending: make([][]zk.Event, clients)}
	for c := range clients {
		s.s.Open(sim.ConnID(c + 1))
		s.s.Connect(0, sim.ConnID(c+1), sim.ConnectRequest{TimeoutMs: int32(sessionTimeout.Milliseconds())})
		out := s.s.Outputs()
		if len(out) != 1 || out[0].Kind != sim.OutConnect || out[0].Connect.SessionID == 0 {
			t.Fatalf("sim connect: %+v", out)
		}
		s.ids = append(s.ids, out[0].Connect.SessionID)
	}
	return s
}

func (s *simSide) do(c int, req sim.Request) ([]zk.Event, sim.Response, bool, error) {
	s.xid++
	req.Xid = s.xid
	s.s.Receive(0, sim.ConnID(c+1), req)
	var resp sim.Response
	replied := false
	for _, o := range s.s.Outputs() {
		to := int(o.Conn) - 1
		switch o.Kind {
		case sim.OutEvent:
			if to == c && replied {
				return nil, resp, false, fmt.Errorf("sim sent an event after the reply")
			}
			s.pending[to] = append(s.pending[to], o.Event)
		case sim.OutReply:
			if to != c || o.Reply.Xid != req.Xid {
				return nil, resp, false, fmt.Errorf("sim replied %+v on connection %d to a request on %d", o.Reply, o.Conn, c+1)
			}
			resp, replied = o.Reply, true
		case sim.OutClose:
			s.isClosed[to] = true
		}
	}
	if err := s.s.CheckInvariants(); err != nil {
		return nil, resp, false, err
	}
	events := s.pending[c]
	s.pending[c] = nil
	return events, resp, replied, nil
}

func (s *simSide) sessionID(c int) int64 { return s.ids[c] }
func (s *simSide) closed(c int) bool     { return s.isClosed[c] }
