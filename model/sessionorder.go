package model

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// SessionOrder checks what SessionReads, one path at a time, cannot: that
// no session's view goes back in time across paths. ZooKeeper answers a
// read with the last zxid its server has applied in the reply's header,
// and a write with its transaction's zxid; a server behind the zxid a
// client has seen refuses its connection (Programmer's Guide,
// "Consistency Guarantees": single system image, "a client will never
// see an older view of the system even if the client fails over to a
// different server with the same session"). So, within a session, an
// operation that returned before (or at the step) another was called has
// a zxid no greater than that one's. A session reading /a at zxid 9 and
// then /b at zxid 7 breaks this, though each path's reads alone may be
// fine.
//
// It reads ZnodeOutput.Zxid and counts only what a server answered from
// its applied state: successes, and reads that found no node. An
// operation with no zxid (ambiguous, or a history without zxids) tells
// nothing. It takes O(n log n) for n operations.
func SessionOrder(ops []porcupine.Operation) error {
	type answered struct {
		call, ret int64
		zxid      int64
		i         int
	}
	bySession := map[int64][]answered{}
	var sessions []int64
	for i, op := range ops {
		in, out := op.Input.(ZnodeInput), op.Output.(ZnodeOutput)
		if in.Session == 0 || out.Zxid == 0 || in.Ambiguous {
			continue
		}
		if out.Err != "" && !(isRead(in.Op) && out.Err == errTextNoNode) {
			continue
		}
		if _, ok := bySession[in.Session]; !ok {
			sessions = append(sessions, in.Session)
		}
		bySession[in.Session] = append(bySession[in.Session], answered{op.Call, op.Return, out.Zxid, i})
	}
	slices.Sort(sessions)
	for _, s := range sessions {
		byCall := bySession[s]
		slices.SortStableFunc(byCall, func(a, b answered) int { return cmp.Compare(a.call, b.call) })
		byRet := slices.Clone(byCall)
		slices.SortStableFunc(byRet, func(a, b answered) int { return cmp.Compare(a.ret, b.ret) })
		// Sweep the calls in order, taking in every operation that
		// returned before the call: the newest zxid among them bounds
		// the call's from below. A return and a call at the same step
		// are one task going on from one call to its next (a step runs
		// one task), and an operation with a reply returns after its
		// call's step.
		newest, j := -1, 0
		for _, b := range byCall {
			for ; j < len(byRet) && byRet[j].ret <= b.call; j++ {
				if newest < 0 || byRet[j].zxid > byRet[newest].zxid {
					newest = j
				}
			}
			if newest >= 0 && byRet[newest].zxid > b.zxid {
				a := byRet[newest]
				return fmt.Errorf("session %#x went back in time: %s answered at zxid %#x, then %s at zxid %#x",
					s, describeZnodeOp(ops[a.i]), a.zxid, describeZnodeOp(ops[b.i]), b.zxid)
			}
		}
	}
	return nil
}

func describeZnodeOp(op porcupine.Operation) string {
	return Znode().DescribeOperation(op.Input, op.Output)
}
