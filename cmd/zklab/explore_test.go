package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/scenarios"
)

// The progress line says the budget left while exploring, and that
// shrinking is under way once a schedule failed.
func TestExploreProgressLine(t *testing.T) {
	for _, tc := range []struct {
		p    scenarios.ExploreProgress
		want []string
	}{
		{scenarios.ExploreProgress{Stage: scenarios.StageExploring, Runs: 400, Budget: 1000, Elapsed: 2 * time.Second, Workers: 2}, []string{"400 schedules", "200 schedules/s on 2 workers", "600 schedules left"}},
		{scenarios.ExploreProgress{Stage: scenarios.StageExploring, Runs: 10, Elapsed: 2 * time.Second, TimeBudget: time.Minute, Workers: 1}, []string{"58s left"}},
		{scenarios.ExploreProgress{Stage: scenarios.StageShrinking, Runs: 12, ShrinkRuns: 345, ShrinkLeft: 90 * time.Second, Elapsed: 3 * time.Second}, []string{"violation at schedule 12", "shrinking: 345 runs tried", "at most 1m30s left"}},
	} {
		line := exploreProgressLine(tc.p)
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("progress line %q lacks %q", line, w)
			}
		}
	}
}
