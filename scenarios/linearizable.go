package scenarios

import (
	"cmp"
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
	state := m.Init()
	for _, i := range returnOrder(buf[:0], len(ops), func(i int) int64 { return ops[i].Return }) {
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

// returnOrder appends to order the indices 0..n-1 sorted by ret, stably.
// Each return is read once, kept beside its index while they are sorted.
func returnOrder(order []int32, n int, ret func(i int) int64) []int32 {
	var buf [insertionOrderMax]retIndex
	keyed := buf[:0]
	if n > len(buf) {
		keyed = make([]retIndex, 0, n)
	}
	for i := range n {
		keyed = append(keyed, retIndex{ret(i), int32(i)})
	}
	// A run's operations come nearly in return order: an acquire returns
	// in call order, a release a few places late.
	sortByReturn(keyed)
	for _, k := range keyed {
		order = append(order, k.i)
	}
	return order
}

// retIndex is an operation's index with its return.
type retIndex struct {
	ret int64
	i   int32
}

// sortByReturn sorts s by return, stably, for a slice that comes nearly
// in order (a run's operations by return): an insertion sort moves each
// element a few places, where SortStableFunc's merges called the
// comparison all along (0.5% of an exploration). Past insertionOrderMax
// elements, SortStableFunc bounds the work whatever the order.
//
// It and sortSpansByStart read their keys as fields: the generic sort
// they replace called a key function through its dictionary for every
// comparison, which no inlining could reach (0.6% of an exploration).
func sortByReturn(s []retIndex) {
	if len(s) > insertionOrderMax {
		slices.SortStableFunc(s, func(a, b retIndex) int { return cmp.Compare(a.ret, b.ret) })
		return
	}
	for i := 1; i < len(s); i++ {
		v, j := s[i], i
		for ; j > 0 && s[j-1].ret > v.ret; j-- { // past greater keys only: stable
			s[j] = s[j-1]
		}
		s[j] = v
	}
}

// sortSpansByStart sorts s by start, stably, as sortByReturn does: a
// run's leases' spans come in the order of the acquires' calls, nearly
// that of their starts.
func sortSpansByStart(s []span) {
	if len(s) > insertionOrderMax {
		slices.SortStableFunc(s, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		return
	}
	for i := 1; i < len(s); i++ {
		v, j := s[i], i
		for ; j > 0 && s[j-1].start > v.start; j-- {
			s[j] = s[j-1]
		}
		s[j] = v
	}
}

// insertionOrderMax is the most elements sortByReturn sorts by
// insertion: a history of a few hundred operations, nearly in order.
const insertionOrderMax = 512

// typedOp is one operation of a history before porcupine boxes its input
// and output in interfaces (two allocations an operation).
type typedOp[I, O any] struct {
	client    int // from 1
	in        I
	out       O
	call, ret int64
}

// boxOps is ops as porcupine operations.
func boxOps[I, O any](ops []typedOp[I, O]) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		out = append(out, porcupine.Operation{ClientId: o.client - 1, Input: o.in, Output: o.out, Call: o.call, Return: o.ret})
	}
	return out
}

// typedLegalInReturnOrder is legalInReturnOrder on plain values, with the
// model's step on them (model.LockStep, model.StoreStep), starting from
// the zero state, which is every model's Init here.
func typedLegalInReturnOrder[S, I, O any](ops []typedOp[I, O], step func(S, I, O) (bool, S)) bool {
	var buf [128]int32
	var state S
	for _, i := range returnOrder(buf[:0], len(ops), func(i int) int64 { return ops[i].ret }) {
		op := &ops[i]
		if op.call > op.ret {
			return false
		}
		ok, next := step(state, op.in, op.out)
		if !ok {
			return false
		}
		state = next
	}
	return true
}
