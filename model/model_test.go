package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

func op(client int, in, out any, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client - 1, Input: in, Output: out, Call: call, Return: ret}
}

func acq(c int, call, ret int64) porcupine.Operation {
	return op(c, LockInput{Kind: Acquire, Client: c}, LockOutput{OK: true}, call, ret)
}

func rel(c int, call, ret int64) porcupine.Operation {
	return op(c, LockInput{Kind: Release, Client: c}, LockOutput{OK: true}, call, ret)
}

func check(t *testing.T, name string, m porcupine.Model, h []porcupine.Operation, want porcupine.CheckResult) {
	t.Helper()
	if got := porcupine.CheckOperationsTimeout(m, h, time.Second); got != want {
		t.Errorf("%s: got %v, want %v", name, got, want)
	}
}

func TestMutex(t *testing.T) {
	check(t, "sequential", Mutex(), []porcupine.Operation{acq(1, 0, 1), rel(1, 2, 3), acq(2, 4, 5), rel(2, 6, 7)}, porcupine.Ok)
	check(t, "overlapping", Mutex(), []porcupine.Operation{acq(1, 0, 1), acq(2, 2, 3), rel(1, 4, 5), rel(2, 6, 7)}, porcupine.Illegal)
	check(t, "concurrent release", Mutex(), []porcupine.Operation{acq(1, 0, 1), rel(1, 2, 6), acq(2, 3, 5)}, porcupine.Ok)
	failed := op(2, LockInput{Kind: Acquire, Client: 2}, LockOutput{}, 2, 3)
	check(t, "failed acquire", Mutex(), []porcupine.Operation{acq(1, 0, 1), failed, rel(1, 4, 5)}, porcupine.Ok)
	check(t, "release unheld", Mutex(), []porcupine.Operation{rel(1, 0, 1)}, porcupine.Illegal)
}

func TestRWLockAndSemaphore(t *testing.T) {
	read := func(c int, k LockOpKind, call, ret int64) porcupine.Operation {
		return op(c, LockInput{Kind: k, Client: c, Shared: true}, LockOutput{OK: true}, call, ret)
	}
	check(t, "two readers", RWLock(), []porcupine.Operation{read(1, Acquire, 0, 1), read(2, Acquire, 2, 3), read(1, Release, 4, 5), read(2, Release, 6, 7)}, porcupine.Ok)
	check(t, "reader and writer", RWLock(), []porcupine.Operation{read(1, Acquire, 0, 1), acq(2, 2, 3), read(1, Release, 4, 5)}, porcupine.Illegal)
	three := []porcupine.Operation{acq(1, 0, 1), acq(2, 2, 3), acq(3, 4, 5)}
	check(t, "three in a semaphore of 3", Semaphore(3), three, porcupine.Ok)
	check(t, "three in a semaphore of 2", Semaphore(2), three, porcupine.Illegal)
}

func upd(c int, token, read int64, wrote, readOK, writeOK bool, call, ret int64) porcupine.Operation {
	return op(c, StoreInput{Client: c, Token: token, Wrote: wrote}, StoreOutput{Read: read, ReadOK: readOK, WriteOK: writeOK}, call, ret)
}

func TestStore(t *testing.T) {
	serial := []porcupine.Operation{upd(1, 5, 0, true, true, true, 0, 3), upd(2, 7, 1, true, true, true, 4, 7)}
	check(t, "serial", Store(), serial, porcupine.Ok)
	check(t, "serial fenced", FencedStore(), serial, porcupine.Ok)
	lost := []porcupine.Operation{upd(1, 5, 0, true, true, true, 0, 6), upd(2, 7, 0, true, true, true, 1, 5), upd(3, 9, 1, true, true, true, 7, 8)}
	check(t, "lost update", Store(), lost, porcupine.Illegal)
	// c1 (token 5) reads 0, c2 (token 7) reads 0 and writes 1, c1's write
	// is refused: the fenced store is safe.
	fenced := []porcupine.Operation{upd(1, 5, 0, true, true, false, 0, 6), upd(2, 7, 0, true, true, true, 1, 5), upd(3, 9, 1, true, true, true, 7, 8)}
	check(t, "fenced refusal", FencedStore(), fenced, porcupine.Ok)
	// A fenced store that took an older token's write is not.
	bad := []porcupine.Operation{upd(2, 7, 0, true, true, true, 0, 1), upd(1, 5, 1, true, true, true, 2, 3)}
	check(t, "older token taken", FencedStore(), bad, porcupine.Illegal)
	refused := []porcupine.Operation{upd(1, 5, 0, false, false, false, 0, 1)}
	check(t, "refused without a newer token", FencedStore(), refused, porcupine.Illegal)
}

func TestDescriptions(t *testing.T) {
	for _, m := range []porcupine.Model{Mutex(), RWLock(), Semaphore(2)} {
		if got := m.DescribeOperation(LockInput{Kind: Acquire, Client: 3}, LockOutput{OK: true, Token: 0x12}); got != "c3 acquire -> token 0x12" {
			t.Errorf("describe: %q", got)
		}
		if got := m.DescribeState(LockState{Writers: 1 << 2, Readers: 3}); got != "held by c3; read by c1,c2" {
			t.Errorf("state: %q", got)
		}
	}
	if got := FencedStore().DescribeOperation(StoreInput{Client: 1, Token: 5, Wrote: true}, StoreOutput{Read: 3, ReadOK: true}); got != "c1 token 0x5: read 3, write refused" {
		t.Errorf("store: %q", got)
	}
	if got := Znode().DescribeState([]any{ZnodeState{Exists: true, Known: true, Data: "x", Version: 2}}); got != `{present data="x" version=2}` {
		t.Errorf("znode: %q", got)
	}
}

// TestZnodeSimHistories checks the simulator's own histories, with
// dropped replies and requests and disconnects, against the znode model.
func TestZnodeSimHistories(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		w := sim.New(sim.Config{Seed: seed, KeepHistory: true, KeepTrace: true, Faults: []sim.ScheduledFault{
			{AtStep: 30, Fault: sim.Fault{Kind: sim.FaultDropReply, Client: 1}},
			{AtStep: 60, Fault: sim.Fault{Kind: sim.FaultDropRequest, Client: 2}},
			{AtStep: 90, Fault: sim.Fault{Kind: sim.FaultDisconnect, Client: 1, Duration: time.Second}},
		}})
		acl := zk.WorldACL(zk.PermAll)
		for i := 1; i <= 2; i++ {
			c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w.Go(c, fmt.Sprintf("c%d", i), func(ctx context.Context) {
				for j := range 15 {
					p := fmt.Sprintf("/n%d", j%3)
					switch (j + i) % 4 {
					case 0:
						c.Create(ctx, p, []byte(fmt.Sprint(i, j)), 0, acl)
					case 1:
						c.Set(ctx, p, []byte(fmt.Sprint(j)), -1)
					case 2:
						c.Get(ctx, p)
					case 3:
						c.Delete(ctx, p, -1)
					}
					c.Create(ctx, "/e", nil, zk.FlagEphemeral, acl)
					c.Exists(ctx, "/e")
				}
			})
		}
		if err := w.Run(); err != nil {
			t.Fatal(err)
		}
		ops := ZnodeOperations(w.History(), w.Trace(), w.StepCount())
		if res := porcupine.CheckOperationsTimeout(Znode(), ops, 5*time.Second); res != porcupine.Ok {
			t.Errorf("seed %d: %v", seed, res)
		}
		w.Close()
	}
}

func TestZnodeIllegal(t *testing.T) {
	in := func(op string) ZnodeInput { return ZnodeInput{Client: 1, Op: op, Path: "/a", Data: "x", Version: -1} }
	h := []porcupine.Operation{
		op(1, in("create"), ZnodeOutput{}, 0, 1),
		op(2, in("create"), ZnodeOutput{}, 2, 3), // created twice
	}
	check(t, "double create", Znode(), h, porcupine.Illegal)
	h = []porcupine.Operation{
		op(1, in("create"), ZnodeOutput{}, 0, 1),
		op(1, in("get"), ZnodeOutput{Data: "y"}, 2, 3),
	}
	check(t, "wrong data", Znode(), h, porcupine.Illegal)
}

// A call that never returned (its client crashed with the request on its
// way) has no outcome: ZnodeOperations makes a write of it ambiguous from
// its call to the client's crash, and leaves a read out. Taken as a
// success, c2's create below would clash with c1's.
func TestZnodeOperationsPendingCalls(t *testing.T) {
	history := []sim.Operation{
		{Client: 2, Op: "createContainer", Path: "/lock", Flags: zk.FlagContainer, CallStep: 15},
		{Client: 2, Op: "exists", Path: "/lock", CallStep: 15},
		{Client: 1, Op: "createContainer", Path: "/lock", Flags: zk.FlagContainer, OutPath: "/lock", Returned: true, CallStep: 24, ReturnStep: 27},
		{Client: 1, Op: "exists", Path: "/lock", Exists: true, Stat: &zk.Stat{}, Returned: true, CallStep: 28, ReturnStep: 30},
	}
	trace := []sim.Event{{Kind: "fault", Client: 2, Step: 16, Detail: "crash c2"}}
	ops := ZnodeOperations(history, trace, 100)
	if len(ops) != 3 {
		t.Fatalf("%d operations, want 3 (the pending read left out): %+v", len(ops), ops)
	}
	pending := ops[0]
	if in := pending.Input.(ZnodeInput); !in.Ambiguous || pending.Call != 15 || pending.Return != 16 {
		t.Errorf("the crashed client's create: ambiguous %v over [%d, %d], want ambiguous over [15, 16]", in.Ambiguous, pending.Call, pending.Return)
	}
	check(t, "crashed client's create and another's", Znode(), ops, porcupine.Ok)

	// The crash bounds the ambiguity: a node absent after it cannot
	// appear later by the crashed client's hand.
	history = []sim.Operation{
		{Client: 2, Op: "create", Path: "/n", CallStep: 5},
		{Client: 1, Op: "exists", Path: "/n", Returned: true, CallStep: 10, ReturnStep: 11},
		{Client: 1, Op: "exists", Path: "/n", Exists: true, Stat: &zk.Stat{}, Returned: true, CallStep: 12, ReturnStep: 13},
	}
	trace = []sim.Event{{Kind: "fault", Client: 2, Step: 6, Detail: "crash c2"}}
	check(t, "created after its client crashed", Znode(), ZnodeOperations(history, trace, 100), porcupine.Illegal)
	check(t, "pending at the end of the run", Znode(), ZnodeOperations(history, nil, 100), porcupine.Ok)
}

// TestZnodeSimHistoriesCrash checks histories in which a client crashes
// with requests on their way, and the server restarts.
func TestZnodeSimHistoriesCrash(t *testing.T) {
	pendingSeen := 0
	for seed := uint64(1); seed <= 20; seed++ {
		w := sim.New(sim.Config{Seed: seed, KeepHistory: true, KeepTrace: true, Faults: []sim.ScheduledFault{
			{AtStep: 20 + seed, Fault: sim.Fault{Kind: sim.FaultCrash, Client: 2}},
			{AtStep: 40, Fault: sim.Fault{Kind: sim.FaultRestart, Duration: time.Second}},
		}})
		acl := zk.WorldACL(zk.PermAll)
		for i := 1; i <= 2; i++ {
			c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w.Go(c, fmt.Sprintf("c%d", i), func(ctx context.Context) {
				for j := range 10 {
					p := fmt.Sprintf("/n%d", j%2)
					flags := int32(0)
					if j%3 == 0 {
						flags = zk.FlagEphemeral
					}
					c.Create(ctx, p, []byte(fmt.Sprint(i, j)), flags, acl)
					c.Set(ctx, p, []byte(fmt.Sprint(j)), -1)
					c.Get(ctx, p)
					c.Delete(ctx, p, -1)
				}
			})
		}
		if err := w.Run(); err != nil {
			t.Fatal(err)
		}
		h := w.History()
		for _, o := range h {
			if o.Pending() {
				pendingSeen++
			}
		}
		ops := ZnodeOperations(h, w.Trace(), w.StepCount())
		if res := porcupine.CheckOperationsTimeout(Znode(), ops, 5*time.Second); res != porcupine.Ok {
			t.Errorf("seed %d: %v", seed, res)
		}
		w.Close()
	}
	if pendingSeen == 0 {
		t.Error("no crash caught a call on its way: the test tests nothing")
	}
}
