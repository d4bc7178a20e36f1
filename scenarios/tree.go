package scenarios

import (
	"path"
	"slices"
	"strings"

	"github.com/zklab/zklab/sim"
)

// znodeLife is one incarnation of a node as the simulated server had it:
// from the transaction that created it to the one that removed it (a
// delete, a multi, its session's close or expiry). A path created again
// is a new life. The checks take a lease's node, its owner and its end
// from here, not from what the lease says of itself.
type znodeLife struct {
	path  string
	czxid int64
	// owner is the session of an ephemeral node, 0 for any other.
	owner int64
	// created is false for a node the server had before anyone was
	// watching (ZooKeeper's own nodes): createStep and creator are then
	// unknown.
	created    bool
	createStep uint64
	creator    int // the client whose request created it
	ended      bool
	endStep    uint64
	// endOp is what removed it: the op of the request ("delete",
	// "multi", "closeSession"), or "expiry"; endedBy is the client whose
	// request it was (0 for an expiry).
	endOp   string
	endedBy int
	// aliveAt is the life's index in serverTree.alive while it holds.
	aliveAt int
}

// liveAt reports whether the life held at step: created at or before it
// and not yet removed.
func (z *znodeLife) liveAt(step uint64) bool {
	return (!z.created || z.createStep <= step) && (!z.ended || z.endStep > step)
}

// serverTree follows the simulated server's tree as the run goes: after
// every write that reached the server it looks at the nodes that write
// can have touched (the created node's directory, the deleted node, a
// closed session's ephemerals), through sim.Server.Node, which changes
// nothing. What it keeps is the server's truth: the owner of each node
// and the step at which each node came and went, however it went.
type serverTree struct {
	server *sim.Server
	// view, on an ensemble, is the committed view (sim.World.Server),
	// which moves from member to member with the leadership; a write
	// becomes a transaction there some steps after its "apply" event, so
	// the tree looks at the view after every event (ensemble.go).
	view func() *sim.Server
	// creatorOf, on an ensemble, names the client whose request made the
	// transaction czxid (0 if unknown): a node first seen in the view
	// comes with no request event of its own.
	creatorOf func(czxid int64) int
	lives     []*znodeLife
	// lifeChunk holds the lives lives points to; leaseLives holds the
	// leases' slices of lives (holdLives): many to an allocation, carved
	// from leaseArray, the last array made for them.
	lifeChunk  chunk[znodeLife]
	leaseLives []*znodeLife
	leaseArray []*znodeLife
	// alive is the current lives, one a path, in no particular order (a
	// life that ends trades places with the last): what a look at every
	// life walks, and what lifeOf finds a path's life in. The order of
	// that walk changes nothing, for each life is looked at on its own.
	alive []*znodeLife
	// live indexes alive by path once it holds more than aliveScanMax
	// lives (nil until then).
	live map[string]*znodeLife
	// dirList is the directories a create went to, in order, kept as
	// they change: on an ensemble it is walked whenever the view moves,
	// and sorting them each time was a tenth of an exploration. Scanning
	// the directories in order orders the lives the scan finds.
	dirList []string
	scratch []*znodeLife
	// pathBuf is where scanChild builds a child's path to look it up,
	// allocating it only for a child that gets a life.
	pathBuf []byte
	// treeChanges is the view's sim.Server.TreeChanges at the last look;
	// rescan says the next look must not be skipped, or narrowed to the
	// changes since the last: a directory was added since, or a look
	// ended a life whose path has another node (a node deleted and
	// created again is found by the look after the one that ended its
	// last life). The ensemble's first look is a rescan (followEnsemble);
	// the standalone server's tree adds a directory only as it scans it
	// whole (scanDir), so there a new directory needs no rescan.
	treeChanges uint64
	rescan      bool
	// dirPrefix is the last path dirOf looked at, up to and with its
	// last slash, and dirOfPrefix that path's directory.
	dirPrefix, dirOfPrefix string
	// lookAtEverything turns lookAtChanges off (RunOptions'), for the
	// test that holds it to a look at every directory and life.
	lookAtEverything bool
	// pending is the last write that reached the server: it is applied
	// after its "apply" event, so the tree is looked at on the next event.
	pending    sim.Event
	hasPending bool
	lastZxid   int64
}

func newServerTree() *serverTree {
	return &serverTree{}
}

// empty clears t for a later run (observer.empty), keeping its arrays
// with their room; the lives and their array go back on their own
// (runBuffers.keep), first.
func (t *serverTree) empty() {
	*t = serverTree{alive: emptied(t.alive), dirList: emptied(t.dirList), scratch: emptied(t.scratch), pathBuf: t.pathBuf[:0]}
}

// reserve makes room for the lives of a run of n lock cycles, a node
// each (and a few directories): growing the arrays life by life was a
// dozen allocations a run.
func (t *serverTree) reserve(n int, b *runBuffers) {
	n = min(n, MaxLockCycles) + 4
	t.lives = takeSlice(b.lives, n)
	b.lives = nil
	t.lifeChunk.start(n, &b.lifeRecs)
	t.leaseLives, t.leaseArray = b.leaseLives, b.leaseLives
	b.leaseLives = nil
}

// aliveScanMax is the most lives lifeOf finds by a walk of alive: a run
// has a handful (the lock's directories, a node or two a client), and a
// walk that compares a path's length and last byte before the path is
// cheaper than a map's hash of the whole path at every look, every new
// life and every life's end (they were 1.3% of an exploration). Past it,
// as with a herd of hundreds of clients, the map live takes over.
const aliveScanMax = 16

// lifeOf is the current life of path p, or nil.
func (t *serverTree) lifeOf(p string) *znodeLife {
	if t.live != nil {
		return t.live[p]
	}
	n := len(p)
	if n == 0 {
		return nil // no life has an empty path: a path begins with "/"
	}
	for _, z := range t.alive {
		// Lock nodes' paths have one length and differ last in their
		// sequence's last digits.
		if len(z.path) == n && z.path[n-1] == p[n-1] && z.path == p {
			return z
		}
	}
	return nil
}

// event takes the trace's events in order; it runs before the observer
// files e. It takes e by its address: copying every event of the trace
// into it was 0.2% of an exploration.
func (t *serverTree) event(e *sim.Event, k traceKind, op applyOp) {
	if t.view != nil {
		t.ensembleEvent(e)
		return
	}
	if t.server == nil {
		return
	}
	if t.hasPending {
		t.settle()
	}
	switch {
	case k == traceApply && op.treeWrite():
		t.pending, t.hasPending = *e, true
	case k == traceServer && e.Session != 0:
		// An expiry's closeSession, applied when the event is emitted.
		t.sessionEnded(e.Session, e.Step, "expiry", 0)
	}
}

// flush settles the last write: the run is over, or a check reads the
// tree now.
func (t *serverTree) flush() {
	if t.view != nil {
		t.ensembleEvent(&sim.Event{})
		return
	}
	if t.server != nil && t.hasPending {
		t.settle()
	}
}

// settle looks at what the pending write changed. It runs at the next
// event: between a write and the next event the server applies nothing
// else but a container sweep (which removes no lock node) or an expiry
// (whose own event comes next, and which only a multi could be blamed
// for here).
func (t *serverTree) settle() {
	w := t.pending
	t.hasPending = false
	if t.server.LastZxid() == t.lastZxid {
		return // the write never became a transaction
	}
	zxidBefore := t.lastZxid
	t.lastZxid = t.server.LastZxid()
	changesBefore := t.treeChanges
	t.treeChanges = t.server.TreeChanges()
	switch w.Op {
	case "create", "createContainer", "createTTL":
		if dir := t.dirOf(w.Path); !t.lookAtCreated(dir, changesBefore, w, zxidBefore) {
			t.scanDir(dir, w, zxidBefore)
		}
	case "delete":
		if z := t.lifeOf(w.Path); z != nil {
			if t.deletedAlone(w.Path, changesBefore) {
				t.endLife(z, w.Step, w.Op, w.Client, false)
			} else {
				t.recheckLife(z, w.Step, w.Op, w.Client)
			}
		}
	case "multi":
		t.rescan = false // every directory is looked at, then every life
		for _, dir := range t.dirPaths() {
			t.scanDir(dir, w, zxidBefore)
		}
		for _, z := range t.aliveNow() {
			t.recheckLife(z, w.Step, w.Op, w.Client)
		}
	case "closeSession":
		t.sessionEnded(w.Session, w.Step, w.Op, w.Client)
	}
}

// lookAtCreated gives a life to just the node a create made in dir, and
// reports whether it could: when the create is the one change to the tree
// since the last look (sim.Server.RecentTreeChange) and dir is a
// directory an earlier look scanned, every other child of dir has a life
// already, for each look at a directory gives each of its children one
// and each create and multi is looked at, unless a look ended a life
// whose name has another node (rescan). Otherwise scanDir looks at every
// child of dir: the lock directory's children after each create were 3%
// of an exploration.
func (t *serverTree) lookAtCreated(dir string, changesBefore uint64, w sim.Event, zxidBefore int64) bool {
	if t.lookAtEverything || t.rescan || !t.hasDir(dir) || t.treeChanges != changesBefore+1 {
		return false
	}
	c, ok := t.server.RecentTreeChange(t.treeChanges)
	if !ok || !c.Created {
		return false
	}
	if i := t.slashOf(c.Path); i < 0 || c.Path[:max(i, 1)] != dir {
		return false // not a child of dir ("/" is the root's children's parent)
	}
	if t.lifeOf(c.Path) == nil {
		t.addLife(c.Path, w, zxidBefore)
	}
	return true
}

// scanDir finds the nodes of dir that the write w created: those with a
// czxid past the last transaction seen before it.
func (t *serverTree) scanDir(dir string, w sim.Event, zxidBefore int64) {
	t.addDir(dir)
	// EachChild and NodeIdentity, not Node: this runs after every write,
	// and Node's copies of the children and the data were 9% of an
	// exploration's allocations.
	t.server.EachChild(dir, func(name string) { t.scanChild(dir, name, w, zxidBefore) })
}

// scanChild gives the child name of dir a life if it has none: scanDir's
// look at one child, for a look that knows which child is new. The path
// is built aside and looked up without a copy (a lookup by a converted
// byte slice allocates nothing): most children have their life already.
func (t *serverTree) scanChild(dir, name string, w sim.Event, zxidBefore int64) {
	t.pathBuf = sim.AppendPath(t.pathBuf[:0], dir, name)
	if t.lifeOf(string(t.pathBuf)) == nil {
		t.addLife(string(t.pathBuf), w, zxidBefore)
	}
}

// addLife gives the node at p, which has no life, one, if the server has
// the node.
func (t *serverTree) addLife(p string, w sim.Event, zxidBefore int64) {
	czxid, owner, ok := t.server.NodeIdentity(p)
	if !ok {
		return
	}
	z := t.lifeChunk.add(znodeLife{path: p, czxid: czxid, owner: owner, aliveAt: len(t.alive)})
	if czxid > zxidBefore {
		z.created, z.createStep, z.creator = true, w.Step, w.Client
		if z.creator == 0 && t.creatorOf != nil {
			z.creator = t.creatorOf(czxid)
		}
	}
	t.lives = append(t.lives, z)
	t.alive = append(t.alive, z)
	switch {
	case t.live != nil:
		t.live[p] = z
	case len(t.alive) > aliveScanMax:
		t.live = make(map[string]*znodeLife, 2*len(t.alive))
		for _, z := range t.alive {
			t.live[z.path] = z
		}
	}
}

// recheck ends p's life if the server no longer has it (or has another
// node of that name).
func (t *serverTree) recheck(p string, step uint64, op string, by int) {
	if z := t.lifeOf(p); z != nil {
		t.recheckLife(z, step, op, by)
	}
}

// recheckLife is recheck of the current life z.
func (t *serverTree) recheckLife(z *znodeLife, step uint64, op string, by int) {
	czxid, _, ok := t.server.NodeIdentity(z.path)
	if ok && czxid == z.czxid {
		return
	}
	t.endLife(z, step, op, by, ok)
}

// deletedAlone reports whether the one change to the tree since the last
// look (change count changesBefore) is the deletion of p, which the
// server then no longer has: what recheck would ask the server, known
// without a lookup of the path in the server's nodes.
func (t *serverTree) deletedAlone(p string, changesBefore uint64) bool {
	if t.treeChanges != changesBefore+1 {
		return false
	}
	c, ok := t.server.RecentTreeChange(t.treeChanges)
	return ok && !c.Created && c.Path == p
}

// endLife ends the current life z; named says the server has another
// node of its path.
func (t *serverTree) endLife(z *znodeLife, step uint64, op string, by int, named bool) {
	z.ended, z.endStep, z.endOp, z.endedBy = true, step, op, by
	// Another node of the name is not known yet: the next look finds it.
	t.rescan = t.rescan || named
	if t.live != nil {
		delete(t.live, z.path)
	}
	last := t.alive[len(t.alive)-1]
	t.alive[z.aliveAt], last.aliveAt = last, z.aliveAt
	t.alive[len(t.alive)-1] = nil
	t.alive = t.alive[:len(t.alive)-1]
}

// sessionEnded ends the lives of the ephemerals of session s that the
// server removed.
func (t *serverTree) sessionEnded(s int64, step uint64, op string, by int) {
	if s == 0 {
		return
	}
	for _, z := range t.aliveNow() {
		if z.owner == s {
			t.recheckLife(z, step, op, by)
		}
	}
	t.lastZxid = t.server.LastZxid()
}

// lifeAt is the life of p that held at step, or nil.
func (t *serverTree) lifeAt(p string, step uint64) *znodeLife {
	// p's current life, if it has one, is its newest (a path gets a life
	// only when it has none), and the one a lease just granted stands on:
	// found without a walk back over every life of the run.
	if z := t.lifeOf(p); z != nil && z.liveAt(step) {
		return z
	}
	for i := len(t.lives) - 1; i >= 0; i-- {
		if z := t.lives[i]; z.path == p && z.liveAt(step) {
			return z
		}
	}
	return nil
}

// addDir notes a directory a create went to, and reports whether it is
// new.
func (t *serverTree) addDir(dir string) bool {
	if t.hasDir(dir) {
		return false
	}
	i, _ := slices.BinarySearch(t.dirList, dir)
	t.dirList = slices.Insert(t.dirList, i, dir)
	return true
}

// hasDir reports whether a create went to dir: a walk of the few
// directories a run has (the lock's and its parents), where a map beside
// them hashed the directory's path after every create. Paths of another
// length are told apart without reading them: the walk costs a third of
// the binary search, which ordered strings at each halving (and still
// does past dirScanMax directories).
func (t *serverTree) hasDir(dir string) bool {
	if len(t.dirList) > dirScanMax {
		_, ok := slices.BinarySearch(t.dirList, dir)
		return ok
	}
	for _, d := range t.dirList {
		if d == dir {
			return true
		}
	}
	return false
}

// dirScanMax is the most directories hasDir walks.
const dirScanMax = 8

// dirPaths is the directories creates went to, in order, as they stand
// now: scanning them may add none (scanDir adds the one it scans, which
// is there already).
func (t *serverTree) dirPaths() []string { return t.dirList }

// aliveNow is the current lives as they stand now: a copy, so that
// rechecking them may end their lives. It is valid until the next call.
func (t *serverTree) aliveNow() []*znodeLife {
	t.scratch = append(t.scratch[:0], t.alive...)
	return t.scratch
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// leaseEnd is where a granted lease ended in the server's view: the
// first end among its nodes' lives (see observer.zkEnd).
func (t *serverTree) leaseEnd(l *lockRec) (uint64, bool) {
	end, ok := uint64(0), false
	take := func(st uint64) {
		if !ok || st < end {
			end, ok = st, true
		}
	}
	for i, n := range l.nodes {
		var z *znodeLife
		if i < len(l.lives) {
			z = l.lives[i]
		}
		if z == nil {
			take(t.goneBy(n, l))
			continue
		}
		if z.ended {
			take(z.endStep)
		}
	}
	return end, ok
}

// goneBy is when node n of lease l, gone at the acquire's return, had
// ended: its last life's end during the acquire, or, when the server had
// no such node during the acquire, the acquire's return: an empty lease.
func (t *serverTree) goneBy(n string, l *lockRec) uint64 {
	for i := len(t.lives) - 1; i >= 0; i-- {
		z := t.lives[i]
		if z.path == n && z.ended && z.endStep <= l.acquireReturn && z.endStep >= l.acquireCall {
			return z.endStep
		}
	}
	return l.acquireReturn
}

// holdLives notes, at l's acquire's return, the server's lives of the
// nodes the lease names. A node whose czxid is the lease's token (the
// recipes' fencing token) is the lease's own: if that life ended before
// the acquire returned, the node is gone, whatever node of the same path
// another client made since. exclusive-lock's one path is made again
// and again: a holder paused past its session after its create, woken
// while another client holds the path's next node, returns the lease of
// its own node, which went with its session; taking the path's current
// node for it named the other client's node as its and reported two
// holders (3 servers, stale session draw, found at schedule 8,856 of
// seed 1).
func (t *serverTree) holdLives(l *lockRec) {
	if t.server == nil {
		return
	}
	t.flush()
	l.lives = t.carveLives(len(l.nodes))
	for i, n := range l.nodes {
		z := t.lifeAt(n, l.acquireReturn)
		if z != nil && l.token != 0 && z.czxid != l.token && t.endedLife(n, l.token) {
			z = nil
		}
		l.lives[i] = z
	}
}

// carveLives returns n nil lives, cut from an array shared with other
// leases' (capped, so that an append cannot reach a neighbour's). Each
// array is made twice as long as the last: the one a run ends with is
// the one the next run starts with (runBuffers.leaseLives), and so it
// soon holds a whole run's, where every run made two or three.
func (t *serverTree) carveLives(n int) []*znodeLife {
	if n > cap(t.leaseLives) {
		t.leaseArray = make([]*znodeLife, max(n, 4*chunkMin, 2*len(t.leaseArray)))
		t.leaseLives = t.leaseArray
	}
	lives := t.leaseLives[:n:n]
	t.leaseLives = t.leaseLives[n:]
	return lives
}

// endedLife reports whether path p had a life of czxid that has ended.
func (t *serverTree) endedLife(p string, czxid int64) bool {
	for i := len(t.lives) - 1; i >= 0; i-- {
		if z := t.lives[i]; z.path == p && z.czxid == czxid {
			return z.ended
		}
	}
	return false
}

// parentDir is path.Dir for a znode's path without path.Clean's pass over
// a path that needs none: the tree looks at a write's directory after
// every write, and path.Dir and path.Join there were 3% of an
// exploration. A path that Clean would change (relative, or with a "//",
// a "." or a ".." in its directory) goes to path.Dir.
func parentDir(p string) string { return parentDirAt(p, sim.LastSlash(p)) }

// parentDirAt is parentDir(p) for p's last slash at i.
func parentDirAt(p string, i int) string {
	switch {
	case i == 0:
		return "/"
	case i < 0 || p[0] != '/' || strings.Contains(p[:i+1], "//") || strings.Contains(p[:i], "/."):
		return path.Dir(p)
	}
	return p[:i]
}

// dirOf is parentDir(p), which depends only on p up to its last slash:
// for a path that begins as the last one did, up to a last slash (a
// lock's nodes, one after another), it is that one's, found without
// parentDir's scans of the path.
func (t *serverTree) dirOf(p string) string {
	if t.inDirPrefix(p) {
		return t.dirOfPrefix
	}
	i := sim.LastSlash(p)
	d := parentDirAt(p, i)
	if i >= 0 {
		t.dirPrefix, t.dirOfPrefix = p[:i+1], d
	}
	return d
}

// slashOf is sim.LastSlash(p), found with one look past dirPrefix when p
// begins with it.
func (t *serverTree) slashOf(p string) int {
	if t.inDirPrefix(p) {
		return len(t.dirPrefix) - 1
	}
	return sim.LastSlash(p)
}

// inDirPrefix reports whether p is dirPrefix and a name: dirPrefix is p
// up to and with its last slash.
func (t *serverTree) inDirPrefix(p string) bool {
	pre := t.dirPrefix
	return pre != "" && strings.HasPrefix(p, pre) && strings.IndexByte(p[len(pre):], '/') < 0
}
