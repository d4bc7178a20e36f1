package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// The report of a served history (`zklab serve --history FILE`: a real
// client's run on the simulated server), drawn by the same code as a
// simulated run's: the history is turned into a scenarios.Report, one
// lane a session, its steps the history's seq and its times the
// history's wall clock. What a served history has and a simulated run's
// trace has not (requests paired with their replies, connections, the
// control API's faults) fills the Report's served fields.

// servedVerdict is check-history's verdict on a served history.
type servedVerdict struct {
	result porcupine.CheckResult
	info   porcupine.LinearizationInfo
	ops    int
	line   string // as check-history prints it
}

// checkServed checks the znode operations of a served history.
func checkServed(path string, records []wire.HistoryRecord, timeout time.Duration) servedVerdict {
	res, info, n := model.CheckServed(records, timeout)
	v := servedVerdict{result: res, info: info, ops: n}
	switch res {
	case porcupine.Ok:
		v.line = fmt.Sprintf("%s: %d records, %d znode operations: linearizable", path, len(records), n)
	case porcupine.Unknown:
		v.line = fmt.Sprintf("%s: the check ran out of time after %v (%d znode operations)", path, timeout, n)
	default:
		v.line = fmt.Sprintf("%s: %d records, %d znode operations: NOT linearizable", path, len(records), n)
	}
	return v
}

// readServedHistory reads a served history file; bad input names
// FILE:LINE (exit 2).
func readServedHistory(path string) ([]wire.HistoryRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	defer f.Close()
	records, err := wire.ReadHistory(path, f)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return records, nil
}

// runHistoryReport is `zklab run --history FILE --html OUT`: it draws the
// served history and gives check-history's verdict and exit code.
func runHistoryReport(path, htmlOut string, stdout io.Writer) error {
	const timeout = time.Minute // check-history's default
	if htmlOut == "" {
		return usagef("--history draws a served history: give --html OUT (zklab check-history %s only checks it)", path)
	}
	records, err := readServedHistory(path)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return usagef("%s: no records: nothing to draw", path)
	}
	verdict := checkServed(path, records, timeout)
	rep, sessions := servedRun(records)
	r := report{
		Title:   "zklab run --history " + path,
		Served:  true,
		Verdict: verdict.line,
		Real:    true,
		Run:     rep,
		Replay:  fmt.Sprintf("zklab check-history %s\nzklab run --history %s --html %s", path, path, htmlOut),
	}
	r.Scenario = sessions
	switch verdict.result {
	case porcupine.Illegal:
		r.Failed = []string{"zk-linearizable"}
	case porcupine.Unknown:
		r.Undecided = "the linearizability check ran out of time"
	}
	r.Summary = servedSummary(rep, records)
	ops := model.ServedOperations(records)
	// porcupine's rows are the report's lanes: an operation's client is
	// its session's lane (minus one: porcupine counts from 0).
	laneOf := servedLanesByConn(records)
	for i := range ops {
		ops[i].ClientId = laneOf[int64(ops[i].ClientId)] - 1
	}
	if v, ok := visualizeServed(ops); ok {
		r.Views = append(r.Views, v)
	}
	var b bytes.Buffer
	if err := writeReport(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(htmlOut, b.Bytes(), 0o644); err != nil {
		return usagef("--html: %v", err)
	}
	fmt.Fprintln(stdout, verdict.line)
	fmt.Fprintf(stdout, "report: %s\n", htmlOut)
	switch verdict.result {
	case porcupine.Illegal:
		return violationError{"the served history is not linearizable"}
	case porcupine.Unknown:
		return usagef("%s", verdict.line)
	}
	return nil
}

// visualizeServed is porcupine's drawing of the served znode operations,
// with the annotations the simulated report gives its faults.
func visualizeServed(ops []porcupine.Operation) (porcupineView, bool) {
	if len(ops) == 0 {
		return porcupineView{}, false
	}
	_, info := porcupine.CheckOperationsVerbose(model.Znode(), ops, time.Minute)
	var b bytes.Buffer
	if err := porcupine.Visualize(model.Znode(), info, &b); err != nil {
		return porcupineView{}, false
	}
	return porcupineView{Title: "porcupine: the znodes' history", HTML: b.String()}, true
}

// servedLanes numbers the sessions of a history 1, 2, ... in the order
// the history first names them (a handshake, a request).
func servedLanes(records []wire.HistoryRecord) (map[string]int, []string) {
	lanes := map[string]int{}
	var order []string
	for _, r := range records {
		s := r.Session
		if s == "" || s == "0x0" || r.Kind == "fault" {
			continue
		}
		if r.Kind == "session" && (r.What == "connect" || r.What == "refused") {
			continue // the session asked for, perhaps one long gone
		}
		if _, ok := lanes[s]; !ok {
			order = append(order, s)
			lanes[s] = len(order)
		}
	}
	return lanes, order
}

// servedLanesByConn is each connection's lane: the session its handshake
// established (or asked for, if that session has a lane).
func servedLanesByConn(records []wire.HistoryRecord) map[int64]int {
	lanes, _ := servedLanes(records)
	out := map[int64]int{}
	for _, r := range records {
		if r.Conn == 0 || r.Session == "" {
			continue
		}
		if l, ok := lanes[r.Session]; ok {
			if _, known := out[r.Conn]; !known || r.Kind == "session" && r.What == "established" {
				out[r.Conn] = l
			}
		}
	}
	return out
}

// servedWrites are the ops that change the tree: one that got no reply
// may or may not have been applied.
var servedWrites = map[string]bool{
	"create": true, "create2": true, "createContainer": true, "createTTL": true, "delete": true,
	"setData": true, "multi": true, "setACL": true, "closeSession": true, "reconfig": true,
}

// faultKinds are the control API's verbs as the report's fault kinds.
var faultKinds = map[string]sim.FaultKind{
	"LOSEREPLY": sim.FaultDropReply, "DROPREQUEST": sim.FaultDropRequest, "PARTITION": sim.FaultPartition,
	"RESTART": sim.FaultRestart, "EXPIRESESSION": sim.FaultExpire, "CLOSECONNECTION": sim.FaultDisconnect,
}

// servedRun turns a served history into the report's input, and says
// which session each lane is.
func servedRun(records []wire.HistoryRecord) (*scenarios.Report, string) {
	lanes, order := servedLanes(records)
	connLane := servedLanesByConn(records)
	rep := &scenarios.Report{Clients: len(order), Real: true}
	for i := range order {
		rep.Lanes = append(rep.Lanes, "s"+strconv.Itoa(i+1))
	}
	at := func(r *wire.HistoryRecord) time.Duration { return time.Duration(r.TimeNs) }
	last := &records[len(records)-1]
	rep.Steps, rep.End = uint64(last.Seq), at(last)
	type key struct {
		conn int64
		xid  int32
	}
	open := map[key]int{} // the request's index in rep.Requests
	lastHeard := map[string]*wire.HistoryRecord{}
	type sessionInfo struct {
		timeoutMs int32
		conns     []int64
		ended     string
	}
	info := map[string]*sessionInfo{}
	for _, s := range order {
		info[s] = &sessionInfo{}
	}
	event := func(r *wire.HistoryRecord, lane int, kind string) sim.Event {
		return sim.Event{Step: uint64(r.Seq), Time: at(r), Client: lane, Kind: kind, Path: r.Path}
	}
	for i := range records {
		r := &records[i]
		lane := lanes[r.Session]
		switch r.Kind {
		case "request":
			lastHeard[r.Session] = r
			if lane == 0 {
				continue
			}
			text := fmt.Sprintf("seq %d, %s: %s request xid=%d %s", r.Seq, seconds(at(r)), r.Op, r.Xid, r.Path)
			open[key{r.Conn, r.Xid}] = len(rep.Requests)
			rep.Requests = append(rep.Requests, scenarios.RequestSpan{Client: lane, From: uint64(r.Seq), FromTime: at(r),
				Op: r.Op, Path: r.Path, Text: text})
		case "reply":
			k := key{r.Conn, r.Xid}
			j, ok := open[k]
			if !ok {
				continue
			}
			delete(open, k)
			q := &rep.Requests[j]
			q.To, q.ToTime, q.Answered, q.Err = uint64(r.Seq), at(r), true, r.Err
			outcome := "OK"
			if r.Err != "" {
				outcome = r.Err
			}
			q.Text += fmt.Sprintf("; seq %d, %s: reply %s", r.Seq, seconds(at(r)), outcome)
			if r.Path != "" && r.Path != q.Path {
				q.Text += " " + r.Path
			}
		case "event":
			if lane == 0 {
				lane = connLane[r.Conn]
			}
			if lane != 0 {
				e := event(r, lane, "watch")
				e.Detail = r.Type
				rep.Events = append(rep.Events, e)
			}
		case "conn":
			l := connLane[r.Conn]
			if l == 0 || r.What == "refused" {
				continue // a connection no session used: a four-letter word, a probe
			}
			e := event(r, l, "conn")
			e.Op = r.What
			e.Detail = fmt.Sprintf("connection %d", r.Conn)
			if r.Remote != "" {
				e.Detail += " from " + r.Remote
			}
			if r.Reason != "" {
				e.Detail += ": " + r.Reason
			}
			rep.Events = append(rep.Events, e)
			if r.What == "opened" {
				s := order[l-1]
				info[s].conns = append(info[s].conns, r.Conn)
			}
			// What a fault did: a message lost with its connection.
			if what, ok := strings.CutPrefix(r.Reason, "fault: "); ok && (what == "reply lost" || what == "request dropped") {
				word := "reply dropped"
				if what == "request dropped" {
					word = "request dropped"
				}
				rep.Faults = append(rep.Faults, scenarios.FaultSpan{Client: l, Kind: "dropped", Step: uint64(r.Seq), Time: at(r), End: at(r),
					Text: fmt.Sprintf("%s: connection %d closed", word, r.Conn)})
			}
		case "session":
			switch r.What {
			case "established":
				if s, ok := info[r.Session]; ok {
					s.timeoutMs = r.TimeoutMs
				}
			case "refused":
				// The client asked for a session the server no longer
				// holds: it learns its session expired.
				if l := connLane[r.Conn]; l != 0 {
					e := event(r, l, "session")
					e.State = "StateExpired"
					rep.Events = append(rep.Events, e)
				}
			case "expired":
				if lane == 0 {
					continue
				}
				x := scenarios.Expiry{Client: lane, Step: uint64(r.Seq), Time: at(r)}
				x.Session, _ = parseHexSession(r.Session)
				if h := lastHeard[r.Session]; h != nil {
					x.LastHeard, x.LastHeardStep = at(h), uint64(h.Seq)
				}
				rep.Expiries = append(rep.Expiries, x)
				info[r.Session].ended = fmt.Sprintf("expired by the server at seq %d", r.Seq)
			case "closed":
				if s, ok := info[r.Session]; ok {
					s.ended = fmt.Sprintf("closed by its client at seq %d", r.Seq)
				}
			}
		case "fault":
			f := scenarios.FaultSpan{Client: lane, Kind: faultKinds[r.What], Step: uint64(r.Seq), Time: at(r),
				Duration: time.Duration(r.Ms) * time.Millisecond}
			if f.Kind == "" {
				f.Kind = sim.FaultKind(strings.ToLower(r.What))
			}
			f.End = f.Time
			if r.What == "PARTITION" || r.What == "RESTART" {
				f.End = f.Time + f.Duration
			}
			f.Text = servedFaultText(r)
			rep.Faults = append(rep.Faults, f)
		}
	}
	for i := range rep.Requests {
		q := &rep.Requests[i]
		if q.Answered {
			continue
		}
		q.To, q.ToTime = rep.Steps, rep.End
		q.Ambiguous = servedWrites[q.Op]
		if q.Ambiguous {
			q.Text += "; no reply: the write may or may not have been applied"
		} else {
			q.Text += "; no reply"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Each lane is a session, named in the order the history first names it:\n")
	for i, s := range order {
		in := info[s]
		fmt.Fprintf(&b, "  s%-3d session %s", i+1, s)
		if in.timeoutMs > 0 {
			fmt.Fprintf(&b, ", timeout %dms", in.timeoutMs)
		}
		if len(in.conns) > 0 {
			fmt.Fprintf(&b, ", connections %s", joinInts(in.conns))
		}
		if in.ended != "" {
			fmt.Fprintf(&b, ", %s", in.ended)
		}
		b.WriteString("\n")
	}
	return rep, b.String()
}

// servedFaultText says what a fault record asked for.
func servedFaultText(r *wire.HistoryRecord) string {
	text := r.What
	if r.Session != "" {
		text += " " + r.Session
	}
	switch r.What {
	case "ADDDELAY", "PARTITION", "RESTART":
		text += fmt.Sprintf(" %dms", r.Ms)
	case "FAILREQUESTS", "NORESPONSE":
		if r.Count < 0 {
			text += " (every request until RESET)"
		} else {
			text += fmt.Sprintf(" %d", r.Count)
		}
	}
	return text + " (the control API)"
}

// servedSummary is the report's summary line.
func servedSummary(rep *scenarios.Report, records []wire.HistoryRecord) string {
	unanswered, ambiguous, faults, watches := 0, 0, 0, 0
	for _, q := range rep.Requests {
		if !q.Answered {
			unanswered++
		}
		if q.Ambiguous {
			ambiguous++
		}
	}
	for _, f := range rep.Faults {
		if f.Kind != "dropped" {
			faults++
		}
	}
	for _, e := range rep.Events {
		if e.Kind == "watch" {
			watches++
		}
	}
	return fmt.Sprintf("a served history: %s, %s, %s (%d unanswered, %d ambiguous), %s, %s; %v of wall time",
		plural(len(records), "record"), plural(rep.Clients, "session"), plural(len(rep.Requests), "request"), unanswered, ambiguous,
		plural(faults, "fault"), plural(watches, "watch event"), rep.End.Round(time.Millisecond))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func joinInts(ns []int64) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, strconv.FormatInt(n, 10))
	}
	return strings.Join(parts, ", ")
}

// parseHexSession reads a history's "0x..." session id.
func parseHexSession(s string) (int64, error) {
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	return int64(u), err
}

// The control API's faults that have no sim.FaultKind: the simulated
// world does not inject them.
const (
	faultAddDelay          sim.FaultKind = "adddelay"
	faultFailRequests      sim.FaultKind = "failrequests"
	faultNoResponse        sim.FaultKind = "noresponse"
	faultRejectConnections sim.FaultKind = "rejectconnections"
	faultReset             sim.FaultKind = "reset"
)
