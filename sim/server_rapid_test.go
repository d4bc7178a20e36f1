package sim

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// refNode is the reference model's record of a znode: the Stat fields as
// a client sees them, kept the plain way (cversion counts every child
// create and delete; the sequence counter counts creates).
type refNode struct {
	data           []byte
	czxid, mzxid   int64
	pzxid          int64
	ctime, mtime   int64
	version        int32
	cversion       int32
	seq            int32
	ephemeralOwner int64
	container      bool
	children       *refHashSet // nil until the first child, as in DataNode
}

// refModel is an obviously-correct reference for the tree: a map from path
// to node, with numChildren found by scanning it.
type refModel struct {
	nodes map[string]*refNode
	zxid  int64
}

func newRefModel() *refModel {
	m := &refModel{nodes: map[string]*refNode{}}
	m.nodes["/"] = &refNode{data: []byte{}, cversion: -1, children: newRefHashSet(8)}
	m.nodes["/"].children.add("zookeeper")
	return m
}

func (m *refModel) clone() *refModel {
	c := &refModel{nodes: make(map[string]*refNode, len(m.nodes)), zxid: m.zxid}
	for p, n := range m.nodes {
		cp := *n
		if n.children != nil {
			cp.children = n.children.clone()
		}
		c.nodes[p] = &cp
	}
	return c
}

func refParent(p string) (string, string) {
	i := strings.LastIndex(p, "/")
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

func (m *refModel) numChildren(p string) int {
	prefix := p + "/"
	if p == "/" {
		prefix = "/"
	}
	n := 0
	for q := range m.nodes {
		if q != p && strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") {
			n++
		}
	}
	if p == "/" {
		n++ // /zookeeper, which the model does not hold
	}
	return n
}

func (m *refModel) stat(p string) zk.Stat {
	n := m.nodes[p]
	owner := n.ephemeralOwner
	if n.container {
		owner = 0
	}
	return zk.Stat{Czxid: n.czxid, Mzxid: n.mzxid, Pzxid: n.pzxid, Ctime: n.ctime, Mtime: n.mtime,
		Version: n.version, Cversion: n.cversion, EphemeralOwner: owner,
		DataLength: int32(len(n.data)), NumChildren: int32(m.numChildren(p))}
}

// apply applies one write at zxid and returns its result.
func (m *refModel) apply(req Request, session int64, zxid, wallMs int64) MultiResult {
	switch req.Op {
	case OpCreate, OpCreateCont:
		parentPath, _ := refParent(req.Path)
		parent := m.nodes[parentPath]
		if parent == nil {
			return MultiResult{Err: CodeNoNode}
		}
		p := req.Path
		seq := req.Mode == zk.FlagSequence || req.Mode == zk.FlagEphemeralSequential
		if seq {
			p += fmt.Sprintf("%010d", parent.seq)
		}
		if m.nodes[p] != nil {
			return MultiResult{Err: CodeNodeExists}
		}
		if parent.ephemeralOwner != 0 && !parent.container {
			return MultiResult{Err: CodeNoChildrenForEphemeral}
		}
		n := &refNode{data: bytes.Clone(req.Data), czxid: zxid, mzxid: zxid, pzxid: zxid, ctime: wallMs, mtime: wallMs}
		if req.Mode == zk.FlagEphemeral || req.Mode == zk.FlagEphemeralSequential {
			n.ephemeralOwner = session
		}
		if req.Op == OpCreateCont {
			n.container, n.ephemeralOwner = true, -1
		}
		m.nodes[p] = n
		parent.seq++
		parent.cversion++
		parent.pzxid = zxid
		if parent.children == nil {
			parent.children = newRefHashSet(8)
		}
		_, name := refParent(p)
		parent.children.add(name)
		return MultiResult{Op: req.Op, Path: p, Stat: m.stat(p)}
	case OpDelete:
		n := m.nodes[req.Path]
		if n == nil {
			return MultiResult{Err: CodeNoNode}
		}
		if req.Version != -1 && req.Version != n.version {
			return MultiResult{Err: CodeBadVersion}
		}
		if m.numChildren(req.Path) > 0 {
			return MultiResult{Err: CodeNotEmpty}
		}
		m.remove(req.Path, zxid)
		return MultiResult{Op: req.Op}
	case OpSetData, OpCheck:
		n := m.nodes[req.Path]
		if n == nil {
			return MultiResult{Err: CodeNoNode}
		}
		if req.Version != -1 && req.Version != n.version {
			return MultiResult{Err: CodeBadVersion}
		}
		if req.Op == OpCheck {
			return MultiResult{Op: req.Op}
		}
		n.data = bytes.Clone(req.Data)
		n.version++
		n.mzxid = zxid
		n.mtime = wallMs
		return MultiResult{Op: req.Op, Stat: m.stat(req.Path)}
	}
	panic(req.Op)
}

func (m *refModel) remove(p string, zxid int64) {
	parentPath, name := refParent(p)
	parent := m.nodes[parentPath]
	delete(m.nodes, p)
	parent.cversion++
	parent.pzxid = max(parent.pzxid, zxid)
	parent.children.remove(name)
}

// refHashSet is a second, independent emulation of java.util.HashSet's
// iteration order (the probe's jset): an array of buckets, each a list in
// insertion order, doubled and split in order past 3/4 full.
type refHashSet struct {
	buckets [][]string
	size    int
}

func newRefHashSet(capacity int) *refHashSet {
	return &refHashSet{buckets: make([][]string, capacity)}
}

func refJavaHash(s string) uint32 {
	var h int32
	for _, u := range utf16Units(s) {
		h = 31*h + int32(u)
	}
	x := uint32(h)
	return x ^ x>>16
}

func (s *refHashSet) add(name string) {
	i := refJavaHash(name) & uint32(len(s.buckets)-1)
	if slices.Contains(s.buckets[i], name) {
		return
	}
	s.buckets[i] = append(s.buckets[i], name)
	s.size++
	if s.size > len(s.buckets)*3/4 {
		grown := make([][]string, 2*len(s.buckets))
		for _, b := range s.buckets {
			for _, n := range b {
				j := refJavaHash(n) & uint32(len(grown)-1)
				grown[j] = append(grown[j], n)
			}
		}
		s.buckets = grown
	}
}

func (s *refHashSet) remove(name string) {
	i := refJavaHash(name) & uint32(len(s.buckets)-1)
	if j := slices.Index(s.buckets[i], name); j >= 0 {
		s.buckets[i] = slices.Delete(s.buckets[i], j, j+1)
		s.size--
	}
}

func (s *refHashSet) list() []string {
	out := []string{}
	for _, b := range s.buckets {
		out = append(out, b...)
	}
	return out
}

func (s *refHashSet) clone() *refHashSet {
	c := &refHashSet{buckets: make([][]string, len(s.buckets)), size: s.size}
	for i, b := range s.buckets {
		c.buckets[i] = slices.Clone(b)
	}
	return c
}

// rapidServer is the state machine under test: the server, one connection
// per session slot, and the reference model.
type rapidServer struct {
	h        *srvHarness
	model    *refModel
	conns    []ConnID
	sessions []int64
}

const rapidSessions = 3

var rapidNames = []string{"a", "b", "c", "lock-", "x"}

func (r *rapidServer) wallMs() int64 { return DefaultEpochMs + r.h.nowMs }

// drawPath draws a path under /t, two levels deep at most, often one the
// model holds (a sequential node's name included).
func (r *rapidServer) drawPath(t *rapid.T, label string) string {
	return drawPathAmong(t, label, slices.Sorted(maps.Keys(r.model.nodes)))
}

// drawPathAmong draws a path under /t, two levels deep at most, often one
// of paths (sorted, so that the draw does not depend on map order).
func drawPathAmong(t *rapid.T, label string, paths []string) string {
	var existing []string
	for _, p := range paths {
		if strings.HasPrefix(p, "/t/") {
			existing = append(existing, p)
		}
	}
	if len(existing) > 0 && rapid.Bool().Draw(t, label+"Existing") {
		return rapid.SampledFrom(existing).Draw(t, label)
	}
	p := "/t/" + rapid.SampledFrom(rapidNames).Draw(t, label+"1")
	if rapid.Bool().Draw(t, label+"Deep") {
		p += "/" + rapid.SampledFrom(rapidNames).Draw(t, label+"2")
	}
	return p
}

func (r *rapidServer) drawWrite(t *rapid.T) Request {
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		modes := []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer}
		mode := rapid.SampledFrom(modes).Draw(t, "mode")
		req := mkCreate(r.drawPath(t, "path"), rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "data"), mode)
		if mode == zk.FlagContainer {
			req.Op = OpCreateCont
		}
		return req
	case 1:
		return mkDelete(r.drawPath(t, "path"), r.drawVersion(t))
	case 2:
		return mkSet(r.drawPath(t, "path"), rapid.SliceOfN(rapid.Byte(), 0, 3).Draw(t, "data"), r.drawVersion(t))
	default:
		return mkCheck(r.drawPath(t, "path"), r.drawVersion(t))
	}
}

func (r *rapidServer) drawVersion(t *rapid.T) int32 {
	return rapid.SampledFrom([]int32{-1, -1, 0, 1, 2}).Draw(t, "version")
}

// connect gives session slot i a new session.
func (r *rapidServer) connect(i int) {
	c, sid := r.h.connect(40000)
	r.conns[i], r.sessions[i] = c, sid
	r.model.zxid++
}

func (r *rapidServer) checkReply(t *rapid.T, what string, got Response, want MultiResult) {
	if got.Err != want.Err || got.Path != want.Path || (want.Err == CodeOK && want.Op != OpCheck && want.Op != OpDelete && got.Stat != want.Stat) {
		t.Fatalf("%s: got err=%v path=%q stat=%+v\nwant err=%v path=%q stat=%+v", what, got.Err, got.Path, got.Stat, want.Err, want.Path, want.Stat)
	}
}

func (r *rapidServer) write(t *rapid.T) {
	i := rapid.IntRange(0, rapidSessions-1).Draw(t, "session")
	req := r.drawWrite(t)
	r.h.nowMs++
	r.model.zxid++
	want := r.model.apply(req, r.sessions[i], r.model.zxid, r.wallMs())
	got := r.h.do(r.conns[i], req)
	if got.Zxid != r.model.zxid {
		t.Fatalf("zxid %d, want %d", got.Zxid, r.model.zxid)
	}
	r.checkReply(t, fmt.Sprintf("%v %s", req.Op, req.Path), got, want)
}

func (r *rapidServer) multi(t *rapid.T) {
	i := rapid.IntRange(0, rapidSessions-1).Draw(t, "session")
	ops := make([]Request, rapid.IntRange(0, 4).Draw(t, "ops"))
	for j := range ops {
		ops[j] = r.drawWrite(t)
	}
	r.h.nowMs++
	r.model.zxid++
	trial := r.model.clone()
	want := make([]MultiResult, len(ops))
	failed := -1
	for j, op := range ops {
		want[j] = trial.apply(op, r.sessions[i], r.model.zxid, r.wallMs())
		if want[j].Err != CodeOK {
			failed = j
			break
		}
	}
	if failed >= 0 {
		for j := range want {
			switch {
			case j < failed:
				want[j] = MultiResult{Err: CodeOK}
			case j > failed:
				want[j] = MultiResult{Err: CodeRuntimeInconsistency}
			}
		}
	} else {
		zxid := r.model.zxid
		r.model = trial
		r.model.zxid = zxid
	}
	got := r.h.do(r.conns[i], mkMulti(ops...))
	if got.Zxid != r.model.zxid || got.Err != CodeOK || len(got.Multi) != len(want) {
		t.Fatalf("multi: zxid %d err %v %d results, want zxid %d and %d results", got.Zxid, got.Err, len(got.Multi), r.model.zxid, len(want))
	}
	for j := range want {
		g := got.Multi[j]
		w := want[j]
		if g.Err != w.Err || g.Path != w.Path || (w.Op == OpSetData && g.Stat != w.Stat) {
			t.Fatalf("multi op %d (%v %s): got %+v, want %+v", j, ops[j].Op, ops[j].Path, g, w)
		}
	}
}

func (r *rapidServer) read(t *rapid.T) {
	i := rapid.IntRange(0, rapidSessions-1).Draw(t, "session")
	p := r.drawPath(t, "path")
	if rapid.Bool().Draw(t, "parent") {
		p, _ = refParent(p)
	}
	op := rapid.SampledFrom([]OpCode{OpExists, OpGetData, OpGetChildren}).Draw(t, "op")
	got := r.h.do(r.conns[i], Request{Op: op, Path: p})
	n := r.model.nodes[p]
	if n == nil {
		if got.Err != CodeNoNode {
			t.Fatalf("%v %s: got %v, want NONODE", op, p, got.Err)
		}
		return
	}
	if got.Err != CodeOK || got.Stat != r.model.stat(p) || got.Zxid != r.model.zxid {
		t.Fatalf("%v %s: got %v %+v zxid %d, want %+v zxid %d", op, p, got.Err, got.Stat, got.Zxid, r.model.stat(p), r.model.zxid)
	}
	switch op {
	case OpGetData:
		if !bytes.Equal(got.Data, n.data) || (got.Data == nil) != (n.data == nil) {
			t.Fatalf("getData %s: %q, want %q", p, got.Data, n.data)
		}
	case OpGetChildren:
		want := []string{}
		if n.children != nil {
			want = n.children.list()
		}
		if !slices.Equal(slices.Sorted(slices.Values(got.Children)), slices.Sorted(slices.Values(want))) {
			t.Fatalf("getChildren %s: %q, want the set %q", p, got.Children, want)
		}
		if !slices.Equal(got.Children, want) {
			t.Fatalf("getChildren %s: order %q, want HashSet order %q", p, got.Children, want)
		}
	}
}

// closeOrExpire ends a session, by closeSession or by expiry, and opens a
// new one in its slot. Its ephemerals go in the one closing transaction.
func (r *rapidServer) closeOrExpire(t *rapid.T) {
	i := rapid.IntRange(0, rapidSessions-1).Draw(t, "session")
	sid := r.sessions[i]
	r.h.nowMs++
	if rapid.Bool().Draw(t, "expire") {
		if !r.h.s.ExpireSession(r.h.nowMs, sid) {
			t.Fatalf("session %#x would not expire", sid)
		}
		if got := r.h.do(r.conns[i], Request{Op: OpExists, Path: "/"}); got.Err != CodeSessionExpired {
			t.Fatalf("request in the closing window: %v", got.Err)
		}
		r.h.s.StepInternal(r.h.nowMs)
	} else {
		r.h.ok(r.conns[i], Request{Op: OpCloseSession})
	}
	r.model.zxid++
	for _, p := range slices.Sorted(maps.Keys(r.model.nodes)) {
		if n := r.model.nodes[p]; n != nil && !n.container && n.ephemeralOwner == sid {
			r.model.remove(p, r.model.zxid)
		}
	}
	if r.h.s.LastZxid() != r.model.zxid {
		t.Fatalf("closing: zxid %d, want %d", r.h.s.LastZxid(), r.model.zxid)
	}
	r.h.take(r.conns[i])
	r.connect(i)
}

// TestServerRapidModel is a state-machine test of the tree against the
// reference model, with several sessions: every reply is compared (error,
// path, every Stat field, data, children as a set and in HashSet order),
// and the server's invariants are checked after every action.
func TestServerRapidModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &rapidServer{
			h:        newHarness(t, ServerConfig{}),
			model:    newRefModel(),
			conns:    make([]ConnID, rapidSessions),
			sessions: make([]int64, rapidSessions),
		}
		r.h.s.checkEvery = false // the "" invariant below checks the whole tree
		for i := range rapidSessions {
			r.connect(i)
		}
		r.h.ok(r.conns[0], mkCreate("/t", nil, 0))
		r.model.zxid++
		r.model.apply(mkCreate("/t", nil, 0), 0, r.model.zxid, r.wallMs())
		t.Repeat(map[string]func(*rapid.T){
			"write":         r.write,
			"multi":         r.multi,
			"read":          r.read,
			"closeOrExpire": r.closeOrExpire,
			"": func(t *rapid.T) {
				if err := r.h.s.CheckInvariants(); err != nil {
					t.Fatal(err)
				}
				r.h.collect()
				r.h.pending = r.h.pending[:0] // events are not compared here
			},
		})
	})
}
