package sim

import (
	"iter"
	"sync"
)

// A worker is a coroutine that runs tasks, one after another. A task runs
// on a worker from its first step to its end; the driver then gives the
// worker back to the pool, so the next task, in this world or another,
// starts on a stack that has already grown instead of growing a fresh one
// (copystack was 3.6% of the Explore5x10 profile).
type worker struct {
	resume func() (struct{}, bool) // the driver runs the worker until it gives control back
	yield  func(struct{}) bool     // on the worker: give control back to the driver
	stop   func()                  // ends an idle worker
	// The task to run next, and its world; set while the worker is idle.
	// They are fields, not a closure of them: that was an allocation for
	// every task.
	w    *World
	task *task
}

// workersIdleMax bounds the idle workers kept for reuse.
const workersIdleMax = 64

var workerPool struct {
	sync.Mutex
	idle []*worker
}

// takeWorker returns an idle worker, or a new one, to run task t of w.
func takeWorker(w *World, t *task) *worker {
	workerPool.Lock()
	wk := popSpare(&workerPool.idle)
	workerPool.Unlock()
	if wk == nil {
		wk = newWorker()
	}
	wk.w, wk.task = w, t
	return wk
}

// putWorker gives back a worker whose task has ended: it waits, at its
// yield, for the next job.
func putWorker(wk *worker) {
	workerPool.Lock()
	if len(workerPool.idle) < workersIdleMax {
		workerPool.idle = append(workerPool.idle, wk)
		wk = nil
	}
	workerPool.Unlock()
	if wk != nil {
		wk.stop()
	}
}

func newWorker() *worker {
	wk := &worker{}
	wk.resume, wk.stop = iter.Pull(func(yield func(struct{}) bool) {
		wk.yield = yield
		for {
			w, t := wk.w, wk.task
			wk.w, wk.task = nil, nil
			w.runTask(t, t.fn)
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return wk
}
