package sim

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// sequentialPath formats the suffix as ZooKeeper's "%010d" does, the sign
// counted in the width, for the values a wrapped cversion takes too.
func TestSequentialPathIsPercent010d(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, v int32) {
		if got, want := sequentialPath("/q/lock-", v), "/q/lock-"+fmt.Sprintf("%010d", v); got != want {
			t.Fatalf("sequentialPath(%d) = %q, want %q", v, got, want)
		}
	}
	for _, v := range []int32{0, 1, 9, 10, 999999999, 1000000000, math.MaxInt32, -1, -10, -999999999, -1000000000, math.MinInt32} {
		check(t, v)
	}
	rapid.Check(t, func(rt *rapid.T) { check(rt, rapid.Int32().Draw(rt, "v")) })
}
