package sim

import (
	"reflect"
	"testing"
)

// An exploration makes a world, a server and clients for every schedule, so a
// few bytes more on either can cost a whole step of the allocator's size
// classes: a server of 1,544 bytes took 1,792. The sizes they are held
// to are classes of Go's allocator (runtime/sizeclasses.go), less the
// header of 8 bytes it puts in front of an object of more than 512 bytes
// that holds pointers; a struct that outgrows one should be trimmed, or
// its class here moved on purpose with the measured cost in the commit.
func TestPerRunStructsFitTheirSizeClass(t *testing.T) {
	const mallocHeaderBytes = 8
	for _, c := range []struct {
		v     any
		class uintptr
	}{
		{Server{}, 1536},
		{World{}, 2688},
		{Client{}, 896},
	} {
		if size := reflect.TypeOf(c.v).Size(); size+mallocHeaderBytes > c.class {
			t.Errorf("%T is %d bytes and the allocator's header %d, past the allocator's class of %d", c.v, size, mallocHeaderBytes, c.class)
		}
	}
}
