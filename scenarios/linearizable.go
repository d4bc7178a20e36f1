package scenarios

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLinearizable is porcupine.CheckOperationsTimeout with a cheaper way
// to the answer of almost every run: a history is linearizable when one
// order of its operations that respects real time is a legal sequence of
// the model, and the order of their returns always respects real time (an
// operation that returned before another was called also returned before
// it). So when the model takes the operations in the order of their
// returns, the answer is Ok, the answer porcupine's complete search gives;
// otherwise (a violation, or a history whose witness is another order)
// porcupine decides, as before. The verdicts are porcupine's: only the
// search, its goroutines, its timer and its allocations are saved (they
// were 20% of an exploration's allocations, checkSingle and makeEntries in
// BenchmarkExplore5x10's profile).
//
// Models with a partition are left to porcupine: their Step may see only
// one partition's operations.
func checkLinearizable(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	if m.Partition == nil && m.PartitionEvent == nil && m.Init != nil && m.Step != nil && legalInReturnOrder(m, ops) {
		return porcupine.Ok
	}
	return porcupine.CheckOperationsTimeout(m, ops, timeout)
}

// legalInReturnOrder reports whether the model accepts ops taken in the
// order of their returns (ties in the order given: operations that
// return at the same time are concurrent, any order of them respects real
// time).
func legalInReturnOrder(m porcupine.Model, ops []porcupine.Operation) bool {
	var buf [128]int32
	order := buf[:0]
	for i := range ops {
		order = append(order, int32(i))
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		ra, rb := ops[a].Return, ops[b].Return
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	state := m.Init()
	for _, i := range order {
		op := &ops[i]
		if op.Call > op.Return {
			return false // not a well-formed operation: porcupine says what it makes of it
		}
		ok, next := m.Step(state, op.Input, op.Output)
		if !ok {
			return false
		}
		state = next
	}
	return true
}
