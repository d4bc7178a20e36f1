package sim

import (
	"cmp"
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
	// event is what the timer does, if fire is nil: one of its owner's
	// own timers (World.afterClient).
	event clientEvent
}

// run does what the timer is for, once it has left the heap.
func (t *timer) run() {
	if t.fire != nil {
		t.fire()
		return
	}
	t.owner.timerFired(t.event)
}

// timerHeap is a min-heap of timers by (time, creation). Its operations
// are container/heap's, step for step, written for timers: through the
// package's interface each comparison and swap was a call of its own.
type timerHeap []*timer

func (h timerHeap) less(i, j int) bool {
	if h[i].atNs != h[j].atNs {
		return h[i].atNs < h[j].atNs
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

// push is heap.Push.
func (h *timerHeap) push(t *timer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(len(*h) - 1)
}

// remove is heap.Remove: it takes out the timer at i.
func (h *timerHeap) remove(i int) {
	n := len(*h) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	old := *h
	old[n].index = -1
	old[n] = nil
	*h = old[:n]
}

// init is heap.Init.
func (h timerHeap) init() {
	n := len(h)
	for i := n/2 - 1; i >= 0; i-- {
		h.down(i, n)
	}
}

func (h timerHeap) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h timerHeap) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(j2, j1) {
			j = j2 // right child
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// after schedules fire at now+delayNs on behalf of owner (nil: the world's
// own timer, which no client fault can freeze).
func (w *World) after(delayNs int64, owner *Client, what string, fire func()) *timer {
	t := new(timer)
	w.arm(t, delayNs, owner, what, fire)
	return t
}

// afterClient is after for one of c's own timers, which does ev when it
// fires (Client.timerFired) rather than call a function. It arms rec, the
// client's record for that timer, if rec is idle: fired, or stopped, or
// never armed. Else it arms a new record, as after does: a timer still
// pending goes on as it would have. The one field that points to the
// timer of rec's kind is the only pointer to rec that outlives a step,
// and it is set to what afterClient returns, so stopping it stops this
// timer whether or not it is rec, as before.
func (w *World) afterClient(rec *timer, delayNs int64, c *Client, what string, ev clientEvent) *timer {
	t := rec
	if t.seq != 0 && (t.index >= 0 || t.frozen) {
		t = new(timer)
	}
	w.arm(t, delayNs, c, what, nil)
	t.event = ev
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
	w.timers.push(t)
}

// stop cancels a timer; it reports whether the timer was still pending.
func (w *World) stop(t *timer) bool {
	if t == nil {
		return false
	}
	if t.index >= 0 {
		w.timers.remove(t.index)
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
	w.timers.init()
}

// thaw puts a resumed client's timers back; those whose time has passed
// are due at once, as a resumed process finds its deadlines gone by.
func (w *World) thaw(c *Client) {
	for _, t := range c.frozen {
		t.frozen = false
		w.timers.push(t)
	}
	c.frozen = nil
}

// dueTimers appends the timers whose time has come, in (time, creation)
// order.
func (w *World) dueTimers(out []*timer) []*timer {
	if len(w.timers) == 0 || w.timers[0].atNs > w.nowNs {
		return out // the common case: time moves only when nothing else can happen
	}
	if w.onlyRootDue() {
		return append(out, w.timers[0]) // as a rule one timer is due at a time
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

// onlyRootDue reports whether the heap's root, due, is the only timer
// due: neither of its children is (a node later than now has no earlier
// descendants).
func (w *World) onlyRootDue() bool {
	h := w.timers
	return (len(h) < 2 || h[1].atNs > w.nowNs) && (len(h) < 3 || h[2].atNs > w.nowNs)
}
