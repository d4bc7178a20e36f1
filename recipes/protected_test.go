package recipes

import (
	"fmt"
	"math"
	"testing"
)

// TestProtectedNameIsFmts holds protectedPath to the name fmt writes:
// the session as 16 lowercase hex digits, zero-padded.
func TestProtectedNameIsFmts(t *testing.T) {
	const guid = "0123456789abcdef0123456789abcdef"
	sessions := []int64{0, 1, 9, 10, 15, 16, 0xabcdef, 0x100000000, 0x0123456789abcdef, -1, math.MinInt64, math.MaxInt64}
	for i := range 4096 {
		sessions = append(sessions, int64(uint64(i)*0x9e3779b97f4a7c15))
	}
	for _, s := range sessions {
		want := fmt.Sprintf("/zklab/lock/_c_%s-%016x-lock-", guid, uint64(s))
		if got := protectedPath("/zklab/lock", guid, s, "lock-"); got != want {
			t.Fatalf("session %#x: %q, want %q", uint64(s), got, want)
		}
		if got, want := protectedTag(guid, s), fmt.Sprintf("_c_%s-%016x-", guid, uint64(s)); got != want {
			t.Fatalf("session %#x: tag %q, want %q", uint64(s), got, want)
		}
	}
}
