package model

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// ZnodeInput is one operation on one znode, taken from the simulator's
// operation history (sim.World.History).
type ZnodeInput struct {
	Client int
	// Session is the session the client had when it made the call
	// (SessionReads holds each session to its own order).
	Session int64
	// Op is the call: create, createContainer, delete, exists, existsW,
	// get, getW, set.
	Op   string
	Path string
	Data string
	// Version is the expected version of a delete or set (-1: any).
	Version int32
	// Vanishes marks the node a create makes as one the server may delete
	// by itself: an ephemeral (its session may expire) or a container.
	Vanishes bool
	// Ambiguous marks an operation whose outcome is unknown: the
	// connection closed with the request possibly applied.
	Ambiguous bool
	// Unseen marks the stand-in creation of a sequential node the history
	// never shows created (its create's reply was lost): its data are
	// unknown.
	Unseen bool
}

// ZnodeOutput is its outcome.
type ZnodeOutput struct {
	Err     string // "" for success, else the zk error's text
	Exists  bool
	Data    string
	Version int32
	// Zxid is the reply header's zxid, 0 if unknown; the models ignore
	// it, SessionOrder reads it.
	Zxid int64
}

// ZnodeState is what one path holds. Known is false for a node whose
// creation the history does not show (a sequential create whose reply was
// lost): its data and version are learned from the first read.
type ZnodeState struct {
	Exists   bool
	Known    bool
	Data     string
	Version  int32
	Vanishes bool
}

func (s ZnodeState) String() string {
	switch {
	case !s.Exists:
		return "absent"
	case !s.Known:
		return "present (created unseen)"
	}
	v := ""
	if s.Vanishes {
		v = ", may vanish"
	}
	return fmt.Sprintf("present data=%q version=%d%s", s.Data, s.Version, v)
}

// Znode is the model of ZooKeeper's data tree, one znode at a time:
// partitioned by path, each partition a register with existence, data and
// version. It checks the single-node calls of a simulator history
// (create, delete, exists, get, set); children listings and multis touch
// several nodes and are left out. It is nondeterministic where the
// server acts on its own: an ephemeral or container node may vanish at
// any moment (its session expired, the container was swept), and an
// ambiguous operation may or may not have been applied.
func Znode() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByPath,
		Init: func() []any {
			return []any{ZnodeState{}}
		},
		Step: func(state, input, output any) []any {
			s, in, out := state.(ZnodeState), input.(ZnodeInput), output.(ZnodeOutput)
			starts := []ZnodeState{s}
			if s.Exists && s.Vanishes {
				starts = append(starts, ZnodeState{})
			}
			var next []any
			for _, st := range starts {
				if in.Ambiguous {
					next = append(next, st)
					if applied, ok := znodeApply(st, in); ok {
						next = append(next, applied)
					}
					continue
				}
				if n, ok := znodeStep(st, in, out); ok {
					next = append(next, n)
				}
			}
			return next
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(ZnodeInput), output.(ZnodeOutput)
			call := fmt.Sprintf("c%d %s %s", in.Client, in.Op, in.Path)
			switch in.Op {
			case "create", "createContainer", "set":
				call += fmt.Sprintf(" %q", in.Data)
			}
			if in.Op == "set" || in.Op == "delete" {
				call += fmt.Sprintf(" v=%d", in.Version)
			}
			switch {
			case in.Ambiguous:
				return call + " -> connection lost"
			case out.Err != "":
				return call + " -> " + out.Err
			case strings.HasPrefix(in.Op, "exists"):
				return fmt.Sprintf("%s -> %v", call, out.Exists)
			case strings.HasPrefix(in.Op, "get"):
				return fmt.Sprintf("%s -> %q v=%d", call, out.Data, out.Version)
			}
			return call + " -> ok"
		},
		DescribeState: func(state any) string { return state.(ZnodeState).String() },
	}
	return nm.ToModel()
}

// znodeApply is the effect of a successful write, for an ambiguous one.
func znodeApply(s ZnodeState, in ZnodeInput) (ZnodeState, bool) {
	switch in.Op {
	case "create", "createContainer":
		if s.Exists {
			return s, false
		}
		return ZnodeState{Exists: true, Known: !in.Unseen, Data: in.Data, Vanishes: in.Vanishes}, true
	case "delete":
		if !s.Exists || (in.Version != -1 && s.Known && s.Version != in.Version) {
			return s, false
		}
		return ZnodeState{}, true
	case "set":
		if !s.Exists || (in.Version != -1 && s.Known && s.Version != in.Version) {
			return s, false
		}
		if !s.Known {
			return s, true // the data and version are learned later
		}
		s.Data, s.Version = in.Data, s.Version+1
		return s, true
	}
	return s, false
}

var (
	errTextNoNode     = zk.ErrNoNode.Error()
	errTextNodeExists = zk.ErrNodeExists.Error()
	errTextBadVersion = zk.ErrBadVersion.Error()
	errTextNotEmpty   = zk.ErrNotEmpty.Error()
)

// znodeStep checks one operation whose outcome is known against s.
func znodeStep(s ZnodeState, in ZnodeInput, out ZnodeOutput) (ZnodeState, bool) {
	versionOK := in.Version == -1 || !s.Known || s.Version == in.Version
	switch in.Op {
	case "create", "createContainer":
		switch out.Err {
		case "":
			return znodeApply(s, in)
		case errTextNodeExists:
			return s, s.Exists
		}
		return s, true // the parent's business: another partition
	case "delete":
		switch out.Err {
		case "":
			if !s.Exists || !versionOK {
				return s, false
			}
			return ZnodeState{}, true
		case errTextNoNode:
			return s, !s.Exists
		case errTextBadVersion:
			return s, s.Exists && (!s.Known || s.Version != in.Version)
		case errTextNotEmpty:
			return s, s.Exists
		}
		return s, true
	case "exists", "existsW":
		if out.Err != "" {
			return s, true
		}
		if out.Exists != s.Exists {
			return s, false
		}
		return learn(s, out.Version, "", false)
	case "get", "getW":
		switch out.Err {
		case "":
			if !s.Exists {
				return s, false
			}
			return learn(s, out.Version, out.Data, true)
		case errTextNoNode:
			return s, !s.Exists
		}
		return s, true
	case "set":
		switch out.Err {
		case "":
			if !s.Exists || !versionOK {
				return s, false
			}
			if s.Known && out.Version != s.Version+1 {
				return s, false
			}
			s.Known, s.Data, s.Version = true, in.Data, out.Version
			return s, true
		case errTextNoNode:
			return s, !s.Exists
		case errTextBadVersion:
			return s, s.Exists && (!s.Known || s.Version != in.Version)
		}
		return s, true
	}
	return s, true
}

// learn checks a read's version (and data) against s, or adopts them if
// s was created unseen.
func learn(s ZnodeState, version int32, data string, withData bool) (ZnodeState, bool) {
	if !s.Exists {
		return s, true
	}
	if !s.Known {
		if withData {
			s.Known, s.Data, s.Version = true, data, version
		}
		return s, true
	}
	if s.Version != version || (withData && s.Data != data) {
		return s, false
	}
	return s, true
}

func partitionByPath(history []porcupine.Operation) [][]porcupine.Operation {
	var paths []string
	parts := map[string][]porcupine.Operation{}
	for _, op := range history {
		p := op.Input.(ZnodeInput).Path
		if _, ok := parts[p]; !ok {
			paths = append(paths, p)
		}
		parts[p] = append(parts[p], op)
	}
	slices.Sort(paths)
	out := make([][]porcupine.Operation, 0, len(paths))
	for _, p := range paths {
		out = append(out, parts[p])
	}
	return out
}

// sequentialName reports whether a node's name ends in ZooKeeper's ten
// sequence digits.
func sequentialName(p string) bool {
	name := path.Base(p)
	if len(name) < 10 {
		return false
	}
	for _, r := range name[len(name)-10:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// isAmbiguous reports an error after which a request may have been
// applied or not.
func isAmbiguous(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing)
}

// notSent reports an error after which the server never saw the request,
// or saw it and applied nothing.
func notSent(err error) bool {
	return errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.Is(err, zk.ErrInvalidPath) || errors.Is(err, zk.ErrShortBuffer) || errors.Is(err, zk.ErrInvalidFlags)
}

// ZnodeOperations turns a simulator history (sim.World.History) into the
// operations of the Znode model, stamped with the simulator's steps.
//
// An ambiguous operation does not end at infinity: a request that was on
// its way when the client gave up its connection reaches the server, if
// at all, before the server learns that the client closed that
// connection. So it ends at the first "closed by the client" event of the
// same client after its return, in the trace (sim.World.Trace); with no
// such event, or no trace, at the last step of the run (lastStep). A
// call that never returned (sim.Operation.Pending: its client crashed
// with the request on its way, or the run ended first) is ambiguous too,
// from its call: a crash throws away what the client had not yet
// delivered, so it ends at the client's first crash or FIN after the
// call, else at lastStep; such a read tells nothing and is left out. A
// sequential node whose creation the history does not show starts out
// possibly present, with unknown data.
func ZnodeOperations(history []sim.Operation, trace []sim.Event, lastStep uint64) []porcupine.Operation {
	// client -> steps after which nothing more of the client's reaches
	// the server on the connection it had: its connections' FINs reaching
	// the server, and its crash.
	fins := map[int][]uint64{}
	for _, e := range trace {
		finished := e.Kind == "server" && strings.HasSuffix(e.Detail, "closed by the client") ||
			e.Kind == "fault" && strings.HasPrefix(e.Detail, string(sim.FaultCrash)+" ")
		if finished && e.Client != 0 {
			fins[e.Client] = append(fins[e.Client], e.Step)
		}
	}
	for _, steps := range fins {
		slices.Sort(steps)
	}
	created := map[string]bool{}
	var ops []porcupine.Operation
	for i := range history {
		o := &history[i]
		in := ZnodeInput{Client: o.Client, Session: o.Session, Op: o.Op, Path: o.Path, Data: string(o.Data), Version: o.Version}
		switch o.Op {
		case "create", "createContainer":
			if o.OutPath != "" {
				in.Path = o.OutPath
			} else if o.Flags&zk.FlagSequence != 0 {
				continue // which node it made, if any, is unknown
			}
			in.Vanishes = o.Flags&zk.FlagEphemeral != 0 || o.Flags == zk.FlagContainer
		case "delete", "exists", "existsW", "get", "getW", "set":
		default:
			continue
		}
		if notSent(o.Err) {
			continue
		}
		ret := int64(o.ReturnStep)
		if o.Pending() || isAmbiguous(o.Err) {
			if in.Op == "exists" || in.Op == "existsW" || in.Op == "get" || in.Op == "getW" {
				continue // a read that never answered tells nothing
			}
			in.Ambiguous = true
			from := o.ReturnStep
			if o.Pending() {
				from = o.CallStep
			}
			ret = int64(lastStep)
			for _, s := range fins[o.Client] {
				if s >= from {
					ret = int64(s)
					break
				}
			}
		}
		out := ZnodeOutput{Exists: o.Exists, Zxid: o.Zxid}
		if in.Ambiguous {
			out.Zxid = 0
		}
		if o.Err != nil && !in.Ambiguous {
			out.Err = o.Err.Error()
		}
		if o.Stat != nil {
			out.Version = o.Stat.Version
		}
		out.Data = string(o.OutData)
		if (in.Op == "create" || in.Op == "createContainer") && out.Err == "" && !in.Ambiguous {
			created[in.Path] = true
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client - 1, Input: in, Output: out, Call: int64(o.CallStep), Return: ret})
	}
	// A sequential node seen but never seen created: created by a create
	// whose reply was lost. Give it a creation at the start, ambiguous.
	var unseen []string
	seen := map[string]bool{}
	for _, op := range ops {
		p := op.Input.(ZnodeInput).Path
		if sequentialName(p) && !created[p] && !seen[p] {
			seen[p] = true
			unseen = append(unseen, p)
		}
	}
	for _, p := range unseen {
		ops = append(ops, porcupine.Operation{
			Input:  ZnodeInput{Op: "create", Path: p, Ambiguous: true, Unseen: true, Vanishes: true},
			Output: ZnodeOutput{},
			Call:   0,
			Return: int64(lastStep),
		})
	}
	return ops
}
