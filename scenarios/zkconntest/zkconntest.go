package zkconntest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/inproc"
	"github.com/zklab/zklab/sim/wire"
)

// replayFlag is the scenario file Test replays instead of exploring. It is
// not -zklab.replay, which package scenarios defines: a test binary may
// hold both.
var replayFlag = flag.String("zkconn.replay", "", "zkconntest: replay this scenario file with the program of the zkconntest.Test that found it, instead of exploring")

// A Client is one client's part of the program under test: it runs on its
// own goroutine with its own *zk.Conn (which it must not close), reports
// to rec when it waits for, holds and lets go of the lock, and returns
// when it is done or when ctx is cancelled (the run is over: its
// connection is closed next, which ends any call it is blocked in).
type Client func(ctx context.Context, client int, c *zk.Conn, rec *Recorder)

// A Locker is a lock over one *zk.Conn, as zk.NewLock makes.
type Locker interface {
	Lock() error
	Unlock() error
}

// LockClient is the workload of a lock: rec.Cycles() times, wait for the lock
// (retrying Lock a second after each error, as a user's loop would), hold
// it for a tenth of a second, then Unlock (retried up to three times).
func LockClient(newLock func(c *zk.Conn) Locker) Client {
	return func(ctx context.Context, client int, c *zk.Conn, rec *Recorder) {
		l := newLock(c)
		for range rec.Cycles() {
			rec.Waiting()
			for {
				err := l.Lock()
				if err == nil {
					break
				}
				rec.Errorf("Lock: %v", err)
				if !sleep(ctx, time.Second) {
					return
				}
			}
			rec.Acquired()
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
			rec.Released()
			for try := 0; ; try++ {
				err := l.Unlock()
				if err == nil {
					break
				}
				rec.Errorf("Unlock: %v", err)
				if try == 2 {
					l = newLock(c) // give up this handle, as a user would
					break
				}
				if !sleep(ctx, time.Second) {
					return
				}
			}
		}
	}
}

// sleep sleeps d unless ctx ends first; it reports whether it slept.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// A Recorder is what a client tells zklab about the lock: the checks read
// it.
type Recorder struct {
	r      *run
	client int
	conn   *zk.Conn
	cycles int
}

// Cycles is how many times the scenario asks each client to take the
// lock: a program that loops reads it, so that shrinking can lower it.
func (rec *Recorder) Cycles() int { return rec.cycles }

// Waiting: the client starts waiting for the lock.
func (rec *Recorder) Waiting() {
	rec.r.mu.Lock()
	defer rec.r.mu.Unlock()
	rec.r.waitingSince[rec.client] = time.Now()
}

// Acquired: the client holds the lock. If another client holds it under a
// session the server still has, that is two holders in ZooKeeper's view.
func (rec *Recorder) Acquired() {
	sid := rec.conn.SessionID()
	var live []int64
	rec.r.srv.Inspect(func(s *sim.Server) { live = s.Sessions() })
	rec.r.mu.Lock()
	defer rec.r.mu.Unlock()
	r := rec.r
	delete(r.waitingSince, rec.client)
	if !slices.Contains(live, sid) {
		// The server expired the session after answering the call that
		// granted the lock: the client holds it in its own view only, the
		// split brain that fencing guards against, not two holders in
		// ZooKeeper's view.
		r.log = append(r.log, fmt.Sprintf("%v client %d: acquired under session %s, which the server has expired", r.since(), rec.client, wire.SessionHex(sid)))
		r.holding[rec.client] = sid
		r.acquisitions++
		return
	}
	for other, held := range r.holding {
		if other != rec.client && slices.Contains(live, held) {
			r.violate("two holders: client %d acquired the lock at %v while client %d held it under its live session %s", rec.client, r.since(), other, wire.SessionHex(held))
		}
	}
	r.holding[rec.client] = sid
	r.acquisitions++
}

// Released: the client no longer relies on the lock.
func (rec *Recorder) Released() {
	rec.r.mu.Lock()
	defer rec.r.mu.Unlock()
	delete(rec.r.holding, rec.client)
}

// Errorf notes an error the client saw (kept in the run's log).
func (rec *Recorder) Errorf(format string, args ...any) {
	rec.r.mu.Lock()
	defer rec.r.mu.Unlock()
	rec.r.log = append(rec.r.log, fmt.Sprintf("%v client %d: %s", rec.r.since(), rec.client, fmt.Sprintf(format, args...)))
}

// Options tune Test and Explore. The zero value explores 50 runs of 2
// clients, 2 cycles each (LockClient), with up to 2 faults of every kind.
type Options struct {
	Clients, Cycles int
	// Actions are the fault kinds drawn (nil: all); MaxFaults bounds how
	// many a run has (default 2).
	Actions   []wire.FaultAction
	MaxFaults int
	// Runs is the budget (default 50); Seed makes the draws repeatable.
	Runs int
	Seed uint64
	// SessionTimeout is what the clients ask for (default 10 s).
	SessionTimeout time.Duration
	// Quiet is how long, after the last fault's effect ends, every waiting
	// client has to get the lock (default 2 minutes of virtual time).
	Quiet time.Duration
	// Dir is where a failure's scenario file goes (default testdata/zklab).
	Dir string
}

func (o Options) withDefaults() Options {
	if o.Clients == 0 {
		o.Clients = 2
	}
	if o.Cycles == 0 {
		o.Cycles = 2
	}
	if o.Actions == nil {
		o.Actions = wire.FaultActions
	}
	if o.MaxFaults == 0 {
		o.MaxFaults = 2
	}
	if o.Runs == 0 {
		o.Runs = 50
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.Quiet == 0 {
		o.Quiet = 2 * time.Minute
	}
	if o.Dir == "" {
		o.Dir = "testdata/zklab"
	}
	return o
}

// Result is what Explore, Test or Replay found.
type Result struct {
	// Runs is the runs explored, up to and with the failing one kept;
	// FirstFailure is the wall time to the first run that failed a check,
	// ToFailure to the failure kept (shrunk, and failing every replay),
	// Elapsed the whole search's.
	Runs                             int
	FirstFailure, ToFailure, Elapsed time.Duration
	// Failure is the shrunk failing scenario, nil if none failed, and
	// Violations what it violated when last run.
	Failure    *Scenario
	Violations []string
	// Log is the last run's client errors and fired faults.
	Log []string
	// File is the failure's scenario file, Command the go test command
	// that replays it.
	File, Command string
}

// run is one run's shared state.
type run struct {
	srv   *inproc.Server
	start time.Time

	mu           sync.Mutex
	waitingSince map[int]time.Time
	holding      map[int]int64 // client -> the session it acquired under
	acquisitions int
	violations   []string
	log          []string
}

func (r *run) since() time.Duration { return time.Since(r.start) }

func (r *run) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// clientStagger is the virtual time between two clients' starts.
const clientStagger = 10 * time.Millisecond

// outcome is one run's verdict.
type outcome struct {
	violations []string
	log        []string
	counts     []map[sim.OpCode]int // each client's first session's requests by type
}

// runOnce runs a scenario in its own synctest bubble.
func runOnce(t *testing.T, sc *Scenario, client Client, quiet time.Duration) outcome {
	var out outcome
	synctest.Test(t, func(t *testing.T) {
		var hist bytes.Buffer
		hw := wire.NewHistoryWriter(&hist, time.Now())
		srv := inproc.Start(t, inproc.Config{SessionTimeout: sc.SessionTimeout, Wire: wire.Config{Observer: hw}})
		r := &run{srv: srv, start: time.Now(), waitingSince: map[int]time.Time{}, holding: map[int]int64{}}
		conns := make([]*zk.Conn, sc.Clients)
		sessions := make([]int64, sc.Clients)
		for i := range conns {
			conns[i], _ = srv.Connect(t)
			sessions[i] = conns[i].SessionID()
		}
		for _, f := range sc.Faults {
			if err := srv.AddKeyedFault(wire.KeyedFault{Session: sessions[f.Client], Op: f.Op, Request: f.Request, Action: f.Action, Duration: f.Duration}); err != nil {
				t.Fatalf("zkconntest: %v", err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		done := make([]bool, sc.Clients)
		var doneMu sync.Mutex
		for i := range conns {
			wg.Go(func() {
				// Clients start clientStagger of virtual time apart, so
				// that which asks first is the same in every run rather
				// than the Go scheduler's pick.
				time.Sleep(time.Duration(i) * clientStagger)
				client(ctx, i, conns[i], &Recorder{r: r, client: i, conn: conns[i], cycles: sc.Cycles})
				doneMu.Lock()
				done[i] = true
				doneMu.Unlock()
			})
		}
		for {
			time.Sleep(time.Second)
			doneMu.Lock()
			all := !slices.Contains(done, false)
			doneMu.Unlock()
			if all {
				break
			}
			calm := r.start
			for _, f := range srv.KeyedFaultsFired() {
				end := f.At.Add(f.Duration)
				if f.Action == wire.FaultPartition || f.Action == wire.FaultExpire {
					end = end.Add(sc.SessionTimeout) // the client learns of it only later
				}
				if end.After(calm) {
					calm = end
				}
			}
			if time.Since(calm) > quiet {
				break
			}
		}
		r.mu.Lock()
		var stuck []int
		for c := range r.waitingSince {
			stuck = append(stuck, c)
		}
		slices.Sort(stuck)
		for i, c := range stuck {
			behind := "; the same nodes are left behind"
			if i == 0 {
				behind = leftBehind(srv, sessions, r.holding)
			}
			r.violate("liveness: client %d waited for the lock from %v to %v, %v past the last fault, and never got it%s",
				c, r.waitingSince[c].Sub(r.start), r.since(), quiet, behind)
		}
		r.mu.Unlock()
		for _, f := range srv.KeyedFaultsFired() {
			r.log = append(r.log, fmt.Sprintf("%v fault fired: %s (client %d's %s %s)", f.At.Sub(r.start), f.KeyedFault, slices.Index(sessions, f.On), f.Request.Op, f.Request.Path))
		}
		out.counts = make([]map[sim.OpCode]int, sc.Clients)
		for i, sid := range sessions {
			out.counts[i] = map[sim.OpCode]int{}
			for _, op := range faultOps {
				if n := srv.RequestCount(sid, op); n > 0 {
					out.counts[i][op] = n
				}
			}
		}
		cancel()
		// go-zookeeper's Close gives up on its closeSession after a second
		// and can then leave its loop blocked for ever on a request's
		// channel (conn.go flushRequests) when the connection is down: so
		// faults end, and each client is let back to its session first.
		srv.ClearKeyedFaults()
		srv.ResetFaults()
		for _, c := range conns {
			for range 1200 {
				if c.State() == zk.StateHasSession {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			c.Close()
		}
		wg.Wait()
		srv.Close()
		if err := hw.Close(); err != nil {
			t.Fatalf("zkconntest: history: %v", err)
		}
		records, err := wire.ReadHistory("history", &hist)
		if err != nil {
			t.Fatalf("zkconntest: %v", err)
		}
		if res, _, n := model.CheckServed(records, 10*time.Second); res == porcupine.Illegal {
			r.violate("linearizability: the server's history (%d operations) is not linearizable", n)
		}
		out.violations = r.violations
		out.log = r.log
	})
	return out
}

// faultOps are the request types faults are drawn on.
var faultOps = []sim.OpCode{sim.OpCreate, sim.OpDelete, sim.OpExists, sim.OpGetData, sim.OpSetData,
	sim.OpGetChildrenNoStat, sim.OpGetChildren, sim.OpMulti, sim.OpCreate2, sim.OpSync}

// leftBehind describes the ephemerals of live client sessions that hold
// nothing: the nodes a waiter is stuck behind.
func leftBehind(srv *inproc.Server, sessions []int64, holding map[int]int64) string {
	var found []string
	srv.Inspect(func(s *sim.Server) {
		live := s.Sessions()
		var walk func(path string)
		walk = func(path string) {
			info, ok := s.Node(path)
			if !ok {
				return
			}
			if info.Owner != 0 && slices.Contains(live, info.Owner) {
				held := false
				for _, sid := range holding {
					held = held || sid == info.Owner
				}
				if !held {
					who := "a later session's" // a client's after its first expired
					if c := slices.Index(sessions, info.Owner); c >= 0 {
						who = fmt.Sprintf("client %d's", c)
					}
					found = append(found, fmt.Sprintf("; %s, ephemeral of %s live session %s, which holds no lock, is left behind", path, who, wire.SessionHex(info.Owner)))
				}
			}
			for _, child := range info.Children {
				p := path + "/" + child
				if path == "/" {
					p = "/" + child
				}
				if p != "/zookeeper" {
					walk(p)
				}
			}
		}
		walk("/")
	})
	// In the order of their sequence numbers: protected names begin with
	// a random GUID.
	slices.SortFunc(found, func(a, b string) int {
		return strings.Compare(seqOf(a), seqOf(b))
	})
	return strings.Join(found, "")
}

// seqOf is the sequence number in a leftBehind line's path.
func seqOf(line string) string {
	path, _, _ := strings.Cut(line, ",")
	return path[max(0, len(path)-10):]
}

// draw draws a run's faults, on requests the fault-free run made.
func draw(rng *rand.Rand, o Options, counts []map[sim.OpCode]int) []Fault {
	var faults []Fault
	for range 1 + rng.IntN(o.MaxFaults) {
		c := rng.IntN(len(counts))
		var ops []sim.OpCode
		for _, op := range faultOps {
			if counts[c][op] > 0 {
				ops = append(ops, op)
			}
		}
		if len(ops) == 0 {
			continue
		}
		op := ops[rng.IntN(len(ops))]
		f := Fault{Client: c, Op: op, Request: 1 + rng.IntN(counts[c][op]), Action: o.Actions[rng.IntN(len(o.Actions))]}
		if f.Action == wire.FaultPartition {
			f.Duration = []time.Duration{2 * time.Second, 2 * o.SessionTimeout}[rng.IntN(2)]
		}
		faults = append(faults, f)
	}
	return faults
}

// Explore explores the program: a fault-free run first, to count each
// client's requests by type, then Runs runs with faults drawn on those
// requests. On the first run that violates a check it shrinks the
// scenario, writes it to Dir and returns it; it does not fail t.
func Explore(t *testing.T, name string, client Client, o Options) *Result {
	t.Helper()
	o = o.withDefaults()
	began := time.Now()
	base := &Scenario{Name: name, Clients: o.Clients, Cycles: o.Cycles, SessionTimeout: o.SessionTimeout}
	// The fault-free runs count each client's requests by type; faults
	// are drawn on the requests every one of them made, so that the draws
	// of a seed do not hang on how one run's goroutines raced.
	var calm outcome
	for i := range calibrationRuns {
		out := runOnce(t, base, client, o.Quiet)
		if i == 0 || len(out.violations) > 0 {
			calm.violations, calm.log = out.violations, out.log
		}
		if i == 0 {
			calm.counts = out.counts
			continue
		}
		for c, counts := range calm.counts {
			for op, n := range counts {
				calm.counts[c][op] = min(n, out.counts[c][op])
			}
		}
	}
	res := &Result{}
	found := func(sc *Scenario, out outcome, runs int) *Result {
		res.Runs, res.ToFailure = runs, time.Since(began)
		res.Failure, res.Violations, res.Log = sc, out.violations, out.log
		res.Elapsed = time.Since(began)
		sc.Found = fmt.Sprintf("seed %d, run %d", o.Seed, runs)
		res.File, res.Command = write(t, o.Dir, sc)
		return res
	}
	if len(calm.violations) > 0 {
		res.FirstFailure = time.Since(began)
		shrunk, sout := shrink(t, base, calm, client, o.Quiet)
		return found(shrunk, sout, 0)
	}
	for i := range o.Runs {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
		sc := *base
		sc.Faults = draw(rng, o, calm.counts)
		out := runOnce(t, &sc, client, o.Quiet)
		if len(out.violations) == 0 {
			continue
		}
		if res.FirstFailure == 0 {
			res.FirstFailure = time.Since(began)
		}
		// A failure that hangs on how go-zookeeper's goroutines raced is
		// no use as a regression scenario: keep only one that fails on
		// every one of stableRuns replays, shrunk.
		shrunk, sout := shrink(t, &sc, out, client, o.Quiet)
		if !stable(t, shrunk, client, o.Quiet, kind(sout.violations[0])) {
			continue
		}
		return found(shrunk, sout, i+1)
	}
	res.Runs, res.Elapsed = o.Runs, time.Since(began)
	return res
}

// calibrationRuns is the fault-free runs before the draws.
const calibrationRuns = 3

// kind is a violation's kind: the words before its colon.
func kind(v string) string { k, _, _ := strings.Cut(v, ":"); return k }

// stableRuns is how many replays a failure must fail, every one, to be
// kept: the runs of this mode are not exactly repeatable.
const stableRuns = 20

// stable reports whether a scenario fails with a violation of kind want
// on each of stableRuns runs.
func stable(t *testing.T, sc *Scenario, client Client, quiet time.Duration, want string) bool {
	for range stableRuns {
		o := runOnce(t, sc, client, quiet)
		if len(o.violations) == 0 || kind(o.violations[0]) != want {
			return false
		}
	}
	return true
}

// shrink drops faults, clients and cycles while the run still violates a
// check of the same kind, on three runs out of three.
func shrink(t *testing.T, sc *Scenario, out outcome, client Client, quiet time.Duration) (*Scenario, outcome) {
	want := kind(out.violations[0])
	try := func(cand *Scenario) bool {
		var o outcome
		for range 3 {
			o = runOnce(t, cand, client, quiet)
			if len(o.violations) == 0 || kind(o.violations[0]) != want {
				return false
			}
		}
		sc, out = cand, o
		return true
	}
	for i := len(sc.Faults) - 1; i >= 0; i-- {
		cand := *sc
		cand.Faults = slices.Delete(slices.Clone(sc.Faults), i, i+1)
		try(&cand)
	}
	for sc.Cycles > 1 {
		cand := *sc
		cand.Cycles--
		if !try(&cand) {
			break
		}
	}
	for sc.Clients > 1 {
		cand := *sc
		cand.Clients--
		if slices.ContainsFunc(cand.Faults, func(f Fault) bool { return f.Client >= cand.Clients }) || !try(&cand) {
			break
		}
	}
	return sc, out
}

// write writes a failure's scenario file and returns it with its replay
// command.
func write(t *testing.T, dir string, sc *Scenario) (string, string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("zkconntest: %v", err)
		return "", ""
	}
	file := filepath.Join(dir, fileName(sc.Name)+".zkconn")
	sc.GoTest = callerTest(t)
	cmd := replayCommand(sc, file)
	if err := os.WriteFile(file, []byte(Format(sc, cmd)), 0o644); err != nil {
		t.Logf("zkconntest: %v", err)
		return "", ""
	}
	return file, cmd
}

func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, name)
}

// callerTest is the test's name, as a go test -run pattern takes it.
func callerTest(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

func replayCommand(sc *Scenario, file string) string {
	if sc.GoTest == "" {
		return ""
	}
	return fmt.Sprintf("go test -run '^%s$' -zkconn.replay %s", sc.GoTest, file)
}

// Test explores the program inside go test and fails t with the shrunk
// scenario, its file and the replay command on the first violation. With
// -zkconn.replay FILE it replays that file instead, and fails t if the
// replay violates a check.
func Test(t *testing.T, name string, client Client, o Options) *Result {
	t.Helper()
	if *replayFlag != "" {
		return replayFile(t, name, client, o, *replayFlag)
	}
	res := Explore(t, name, client, o)
	if res.Failure == nil {
		t.Logf("zkconntest: %s: no violation in %d runs (%v)", name, res.Runs, res.Elapsed.Round(time.Millisecond))
		return res
	}
	t.Fatalf("%s", report(name, res))
	return res
}

// TestLock is Test of LockClient: each client's lock is newLock over its
// connection.
func TestLock(t *testing.T, name string, newLock func(c *zk.Conn) Locker, o Options) *Result {
	t.Helper()
	return Test(t, name, LockClient(newLock), o)
}

func report(name string, res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "zkconntest: %s failed after %d runs (%v); shrunk to %d clients, %d cycles, %d faults:\n",
		name, res.Runs, res.ToFailure.Round(time.Millisecond), res.Failure.Clients, res.Failure.Cycles, len(res.Failure.Faults))
	for _, f := range res.Failure.Faults {
		fmt.Fprintf(&b, "  fault %s\n", f)
	}
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "%s\n", v)
	}
	for _, l := range res.Log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	fmt.Fprintf(&b, "scenario file: %s\nreplay: %s\n", res.File, res.Command)
	return b.String()
}

// Replay runs a scenario once with the program and returns what it
// violated. It does not fail t.
func Replay(t *testing.T, sc *Scenario, client Client, quiet time.Duration) *Result {
	t.Helper()
	if quiet == 0 {
		quiet = Options{}.withDefaults().Quiet
	}
	out := runOnce(t, sc, client, quiet)
	res := &Result{Runs: 1, Violations: out.violations, Log: out.log}
	if len(out.violations) > 0 {
		res.Failure = sc
	}
	return res
}

func replayFile(t *testing.T, name string, client Client, o Options, file string) *Result {
	t.Helper()
	sc, err := ParseFile(file)
	if err != nil {
		t.Fatalf("zkconntest: -zkconn.replay: %v", err)
		return nil
	}
	if sc.Name != name {
		t.Logf("zkconntest: -zkconn.replay %s: a scenario of %q, not of %q: not replayed here", file, sc.Name, name)
		return &Result{File: file}
	}
	res := Replay(t, sc, client, o.withDefaults().Quiet)
	res.File = file
	if res.Failure != nil {
		res.Command = replayCommand(sc, file)
		t.Fatalf("zkconntest: %s replayed from %s:\n%s", name, file, strings.Join(append(res.Violations, res.Log...), "\n"))
	}
	t.Logf("zkconntest: %s replayed from %s: no violation", name, file)
	return res
}
