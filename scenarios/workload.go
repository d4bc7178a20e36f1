package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklab/zklab/recipes"
)

// A Workload is the program one client runs: what it does with its lock
// and the protected store, in Go, through a Worker that records each step
// for the checks. It runs as the client's task (a simulated task in the
// simulator, a goroutine on a real server). It returns nil when it is
// done, and the runner closes the client's session; it returns an error
// (the context's, when the run ends under it) to leave the session as it
// is.
//
// A workload of one's own:
//
//	func tryOnce(ctx context.Context, w *scenarios.Worker) error {
//		for range w.Cycles() {
//			held, err := w.TryAcquire(ctx)
//			if err != nil {
//				if err := w.Sleep(ctx, 100*time.Millisecond); err != nil {
//					return err
//				}
//				continue
//			}
//			w.Update(ctx, held)
//			w.Release(ctx, held)
//		}
//		return nil
//	}
//
// and RunOptions{Workload: tryOnce} with the scenario's "workload NAME"
// line naming it.
type Workload func(ctx context.Context, w *Worker) error

// workloads are the built-in workloads, by the name a scenario's
// workload line gives. The first is the default, which a scenario file
// does not name.
var workloads = []struct {
	name    string
	summary string
	run     Workload
}{
	{"cycles", "Cycles times: acquire, update the store, release, think; a failed acquire backs off and uses up its cycle", cyclesWorkload},
	{"try-cycles", "Cycles times: try-acquire until granted (backing off between tries), update the store, release, think", tryCyclesWorkload},
	{"lead", "campaign for leadership; as leader, update the store Cycles times while the term is held (not SUSPENDED or LOST); abdicate", leadWorkload},
	{"re-enter", "Cycles times: acquire, update the store, acquire again re-entrantly (reentrant recipes only), update, release both, think", reEnterWorkload},
	{"read-then-write", "take the read lock, then the write lock while holding it (read/write locks only): ZooKeeper's recipe queues the write behind the client's own read, a self-deadlock", readThenWriteWorkload},
}

// reentrantRecipes are the registry's recipes whose handle takes the lock
// again while it holds it (Curator's InterProcessMutex and what is built
// on it); every other recipe's handle would queue behind its own node.
var reentrantRecipes = []string{"reentrant-mutex", "multi-lock", "leader-selector"}

// checkWorkload refuses a built-in workload the scenario's lock cannot
// run: re-enter on a recipe that is not reentrant, read-then-write on a
// lock that is not a read/write lock.
func checkWorkload(sc *Scenario, lockKind string, userRecipe bool) error {
	switch sc.Workload {
	case "re-enter":
		if !userRecipe && !slices.Contains(reentrantRecipes, sc.Recipe) {
			return fmt.Errorf("scenario: workload re-enter needs a reentrant recipe (%s); %s's handle would queue behind its own node", strings.Join(reentrantRecipes, ", "), sc.Recipe)
		}
	case "read-then-write":
		if lockKind != "rwlock" {
			return fmt.Errorf("scenario: workload read-then-write needs a read/write lock (rw-lock, herd-rw-lock, or a user's recipe with lock rwlock), not %s (%s model)", Cut(sc.Recipe), lockKind)
		}
	}
	return nil
}

// defaultWorkload is the workload of a scenario without a workload line.
const defaultWorkload = "cycles"

// WorkloadNames lists the built-in workloads' names, the default first.
func WorkloadNames() []string {
	var names []string
	for _, w := range workloads {
		names = append(names, w.name)
	}
	return names
}

func lookupWorkload(name string) (Workload, bool) {
	for _, w := range workloads {
		if w.name == cmpOr(name, defaultWorkload) {
			return w.run, true
		}
	}
	return nil, false
}

// workloadLine is the scenario file's "workload NAME" line: the program
// every client runs (a built-in one, or a user's own that
// RunOptions.Workload supplies). Empty means the default, cycles.
type workloadLine struct {
	Workload string
}

func (s *Scenario) renderWorkload(key string) ([]string, bool) {
	if key != "workload" {
		return nil, false
	}
	return []string{"workload " + s.Workload}, s.Workload != ""
}

// parseWorkload parses a workload line; known is false for another key.
func (s *Scenario) parseWorkload(key, rest string) (known bool, err error) {
	if key != "workload" {
		return false, nil
	}
	if rest == "" || strings.ContainsAny(rest, " \t") || len(rest) > MaxNameBytes {
		return true, fmt.Errorf("workload: want one name (built in: %s), got %s", strings.Join(WorkloadNames(), ", "), Cut(rest))
	}
	s.Workload = rest
	return true, nil
}

// workloadFor picks the program a run's clients run: the caller's own
// (RunOptions.Workload) or the built-in one the scenario names.
func workloadFor(sc *Scenario, o RunOptions) (Workload, error) {
	if o.Workload != nil {
		return o.Workload, nil
	}
	if w, ok := lookupWorkload(sc.Workload); ok {
		return w, nil
	}
	return nil, fmt.Errorf("scenario: unknown workload %s (built in: %s); a workload of one's own runs with RunOptions.Workload", Cut(sc.Workload), strings.Join(WorkloadNames(), ", "))
}

// A Worker is one client's view of a run, for its workload: its
// connection, its lock, the scenario's parameters, and the operations
// whose calls and returns the checks judge. Like the lock handle, it
// belongs to the client's task alone.
type Worker struct {
	r      *runner
	client int
	conn   *observedConn
	lock   Lock
	sides  map[bool]Lock // read and write handles (AcquireRead, AcquireWrite)
}

// A Held is a lease a Worker acquired, with its record in the history.
type Held struct {
	Lease Lease
	rec   *lockRec
}

// Client is the client's number, from 1.
func (w *Worker) Client() int { return w.client }

// Conn is the client's connection, as its recipe sees it.
func (w *Worker) Conn() recipes.Conn { return w.conn }

// Cycles, Hold and Think are the scenario's.
func (w *Worker) Cycles() int { return w.r.sc.Cycles }

// Hold is the time a holder waits between the store's read and write.
func (w *Worker) Hold() time.Duration { return w.r.sc.Hold }

// Think is the pause after each release.
func (w *Worker) Think() time.Duration { return w.r.sc.Think }

// Sleep pauses the client on the backend's clock.
func (w *Worker) Sleep(ctx context.Context, d time.Duration) error { return w.conn.Sleep(ctx, d) }

// ErrNoTryAcquire: the lock under test has no TryAcquire.
var ErrNoTryAcquire = errors.New("scenarios: the lock has no TryAcquire")

// A TryLock is a Lock that can also try without waiting (recipes.Lock
// through FromRecipe is one).
type TryLock interface {
	Lock
	TryAcquire(ctx context.Context) (Lease, error)
}

func (r *recipeLock) TryAcquire(ctx context.Context) (Lease, error) {
	l, err := r.l.TryAcquire(ctx)
	if l == nil {
		return nil, err
	}
	return l, err
}

// Acquire acquires the client's lock, recording the call and its return
// (granted, with its token, session and nodes, or failed).
func (w *Worker) Acquire(ctx context.Context) (*Held, error) {
	return w.acquire(ctx, w.lock.Acquire)
}

// TryAcquire tries the lock without waiting, recorded as an acquire; a
// lock taken returns the recipe's error (recipes.ErrNotAcquired), and
// ErrNoTryAcquire comes back, unrecorded, when the lock cannot try.
func (w *Worker) TryAcquire(ctx context.Context) (*Held, error) {
	t, ok := w.lock.(TryLock)
	if !ok {
		return nil, ErrNoTryAcquire
	}
	return w.acquire(ctx, t.TryAcquire)
}

func (w *Worker) acquire(ctx context.Context, call func(context.Context) (Lease, error)) (*Held, error) {
	return w.acquireSide(ctx, call, w.r.sc.options(w.client).Read)
}

func (w *Worker) acquireSide(ctx context.Context, call func(context.Context) (Lease, error), shared bool) (*Held, error) {
	r, i := w.r, w.client
	r.lock()
	l := r.hist.add(lockRec{client: i, shared: shared, acquireCall: r.step(), acquireCallTime: r.now()})
	r.unlock()
	r.cov.setSection(i, PhaseAcquiring)
	lease, err := call(ctx)
	r.cov.setSection(i, PhaseIdle)
	if err == nil && lease == nil {
		err = errors.New("scenarios: Acquire returned neither a lease nor an error")
	}
	r.lock()
	l.acquireReturn, l.acquireReturnTime, l.acquireErr, l.returned = r.step(), r.now(), err, true
	if err == nil {
		l.granted, l.token, l.session, l.nodes = true, lease.Token(), lease.SessionID(), lease.Nodes()
		l.reentered = r.hist.holding(i, l)
		if !l.reentered {
			r.hist.open++
		}
		l.held = Held{Lease: lease, rec: l}
		r.obs.tree.holdLives(l)
	}
	r.unlock()
	if r.real != nil {
		r.real.settled(i)
	}
	if err != nil {
		return nil, err
	}
	r.cov.setSection(i, PhaseHolding)
	return &l.held, nil
}

// Update is the critical section on the store: read it, hold, write it
// plus one, under held's fencing token. Reads and writes take
// storeLatency each. It reports whether the write was taken: a fenced
// store refuses a stale token, and a done ctx ends the section early.
func (w *Worker) Update(ctx context.Context, held *Held) bool {
	r, i, l := w.r, w.client, held.rec
	r.lock()
	u := r.hist.addUpdate(updateRec{client: i, token: l.token, readCall: r.step(), readCallTime: r.now()})
	r.unlock()
	if w.conn.Sleep(ctx, storeLatencyMs*time.Millisecond) != nil {
		return false
	}
	r.lock()
	u.read, u.readOK = r.store.read(l.token)
	u.readReturn, u.readReturnTime, u.readDone = r.step(), r.now(), true
	ok := u.readOK
	r.unlock()
	if !ok {
		return false
	}
	if r.sc.Hold > 0 && w.conn.Sleep(ctx, r.sc.Hold) != nil {
		return false
	}
	r.lock()
	u.writeCall, u.writeCallTime = r.step(), r.now()
	r.unlock()
	if w.conn.Sleep(ctx, storeLatencyMs*time.Millisecond) != nil {
		return false
	}
	r.lock()
	u.writeOK = r.store.write(i, l.token, u.read, r.step(), &r.last)
	u.writeReturn, u.writeReturnTime, u.wrote = r.step(), r.now(), true
	ok = u.writeOK
	r.unlock()
	return ok
}

// Release gives held back, recording the call and its return.
func (w *Worker) Release(ctx context.Context, held *Held) error {
	r, i, l := w.r, w.client, held.rec
	r.lock()
	if l.granted && !l.releaseCalled && !l.reentered {
		r.hist.open-- // the hold ends for holding
	}
	l.releaseCall, l.releaseCallTime, l.releaseCalled = r.step(), r.now(), true
	r.unlock()
	r.cov.setSection(i, PhaseReleasing)
	err := held.Lease.Release(ctx)
	r.cov.setSection(i, PhaseIdle)
	r.lock()
	l.releaseErr = err
	l.releaseReturn, l.releaseReturned = r.step(), true
	r.unlock()
	return err
}

// ErrNotReentrant: the re-enter workload's lock does not say it is
// reentrant (a user's Lock says so with a Reentrant method).
var ErrNotReentrant = errors.New("scenarios: the lock is not reentrant")

// A ReentrantLock is a user's Lock that says whether its handle takes the
// lock again while it holds it.
type ReentrantLock interface {
	Lock
	Reentrant() bool
}

// Reacquire takes the lock again while held is held, for a reentrant
// recipe: recorded as an acquire, and as part of held's hold when the
// recipe grants it on the same nodes with the same token (otherwise it
// is a second grant, which the lock's checks judge as one). It refuses
// with ErrNotReentrant a user's lock that does not say it is reentrant.
func (w *Worker) Reacquire(ctx context.Context, held *Held) (*Held, error) {
	if _, ok := w.lock.(*recipeLock); !ok {
		if rl, ok := w.lock.(ReentrantLock); !ok || !rl.Reentrant() {
			return nil, ErrNotReentrant
		}
	}
	return w.acquireSide(ctx, w.lock.Acquire, held.rec.shared)
}

// AcquireRead and AcquireWrite take the read or the write side of a
// read/write lock through handles of their own (built with the
// scenario's constructor, as a second object of the user's would be),
// whatever side the scenario's readers line gives the client.
func (w *Worker) AcquireRead(ctx context.Context) (*Held, error) { return w.acquireWith(ctx, true) }

// AcquireWrite: see AcquireRead.
func (w *Worker) AcquireWrite(ctx context.Context) (*Held, error) { return w.acquireWith(ctx, false) }

func (w *Worker) acquireWith(ctx context.Context, read bool) (*Held, error) {
	if w.sides == nil {
		w.sides = map[bool]Lock{}
	}
	l, ok := w.sides[read]
	if !ok {
		o := w.r.sc.options(w.client)
		o.Read = read
		l = w.r.ctor(w.conn, w.r.lockPath, o)
		w.sides[read] = l
	}
	return w.acquireSide(ctx, l.Acquire, read)
}

// Lead campaigns for leadership with an election recipe: Acquire, in the
// words of a leader.
func (w *Worker) Lead(ctx context.Context) (*Held, error) { return w.Acquire(ctx) }

// Abdicate gives leadership up: Release.
func (w *Worker) Abdicate(ctx context.Context, term *Held) error { return w.Release(ctx, term) }

// StillHeld reports whether the holder's own view of its lease (or term)
// is still held: not SUSPENDED, LOST or released (Curator's states). A
// lease of a user's lock without a State method counts as held.
func (w *Worker) StillHeld(held *Held) bool {
	s, ok := held.Lease.(interface{ State() recipes.LeaseState })
	return !ok || s.State() == recipes.LeaseHeld
}

// acquireBackoff is the pause after a failed acquire before the next
// cycle.
const acquireBackoff = 100 * time.Millisecond

// cyclesWorkload is the default workload: Cycles times acquire, update
// the store, release, think. A failed acquire backs off and uses up its
// cycle.
func cyclesWorkload(ctx context.Context, w *Worker) error {
	for range w.Cycles() {
		held, err := w.Acquire(ctx)
		if err != nil {
			if err := w.Sleep(ctx, acquireBackoff); err != nil {
				return err
			}
			continue
		}
		w.Update(ctx, held)
		w.Release(ctx, held)
		if w.Think() > 0 {
			if err := w.Sleep(ctx, w.Think()); err != nil {
				return err
			}
		}
	}
	return nil
}

// tryCyclesWorkload is cycles with TryAcquire: a try that finds the lock
// taken backs off and tries again, so every cycle ends holding the lock
// once. Any other error uses up the cycle, as in cycles.
func tryCyclesWorkload(ctx context.Context, w *Worker) error {
	for range w.Cycles() {
		held, err := w.TryAcquire(ctx)
		for errors.Is(err, recipes.ErrNotAcquired) {
			if err := w.Sleep(ctx, acquireBackoff); err != nil {
				return err
			}
			held, err = w.TryAcquire(ctx)
		}
		if err != nil {
			if err := w.Sleep(ctx, acquireBackoff); err != nil {
				return err
			}
			continue
		}
		w.Update(ctx, held)
		w.Release(ctx, held)
		if w.Think() > 0 {
			if err := w.Sleep(ctx, w.Think()); err != nil {
				return err
			}
		}
	}
	return nil
}

// leadWorkload is a leader's program: campaign until elected; as leader,
// update the store Cycles times, each only while the term is held in the
// leader's own view (a SUSPENDED or LOST term ends the leadership early,
// as Curator's listeners advise); then abdicate. A check of the term's
// state before acting narrows the window of split-brain but cannot close
// it: a leader that stops for longer than its session timeout between the
// check and the act acts on a lost term. Only the fencing token at the
// store closes it.
func leadWorkload(ctx context.Context, w *Worker) error {
	term, err := w.Lead(ctx)
	if err != nil {
		return w.Sleep(ctx, acquireBackoff)
	}
	for k := range w.Cycles() {
		if !w.StillHeld(term) {
			break
		}
		w.Update(ctx, term)
		if k < w.Cycles()-1 && w.Think() > 0 {
			if err := w.Sleep(ctx, w.Think()); err != nil {
				return err
			}
		}
	}
	w.Abdicate(ctx, term)
	return nil
}

// reEnterWorkload is a reentrant holder's program: Cycles times acquire,
// update the store, acquire again while holding (Curator's
// InterProcessMutex counts the holds of one owner), update under the
// inner lease, release the inner lease (the lock stays held) and the
// outer one, think. A recipe that queues the second acquire behind its
// own node never returns from it: the liveness check names the waiter
// waiting on itself.
func reEnterWorkload(ctx context.Context, w *Worker) error {
	for range w.Cycles() {
		outer, err := w.Acquire(ctx)
		if err != nil {
			if err := w.Sleep(ctx, acquireBackoff); err != nil {
				return err
			}
			continue
		}
		w.Update(ctx, outer)
		inner, err := w.Reacquire(ctx, outer)
		if errors.Is(err, ErrNotReentrant) {
			w.Release(ctx, outer)
			return err
		}
		if err == nil {
			w.Update(ctx, inner)
			w.Release(ctx, inner)
		}
		w.Release(ctx, outer)
		if w.Think() > 0 {
			if err := w.Sleep(ctx, w.Think()); err != nil {
				return err
			}
		}
	}
	return nil
}

// readThenWriteWorkload takes the read lock, then the write lock while
// it still holds the read lock, as code that reads and then decides to
// write does. ZooKeeper's read/write recipe (and Curator's, which refuses
// an upgrade on one handle only) queues the write node behind the
// client's own read node: the write never comes, and the liveness check
// names a waiter waiting on itself. Should the write be granted, the
// client updates the store and releases both.
func readThenWriteWorkload(ctx context.Context, w *Worker) error {
	for range w.Cycles() {
		read, err := w.AcquireRead(ctx)
		if err != nil {
			if err := w.Sleep(ctx, acquireBackoff); err != nil {
				return err
			}
			continue
		}
		write, err := w.AcquireWrite(ctx)
		if err == nil {
			w.Update(ctx, write)
			w.Release(ctx, write)
		}
		w.Release(ctx, read)
		if w.Think() > 0 {
			if err := w.Sleep(ctx, w.Think()); err != nil {
				return err
			}
		}
	}
	return nil
}

// LockOf adapts one handle of the recipes package (a lock, or a leader
// election whose Acquire campaigns and whose lease is the term) to the
// testbed's Lock.
func LockOf(l recipes.Lock) Lock { return &recipeLock{l} }

// Election reports whether the scenario's clients campaign for
// leadership: its recipe is a leader election (recipes.Recipe.Election)
// or its workload is lead. The checks and the report then speak of
// leaders and terms rather than holders and leases.
func (s *Scenario) Election() bool {
	if r, ok := recipes.Lookup(s.Recipe); ok && r.Election {
		return true
	}
	return s.Workload == "lead"
}
