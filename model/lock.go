package model

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"
)

// LockOpKind says what a lock operation does.
type LockOpKind int

const (
	// Acquire asks for the lock; its output says whether it was granted.
	Acquire LockOpKind = iota + 1
	// Release gives the lock back. A lease lost with its session is a
	// release too: ZooKeeper deleted the lock node, and the history holds
	// it as a release that ends where ZooKeeper deleted the node.
	Release
)

func (k LockOpKind) String() string {
	switch k {
	case Acquire:
		return "acquire"
	case Release:
		return "release"
	}
	return fmt.Sprintf("LockOpKind(%d)", int(k))
}

// ClientsMax is the most clients a lock model tells apart: holders are
// kept as a bit set in a uint64, so that states stay comparable.
const ClientsMax = 64

// LockInput is the input of a lock operation.
type LockInput struct {
	Kind LockOpKind
	// Client numbers the caller, from 1 to ClientsMax.
	Client int
	// Shared marks the read side of a read/write lock.
	Shared bool
}

// LockOutput is the outcome of a lock operation. A failed acquire (an
// error, a timeout) changes nothing: every recipe promises that it leaves
// no lock node behind. A failed release changes nothing either.
type LockOutput struct {
	OK bool
	// Token is the fencing token of a granted acquire, for the
	// description only.
	Token int64
}

// LockState is the set of clients that hold the lock, exclusively
// (Writers) or shared (Readers), as bit sets over client numbers.
type LockState struct {
	Writers uint64
	Readers uint64
}

func bit(client int) uint64 {
	if client < 1 || client > ClientsMax {
		panic(fmt.Sprintf("model: client %d out of 1..%d", client, ClientsMax))
	}
	return 1 << (client - 1)
}

// String lists the holders, "free" when there are none.
func (s LockState) String() string {
	var parts []string
	for _, set := range []struct {
		name string
		bits uint64
	}{{"held by", s.Writers}, {"read by", s.Readers}} {
		if set.bits == 0 {
			continue
		}
		var cs []string
		for b := set.bits; b != 0; b &= b - 1 {
			cs = append(cs, fmt.Sprintf("c%d", bits.TrailingZeros64(b)+1))
		}
		parts = append(parts, set.name+" "+strings.Join(cs, ","))
	}
	if len(parts) == 0 {
		return "free"
	}
	return strings.Join(parts, "; ")
}

// singleHolders holds LockState values already boxed in an interface:
// free, and each client alone holding the lock exclusively. They are the
// states a mutex's history goes through, and porcupine steps through them
// many times: returning them boxed once saves an allocation per step.
var singleHolders = func() [ClientsMax + 1]any {
	var out [ClientsMax + 1]any
	out[0] = LockState{}
	for c := 1; c <= ClientsMax; c++ {
		out[c] = LockState{Writers: bit(c)}
	}
	return out
}()

// boxLockState returns s as an interface value, a shared one when there
// is one: the same dynamic value as any(s), so equal states stay equal.
func boxLockState(s LockState) any {
	switch {
	case s.Readers != 0:
	case s.Writers == 0:
		return singleHolders[0]
	case s.Writers&(s.Writers-1) == 0:
		return singleHolders[bits.TrailingZeros64(s.Writers)+1]
	}
	return s
}

// lockAdmit is a lock's admission rule: may a client join the holders of
// s, exclusively or shared?
type lockAdmit func(s LockState, shared bool) bool

// step is the lock model's step on plain values: whether the operation
// is legal in state s, and the state after it.
func (admit lockAdmit) step(s LockState, in LockInput, out LockOutput) (bool, LockState) {
	if !out.OK {
		return true, s
	}
	b := bit(in.Client)
	switch in.Kind {
	case Acquire:
		if (s.Writers|s.Readers)&b != 0 || !admit(s, in.Shared) {
			return false, s
		}
		if in.Shared {
			s.Readers |= b
		} else {
			s.Writers |= b
		}
		return true, s
	case Release:
		if in.Shared {
			if s.Readers&b == 0 {
				return false, s
			}
			s.Readers &^= b
			return true, s
		}
		if s.Writers&b == 0 {
			return false, s
		}
		s.Writers &^= b
		return true, s
	}
	return false, s
}

// lockModel builds a lock model from its admission rule.
func lockModel(admit lockAdmit) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return LockState{} },
		Step: func(state, input, output any) (bool, any) {
			ok, next := admit.step(state.(LockState), input.(LockInput), output.(LockOutput))
			if !ok || !output.(LockOutput).OK {
				return ok, state
			}
			return true, boxLockState(next)
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(LockInput), output.(LockOutput)
			side := ""
			if in.Shared {
				side = " shared"
			}
			switch {
			case in.Kind == Acquire && out.OK:
				return fmt.Sprintf("c%d acquire%s -> token %#x", in.Client, side, out.Token)
			case !out.OK:
				return fmt.Sprintf("c%d %v%s -> failed", in.Client, in.Kind, side)
			}
			return fmt.Sprintf("c%d %v%s", in.Client, in.Kind, side)
		},
		DescribeState: func(state any) string { return state.(LockState).String() },
	}
}

func mutexAdmit(s LockState, shared bool) bool {
	return !shared && s.Writers == 0 && s.Readers == 0
}

func rwLockAdmit(s LockState, shared bool) bool {
	if shared {
		return s.Writers == 0
	}
	return s.Writers == 0 && s.Readers == 0
}

func semaphoreAdmit(n int) lockAdmit {
	if n < 1 {
		n = 1
	}
	return func(s LockState, shared bool) bool {
		return !shared && bits.OnesCount64(s.Writers) < n
	}
}

// Mutex is the model of an exclusive lock: at most one holder.
func Mutex() porcupine.Model { return lockModel(mutexAdmit) }

// RWLock is the model of a read/write lock: one writer and no reader, or
// any number of readers.
func RWLock() porcupine.Model { return lockModel(rwLockAdmit) }

// Semaphore is the model of a semaphore of n leases: at most n holders.
func Semaphore(n int) porcupine.Model { return lockModel(semaphoreAdmit(n)) }

// LockStep is the step of Mutex (kind "mutex"), RWLock ("rwlock") or
// Semaphore(n) ("semaphore") on plain values, without porcupine's
// interfaces: whether the operation is legal in s, and the state after
// it. A checker that takes a history through it in one order that
// respects real time, and finds every step legal, has a linearization
// without porcupine's search and without boxing each operation.
func LockStep(kind string, n int) func(s LockState, in LockInput, out LockOutput) (bool, LockState) {
	switch kind {
	case "rwlock":
		return lockAdmit(rwLockAdmit).step
	case "semaphore":
		return semaphoreAdmit(n).step
	}
	return lockAdmit(mutexAdmit).step
}
