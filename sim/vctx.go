package sim

import (
	"context"
	"sync/atomic"
	"time"
)

// taskContext is the type of taskCtx, the context every task runs with:
// context.Background in all it does, but a pointer of the simulator's
// own, which a call tells from any other context in two loads. Asking
// context.Background for its deadline and its error, or comparing a
// context with it (its type is not a pointer, so the comparison calls
// into the runtime), was some 40 instructions of every call
// (BenchmarkSimThroughput).
type taskContext struct{ context.Context }

var taskCtx = &taskContext{context.Background()}

// virtualCtx is a context whose deadline is in virtual time: a world
// timer cancels it. It wraps a standard cancel context so that contexts
// derived from it with the context package are cancelled with it directly,
// without the goroutine the package starts for an unknown parent type.
type virtualCtx struct {
	context.Context // the inner cancel context
	parent          context.Context
	deadline        time.Time
	expired         atomic.Bool
}

type virtualCtxKey struct{}

func (v *virtualCtx) Deadline() (time.Time, bool) { return v.deadline, true }

func (v *virtualCtx) Err() error {
	if v.expired.Load() {
		return context.DeadlineExceeded
	}
	if err := v.Context.Err(); err != nil {
		// A parent's virtual deadline reaches this context through the
		// inner one as Canceled; report it as the parent does.
		if perr := v.parent.Err(); perr != nil {
			return perr
		}
		return err
	}
	return nil
}

func (v *virtualCtx) Value(key any) any {
	if key == (virtualCtxKey{}) {
		return v
	}
	return v.Context.Value(key)
}

func (w *World) wallTime() time.Time {
	return time.UnixMilli(w.cfg.Server.withDefaults().EpochMs).UTC().Add(time.Duration(w.nowNs))
}

// checkContext refuses a context whose deadline does not come from the
// simulator: a wall-clock timer would fire at a moment no seed controls.
func checkContext(ctx context.Context) error {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if v, _ := ctx.Value(virtualCtxKey{}).(*virtualCtx); v != nil && !dl.Before(v.deadline) {
		return nil
	}
	return errWallClockDeadline
}
