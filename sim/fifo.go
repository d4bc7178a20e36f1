package sim

// fifo is a queue that reuses its storage: popping advances a head index,
// and the slice is rewound when the queue empties, so a steady flow of
// messages allocates nothing.
type fifo[T any] struct {
	items []T
	head  int
}

func (q *fifo[T]) len() int { return len(q.items) - q.head }

func (q *fifo[T]) push(v T) { q.items = append(q.items, v) }

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
