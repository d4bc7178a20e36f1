package scenarios

import (
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
)

// BenchmarkRun5x10 measures one complete schedule of 5 clients × 10 lock
// cycles of fair-lock with a random walk and a fault, checks included.
func BenchmarkRun5x10(b *testing.B) {
	b.ReportAllocs()
	steps := uint64(0)
	for i := range b.N {
		sc := &Scenario{Recipe: "fair-lock", Clients: 5, Cycles: 10, Hold: time.Millisecond, Seed: uint64(i),
			Faults: []sim.ScheduledFault{{AtStep: 200, Fault: sim.Fault{Kind: sim.FaultDropReply, Client: 2}}}}
		res, err := Run(sc, RunOptions{Strategy: sim.RandomWalk{}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict.Failed() {
			b.Fatal(res.Verdict)
		}
		steps += res.Steps
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/run")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}
