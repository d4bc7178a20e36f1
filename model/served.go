package model

import (
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// ServedOperations turns a served history (the JSON lines of `zklab
// serve --history`, read with wire.ReadHistory) into operations of the
// Znode model. Each request is paired with its reply by connection and
// xid; the operation is called at the request's seq and returns at the
// reply's. A successful multi becomes one operation per create, delete
// and setData in it, all over the same interval (the model checks each
// path on its own, so the multi's atomicity across paths is not checked).
// A write with no reply (its connection closed first) may or may not have
// been applied: it is ambiguous, open until the end of the history. Reads
// with no reply, children listings, ACLs, syncs and watches are left
// out, and so are the root and /zookeeper, which exist before any
// history starts.
func ServedOperations(records []wire.HistoryRecord) []porcupine.Operation {
	type key struct {
		conn int64
		xid  int32
	}
	requests := map[key]*wire.HistoryRecord{}
	var order []key
	var ops []porcupine.Operation
	var lastSeq int64
	for i := range records {
		r := &records[i]
		lastSeq = r.Seq
		switch r.Kind {
		case "request":
			k := key{r.Conn, r.Xid}
			requests[k] = r
			order = append(order, k)
		case "reply":
			k := key{r.Conn, r.Xid}
			req, ok := requests[k]
			if !ok {
				continue
			}
			delete(requests, k)
			ops = append(ops, servedOps(req, r, r.Seq)...)
		}
	}
	var unknownPrefixes []string
	for _, k := range order {
		req, ok := requests[k]
		if !ok {
			continue
		}
		delete(requests, k)
		unknownPrefixes = append(unknownPrefixes, unansweredSequential(req)...)
		ops = append(ops, servedOps(req, nil, lastSeq+1)...)
	}
	if len(unknownPrefixes) == 0 {
		return ops
	}
	// A sequential create that never answered may have made a node whose
	// name nobody was told (a lost reply): the nodes its name could have
	// are not checked, as the model cannot know which of them it made.
	kept := ops[:0]
	for _, o := range ops {
		path := o.Input.(ZnodeInput).Path
		if !slices.ContainsFunc(unknownPrefixes, func(prefix string) bool { return strings.HasPrefix(path, prefix) }) {
			kept = append(kept, o)
		}
	}
	return kept
}

// unansweredSequential is the requested paths (the prefixes of the names
// the server gives) of the sequential creates of a request that got no
// reply, a multi's included.
func unansweredSequential(req *wire.HistoryRecord) []string {
	isSequentialCreate := func(op string, mode int32) bool {
		return strings.HasPrefix(op, "create") && mode&zk.FlagSequence != 0
	}
	if req.Op == "multi" {
		var prefixes []string
		for _, sub := range req.Ops {
			if isSequentialCreate(sub.Op, sub.Mode) {
				prefixes = append(prefixes, sub.Path)
			}
		}
		return prefixes
	}
	if isSequentialCreate(req.Op, req.Mode) {
		return []string{req.Path}
	}
	return nil
}

// servedOps is the Znode operations of one request and its reply (nil:
// none came), returning at ret.
func servedOps(req, rep *wire.HistoryRecord, ret int64) []porcupine.Operation {
	client := int(req.Conn)
	op := func(in ZnodeInput, out ZnodeOutput) porcupine.Operation {
		in.Client = client
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: req.Seq, Return: ret}
	}
	if req.Op == "multi" {
		if rep == nil || rep.Code != 0 || len(rep.Results) != len(req.Ops) {
			return nil // unknown, or refused as a whole
		}
		for _, res := range rep.Results {
			// A failed multi answers every op with an error result (op
			// "error"), OK for those before the failing one: nothing of
			// it was applied (MultiResponse, DataTree.processTxn).
			if res.Op == "error" || res.Code != 0 {
				return nil
			}
		}
		var out []porcupine.Operation
		for i, sub := range req.Ops {
			res := rep.Results[i]
			in, ok := znodeInput(sub.Op, sub.Path, sub.Data, sub.Version, sub.Mode, false, res.Path)
			if !ok || !checkedPath(in.Path) {
				continue
			}
			o := ZnodeOutput{}
			if res.Stat != nil {
				o.Version = res.Stat.Version
			}
			out = append(out, op(in, o))
		}
		return out
	}
	outPath := ""
	if rep != nil {
		outPath = rep.Path
	}
	in, ok := znodeInput(req.Op, req.Path, req.Data, req.Version, req.Mode, req.Watch, outPath)
	if !ok {
		return nil
	}
	if rep == nil {
		if strings.HasPrefix(in.Op, "exists") || strings.HasPrefix(in.Op, "get") {
			return nil // a read that never answered tells nothing
		}
		if in.Path == "" {
			return nil // a sequential create: which node it made, if any, is unknown
		}
		in.Ambiguous = true
		return []porcupine.Operation{op(in, ZnodeOutput{})}
	}
	if in.Path == "" || !checkedPath(in.Path) {
		return nil
	}
	out := ZnodeOutput{Data: string(rep.Data)}
	if rep.Stat != nil {
		out.Version = rep.Stat.Version
	}
	code := sim.Code(rep.Code)
	switch {
	case strings.HasPrefix(in.Op, "exists"):
		// exists answers a missing node with NONODE and no Stat.
		out.Exists = code == sim.CodeOK
		if code != sim.CodeOK && code != sim.CodeNoNode {
			out.Err = code.Error().Error()
		}
	case code != sim.CodeOK:
		out.Err = code.Error().Error()
	}
	return []porcupine.Operation{op(in, out)}
}

// znodeInput maps a served op onto the Znode model's, with the path a
// create's reply named (outPath). It reports false for an op the model
// does not check. A sequential create whose name is unknown gets Path "".
func znodeInput(op, path string, data []byte, version *int32, mode int32, watch bool, outPath string) (ZnodeInput, bool) {
	in := ZnodeInput{Path: path, Data: string(data), Version: -1}
	if version != nil {
		in.Version = *version
	}
	switch op {
	case "create", "create2", "createContainer", "createTTL":
		in.Op = "create"
		if op == "createContainer" {
			in.Op = "createContainer"
		}
		if mode&zk.FlagSequence != 0 {
			in.Path = outPath // "" if it failed or never answered
		}
		// An ephemeral goes with its session, a container when it is
		// empty, a TTL node when it expires: the server may delete each
		// on its own.
		in.Vanishes = mode&zk.FlagEphemeral != 0 || op == "createContainer" || op == "createTTL" || mode == zk.FlagContainer
	case "delete":
		in.Op = "delete"
	case "setData":
		in.Op = "set"
	case "exists":
		in.Op = "exists"
		if watch {
			in.Op = "existsW"
		}
	case "getData":
		in.Op = "get"
		if watch {
			in.Op = "getW"
		}
	default:
		return in, false
	}
	return in, true
}

// checkedPath reports whether the model checks a path: not the root and
// not /zookeeper's, which a server holds from the start.
func checkedPath(p string) bool {
	return p != "/" && p != "/zookeeper" && !strings.HasPrefix(p, "/zookeeper/")
}

// CheckServed checks a served history against the Znode model within
// timeout: porcupine.Ok, Illegal (with the info to visualize it), or
// Unknown when the timeout ran out.
func CheckServed(records []wire.HistoryRecord, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo, int) {
	ops := ServedOperations(records)
	res, info := porcupine.CheckOperationsVerbose(Znode(), ops, timeout)
	return res, info, len(ops)
}
