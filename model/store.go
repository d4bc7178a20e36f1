package model

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// StoreInput is one critical section's update of the protected store: it
// read the value, then (in a later step) wrote the value read plus one,
// both with the fencing token of its lease. Wrote is false when the
// section never got to its write (its process crashed, or it saw its
// lease lost and stopped).
type StoreInput struct {
	Client int
	Token  int64
	Wrote  bool
}

// StoreOutput is what the store answered. ReadOK and WriteOK are always
// true for an unfenced store; a fenced store refuses a read or a write
// whose token is older than the newest it has seen.
type StoreOutput struct {
	Read    int64
	ReadOK  bool
	WriteOK bool
}

// StoreState is the store's value and, for a fenced store, the newest
// token it has seen.
type StoreState struct {
	Value    int64
	MaxToken int64
}

func describeStoreOp(input, output any) string {
	in, out := input.(StoreInput), output.(StoreOutput)
	s := fmt.Sprintf("c%d token %#x: read ", in.Client, in.Token)
	if out.ReadOK {
		s += fmt.Sprint(out.Read)
	} else {
		s += "refused"
	}
	switch {
	case !in.Wrote || !out.ReadOK:
	case out.WriteOK:
		s += fmt.Sprintf(", wrote %d", out.Read+1)
	default:
		s += ", write refused"
	}
	return s
}

// Store is the model of the unfenced store, as a counter: every critical
// section reads the value and writes it plus one, so a history is
// linearizable only if no two sections overlapped between read and
// write (a lost update is Illegal).
func Store() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return StoreState{} },
		Step: func(state, input, output any) (bool, any) {
			return storeStep(state.(StoreState), input.(StoreInput), output.(StoreOutput))
		},
		DescribeOperation: describeStoreOp,
		DescribeState: func(state any) string {
			return fmt.Sprintf("value %d", state.(StoreState).Value)
		},
	}
}

// FencedStore is the model of the store with fencing (Kleppmann, "How to
// do distributed locking"): it remembers the newest token it has seen, on
// a read or a write, and refuses an operation with an older one. An
// accepted update reads the current value with a token at least the
// newest and writes the value plus one; a section whose read or write was
// refused changes no value, and can only have been refused if a newer
// token came first.
func FencedStore() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return StoreState{} },
		Step: func(state, input, output any) (bool, any) {
			return fencedStoreStep(state.(StoreState), input.(StoreInput), output.(StoreOutput))
		},
		DescribeOperation: describeStoreOp,
		DescribeState: func(state any) string {
			s := state.(StoreState)
			return fmt.Sprintf("value %d, newest token %#x", s.Value, s.MaxToken)
		},
	}
}

func storeStep(s StoreState, in StoreInput, out StoreOutput) (bool, StoreState) {
	if !out.ReadOK || out.Read != s.Value {
		return false, s
	}
	if in.Wrote && out.WriteOK {
		s.Value++
	}
	return true, s
}

func fencedStoreStep(s StoreState, in StoreInput, out StoreOutput) (bool, StoreState) {
	switch {
	case !out.ReadOK:
		return in.Token < s.MaxToken, s
	case in.Wrote && !out.WriteOK:
		// Read with a token that was newest then, refused at the write
		// because a newer one came in between: as one operation, it
		// changes no value and may raise the token.
		s.MaxToken = max(s.MaxToken, in.Token)
		return true, s
	}
	if out.Read != s.Value || in.Token < s.MaxToken {
		return false, s
	}
	s.MaxToken = in.Token
	if in.Wrote {
		s.Value++
	}
	return true, s
}

// StoreStep is the step of FencedStore (fenced) or Store on plain
// values, without porcupine's interfaces (see LockStep).
func StoreStep(fenced bool) func(s StoreState, in StoreInput, out StoreOutput) (bool, StoreState) {
	if fenced {
		return fencedStoreStep
	}
	return storeStep
}
