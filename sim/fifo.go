package sim

// fifo is a queue that reuses its storage: popping advances a head index,
// the slice is rewound when the queue empties, and a push that finds the
// slice full moves what is queued to its front before it grows it, so a
// steady flow of messages allocates nothing even when the queue never
// empties (an ensemble's links: on three servers growing them was a fifth
// of an exploration's allocations).
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

func (q *fifo[T]) push(v T) {
	if len(q.items) == cap(q.items) && q.head > 0 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
	q.items = append(q.items, v)
}

func (q *fifo[T]) pop() T {
	var zero T
	v := q.items[q.head]
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	}
	return v
}

func (q *fifo[T]) clear() {
	clear(q.items)
	q.items = q.items[:0]
	q.head = 0
}
