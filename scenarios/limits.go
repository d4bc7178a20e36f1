package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
)

// The limits on what a scenario, a run and the CLI accept, in one place.
// Past one of them a scenario file or a flag is refused with one error
// naming the limit; a run that reaches its step, virtual-time or
// wall-time limit ends with the outcome Limit ("limit reached"), which is
// not a violation. Each is chosen so that no input can crash zklab, make
// it allocate without bound, or run for minutes without saying so.
const (
	// MaxClients is the most clients a scenario has: the lock models tell
	// holders apart in a 64-bit set (model.ClientsMax).
	MaxClients = model.ClientsMax
	// MaxCycles is the most lock cycles one client runs.
	MaxCycles = 10_000
	// MaxLockCycles bounds clients × cycles, the run's lock cycles in all.
	// A cycle takes about 25 steps without faults; 10,000 cycles run in a
	// few seconds and a few hundred MB with the trace and porcupine's
	// checks (64 × 1,000 took 38 s and 1.9 GB on the 2-core CI machine).
	MaxLockCycles = 10_000
	// MaxDuration bounds every duration of a scenario: hold, think,
	// session-timeout, and a fault's at= and for=. A day is far past any
	// session timeout, and with MaxLockCycles it keeps every sum the
	// runner makes of them (MaxLockCycles × (hold + think) plus the quiet
	// period) far below the int64 nanoseconds of a time.Duration.
	MaxDuration = 24 * time.Hour
	// MaxLeases is a semaphore's most leases.
	MaxLeases = MaxClients
	// MaxFaults is the most fault lines a scenario has.
	MaxFaults = 1_000
	// MaxExpects is the most expect lines a scenario has.
	MaxExpects = 1_000
	// MaxScheduleChoices is the most scheduling decisions a schedule
	// holds, and the largest one: MaxSteps bounds a run's decisions.
	MaxScheduleChoices = MaxSteps
	// MaxNameBytes bounds a recipe's name.
	MaxNameBytes = 64
	// MaxLineBytes bounds a line of a scenario file.
	MaxLineBytes = 4096
	// MaxFileBytes bounds a scenario file: a schedule of MaxSteps
	// decisions written out takes about 2.5 MB.
	MaxFileBytes = 4 << 20

	// MaxSteps is a run's step limit unless RunOptions.MaxSteps says
	// otherwise. It bounds a run's memory (the trace, the histories) to
	// about 1 GB; the largest workload MaxLockCycles admits needs a
	// quarter of it without faults.
	MaxSteps = 1_000_000
	// MaxVirtualTime is a run's virtual-time limit: MaxLockCycles cycles
	// of MaxDuration's hold and think are past it, and end as "limit
	// reached".
	MaxVirtualTime = 366 * 24 * time.Hour
	// MaxWallTime is a run's wall-time limit unless RunOptions.MaxWallTime
	// says otherwise. The step limit ends every run long before it on the
	// CI machine; it is the last guard, and the only limit that depends
	// on the machine: a run stopped by it does not replay the same.
	MaxWallTime = 2 * time.Minute

	// MaxHerdClients is the most clients of 'zklab herd': the herd
	// recipe's cost grows as N³ (N²/2 notifications, each answered by a
	// getChildren of up to N names); 200 clients take about 7 s on the CI
	// machine, 400 take 38 s.
	MaxHerdClients = 200
	// MaxExploreRuns is the most runs 'zklab explore --runs' asks for.
	MaxExploreRuns = 10_000_000
)

// Limit is the outcome of the "run" check when the run reached its step,
// virtual-time or wall-time limit before the workload ended: the other
// checks judge what ran, liveness is not judged, and the run is neither a
// pass nor a violation.
const Limit Outcome = "limit"

// ErrWallTime is the run's error when it reached its wall-time limit.
var ErrWallTime = fmt.Errorf("%w: wall time", sim.ErrLimit)

// LimitReached reports whether the run reached a limit (the "run" check's
// outcome is Limit).
func (v *Verdict) LimitReached() bool { return v.Check(CheckRun).Outcome == Limit }

// markLimit turns a run stopped by a limit into the Limit outcome: the
// "run" check says which limit, and liveness, which needs the workload to
// have ended, is not judged.
func (r *runner) markLimit(v *Verdict) {
	if r.runErr == nil || !errors.Is(r.runErr, sim.ErrLimit) {
		return
	}
	for i, c := range v.Checks {
		switch c.Name {
		case CheckRun:
			v.Checks[i].Outcome = Limit
		case CheckLiveness:
			v.Checks[i] = CheckResult{Name: CheckLiveness, Outcome: Skipped, Detail: "the run was stopped at its limit"}
		}
	}
}

// Cut returns s quoted for an error message, cut short past 40 bytes: an
// error names the bad value without echoing a megabyte of it.
func Cut(s string) string {
	const keep = 40
	if len(s) <= keep {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:keep]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// clientsMax is MaxClients by the name explore.go checks it with.
const clientsMax = MaxClients

// checkLimits refuses a scenario past the limits, as Parse does a file:
// for a scenario built in code (a test's, exploration's).
func (s *Scenario) checkLimits() error {
	switch {
	case s.Clients < 1 || s.Clients > MaxClients:
		return fmt.Errorf("scenario: %d clients, want 1 to %d", s.Clients, MaxClients)
	case s.Cycles < 1 || s.Cycles > MaxCycles:
		return fmt.Errorf("scenario: %d cycles, want 1 to %d", s.Cycles, MaxCycles)
	case s.Clients*s.Cycles > MaxLockCycles:
		return fmt.Errorf("scenario: %d clients × %d cycles is more lock cycles than a run may have (%d)", s.Clients, s.Cycles, MaxLockCycles)
	case s.Leases < 0 || s.Leases > MaxLeases:
		return fmt.Errorf("scenario: %d leases, want 1 to %d", s.Leases, MaxLeases)
	case len(s.Faults) > MaxFaults:
		return fmt.Errorf("scenario: %d faults, more than a scenario may have (%d)", len(s.Faults), MaxFaults)
	case len(s.Schedule) > MaxScheduleChoices:
		return fmt.Errorf("scenario: %d scheduling decisions, more than a schedule may have (%d)", len(s.Schedule), MaxScheduleChoices)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"hold", s.Hold}, {"think", s.Think}, {"session-timeout", s.SessionTimeout}} {
		if d.d < 0 || d.d > MaxDuration {
			return fmt.Errorf("scenario: %s %v, want 0 to %v", d.name, d.d, MaxDuration)
		}
	}
	for _, f := range s.Faults {
		if f.AtTime < 0 || f.AtTime > MaxDuration || f.Duration < 0 || f.Duration > MaxDuration || f.AtStep > MaxSteps {
			return fmt.Errorf("scenario: fault %s past the limits (times and durations 0 to %v, steps to %d)", formatFault(f), MaxDuration, MaxSteps)
		}
	}
	return nil
}
