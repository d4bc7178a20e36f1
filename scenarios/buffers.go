package scenarios

import (
	"sync"

	"github.com/zklab/zklab/model"
)

// runBuffers are arrays a run fills and has no more use for once it is
// over, kept for a later run: an exploration runs thousands of runs of
// one shape, and each allocated its arrays afresh (a sixth of the bytes
// it allocated), which the garbage collector then had to find and free.
//
// A run takes a set from runPool when it starts and puts it back when it
// is done with it; sync.Pool hands a set to one run at a time, so runs on
// parallel workers never share one. Each array is emptied as it is taken
// (and anything it points to let go as it is put back), so nothing of a
// run reaches the next.
type runBuffers struct {
	// The checks' histories (lockOps, storeOps) and spans (checkOverlap):
	// each is filled, read and dropped within the check.
	lockOps  []typedOp[model.LockInput, model.LockOutput]
	storeOps []typedOp[model.StoreInput, model.StoreOutput]
	spans    []span
	active   []span
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
