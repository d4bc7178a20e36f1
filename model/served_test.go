package model

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim/wire"
)

func v(n int32) *int32 { return &n }

// served builds a history from request/reply pairs, seq in order.
func served(recs ...wire.HistoryRecord) []wire.HistoryRecord {
	for i := range recs {
		recs[i].Seq = int64(i + 1)
	}
	return recs
}

func req(conn int64, xid int32, op, path, data string) wire.HistoryRecord {
	r := wire.HistoryRecord{Kind: "request", Conn: conn, Xid: xid, Op: op, Path: path, Data: []byte(data)}
	if op == "setData" || op == "delete" {
		r.Version = v(-1)
	}
	return r
}

func rep(conn int64, xid int32, op string, code int32, data string, version int32) wire.HistoryRecord {
	return wire.HistoryRecord{Kind: "reply", Conn: conn, Xid: xid, Op: op, Code: code, Data: []byte(data), Stat: &zk.Stat{Version: version}}
}

func TestCheckServed(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    []wire.HistoryRecord
		want porcupine.CheckResult
	}{
		{"create, set, get", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			req(1, 2, "setData", "/a", "y"), rep(1, 2, "setData", 0, "", 1),
			req(2, 1, "getData", "/a", ""), rep(2, 1, "getData", 0, "y", 1),
		), porcupine.Ok},
		{"a read of data never written", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			req(2, 1, "getData", "/a", ""), rep(2, 1, "getData", 0, "z", 0),
		), porcupine.Illegal},
		{"exists after a delete", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			req(1, 2, "delete", "/a", ""), rep(1, 2, "delete", 0, "", 0),
			req(2, 1, "exists", "/a", ""), rep(2, 1, "exists", 0, "", 0),
		), porcupine.Illegal},
		{"a failed multi changes nothing", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			wire.HistoryRecord{Kind: "request", Conn: 1, Xid: 2, Op: "multi", Ops: []wire.HistorySubOp{
				{Op: "setData", Path: "/a", Data: []byte("m"), Version: v(-1)}, {Op: "create", Path: "/a", Data: []byte("again")}}},
			wire.HistoryRecord{Kind: "reply", Conn: 1, Xid: 2, Op: "multi", Results: []wire.HistorySubOp{
				{Code: 0, Err: ""}, {Code: -110, Err: "NODEEXISTS"}}},
			req(2, 1, "getData", "/a", ""), rep(2, 1, "getData", 0, "x", 0),
		), porcupine.Ok},
		{"a successful multi's set is seen", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			wire.HistoryRecord{Kind: "request", Conn: 1, Xid: 2, Op: "multi", Ops: []wire.HistorySubOp{
				{Op: "setData", Path: "/a", Data: []byte("m"), Version: v(-1)}}},
			wire.HistoryRecord{Kind: "reply", Conn: 1, Xid: 2, Op: "multi", Results: []wire.HistorySubOp{
				{Op: "setData", Stat: &zk.Stat{Version: 1}}}},
			req(2, 1, "getData", "/a", ""), rep(2, 1, "getData", 0, "x", 0),
		), porcupine.Illegal},
		{"a write never answered may have happened", served(
			req(1, 1, "create", "/a", "x"), rep(1, 1, "create", 0, "", 0),
			req(1, 2, "setData", "/a", "y"),
			req(2, 1, "getData", "/a", ""), rep(2, 1, "getData", 0, "y", 1),
		), porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, _ := CheckServed(tc.h, 10*time.Second)
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A sequential create whose reply was lost made a node nobody was told
// the name of; its client, or another, may then use that node (go
// zookeeper's protected create finds it by listing). The history stays
// linearizable: the nodes the create could have made are not checked.
func TestServedUnansweredSequentialCreate(t *testing.T) {
	lost := req(1, 1, "create", "/lock/_c_a-lock-", "")
	lost.Mode = zk.FlagEphemeral | zk.FlagSequence
	h := served(
		lost,
		req(1, 2, "delete", "/lock/_c_a-lock-0000000000", ""), rep(1, 2, "delete", 0, "", 0),
		req(2, 1, "create", "/other", "x"), rep(2, 1, "create", 0, "", 0),
		req(2, 2, "getData", "/other", ""), rep(2, 2, "getData", 0, "y", 0),
	)
	ops := ServedOperations(h)
	for _, o := range ops {
		if p := o.Input.(ZnodeInput).Path; p == "/lock/_c_a-lock-0000000000" {
			t.Errorf("the node an unanswered sequential create may have made is checked: %+v", o)
		}
	}
	// The rest is still checked: /other's read of data never written.
	if res, _, _ := CheckServed(h, time.Second); res != porcupine.Illegal {
		t.Errorf("CheckServed = %v, want Illegal for /other's read", res)
	}
	// Without the lost create, the delete of a node never created is
	// checked, and illegal.
	if res, _, _ := CheckServed(h[1:3], time.Second); res != porcupine.Illegal {
		t.Errorf("CheckServed of a delete of a node never created = %v, want Illegal", res)
	}
}
