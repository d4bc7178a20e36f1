package sim

import (
	"testing"

	"pgregory.net/rapid"
)

// TestFifo holds fifo to a plain slice queue over any mix of pushes,
// pops and clears, the compaction a push does on a full slice included,
// and checks that a queue that never empties does not grow its storage.
func TestFifo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q fifo[int]
		var want []int
		next := 0
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 9), 0, 300).Draw(t, "ops") {
			switch {
			case op < 5:
				q.push(next)
				want = append(want, next)
				next++
			case op < 9 && len(want) > 0:
				if got := q.pop(); got != want[0] {
					t.Fatalf("popped %d, want %d", got, want[0])
				}
				want = want[1:]
			case op == 9:
				q.clear()
				want = nil
			}
			if q.len() != len(want) {
				t.Fatalf("len %d, want %d", q.len(), len(want))
			}
		}
		for _, w := range want {
			if got := q.pop(); got != w {
				t.Fatalf("drained %d, want %d", got, w)
			}
		}
	})
	var q fifo[int]
	for i := range 3 {
		q.push(i)
	}
	for range 10000 {
		q.push(0)
		q.pop()
	}
	if c := cap(q.items); c > 8 {
		t.Errorf("a queue of 3 that never empties grew its storage to %d", c)
	}
}
