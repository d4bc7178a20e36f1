package scenarios

import (
	"slices"
	"time"

	"github.com/zklab/zklab/sim"
)

// Shrinking after rapid. rapid shrinks the choices an exploration drew,
// as a stream of numbers: it deletes whole draws and lowers others. A
// deleted draw shifts every later one, so that the number of faults is
// read from what were the bits of the seed or of the hold time: a
// shorter stream can carry more faults than the failing run it came
// from (0 became 1, 1 became 3). And the scheduling decisions are draws
// like any other: rapid lowers a few, but a run's hundreds of decisions
// mostly survive, each one that is not the first enabled step kept in the
// file whether it matters or not.
//
// So the failure rapid gives back goes through a second shrinker that
// works on the scenario itself, where nothing shifts: it starts from
// rapid's result if that has no more faults than the run found (else
// from the run found) and keeps a change only if the run still fails the
// same check: drop a fault, a client, a cycle, the hold time;
// then cut the schedule short (past its end a schedule takes the first
// enabled step), and set to the first enabled step each decision, in
// halving blocks then one by one, that the failure does not need. No
// change adds a fault, so the file never has more faults than the run
// found. It is deterministic: bounded by a number of runs
// (shrinkRunsMax), and by ShrinkTime of wall time as a last resort.

// shrinkRunsMax bounds the runs the scenario shrinker makes.
const shrinkRunsMax = 2000

// scenarioShrinker is one shrinking: what must still fail, and the
// budget left.
type scenarioShrinker struct {
	o        *ExploreOptions
	check    string // the check the found run failed first
	runs     int
	deadline time.Time
}

// shrinkFailure returns the smallest failing run it finds from found
// (the first failing run of an exploration) and shrunk (rapid's shrinking
// of it; nil if none): never one with more faults than found.
func shrinkFailure(o *ExploreOptions, found, shrunk *Result) *Result {
	v := found.Verdict.Violations(o.Violations)
	if len(v) == 0 {
		return found
	}
	s := &scenarioShrinker{o: o, check: v[0].Name, deadline: time.Now().Add(o.ShrinkTime)}
	best := found
	if shrunk != nil && len(shrunk.Scenario.Faults) <= len(found.Scenario.Faults) && s.fails(shrunk) {
		best = shrunk
	}
	// The run as its scenario replays it: the schedule is what was
	// recorded, and a replay must fail as the exploration's run did.
	if r := s.try(best.Scenario); r != nil {
		best = r
	} else if best != found {
		if r := s.try(found.Scenario); r != nil {
			best = r
		} else {
			return found
		}
	} else {
		return found
	}
	for improved := true; improved && s.budget(); {
		improved = false
		for _, pass := range []func(*Result) *Result{s.dropFaults, s.dropClient, s.dropCycle, s.dropHold, s.cutSchedule, s.zeroDecisions} {
			if r := pass(best); r != nil && smaller(r.Scenario, best.Scenario) {
				best, improved = r, true
			}
		}
	}
	return best
}

func (s *scenarioShrinker) budget() bool {
	return s.runs < shrinkRunsMax && time.Now().Before(s.deadline)
}

// fails reports whether r failed the shrinking's check.
func (s *scenarioShrinker) fails(r *Result) bool {
	for _, v := range r.Verdict.Violations(s.o.Violations) {
		if v.Name == s.check {
			return true
		}
	}
	return false
}

// try runs sc as a scenario file would replay it and returns the run if
// it fails the check, nil otherwise (or when the budget is spent).
func (s *scenarioShrinker) try(sc *Scenario) *Result {
	if !s.budget() {
		return nil
	}
	s.runs++
	sc = sc.clone()
	sc.Expect, sc.layout = nil, nil
	r, err := Run(sc, RunOptions{Recipe: s.o.New, Lock: s.o.Lock, CheckTimeout: s.o.CheckTimeout, Znodes: s.o.Znodes, Workload: s.o.Program, Model: s.o.Model})
	if err != nil {
		return nil
	}
	if !s.fails(r) {
		r.recycle()
		return nil
	}
	return r
}

// dropFaults drops each fault that the failure does not need, the last
// first.
func (s *scenarioShrinker) dropFaults(best *Result) *Result {
	var out *Result
	for i := len(best.Scenario.Faults) - 1; i >= 0; i-- {
		sc := best.Scenario.clone()
		sc.Faults = slices.Delete(sc.Faults, i, i+1)
		if r := s.try(sc); r != nil {
			best, out = r, r
		}
	}
	return out
}

// dropClient drops a client no fault names, the last first; the clients
// after it move down one.
func (s *scenarioShrinker) dropClient(best *Result) *Result {
	var out *Result
	for k := best.Scenario.Clients; k >= 1 && best.Scenario.Clients > 1; k-- {
		sc := best.Scenario.clone()
		if slices.ContainsFunc(sc.Faults, func(f sim.ScheduledFault) bool { return f.Client == k }) {
			continue
		}
		for i := range sc.Faults {
			if sc.Faults[i].Client > k {
				sc.Faults[i].Client--
			}
		}
		var readers []int
		for _, c := range sc.Readers {
			switch {
			case c < k:
				readers = append(readers, c)
			case c > k:
				readers = append(readers, c-1)
			}
		}
		sc.Readers = readers
		sc.Clients--
		if r := s.try(sc); r != nil {
			best, out = r, r
		}
	}
	return out
}

func (s *scenarioShrinker) dropCycle(best *Result) *Result {
	sc := best.Scenario.clone()
	if sc.Cycles <= 1 {
		return nil
	}
	sc.Cycles--
	return s.try(sc)
}

func (s *scenarioShrinker) dropHold(best *Result) *Result {
	sc := best.Scenario.clone()
	if sc.Hold == 0 {
		return nil
	}
	sc.Hold = 0
	return s.try(sc)
}

// cutSchedule finds, by bisection, the shortest prefix of the schedule
// that still fails (a failure that needs the whole schedule keeps it).
func (s *scenarioShrinker) cutSchedule(best *Result) *Result {
	var out *Result
	lo, hi := 0, len(best.Scenario.Schedule) // hi fails; is lo enough?
	for lo < hi && s.budget() {
		mid := (lo + hi) / 2
		sc := best.Scenario.clone()
		sc.Schedule = sc.Schedule[:mid]
		if r := s.try(sc); r != nil {
			out, hi = r, mid
		} else {
			lo = mid + 1
		}
	}
	return out
}

// zeroDecisions sets to the first enabled step each decision the failure
// does not need: blocks of the decisions that are not, halving from all
// of them to one at a time.
func (s *scenarioShrinker) zeroDecisions(best *Result) *Result {
	var out *Result
	for size := max(nonzero(best.Scenario.Schedule), 1); size >= 1 && s.budget(); size /= 2 {
		for start := 0; s.budget(); start += size {
			idx := nonzeroIndexes(best.Scenario.Schedule)
			if start >= len(idx) {
				break
			}
			sc := best.Scenario.clone()
			for _, i := range idx[start:min(start+size, len(idx))] {
				sc.Schedule[i] = 0
			}
			sc.Schedule = trimSchedule(sc.Schedule)
			if r := s.try(sc); r != nil && smaller(r.Scenario, best.Scenario) {
				best, out = r, r
				start -= size // the same position holds the next block now
			}
		}
	}
	return out
}

func nonzeroIndexes(schedule []int) []int {
	var idx []int
	for i, c := range schedule {
		if c != 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

func nonzero(schedule []int) int { return len(nonzeroIndexes(schedule)) }

// smaller orders scenarios by what a reader must follow: faults, then
// clients, cycles, the decisions that are not the first enabled step,
// the schedule's length, and the hold time.
func smaller(a, b *Scenario) bool {
	ka := []int{len(a.Faults), a.Clients, a.Cycles, nonzero(a.Schedule), len(a.Schedule), int(a.Hold)}
	kb := []int{len(b.Faults), b.Clients, b.Cycles, nonzero(b.Schedule), len(b.Schedule), int(b.Hold)}
	return slices.Compare(ka, kb) < 0
}
