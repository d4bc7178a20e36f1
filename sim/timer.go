package sim

import (
	"cmp"
	"container/heap"
	"slices"
)

// timer is a callback at a virtual time. Timers of one owner client are
// frozen while it is paused and do not fire after it crashed.
type timer struct {
	atNs   int64
	seq    uint64 // creation order: the tie-break between timers due together
	owner  *Client
	what   string // for the trace
	fire   func()
	index  int // in the heap, -1 when not in it
	frozen bool
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].atNs != h[j].atNs {
		return h[i].atNs < h[j].atNs
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// after schedules fire at now+delayNs on behalf of owner (nil: the world's
// own timer, which no client fault can freeze).
func (w *World) after(delayNs int64, owner *Client, what string, fire func()) *timer {
	t := new(timer)
	w.arm(t, delayNs, owner, what, fire)
	return t
}

// arm is after with the caller's timer record, which must be idle: in
// neither the heap nor a client's frozen timers.
func (w *World) arm(t *timer, delayNs int64, owner *Client, what string, fire func()) {
	w.timerSeq++
	*t = timer{atNs: w.nowNs + delayNs, seq: w.timerSeq, owner: owner, what: what, fire: fire, index: -1}
	if owner != nil && owner.pausedUntilNs > w.nowNs {
		t.frozen = true
		owner.frozen = append(owner.frozen, t)
		return
	}
	heap.Push(&w.timers, t)
}

// stop cancels a timer; it reports whether the timer was still pending.
func (w *World) stop(t *timer) bool {
	if t == nil {
		return false
	}
	if t.index >= 0 {
		heap.Remove(&w.timers, t.index)
		return true
	}
	if t.frozen && t.owner != nil {
		for i, f := range t.owner.frozen {
			if f == t {
				t.owner.frozen = append(t.owner.frozen[:i], t.owner.frozen[i+1:]...)
				t.frozen = false
				return true
			}
		}
	}
	return false
}

// freeze takes a paused client's timers out of the heap.
func (w *World) freeze(c *Client) {
	var keep timerHeap
	for _, t := range w.timers {
		if t.owner == c {
			t.frozen = true
			t.index = -1
			c.frozen = append(c.frozen, t)
		} else {
			keep = append(keep, t)
		}
	}
	w.timers = keep
	for i, t := range w.timers {
		t.index = i
	}
	heap.Init(&w.timers)
}

// thaw puts a resumed client's timers back; those whose time has passed
// are due at once, as a resumed process finds its deadlines gone by.
func (w *World) thaw(c *Client) {
	for _, t := range c.frozen {
		t.frozen = false
		heap.Push(&w.timers, t)
	}
	c.frozen = nil
}

// dueTimers appends the timers whose time has come, in (time, creation)
// order.
func (w *World) dueTimers(out []*timer) []*timer {
	if len(w.timers) == 0 || w.timers[0].atNs > w.nowNs {
		return out // the common case: time moves only when nothing else can happen
	}
	start := len(out)
	// Walk the heap from the root; a node later than now has no earlier
	// descendants.
	stack := append(w.walkBuf[:0], 0)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(w.timers) || w.timers[i].atNs > w.nowNs {
			continue
		}
		out = append(out, w.timers[i])
		stack = append(stack, 2*i+2, 2*i+1)
	}
	w.walkBuf = stack
	due := out[start:]
	slices.SortFunc(due, func(a, b *timer) int {
		if a.atNs != b.atNs {
			return cmp.Compare(a.atNs, b.atNs)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return out
}
