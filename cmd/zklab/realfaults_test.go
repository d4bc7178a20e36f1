package main

// Curator's InterProcessMutex and LeaderLatch and kazoo's Lock and
// Election, unmodified, against zklab serve while its control API injects
// faults (issue 12, item 3). Each recipe runs as a program of several
// contenders (testdata/yardstick/{curator/Contenders.java,
// kazoo/contenders.py}), each its own client and session, acquiring,
// holding briefly and releasing over and over, and printing a JSON line
// per event. The test drives faults at them through the control API, then
// stops the faults and checks what a user of the recipe relies on:
//
//   - The server backs every acquisition. The server's view of who holds
//     the lock is the owner of the lowest-sequence child of the lock path
//     (the ZooKeeper lock recipe's definition, which all four follow); an
//     observer of the served server records it as intervals on the wall
//     clock the programs log with. Every "acquired" of a contender must
//     fall after an instant, within that attempt, at which the server made
//     one of that contender's sessions the owner: the recipe cannot know
//     more than a reply the server sent, so this is sound, and a recipe
//     that declared itself holder without the server ever saying so fails
//     it. (That the lowest node has one owner at a time is true of any
//     tree; the check is that the recipes' beliefs rest on it.)
//   - Two contenders' beliefs overlap only once the server has taken the
//     lock from the earlier one (its session expired under it): a
//     recipe without fencing cannot do better, and the overlaps are
//     reported with their lengths.
//   - No node is left behind: once the faults stop and the contenders
//     stop contending, with their sessions still open, no live session
//     owns a node under the lock path; after they close, nothing is left.
//   - Progress: after the faults stop, every contender acquires again
//     within a bound.
//
// Then a holder is partitioned (silently, as a network partition: see
// wire.Server.Partition) for longer than its session timeout while it
// holds, and the test reports, without asserting, for how long it still
// believed it held after another contender acquired: split-brain without
// fencing, as `zklab splitbrain` shows for zklab's own recipes.
//
// The fault choices come from a fixed seed; which session a fault lands
// on depends on the programs' timing, so the counts vary a little from
// run to run. The test logs them per kind; with ZKLAB_REALFAULTS_LOG=1
// it logs the programs' event lines too. Like the yardsticks, it needs
// python3-kazoo, libcurator-recipes-java and default-jdk-headless (make
// deps), skips without them (fails under CI=true), and -short skips it.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// The timing of the runs: sessions of 4 s on a server of 1 s ticks (so
// that an expiry comes 4 to 5 s after the client was last heard), holds
// of 30 ms, 8 s of faults.
const (
	realFaultsSessionTimeoutMs = 4000
	realFaultsTickMs           = 1000
	realFaultsHoldMs           = 30
	realFaultsContenders       = 4
	realFaultsPhase            = 8 * time.Second
	// realFaultsProgressBound bounds how long after the faults stop every
	// contender must have acquired again: a faulted session's expiry (5 s)
	// plus a round of the others' holds, with room for a loaded machine.
	realFaultsProgressBound = 45 * time.Second
	// The paused holder holds for pauseHoldMs and is partitioned for
	// pausePartitionMs, past its session's expiry (at most 5 s).
	pauseHoldMs      = 9000
	pausePartitionMs = 7000
	realFaultsSeed   = 12
)

// contenderEvent is one line a contenders program prints.
type contenderEvent struct {
	T      float64 `json:"t"` // wall-clock milliseconds since the epoch
	C      string  `json:"c"`
	Sid    string  `json:"sid"`
	Ev     string  `json:"ev"`
	State  string  `json:"state"`
	Err    string  `json:"err"`
	HoldMs int64   `json:"hold_ms"`
	Why    string  `json:"why"`
}

func (e contenderEvent) at() time.Time { return time.UnixMicro(int64(e.T * 1000)) }

// ownerSpan is a stretch of time during which one session owned the
// lowest-sequence child of the lock path.
type ownerSpan struct {
	session  int64
	node     string
	from, to time.Time // to is zero while it lasts
	ended    string    // "deleted" or "expired"
}

// lockOwnership is a wire.Observer that records the server's view of the
// lock holder. The wire server calls its observer under its lock, after
// each change to the simulated server, so the observer may read the
// simulated server then. A request whose reply a fault loses is seen at
// the next call (the connection's close, microseconds later): the client
// cannot act on it sooner, for it must reconnect and ask.
type lockOwnership struct {
	wire.NopObserver
	sim  *sim.Server
	root string

	mu      sync.Mutex
	spans   []ownerSpan
	expired map[int64]time.Time
	// loseArmed are sessions with a lost reply armed, and hit what
	// request types the faults landed on.
	loseArmed map[int64]bool
	hit       map[string]int
}

// sequenceOf is a sequential node's number: its last ten digits.
func sequenceOf(name string) string {
	if len(name) < 10 {
		return name
	}
	return name[len(name)-10:]
}

func (o *lockOwnership) look(at time.Time) {
	var owner int64
	var lowest string
	if n, ok := o.sim.Node(o.root); ok {
		for _, child := range n.Children {
			if lowest == "" || sequenceOf(child) < sequenceOf(lowest) {
				lowest = child
			}
		}
		if lowest != "" {
			c, _ := o.sim.Node(o.root + "/" + lowest)
			owner = c.Owner
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if k := len(o.spans); k > 0 && o.spans[k-1].to.IsZero() {
		last := &o.spans[k-1]
		if last.session == owner && last.node == lowest {
			return
		}
		last.to, last.ended = at, "deleted"
		if _, gone := o.expired[last.session]; gone {
			last.ended = "expired"
		}
	}
	if owner != 0 {
		o.spans = append(o.spans, ownerSpan{session: owner, node: lowest, from: at})
	}
}

func (o *lockOwnership) ReplySent(at time.Time, _ sim.ConnID, _ int64, _ sim.OpCode, _ sim.Response) {
	o.look(at)
}

func (o *lockOwnership) WatchEventSent(at time.Time, _ sim.ConnID, _ int64, _ zk.Event) { o.look(at) }

func (o *lockOwnership) ConnClosed(at time.Time, _ wire.ConnInfo, _ string) { o.look(at) }

func (o *lockOwnership) SessionClosed(at time.Time, _ int64) { o.look(at) }

func (o *lockOwnership) SessionExpired(at time.Time, session int64) {
	o.mu.Lock()
	o.expired[session] = at
	o.mu.Unlock()
	o.look(at)
}

func (o *lockOwnership) RequestReceived(_ time.Time, _ sim.ConnID, session int64, req sim.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if req.Xid >= 0 && o.loseArmed[session] {
		delete(o.loseArmed, session)
		o.hit[req.Op.String()]++
	}
}

// holder is the session owning the lowest node now, or 0.
func (o *lockOwnership) holder() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if k := len(o.spans); k > 0 && o.spans[k-1].to.IsZero() {
		return o.spans[k-1].session
	}
	return 0
}

// ownedDuring reports whether one of sessions owned the lock at some
// instant in [from, to].
func (o *lockOwnership) ownedDuring(sessions map[int64]bool, from, to time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, sp := range o.spans {
		if sessions[sp.session] && !sp.from.After(to) && (sp.to.IsZero() || !sp.to.Before(from)) {
			return true
		}
	}
	return false
}

// ownerAt is the owner at t, or 0.
func (o *lockOwnership) ownerAt(t time.Time) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, sp := range o.spans {
		if !sp.from.After(t) && (sp.to.IsZero() || sp.to.After(t)) {
			return sp.session
		}
	}
	return 0
}

// realFaultsServer is zklab serve as `serve --control` builds it (tick
// time aside), with the ownership observer on the wire server.
func realFaultsServer(t *testing.T, root string) (addr, controlURL string, w *wire.Server, own *lockOwnership) {
	t.Helper()
	settings, err := newServeSettings(zooConfig{tickTimeMs: realFaultsTickMs}, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	settings.sim.EpochMs = time.Now().UnixMilli()
	simSrv := sim.NewServer(settings.sim)
	own = &lockOwnership{sim: simSrv, root: root, expired: map[int64]time.Time{}, loseArmed: map[int64]bool{}, hit: map[string]int{}}
	w = wire.New(simSrv, wire.Config{MaxClientCnxns: settings.maxClientCnxns, Observer: own})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go w.Serve(ln)
	t.Cleanup(func() { w.Close() })
	hs, caddr, err := startControl("127.0.0.1:0", w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String(), "http://" + caddr, w, own
}

// contendersProgram is a running contenders program: its events, as they
// come and all so far.
type contendersProgram struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan contenderEvent
	done   chan struct{}

	mu     sync.Mutex
	all    []contenderEvent
	output bytes.Buffer // stdout and stderr, for a failure's log
}

func startContenders(t *testing.T, argv []string) *contendersProgram {
	t.Helper()
	p := &contendersProgram{cmd: exec.Command(argv[0], argv[1:]...), events: make(chan contenderEvent, 4096), done: make(chan struct{})}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.output}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	go func() {
		defer close(p.done)
		defer p.cmd.Wait()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev contenderEvent
			p.mu.Lock()
			p.output.Write(append(sc.Bytes(), '\n'))
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Ev != "" {
				p.all = append(p.all, ev)
				select {
				case p.events <- ev:
				default: // the driver only samples; the checks read all
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *contendersProgram) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("telling the program %q: %v", line, err)
	}
}

// await waits for an event satisfying want, failing the test after
// within.
func (p *contendersProgram) await(t *testing.T, what string, within time.Duration, want func(contenderEvent) bool) contenderEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-p.events:
			if want(ev) {
				return ev
			}
		case <-p.done:
			t.Fatalf("the program ended before %s:\n%s", what, p.log())
		case <-deadline:
			t.Fatalf("no %s within %v:\n%s", what, within, p.log())
		}
	}
}

func (p *contendersProgram) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.output.String()
	if len(out) > 20000 {
		out = "...\n" + out[len(out)-20000:]
	}
	return out
}

func (p *contendersProgram) snapshot() []contenderEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.all)
}

// faultDriver injects faults through the control API and counts them.
type faultDriver struct {
	t        *testing.T
	base     string
	own      *lockOwnership
	rng      *rand.Rand
	injected map[string]int
	missed   int // aimed at a session that was gone or unconnected (404)
	// createOp is the type of the recipe's creates: Curator's carry a
	// Stat (create2), kazoo's do not (create).
	createOp string
}

func (d *faultDriver) fire(kind, path string) {
	d.t.Helper()
	status, _, body := control(d.t, d.base, path)
	switch status {
	case 200:
		d.injected[kind]++
	case 404:
		d.missed++
	default:
		d.t.Errorf("%s: %d %s", path, status, body)
	}
}

// lockSessions are the live sessions owning a node under the lock path,
// the holder first.
func lockSessions(w *wire.Server, root string) (holder int64, waiters []int64, nodes []string) {
	w.Inspect(func(s *sim.Server) {
		n, ok := s.Node(root)
		if !ok {
			return
		}
		children := slices.Clone(n.Children)
		sort.Slice(children, func(i, j int) bool { return sequenceOf(children[i]) < sequenceOf(children[j]) })
		for i, child := range children {
			c, _ := s.Node(root + "/" + child)
			nodes = append(nodes, child)
			if i == 0 {
				holder = c.Owner
			} else {
				waiters = append(waiters, c.Owner)
			}
		}
	})
	return holder, waiters, nodes
}

// sessionOf reads a program's "0x..." session id.
func sessionOf(sid string) int64 {
	id, err := parseSessionID(sid)
	if err != nil {
		return 0
	}
	return id
}

// faultPhase injects faults for realFaultsPhase: on a timer, expiries of
// the holder and of a waiter, closed connections, dropped requests and
// lost replies of whatever a contender sends next; and on the programs'
// events, a lost reply or dropped request aimed at the delete of a
// contender that just acquired and at the create of one that just
// released (LOSEREPLY/SESSION/OP: the session's next request of the type).
func (d *faultDriver) faultPhase(p *contendersProgram, w *wire.Server) {
	t := d.t
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	end := time.After(realFaultsPhase)
	loseReply := func(kind string, session int64) {
		d.own.mu.Lock()
		d.own.loseArmed[session] = true
		d.own.mu.Unlock()
		d.fire(kind, fmt.Sprintf("/command/LOSEREPLY/0x%x", session))
	}
	for {
		select {
		case <-end:
			return
		case <-p.done:
			t.Fatalf("the program ended during the faults:\n%s", p.log())
		case ev := <-p.events:
			s := sessionOf(ev.Sid)
			if s == 0 {
				continue
			}
			switch ev.Ev {
			case "acquired": // the release's delete, the next write it sends
				switch r := d.rng.Float64(); {
				case r < 0.25:
					d.fire("lose the reply of the holder's delete", fmt.Sprintf("/command/LOSEREPLY/0x%x/delete", s))
				case r < 0.35:
					d.fire("drop the holder's delete", fmt.Sprintf("/command/DROPREQUEST/0x%x/delete", s))
				}
			case "released": // the next round's create
				switch r := d.rng.Float64(); {
				case r < 0.25:
					d.fire("lose the reply of a contender's create", fmt.Sprintf("/command/LOSEREPLY/0x%x/%s", s, d.createOp))
				case r < 0.35:
					d.fire("drop a contender's create", fmt.Sprintf("/command/DROPREQUEST/0x%x/%s", s, d.createOp))
				}
			}
		case <-ticker.C:
			holder, waiters, _ := lockSessions(w, d.own.root)
			anyOf := append([]int64{holder}, waiters...)
			if holder == 0 {
				continue
			}
			pick := anyOf[d.rng.IntN(len(anyOf))]
			switch k := d.rng.IntN(6); k {
			case 0:
				d.fire("expire holder", fmt.Sprintf("/command/EXPIRESESSION/0x%x", holder))
			case 1:
				if len(waiters) > 0 {
					d.fire("expire waiter", fmt.Sprintf("/command/EXPIRESESSION/0x%x", waiters[d.rng.IntN(len(waiters))]))
				}
			case 2:
				d.fire("close connection", fmt.Sprintf("/command/CLOSECONNECTION/0x%x", pick))
			case 3:
				d.fire("drop next request", fmt.Sprintf("/command/DROPREQUEST/0x%x", pick))
			case 4:
				loseReply("lose next reply", pick)
			case 5: // a quiet tick
			}
		}
	}
}

// belief is a contender's belief that it holds: from its "acquired" to
// its "releasing" (or, when the program stopped first, its next event).
type belief struct {
	c        string
	sessions map[int64]bool
	from, to time.Time
}

// beliefOverlap is a belief that outlasted the server's ownership into
// another contender's: by how long the earlier still believed once the
// later had acquired.
type beliefOverlap struct {
	earlier, later string
	overlap        time.Duration
}

// checkBeliefs checks the programs' acquisitions against the server's
// ownership (see the top of this file) and returns the beliefs and their
// overlaps.
func checkBeliefs(name string, events []contenderEvent, own *lockOwnership, start time.Time) (beliefs []belief, overlaps []beliefOverlap, problems []string) {
	sessions := map[string]map[int64]bool{}
	for _, ev := range events {
		if sessions[ev.C] == nil {
			sessions[ev.C] = map[int64]bool{}
		}
		if s := sessionOf(ev.Sid); s != 0 {
			sessions[ev.C][s] = true
		}
	}
	attemptFrom := map[string]time.Time{}
	open := map[string]*belief{}
	for _, ev := range events {
		if ev.Ev == "state" {
			continue
		}
		from, ok := attemptFrom[ev.C]
		if !ok {
			from = start
		}
		attemptFrom[ev.C] = ev.at()
		switch ev.Ev {
		case "acquired":
			// Java logs whole milliseconds: the instant may be up to 1 ms
			// later than logged.
			if !own.ownedDuring(sessions[ev.C], from, ev.at().Add(time.Millisecond)) {
				problems = append(problems, fmt.Sprintf("%s: %s (session %s) acquired at %s, but the server never made it the lock's owner in that attempt (from %s)",
					name, ev.C, ev.Sid, ev.at().Format("15:04:05.000"), from.Format("15:04:05.000")))
			}
			open[ev.C] = &belief{c: ev.C, sessions: sessions[ev.C], from: ev.at()}
		default:
			if b := open[ev.C]; b != nil {
				b.to = ev.at()
				beliefs = append(beliefs, *b)
				delete(open, ev.C)
			}
		}
	}
	for _, b := range open {
		b.to = events[len(events)-1].at()
		beliefs = append(beliefs, *b)
	}
	sort.Slice(beliefs, func(i, j int) bool { return beliefs[i].from.Before(beliefs[j].from) })
	for i, a := range beliefs {
		first := true
		for _, b := range beliefs[i+1:] {
			if b.c == a.c || !b.from.Before(a.to) {
				continue
			}
			// b acquired while a still believed: the server must have
			// taken the lock from a by then.
			if owner := own.ownerAt(b.from.Add(time.Millisecond)); a.sessions[owner] {
				problems = append(problems, fmt.Sprintf("%s: %s acquired at %s while the server still had %s (session 0x%x) as the owner",
					name, b.c, b.from.Format("15:04:05.000"), a.c, owner))
			}
			if first {
				overlaps = append(overlaps, beliefOverlap{earlier: a.c, later: b.c, overlap: a.to.Sub(b.from)})
				first = false
			}
		}
	}
	return beliefs, overlaps, problems
}

// realFaultsRecipe runs one recipe's program under faults and checks it.
func realFaultsRecipe(t *testing.T, name, root, createOp string, argv func(addr string) []string) {
	addr, base, w, own := realFaultsServer(t, root)
	start := time.Now()
	p := startContenders(t, argv(addr))
	// Every contender acquires once before the faults.
	seen := map[string]bool{}
	p.await(t, "every contender acquiring before the faults", realFaultsProgressBound, func(ev contenderEvent) bool {
		if ev.Ev == "acquired" {
			seen[ev.C] = true
		}
		return len(seen) == realFaultsContenders
	})
	started := time.Since(start)

	d := &faultDriver{t: t, base: base, own: own, rng: rand.New(rand.NewPCG(realFaultsSeed, 0)), injected: map[string]int{}, createOp: createOp}
	d.faultPhase(p, w)
	fired := w.KeyedFaultsFired()
	unfired := len(w.KeyedFaultsArmed())
	if status, _, body := control(t, base, "/command/RESET"); status != 200 {
		t.Fatalf("RESET: %d %s", status, body)
	}
	reset := time.Now()
	seen = map[string]bool{}
	p.await(t, "every contender acquiring after the faults", realFaultsProgressBound, func(ev contenderEvent) bool {
		if ev.Ev == "acquired" && ev.at().After(reset) {
			seen[ev.C] = true
		}
		return len(seen) == realFaultsContenders
	})
	recovered := time.Since(reset)

	// A holder partitioned past its session while it holds.
	p.send(t, fmt.Sprintf("hold %d", pauseHoldMs))
	long := p.await(t, "an acquisition with the long hold", realFaultsProgressBound, func(ev contenderEvent) bool {
		return ev.Ev == "acquired" && ev.HoldMs == pauseHoldMs
	})
	p.send(t, fmt.Sprintf("hold %d", realFaultsHoldMs))
	paused := sessionOf(long.Sid)
	partitioned := time.Now()
	if status, _, body := control(t, base, fmt.Sprintf("/command/PARTITION/0x%x/%d", paused, pausePartitionMs)); status != 200 {
		t.Fatalf("PARTITION: %d %s", status, body)
	}
	next := p.await(t, "another contender acquiring while the holder is partitioned", realFaultsProgressBound, func(ev contenderEvent) bool {
		return ev.Ev == "acquired" && ev.C != long.C
	})
	again := p.await(t, "the partitioned contender acquiring again", realFaultsProgressBound, func(ev contenderEvent) bool {
		return ev.Ev == "acquired" && ev.C == long.C
	})

	// Stop contending, sessions open: nothing may be left under the lock.
	p.send(t, "stop")
	p.await(t, "every contender idle", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.C == "all" && ev.Ev == "idle" })
	_, _, left := lockSessions(w, root)
	if len(left) > 0 {
		t.Errorf("%s: with every contender idle, nodes left under %s: %v", name, root, left)
	}
	p.send(t, "close")
	select {
	case <-p.done:
	case <-time.After(realFaultsProgressBound):
		t.Fatalf("the program did not exit after close:\n%s", p.log())
	}
	if state := p.cmd.ProcessState; state == nil || !state.Success() {
		t.Errorf("%s: the program exited %v:\n%s", name, state, p.log())
	}
	left, states := awaitClosed(w, root)
	if len(left) > 0 {
		t.Errorf("%s: after every client closed, nodes left under %s: %v", name, root, left)
	}
	if len(states) > 0 {
		t.Errorf("%s: %d sessions outlived their clients' close by %v: %s", name, len(states), closeBound, describeSessions(states))
	}

	events := p.snapshot()
	beliefs, overlaps, problems := checkBeliefs(name, events, own, start)
	for _, p := range problems {
		t.Error(p)
	}
	acquired := 0
	for _, ev := range events {
		if ev.Ev == "acquired" {
			acquired++
		}
	}
	if acquired < 2*realFaultsContenders {
		t.Errorf("%s: only %d acquisitions", name, acquired)
	}

	// The report of the partitioned holder.
	var pausedBelief belief
	for _, b := range beliefs {
		if b.c == long.C && b.from.Equal(long.at()) {
			pausedBelief = b
		}
	}
	var suspended, lost []string
	for _, ev := range events {
		if ev.C == long.C && ev.Ev == "state" && ev.at().After(partitioned) && ev.at().Before(again.at()) {
			s := fmt.Sprintf("%s at %v", ev.State, ev.at().Sub(partitioned).Round(10*time.Millisecond))
			if strings.Contains(ev.State, "SUSPENDED") {
				suspended = append(suspended, s)
			} else {
				lost = append(lost, s)
			}
		}
	}
	own.mu.Lock()
	expiredAt, wasExpired := own.expired[paused]
	hit := fmt.Sprint(own.hit)
	own.mu.Unlock()
	split := "did not believe it held once another did"
	if o := pausedBelief.to.Sub(next.at()); o > 0 {
		split = fmt.Sprintf("still believed it held for %v after %s acquired", o.Round(10*time.Millisecond), next.C)
	}
	expiry := "its session was not expired"
	if wasExpired {
		expiry = fmt.Sprintf("the server expired its session %v into the partition", expiredAt.Sub(partitioned).Round(10*time.Millisecond))
	}
	kinds := make([]string, 0, len(d.injected))
	for k, n := range d.injected {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	keyedHits := map[string]int{}
	for _, f := range fired {
		keyedHits[f.Action.String()+" "+f.Request.Op.String()]++
	}
	t.Logf("%s: %d contenders (up in %v); %v of faults: %s; %d aimed at a session gone or unconnected; typed faults that fired: %v (%d never fired: their session expired first); untyped lost replies landed on %s (the rest, armed on an idle waiter, were disarmed unfired by RESET)",
		name, realFaultsContenders, started.Round(time.Millisecond), realFaultsPhase, strings.Join(kinds, ", "), d.missed, keyedHits, unfired, hit)
	longest := time.Duration(0)
	for _, o := range overlaps {
		longest = max(longest, o.overlap)
	}
	t.Logf("%s: %d acquisitions, each backed by the server; %d beliefs outlived the server's ownership into another's (the longest by %v, the paused holder's included), each after the server had taken the lock; every contender acquired again %v after the faults stopped; no node left behind",
		name, acquired, len(overlaps), longest.Round(time.Millisecond), recovered.Round(time.Millisecond))
	if os.Getenv("ZKLAB_REALFAULTS_LOG") != "" {
		t.Logf("%s: the program's output:\n%s", name, p.log())
	}
	t.Logf("%s, holder %s partitioned for %v while holding for %v: %s; %s; %s acquired %v into the partition; its client reported %s",
		name, long.C, time.Duration(pausePartitionMs)*time.Millisecond, time.Duration(pauseHoldMs)*time.Millisecond,
		split, expiry, next.C, next.at().Sub(partitioned).Round(10*time.Millisecond), strings.Join(append(suspended, lost...), ", "))
}

// Curator's InterProcessMutex and LeaderLatch and kazoo's Lock and
// Election under zklab serve's control-API faults: every acquisition
// backed by the server, no node left behind, progress once the faults
// stop; and the split brain of a holder partitioned past its session,
// reported.
func TestRealRecipesUnderFaults(t *testing.T) {
	var jars []string
	for _, j := range curatorJars {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	requireTools(t, append([]string{"/usr/bin/python3", "/usr/lib/python3/dist-packages/kazoo/recipe/lock.py", "/usr/bin/javac", "/usr/bin/java"}, jars...)...)
	args := func(addr, recipe, root string) []string {
		return []string{addr, recipe, root, fmt.Sprint(realFaultsContenders), fmt.Sprint(realFaultsHoldMs), fmt.Sprint(realFaultsSessionTimeoutMs)}
	}
	kazoo := []string{"/usr/bin/python3", "testdata/yardstick/kazoo/contenders.py"}
	t.Run("kazoo-Lock", func(t *testing.T) {
		realFaultsRecipe(t, "kazoo Lock", "/rf-lock", "create", func(addr string) []string { return append(slices.Clone(kazoo), args(addr, "lock", "/rf-lock")...) })
	})
	t.Run("kazoo-Election", func(t *testing.T) {
		realFaultsRecipe(t, "kazoo Election", "/rf-election", "create", func(addr string) []string {
			return append(slices.Clone(kazoo), args(addr, "election", "/rf-election")...)
		})
	})
	classes := t.TempDir()
	classpath := strings.Join(jars, ":")
	if out, err := exec.Command("javac", "-cp", classpath, "-d", classes, "testdata/yardstick/curator/Contenders.java").CombinedOutput(); err != nil {
		t.Fatalf("javac Contenders.java: %v\n%s", err, out)
	}
	java := []string{"/usr/bin/java", "-cp", classes + ":" + classpath, "Contenders"}
	t.Run("Curator-InterProcessMutex", func(t *testing.T) {
		realFaultsRecipe(t, "Curator InterProcessMutex", "/rf-mutex", "create2", func(addr string) []string {
			return append(slices.Clone(java), args(addr, "mutex", "/rf-mutex")...)
		})
	})
	t.Run("Curator-LeaderLatch", func(t *testing.T) {
		realFaultsRecipe(t, "Curator LeaderLatch", "/rf-latch", "create2", func(addr string) []string {
			return append(slices.Clone(java), args(addr, "latch", "/rf-latch")...)
		})
	})
}

// The checks catch a recipe that does not lock: contenders of kazoo's
// program that announce "acquired" without taking any lock are caught
// acquiring without the server's word, and believing at once.
func TestRealRecipesChecksCatchNoLock(t *testing.T) {
	requireTools(t, "/usr/bin/python3", "/usr/lib/python3/dist-packages/kazoo/recipe/lock.py")
	const root = "/rf-nolock"
	addr, _, _, own := realFaultsServer(t, root)
	start := time.Now()
	p := startContenders(t, []string{"/usr/bin/python3", "testdata/yardstick/kazoo/contenders.py", addr, "none", root,
		fmt.Sprint(realFaultsContenders), fmt.Sprint(realFaultsHoldMs), fmt.Sprint(realFaultsSessionTimeoutMs)})
	n := 0
	p.await(t, "20 acquisitions", realFaultsProgressBound, func(ev contenderEvent) bool {
		if ev.Ev == "acquired" {
			n++
		}
		return n == 20
	})
	p.send(t, "stop")
	p.await(t, "every contender idle", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.C == "all" && ev.Ev == "idle" })
	_, overlaps, problems := checkBeliefs("no lock", p.snapshot(), own, start)
	if len(problems) < 20 || len(overlaps) == 0 {
		t.Fatalf("the checks found %d problems and %d overlaps in 20 acquisitions without a lock, want every one unbacked and some overlapping:\n%s",
			len(problems), len(overlaps), strings.Join(problems, "\n"))
	}
}

// A holder paused past its session (SIGSTOP of its process, as a long GC
// pause or a stopped VM), against Debian's ZooKeeper and against zklab
// serve: the same fault on both servers, for the PARTITION of
// TestRealRecipesUnderFaults has no counterpart on a real server without
// netem. One process holds for pausedHolderHold and is stopped for
// pausePartitionMs; a second process waits for the lock. The report is
// what the paused holder, once resumed, heard from its client and whether
// the recipe took the lock back from it. It starts a real ZooKeeper and four programs,
// so it runs only with ZKLAB_REALFAULTS_REALZK=1.
const pausedHolderHold = 40 * time.Second

func TestRealRecipesPausedHolderRealAndServed(t *testing.T) {
	if os.Getenv("ZKLAB_REALFAULTS_REALZK") != "1" {
		t.Skip("set ZKLAB_REALFAULTS_REALZK=1: pauses a holder with SIGSTOP on a real ZooKeeper and on zklab serve")
	}
	var jars []string
	for _, j := range curatorJars {
		jars = append(jars, "/usr/share/java/"+j+".jar")
	}
	requireTools(t, append([]string{zktest.ZkServerScript, "/usr/bin/python3", "/usr/bin/javac", "/usr/bin/java"}, jars...)...)
	classes := t.TempDir()
	classpath := strings.Join(jars, ":")
	if out, err := exec.Command("javac", "-cp", classpath, "-d", classes, "testdata/yardstick/curator/Contenders.java").CombinedOutput(); err != nil {
		t.Fatalf("javac Contenders.java: %v\n%s", err, out)
	}
	programs := []struct {
		name   string
		recipe string
		argv   []string
	}{
		{"kazoo Lock", "lock", []string{"/usr/bin/python3", "testdata/yardstick/kazoo/contenders.py"}},
		{"Curator InterProcessMutex", "mutex", []string{"/usr/bin/java", "-cp", classes + ":" + classpath, "Contenders"}},
	}
	real := zktest.Start(t)
	served, _, _, _ := realFaultsServer(t, "/unused")
	for _, srv := range []struct{ name, addr string }{{"ZooKeeper 3.8", real.Addr}, {"zklab serve", served}} {
		for _, prog := range programs {
			root := fmt.Sprintf("/paused-%s-%d", prog.recipe, time.Now().UnixNano())
			argv := func(holdMs int) []string {
				return append(slices.Clone(prog.argv), srv.addr, prog.recipe, root, "1", fmt.Sprint(holdMs), fmt.Sprint(realFaultsSessionTimeoutMs))
			}
			// The first holds for long enough that it is surely holding
			// when it is stopped, however slowly the second starts.
			a := startContenders(t, argv(int(pausedHolderHold/time.Millisecond)))
			aAcq := a.await(t, "the first holder acquiring", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.Ev == "acquired" })
			b := startContenders(t, argv(realFaultsHoldMs))
			b.await(t, "the second contender connecting", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.Ev == "state" })
			time.Sleep(500 * time.Millisecond) // its node created, waiting
			if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			if time.Since(aAcq.at()) > pausedHolderHold-5*time.Second {
				t.Fatalf("%s on %s: the second program took %v to start: the first's hold had nearly ended", prog.name, srv.name, time.Since(aAcq.at()))
			}
			bAcq := b.await(t, "the second acquiring while the first is paused", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.Ev == "acquired" })
			time.Sleep(time.Until(stopped.Add(pausePartitionMs * time.Millisecond)))
			if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			resumed := time.Now()
			// What the resumed holder's client tells it, and whether the
			// recipe takes the lock back: a "releasing" before its hold is
			// over would say so.
			heard := a.await(t, "the resumed holder's client noticing", realFaultsProgressBound, func(ev contenderEvent) bool {
				return ev.Ev == "state" || ev.Ev == "releasing"
			})
			time.Sleep(time.Second)
			revoked := "it went on in its critical section"
			for _, ev := range a.snapshot() {
				if ev.Ev == "releasing" && ev.at().After(stopped) {
					revoked = fmt.Sprintf("it left its critical section %v after resuming", ev.at().Sub(resumed).Round(10*time.Millisecond))
				}
			}
			t.Logf("%s on %s, holder stopped for %v while holding: the other acquired %v into the pause; resumed, its client reported %s %v later and %s: it still believed it held %v after the other acquired (its hold had %v to go)",
				prog.name, srv.name, time.Duration(pausePartitionMs)*time.Millisecond, bAcq.at().Sub(stopped).Round(10*time.Millisecond),
				heard.Ev+" "+heard.State, heard.at().Sub(resumed).Round(10*time.Millisecond), revoked,
				time.Since(bAcq.at()).Round(10*time.Millisecond), time.Until(aAcq.at().Add(pausedHolderHold)).Round(time.Second))
			a.cmd.Process.Kill() // rather than wait out its hold
			b.send(t, "stop")
			b.await(t, "idle", realFaultsProgressBound, func(ev contenderEvent) bool { return ev.C == "all" && ev.Ev == "idle" })
			b.send(t, "close")
		}
	}
}

// closeBound is how long after its program exits a client's closeSession
// may take to reach the server and be applied: the program's last
// packets are read, and the simulated server applies them, on goroutines
// of their own, which a machine loaded by the race detector and other
// tests may hold back for more than the 100ms this check once slept.
// It is half the contenders' session timeout, so that a session nobody
// closed, which only expiry could end, is still there when it is up.
const closeBound = realFaultsSessionTimeoutMs / 2 * time.Millisecond

// awaitClosed waits, at most closeBound, until no node is left under root
// and no session is live, and returns what is left then.
func awaitClosed(w *wire.Server, root string) (left []string, states []wire.SessionState) {
	deadline := time.Now().Add(closeBound)
	for {
		_, _, left = lockSessions(w, root)
		states = w.SessionStates()
		if len(left) == 0 && len(states) == 0 || time.Now().After(deadline) {
			return left, states
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describeSessions says which sessions are live, and whether each has a
// connection: one without had its client close while disconnected, and
// only expiry ends it.
func describeSessions(states []wire.SessionState) string {
	var b strings.Builder
	for i, st := range states {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "0x%x (expires at %dms, ephemerals %v, ", st.ID, st.ExpiresMs, st.Ephemerals)
		if st.Conn == nil {
			b.WriteString("no connection)")
		} else {
			b.WriteString("connected)")
		}
	}
	return b.String()
}
