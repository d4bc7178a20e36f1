package scenarios

import (
	"os"
	"runtime/debug"
)

// exploreGCPercent is the garbage collector's target while an exploration
// runs, in place of Go's default of 100. An exploration's live heap is
// small (a few MB: one world and its checks per worker), and at the
// default the collector ran every few schedules: 168 collections for
// 1,100 schedules of BenchmarkExplore5x10 on two cores, 21 at 400 (and 10
// at 800, which measured no faster). On two cores the collector's work and
// its stops for both workers cost about a quarter of the CPU time, which
// is what kept `--parallel 2` well short of twice one core. The heap grows
// to about five times the live heap instead of twice.
const exploreGCPercent = 400

// raiseGCPercent sets the collector's target to exploreGCPercent unless
// the process chose its own (the GOGC variable, or a target already
// higher or off), and returns the function that puts it back. It changes
// when memory is collected, never what a run does: runs are deterministic
// whatever the collector does.
func raiseGCPercent() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(exploreGCPercent)
	if old < 0 || old >= exploreGCPercent {
		debug.SetGCPercent(old)
		return func() {}
	}
	return func() { debug.SetGCPercent(old) }
}
