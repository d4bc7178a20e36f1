package sim

// fifo is a queue that reuses its storage: popping advances a head index,
// the slice is rewound when the queue empties, and a push that finds the
// slice full moves what is queued to its front before it grows it, so a
// steady flow of messages allocates nothing even when the queue never
// empties (an ensemble's links: on three servers growing them was a fifth
// of an exploration's allocations).
//
// Popping does not zero the slot it releases: every push overwrites a slot
// whole, so a zero there would only be written over (zeroing a to-client
// message of some 380 bytes, and a to-server one of 420, was 3% of
// BenchmarkSimThroughput). A released message stays reachable, for the
// collector, until a push reuses its slot; that holds at most the queue's
// own high-water mark of messages, already delivered. clear, which drops
// undelivered messages (a reset, a closed connection), does zero them.
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

// nonEmpty is len() > 0 in one load: a queue that empties is rewound (pop,
// drop, clear), so its slice is empty exactly when the queue is. The
// scheduler asks it of every connection's two queues at every step.
func (q *fifo[T]) nonEmpty() bool { return len(q.items) > 0 }

func (q *fifo[T]) push(v T) {
	q.compactIfFull()
	q.items = append(q.items, v)
}

// compactIfFull moves what is queued to the front of the slice when the
// slice is full and its head has advanced, so the next push reuses the
// space popped items left instead of growing the slice.
func (q *fifo[T]) compactIfFull() {
	if len(q.items) == cap(q.items) && q.head > 0 {
		n := copy(q.items, q.items[q.head:])
		q.items = q.items[:n]
		q.head = 0
	}
}

// pushSlot appends an item and returns it, to be filled in place: a
// message is written once, not built aside and copied in (a request on
// the wire is some 400 bytes). The slot may hold a message popped
// earlier, so the caller writes every field of it. The pointer is good
// until the next push.
func (q *fifo[T]) pushSlot() *T {
	q.compactIfFull()
	if n := len(q.items); n < cap(q.items) {
		q.items = q.items[:n+1]
		return &q.items[n]
	}
	var zero T
	q.items = append(q.items, zero)
	return &q.items[len(q.items)-1]
}

func (q *fifo[T]) pop() T {
	v := q.items[q.head]
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	}
	return v
}

// front returns the oldest item in place, for a reader that handles it
// without a copy and then drops it. Nothing may push or clear the queue in
// between.
func (q *fifo[T]) front() *T { return &q.items[q.head] }

// drop removes the oldest item, as pop does, without returning it.
func (q *fifo[T]) drop() {
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	}
}

func (q *fifo[T]) clear() {
	clear(q.items)
	q.items = q.items[:0]
	q.head = 0
}
