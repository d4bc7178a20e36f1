package sim

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
