package scenarios

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"pgregory.net/rapid"
)

// The shortcut never changes a verdict: on random lock and store
// histories, small enough for porcupine to answer, checkLinearizable and
// porcupine agree, Ok, Illegal and all.
func TestCheckLinearizableAgreesWithPorcupine(t *testing.T) {
	models := []struct {
		name  string
		model porcupine.Model
		lock  bool
		kind  string // LockStep's kind
	}{
		{"mutex", model.Mutex(), true, "mutex"},
		{"rwlock", model.RWLock(), true, "rwlock"},
		{"semaphore", model.Semaphore(2), true, "semaphore"},
		{"store", model.Store(), false, ""},
		{"fenced-store", model.FencedStore(), false, "fenced"},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			oks := 0
			rapid.Check(t, func(t *rapid.T) {
				n := rapid.IntRange(0, 10).Draw(t, "ops")
				var ops []porcupine.Operation
				for i := range n {
					client := rapid.IntRange(1, 3).Draw(t, "client")
					call := int64(rapid.IntRange(0, 20).Draw(t, "call"))
					op := porcupine.Operation{ClientId: client - 1, Call: call, Return: call + int64(rapid.IntRange(0, 6).Draw(t, "length"))}
					if m.lock {
						kind := model.Acquire
						if rapid.Bool().Draw(t, "release") {
							kind = model.Release
						}
						op.Input = model.LockInput{Kind: kind, Client: client, Shared: rapid.Bool().Draw(t, "shared")}
						op.Output = model.LockOutput{OK: rapid.IntRange(0, 4).Draw(t, "ok") > 0, Token: int64(i)}
					} else {
						op.Input = model.StoreInput{Client: client, Token: int64(rapid.IntRange(0, 4).Draw(t, "token")), Wrote: rapid.IntRange(0, 3).Draw(t, "wrote") > 0}
						op.Output = model.StoreOutput{Read: int64(rapid.IntRange(0, 3).Draw(t, "read")), ReadOK: rapid.IntRange(0, 4).Draw(t, "read_ok") > 0, WriteOK: rapid.IntRange(0, 4).Draw(t, "write_ok") > 0}
					}
					ops = append(ops, op)
				}
				want := porcupine.CheckOperationsTimeout(m.model, ops, 0)
				if got := checkLinearizable(m.model, ops, 0); got != want {
					t.Fatalf("checkLinearizable says %v, porcupine %v, on %v", got, want, ops)
				}
				// The plain-value steps take the same decisions as the
				// models' own.
				var typed bool
				if m.lock {
					var lops []typedOp[model.LockInput, model.LockOutput]
					for _, o := range ops {
						lops = append(lops, typedOp[model.LockInput, model.LockOutput]{o.ClientId + 1, o.Input.(model.LockInput), o.Output.(model.LockOutput), o.Call, o.Return})
					}
					typed = typedLegalInReturnOrder(lops, model.LockStep(m.kind, 2))
				} else {
					var sops []typedOp[model.StoreInput, model.StoreOutput]
					for _, o := range ops {
						sops = append(sops, typedOp[model.StoreInput, model.StoreOutput]{o.ClientId + 1, o.Input.(model.StoreInput), o.Output.(model.StoreOutput), o.Call, o.Return})
					}
					typed = typedLegalInReturnOrder(sops, model.StoreStep(m.kind == "fenced"))
				}
				if boxed := legalInReturnOrder(m.model, ops); typed != boxed {
					t.Fatalf("in return order, the plain-value step says %v, the model %v, on %v", typed, boxed, ops)
				}
				if typed && want != porcupine.Ok {
					t.Fatalf("legal in return order, porcupine says %v, on %v", want, ops)
				}
				if want == porcupine.Ok {
					oks++
				}
			})
			if oks == 0 {
				t.Errorf("no linearizable history drawn: the shortcut was never held to porcupine")
			}
		})
	}
}

// Sequential histories in return order are the common case, and the
// shortcut answers them without porcupine; one out of order still gets
// porcupine's answer.
func TestLegalInReturnOrder(t *testing.T) {
	acq := func(c int, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c - 1, Input: model.LockInput{Kind: model.Acquire, Client: c}, Output: model.LockOutput{OK: true}, Call: call, Return: ret}
	}
	rel := func(c int, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c - 1, Input: model.LockInput{Kind: model.Release, Client: c}, Output: model.LockOutput{OK: true}, Call: call, Return: ret}
	}
	handoff := []porcupine.Operation{acq(1, 0, 2), acq(2, 1, 9), rel(1, 3, 5), rel(2, 10, 11)}
	if !legalInReturnOrder(model.Mutex(), handoff) {
		t.Errorf("a handoff in return order is not legal")
	}
	// c2's acquire returns before c1's release returns, but the release
	// was called first: linearizable, though not in return order.
	early := []porcupine.Operation{acq(1, 0, 2), rel(1, 3, 8), acq(2, 1, 6)}
	if legalInReturnOrder(model.Mutex(), early) {
		t.Errorf("an acquire that returned before the release did is legal in return order")
	}
	if got := checkLinearizable(model.Mutex(), early, 0); got != porcupine.Ok {
		t.Errorf("checkLinearizable = %v on a linearizable history, want Ok", got)
	}
	both := []porcupine.Operation{acq(1, 0, 2), acq(2, 3, 4)}
	if got := checkLinearizable(model.Mutex(), both, 0); got != porcupine.Illegal {
		t.Errorf("checkLinearizable = %v on two holders, want Illegal", got)
	}
}
