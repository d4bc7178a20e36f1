package scenarios

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// A UserOp is one operation of a user's own kind that a workload records
// for its own porcupine model (RunOptions.Model): its input at the call,
// its output at the return. The user-linearizable check runs the model
// on every operation recorded; one that never ended counts as pending
// (porcupine lets it take effect at any time after its call, or not at
// all).
//
//	op := w.Begin(counterIncrement{})
//	n := counter.Load()
//	w.Sleep(ctx, w.Hold())
//	counter.Store(n + 1)
//	op.End(counterResult{Read: n})
type UserOp struct {
	r        *runner
	client   int
	input    any
	output   any
	call     uint64
	ret      uint64
	callTime time.Duration
	ended    bool
}

// Begin records the call of an operation of the user's own, with its
// input, at the client's current step.
func (w *Worker) Begin(input any) *UserOp {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &UserOp{r: r, client: w.client, input: input, call: r.step(), callTime: r.now()}
	r.hist.userOps = append(r.hist.userOps, op)
	return op
}

// End records the operation's return, with its output. An operation
// ends once; a second End is ignored.
func (op *UserOp) End(output any) {
	r := op.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.ended {
		return
	}
	op.output, op.ret, op.ended = output, r.step(), true
}

// Shared returns the value the clients of one run share, made by init
// at the first call of the run (a user's own resource, as the store is
// the built-in one): a run starts from a fresh one, as the model's Init
// does. On a real server the clients are goroutines: guard it.
func (w *Worker) Shared(init func() any) any {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared == nil {
		r.shared = init()
	}
	return r.shared
}

// checkUser runs the user's model on the user's operations.
func (r *runner) checkUser(timeout time.Duration) CheckResult {
	var ops []porcupine.Operation
	var pending int
	end := r.step() + 1
	for _, op := range r.hist.userOps {
		o := porcupine.Operation{ClientId: op.client - 1, Input: op.input, Call: int64(op.call), Output: op.output, Return: int64(op.ret)}
		if !op.ended {
			// Pending: it may have taken effect, or not. porcupine has
			// no pending operations; one that returns after everything
			// else with the output the model's step accepts whatever it
			// is stands for it, and the user's model says what a nil
			// output means.
			o.Return = int64(end)
			pending++
		}
		ops = append(ops, o)
	}
	res := porcupine.CheckOperationsTimeout(*r.opts.Model, ops, timeout)
	out := CheckResult{Name: CheckUser, Outcome: porcupineOutcome(res), Detail: Plural(len(ops), "operation")}
	if pending > 0 {
		out.Detail += fmt.Sprintf(", %d never ended", pending)
	}
	if res == porcupine.Unknown {
		out.Detail += fmt.Sprintf("; no answer within %v", timeout)
	}
	return out
}
