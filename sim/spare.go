package sim

import "sync"

// popSpare takes the last of list, a free list of things kept for reuse
// (pointers, or slices' storage), off it and returns it; the zero value
// (nil) if the list is empty. Its slot is cleared, so that the list's
// storage does not keep alive what it has handed out.
func popSpare[T any](list *[]T) T {
	var zero T
	n := len(*list)
	if n == 0 {
		return zero
	}
	v := (*list)[n-1]
	(*list)[n-1] = zero
	*list = (*list)[:n-1]
	return v
}

// spares is a bounded free list of things a world no longer needs
// (connections' queue storage, request records, tasks), each emptied
// or zeroed, which later worlds take up through a sparePool.
type spares[T any] struct{ list []T }

// pop takes one off the list, the zero value if it is empty.
func (s *spares[T]) pop() T { return popSpare(&s.list) }

// full reports whether the list has no room for another.
func (s *spares[T]) full() bool { return len(s.list) == cap(s.list) }

// keep adds v, if there is room.
func (s *spares[T]) keep(v T) {
	if !s.full() {
		s.list = append(s.list, v)
	}
}

// A sparePool is the pool of spares of one kind the worlds of the
// process share, each list holding at most max. A world takes a list at
// its first need and gives it back, with what it leaves, as it closes:
// the next world of the exploration, or of one running in parallel,
// takes it up.
type sparePool[T any] struct {
	pool sync.Pool
	max  int
}

// take returns *held, the world's list, first taking one from the pool
// (or making one) if it has none.
func (p *sparePool[T]) take(held **spares[T]) *spares[T] {
	if *held == nil {
		s, _ := p.pool.Get().(*spares[T])
		if s == nil {
			s = &spares[T]{list: make([]T, 0, p.max)}
		}
		*held = s
	}
	return *held
}

// give gives the world's list, if it has one, back to the pool.
func (p *sparePool[T]) give(held **spares[T]) {
	if *held != nil {
		p.pool.Put(*held)
		*held = nil
	}
}
