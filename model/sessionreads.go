package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// SessionReads is the model of what ZooKeeper promises an ensemble's
// clients, one znode at a time: writes are linearizable (they go to the
// leader and take effect, in zxid order, on the one committed history),
// while a read is served by the server the session is connected to and
// may be stale, as long as each session's reads move forward in that
// history and see the session's own writes. The Programmer's Guide,
// "Consistency Guarantees": sequential consistency and a single system
// image ("a client will see the same view of the service regardless of
// the server that it connects to ... it will never see an older view"),
// but not "simultaneously consistent cross-client views"; sync before a
// read to catch up.
//
// The state of a path is its committed history (every version it has
// had, oldest first) and, for every session that has read or written it,
// the oldest version the session may still read: a read returns one of
// the versions from there to the newest at its linearization point, and
// moves the session's mark to the version it saw; a write, whatever its
// outcome (a failed create or delete is an error transaction with a zxid
// of its own), moves it to the newest. An ambiguous write moves nothing:
// the client never learned its zxid.
//
// Partitioned by path, it checks each path's order, not the order across
// paths: a session that reads /a at a new zxid and then /b at an older
// one is not caught here (a necessary condition, checked in linear time
// per path); SessionOrder checks that order from the replies' zxids. As
// in Znode, an ephemeral or a container may
// vanish at any moment, and an ambiguous write may or may not be applied.
//
// A new session starts from the oldest version: go-zookeeper forgets the
// zxid it had seen when its session expires, so a client may reconnect,
// with its new session, to a server behind its old session's writes.
func SessionReads() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByPath,
		Init: func() []any {
			return []any{sessionReadsState{versions: encodeVersions([]ZnodeState{{}})}}
		},
		Step: func(state, input, output any) []any {
			st, in, out := state.(sessionReadsState), input.(ZnodeInput), output.(ZnodeOutput)
			versions := decodeVersions(st.versions)
			marks := decodeMarks(st.marks)
			// The server may remove a vanishing node at any moment: before
			// this operation, the history may have gained its removal.
			histories := [][]ZnodeState{versions}
			if last := versions[len(versions)-1]; last.Exists && last.Vanishes {
				histories = append(histories, append(slices.Clone(versions), ZnodeState{}))
			}
			var next []any
			for _, h := range histories {
				for _, n := range sessionStep(h, marks, in, out) {
					next = append(next, n)
				}
			}
			return next
		},
		DescribeOperation: func(input, output any) string {
			in := input.(ZnodeInput)
			return fmt.Sprintf("session %#x: %s", in.Session, Znode().DescribeOperation(input, output))
		},
		DescribeState: func(state any) string { return describeSessionReads(state.(sessionReadsState)) },
	}
	return nm.ToModel()
}

func describeSessionReads(st sessionReadsState) string {
	versions := decodeVersions(st.versions)
	return fmt.Sprintf("now %s (%d versions); marks %s", versions[len(versions)-1], len(versions), cmpOrNone(st.marks))
}

func cmpOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// sessionReadsState is comparable, as porcupine's default equality
// needs: the versions and the marks encoded as strings.
type sessionReadsState struct {
	versions string // encodeVersions
	marks    string // "session:index," sorted by session
}

// isRead reports whether the operation only reads.
func isRead(op string) bool {
	switch op {
	case "exists", "existsW", "get", "getW":
		return true
	}
	return false
}

// sessionStep is the states after one operation on the history h.
func sessionStep(h []ZnodeState, marks []sessionMark, in ZnodeInput, out ZnodeOutput) []sessionReadsState {
	last := len(h) - 1
	if isRead(in.Op) {
		if out.Err != "" && out.Err != errTextNoNode {
			return []sessionReadsState{encodeState(h, marks)}
		}
		from := markOf(marks, in.Session)
		// The oldest version the read can have seen leaves the most
		// freedom to the session's later reads: it is the one state to
		// go on with.
		for i := from; i <= last; i++ {
			if _, ok := znodeStep(h[i], in, out); ok {
				return []sessionReadsState{encodeState(h, setMark(marks, in.Session, i))}
			}
		}
		return nil
	}
	if in.Ambiguous {
		states := []sessionReadsState{encodeState(h, marks)}
		if applied, ok := znodeApply(h[last], in); ok {
			states = append(states, encodeState(append(slices.Clone(h), applied), marks))
		}
		return states
	}
	n, ok := znodeStep(h[last], in, out)
	if !ok {
		return nil
	}
	if n != h[last] {
		h = append(slices.Clone(h), n)
	}
	return []sessionReadsState{encodeState(h, setMark(marks, in.Session, len(h)-1))}
}

type sessionMark struct {
	session int64
	index   int
}

func markOf(marks []sessionMark, session int64) int {
	for _, m := range marks {
		if m.session == session {
			return m.index
		}
	}
	return 0
}

func setMark(marks []sessionMark, session int64, index int) []sessionMark {
	out := slices.Clone(marks)
	for i := range out {
		if out[i].session == session {
			out[i].index = index
			return out
		}
	}
	out = append(out, sessionMark{session, index})
	slices.SortFunc(out, func(a, b sessionMark) int {
		switch {
		case a.session < b.session:
			return -1
		case a.session > b.session:
			return 1
		}
		return 0
	})
	return out
}

func encodeState(h []ZnodeState, marks []sessionMark) sessionReadsState {
	var b strings.Builder
	for _, m := range marks {
		b.WriteString(strconv.FormatInt(m.session, 16) + ":" + strconv.Itoa(m.index) + ",")
	}
	return sessionReadsState{versions: encodeVersions(h), marks: b.String()}
}

func decodeMarks(s string) []sessionMark {
	var out []sessionMark
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		a, b, _ := strings.Cut(f, ":")
		session, err1 := strconv.ParseInt(a, 16, 64)
		index, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil {
			panic(fmt.Sprintf("model: corrupt session mark %q", f))
		}
		out = append(out, sessionMark{session, index})
	}
	return out
}

// encodeVersions writes each version as a line: flags, version, quoted
// data.
func encodeVersions(h []ZnodeState) string {
	var b strings.Builder
	for _, v := range h {
		flags := []byte("---")
		if v.Exists {
			flags[0] = 'e'
		}
		if v.Known {
			flags[1] = 'k'
		}
		if v.Vanishes {
			flags[2] = 'v'
		}
		b.Write(flags)
		b.WriteString(" " + strconv.FormatInt(int64(v.Version), 10) + " " + strconv.Quote(v.Data) + "\n")
	}
	return b.String()
}

func decodeVersions(s string) []ZnodeState {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	out := make([]ZnodeState, 0, len(lines))
	for _, l := range lines {
		flags, rest, _ := strings.Cut(l, " ")
		ver, data, _ := strings.Cut(rest, " ")
		v, err := strconv.ParseInt(ver, 10, 32)
		d, err2 := strconv.Unquote(data)
		if len(flags) != 3 || err != nil || err2 != nil {
			panic(fmt.Sprintf("model: corrupt version %q", l))
		}
		out = append(out, ZnodeState{Exists: flags[0] == 'e', Known: flags[1] == 'k', Vanishes: flags[2] == 'v', Version: int32(v), Data: d})
	}
	return out
}

// WritesOnly keeps the writes of a history of Znode operations: on an
// ensemble, where reads may be stale, Znode checks the writes'
// linearizability and SessionReads the reads.
func WritesOnly(ops []porcupine.Operation) []porcupine.Operation {
	return slices.DeleteFunc(slices.Clone(ops), func(op porcupine.Operation) bool { return isRead(op.Input.(ZnodeInput).Op) })
}
