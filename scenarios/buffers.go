package scenarios

import (
	"sync"

	"github.com/zklab/zklab/model"
)

// runBuffers are arrays a run fills and has no more use for once it is
// over, kept for a later run: an exploration runs thousands of runs of
// one shape, and each allocated its arrays afresh (a third of the bytes
// it allocated), which the garbage collector then had to find and free.
//
// A run takes a set from runPool when it starts (newRunner), and its
// result gives it back (Result.recycle) once its caller, the explorer, is
// done with what points into the arrays: the history's records, the
// tree's lives. A result that is kept (a failure) keeps its arrays.
// sync.Pool hands a set to one run at a time, so runs on parallel workers
// never share one. The arrays are emptied as they are given back (keep),
// so nothing of a run reaches the next.
type runBuffers struct {
	// The checks' histories (lockOps, storeOps) and spans (checkOverlap):
	// each is filled, read and dropped within the check.
	lockOps  []typedOp[model.LockInput, model.LockOutput]
	storeOps []typedOp[model.StoreInput, model.StoreOutput]
	spans    []span
	active   []span

	// The run's records, which newRunner takes over: the history's
	// (history.reserve), the server tree's (serverTree.reserve), and the
	// runner, observer and coverage recorder (emptied).
	locks      []*lockRec
	updates    []*updateRec
	marks      []markRec
	lockRecs   chunkBuffer[lockRec]
	updateRecs chunkBuffer[updateRec]
	lives      []*znodeLife
	lifeRecs   chunkBuffer[znodeLife]
	leaseLives []*znodeLife // the leases' lives (serverTree.carveLives), all nil
	runner     *runner
	observer   *observer
	recorder   *coverageRecorder
	// choices is the buffer a run recorded its choices in, and lent to
	// its scenario (RunOptions.lendSchedule).
	choices []int
	// verdict is the verdict of a run whose result was given back.
	verdict *verdictAndChecks
	// texts are the last texts the checks wrote (text).
	texts [textSlots]string
	// scenario is the scenario of a result given back with
	// RunOptions.lendSchedule (Result.recycle), its faults cleared.
	scenario *Scenario
	// parts are the clients' parts of a run of the default workload
	// (clientPart); a user's workload might keep its Worker.
	parts []clientPart
}

var runPool = sync.Pool{New: func() any { return new(runBuffers) }}

func takeRunBuffers() *runBuffers { return runPool.Get().(*runBuffers) }

// put gives the buffers back for another run, letting go of what their
// arrays point to.
func (b *runBuffers) put() {
	clear(b.spans[:cap(b.spans)])
	clear(b.active[:cap(b.active)])
	runPool.Put(b)
}

// keep takes back, emptied, the arrays the finished run r took over, and
// r itself. The records a user's workload was handed (Held) are left to
// it: it might keep them.
func (b *runBuffers) keep(r *runner) {
	if r.opts.Workload == nil {
		r.hist.lockChunk.keep(&b.lockRecs)
	}
	r.hist.updateChunk.keep(&b.updateRecs)
	b.locks = emptied(r.hist.locks)
	b.updates = emptied(r.hist.updates)
	b.marks = emptied(r.hist.marks)
	r.hist = history{}
	t := r.obs.tree
	t.lifeChunk.keep(&b.lifeRecs)
	b.lives = emptied(t.lives)
	t.lives = nil
	if r.opts.Workload == nil {
		clear(t.leaseArray)
		b.leaseLives = t.leaseArray
	}
	r.obs.empty()
	b.observer, r.obs = r.obs, nil
	if r.cov != nil {
		r.cov.empty()
		b.recorder = r.cov
	}
	if r.verdict != nil {
		b.verdict = r.verdict
	}
	if r.opts.Workload == nil && r.parts != nil {
		b.parts = r.parts
	}
	*r = runner{clients: emptied(r.clients)}
	b.runner = r
}

// takeRunner is an empty runner: the one a run left, if any.
func (b *runBuffers) takeRunner() *runner {
	r := b.runner
	if r == nil {
		return new(runner)
	}
	b.runner = nil
	return r
}

// A textSlot names a text that a run's checks write (runBuffers.text).
type textSlot int

const (
	textTitle      textSlot = iota // the verdict's title
	textLock                       // checkLock's operations
	textStore                      // checkStore's value and writes
	textHolders                    // checkOverlap's leases or terms, for CheckZKHolders
	textSplitBrain                 // and for CheckSplitBrain
	textSlots
)

// text is t as a string: the one the last run wrote in slot k, if it
// says the same. Runs of one exploration write the same few texts
// ("fair-lock, 5 clients × 10 cycles, fenced store", "50 leases") run
// after run, and each was an allocation. Strings do not change, so the
// verdicts that share one are independent all the same.
func (b *runBuffers) text(k textSlot, t []byte) string {
	if s := b.texts[k]; s == string(t) {
		return s
	}
	s := string(t)
	b.texts[k] = s
	return s
}

// takeScenario is a scenario to copy a run's into (Scenario.cloneInto):
// the one a run's result gave back, if any.
func (b *runBuffers) takeScenario() *Scenario { return takeKept(&b.scenario) }

// takeVerdict is a zero verdict with its checks' array: the one a run
// left, if any.
func (b *runBuffers) takeVerdict() *verdictAndChecks {
	vc := takeKept(&b.verdict)
	*vc = verdictAndChecks{}
	return vc
}

// takeKept takes the thing *kept holds for reuse, leaving it nil, or
// makes a new one if it holds none.
func takeKept[T any](kept **T) *T {
	v := *kept
	if v == nil {
		return new(T)
	}
	*kept = nil
	return v
}

// takeParts is the parts of n clients, zero but for their tasks: the
// array a run left, if it has room.
func (b *runBuffers) takeParts(n int) []clientPart {
	parts := b.parts
	b.parts = nil
	if cap(parts) < n {
		parts = make([]clientPart, n)
	}
	// All of the array is emptied, so that nothing of an earlier run's
	// clients stays reachable through it.
	for i := range parts[:cap(parts)] {
		p := &parts[:cap(parts)][i]
		task := p.task
		if task == nil {
			task = p.workload
		}
		*p = clientPart{task: task}
	}
	return parts[:n]
}

// takeChoices is the buffer for a run's choices: the one the last run
// lent, else choicesPool's.
func (b *runBuffers) takeChoices() []int {
	if c := b.choices; cap(c) > 0 {
		b.choices = nil
		return c[:0]
	}
	return takeChoices()
}

// takeObserver is an observer for a run of clients: the one a run left,
// if any.
func (b *runBuffers) takeObserver(keep bool, clients int) *observer {
	o := b.observer
	if o == nil {
		return newObserver(keep, clients)
	}
	b.observer = nil
	o.begin(keep, clients)
	return o
}

// coverageRecorder is a recorder for a run of clients: the one a run
// left, if any.
func (b *runBuffers) coverageRecorder(clients int) *coverageRecorder {
	r := b.recorder
	if r == nil {
		return newCoverageRecorder(clients)
	}
	b.recorder = nil
	r.begin(clients)
	return r
}

// emptied is s zeroed, with length 0.
func emptied[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// buffers is the run's buffers, taken from runPool at the first need (a
// runner on a real server takes them there).
func (r *runner) buffers() *runBuffers {
	if r.bufs == nil {
		r.bufs = takeRunBuffers()
	}
	return r.bufs
}

// takeSlice is buf emptied, or an array of capacity n if buf has less
// room.
func takeSlice[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}
