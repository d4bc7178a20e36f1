package main

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/sim/wire"
)

// The control API of a simulated ensemble (zklab serve --servers N
// --control HOST:PORT). Its faults are the server faults of the
// simulator's one fault language, named as scenario files name them
// (sim/fault_server.go: lag, crash-server, partition-server,
// isolate-leader, kill-leader, lose-quorum), written without the dash as
// ZooKeeper's controller writes its verbs (the dashed names work too).
// The handler only parses and answers: each fault is
// wire.EnsembleServer's, which calls sim.Ensemble's.
//
//	PING                        is the ensemble up
//	SERVERS                     each member: mode, last zxid, connections, faults
//	LAG/sN[/MS]                 sN applies nothing, hears nothing from its leader
//	CRASHSERVER/sN[/MS]         sN's process dies; it restarts after MS
//	RESTARTSERVER/sN            ends sN's crash now
//	PARTITIONSERVER/sN[/MS]     cut sN off from the other servers
//	ISOLATELEADER[/MS]          PARTITIONSERVER of the leader
//	KILLLEADER[/MS]             CRASHSERVER of the leader
//	LOSEQUORUM[/MS]             crash a majority: the leader and the next
//	RESTART[/MS]                crash every member, restart after MS (0)
//	HEAL                        end every server fault now
//	RESET                       the same: the ensemble arms nothing else
//	EXPIRESESSION[/SESSION]     the leader expires the session, or all
//	CLOSECONNECTION[/SESSION]   close the session's connection, or all
//	SESSIONS                    sessions of the committed view
//
// Without MS a fault lasts until HEAL (a crash also until RESTARTSERVER).

// ensembleVerbs are the ensemble's verbs with how many parameters each
// takes at least and at most.
var ensembleVerbs = map[string][2]int{
	"PING": {0, 0}, "SERVERS": {0, 0}, "LAG": {1, 2}, "CRASHSERVER": {1, 2}, "RESTARTSERVER": {1, 1},
	"PARTITIONSERVER": {1, 2}, "ISOLATELEADER": {0, 1}, "KILLLEADER": {0, 1}, "LOSEQUORUM": {0, 1},
	"RESTART": {0, 1}, "HEAL": {0, 0}, "RESET": {0, 0}, "EXPIRESESSION": {0, 1}, "CLOSECONNECTION": {0, 1},
	"SESSIONS": {0, 0},
}

// oneServerVerbs are why the single server's other verbs are refused on
// an ensemble.
var oneServerVerbs = map[string]string{
	"REJECTCONNECTIONS": "it acts on one server's accepts; CRASHSERVER/sN closes a member's port",
	"ADDDELAY":          "it delays one server's requests; LAG/sN holds a member back",
	"FAILREQUESTS":      "it fails one server's requests",
	"NORESPONSE":        "it withholds one server's replies",
	"LOSEREPLY":         "it loses one server's reply; CLOSECONNECTION/SESSION or KILLLEADER loses a reply in flight",
	"DROPREQUEST":       "it loses a request at one server",
	"PARTITION":         "it cuts one session off one server; PARTITIONSERVER/sN cuts a member off",
}

func ensembleVerbList() string {
	return "PING, SERVERS, LAG, CRASHSERVER, RESTARTSERVER, PARTITIONSERVER, ISOLATELEADER, KILLLEADER, LOSEQUORUM, RESTART, HEAL, RESET, EXPIRESESSION, CLOSECONNECTION, SESSIONS"
}

// parseMember reads a member's name, sN as scenario files write it, or N.
func parseMember(verb, text string) (int, *controlError) {
	digits := strings.TrimPrefix(strings.ToLower(text), "s")
	n, err := strconv.Atoi(digits)
	if err != nil || digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, badControl("%s: server %q: not a server name (s1, s2, ...)", verb, text)
	}
	return n, nil
}

// faultDuration reads a fault's optional MS parameter: 0 for none (the
// fault lasts until healed). A duration given must be at least 1 ms.
func faultDuration(verb string, params []string, at int) (time.Duration, *controlError) {
	if len(params) <= at {
		return 0, nil
	}
	ms, err := parseCount(params[at])
	if err == nil && ms == 0 {
		err = errors.New("a fault lasts at least 1 ms (leave it out for one that lasts until HEAL)")
	}
	if err != nil {
		return 0, badControl("%s: milliseconds %q: %v", verb, params[at], err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func controlEnsemble(ens *wire.EnsembleServer, verb string, params []string) (map[string]any, *controlError) {
	arity, ok := ensembleVerbs[verb]
	if !ok {
		if why, ok := oneServerVerbs[verb]; ok {
			return nil, badControl("%s: not supported with a simulated ensemble: %s", verb, why)
		}
		return nil, badControl("%q: unknown verb; known with an ensemble: %s", verb, ensembleVerbList())
	}
	if cerr := checkArity(verb, params, arity); cerr != nil {
		return nil, cerr
	}
	answer := map[string]any{"command": verb}
	// The member a verb names, and its duration's position.
	member, durationAt := 0, 0
	switch verb {
	case "LAG", "CRASHSERVER", "RESTARTSERVER", "PARTITIONSERVER":
		var cerr *controlError
		if member, cerr = parseMember(verb, params[0]); cerr != nil {
			return nil, cerr
		}
		answer["server"] = fmt.Sprintf("s%d", member)
		durationAt = 1
	}
	var d time.Duration
	switch verb {
	case "LAG", "CRASHSERVER", "PARTITIONSERVER", "ISOLATELEADER", "KILLLEADER", "LOSEQUORUM":
		var cerr *controlError
		if d, cerr = faultDuration(verb, params, durationAt); cerr != nil {
			return nil, cerr
		}
		answer["ms"] = d.Milliseconds()
		if d == 0 {
			answer["until"] = "HEAL"
		}
	case "RESTART":
		// RESTART/0, the default, restarts at once, as on one server.
		if len(params) == 1 {
			ms, err := parseCount(params[0])
			if err != nil {
				return nil, badControl("RESTART: milliseconds %q: %v", params[0], err)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		answer["down_ms"] = d.Milliseconds()
	}
	session, cerr := sessionArg(verb, params, answer, "EXPIRESESSION", "CLOSECONNECTION")
	if cerr != nil {
		return nil, cerr
	}
	var err error
	switch verb {
	case "PING", "SERVERS":
	case "LAG":
		err = ens.Lag(member, d)
	case "CRASHSERVER":
		err = ens.CrashServer(member, d)
	case "RESTARTSERVER":
		var was bool
		was, err = ens.RestartServer(member)
		answer["was_down"] = was
	case "PARTITIONSERVER":
		err = ens.PartitionServer(member, d)
	case "ISOLATELEADER":
		var l int
		if l, err = ens.IsolateLeader(d); err == nil {
			answer["server"] = fmt.Sprintf("s%d", l)
		}
	case "KILLLEADER":
		var l int
		if l, err = ens.KillLeader(d); err == nil {
			answer["server"] = fmt.Sprintf("s%d", l)
		}
	case "LOSEQUORUM":
		var names []string
		for _, v := range ens.LoseQuorum(d) {
			names = append(names, fmt.Sprintf("s%d", v))
		}
		answer["crashed"] = names
	case "RESTART":
		ens.RestartAll(d)
	case "HEAL", "RESET":
		ens.HealServers()
	case "EXPIRESESSION":
		if len(params) == 0 && ens.Leader() == 0 {
			err = fmt.Errorf("%w to expire the sessions", wire.ErrNoLeader)
		} else if len(params) == 0 {
			var expired []int64
			for _, id := range ens.Sessions() {
				if ens.ExpireSession(id) {
					expired = append(expired, id)
				}
			}
			answer["expired"] = hexIDs(expired)
		} else if !ens.ExpireSession(session) {
			if ens.Leader() == 0 {
				err = fmt.Errorf("session 0x%x: %w to expire it", session, wire.ErrNoLeader)
			} else {
				err = fmt.Errorf("session 0x%x: %w", session, wire.ErrNoSession)
			}
		}
	case "CLOSECONNECTION":
		err = ens.CloseConnection(session)
	case "SESSIONS":
		answer["sessions"] = ensembleSessionList(ens.SessionStates())
	}
	switch {
	case errors.Is(err, wire.ErrNoSession), errors.Is(err, wire.ErrNoConnection), errors.Is(err, wire.ErrNoMember):
		return nil, &controlError{http.StatusNotFound, fmt.Sprintf("%s: %v", verb, err)}
	case errors.Is(err, wire.ErrNoLeader):
		return nil, &controlError{http.StatusConflict, fmt.Sprintf("%s: %v", verb, err)}
	case err != nil:
		return nil, &controlError{http.StatusInternalServerError, fmt.Sprintf("%s: %v", verb, err)}
	}
	answer["ok"] = true
	answer["servers"] = memberList(ens.MemberStates())
	return answer, nil
}

// msLeft is how long a fault ending at end has to run: absent (ok false)
// for none, -1 for one that lasts until healed, 0 for one ending now.
func msLeft(end, now time.Time) (int64, bool) {
	switch {
	case end.IsZero():
		return 0, false
	case end.Year() > 9999:
		return -1, true
	}
	return max(end.Sub(now).Milliseconds(), 0), true
}

func memberList(states []wire.MemberState) []map[string]any {
	now := time.Now()
	out := make([]map[string]any, 0, len(states))
	for _, st := range states {
		m := map[string]any{
			"server": fmt.Sprintf("s%d", st.ID), "mode": st.Mode, "last_zxid": fmt.Sprintf("0x%x", st.LastZxid),
			"connections": st.Connections, "lagging": st.Lagging, "partitioned": st.Cut,
		}
		for key, end := range map[string]time.Time{"lag_ms_left": st.LagEnds, "partition_ms_left": st.CutEnds, "down_ms_left": st.DownEnds} {
			if left, ok := msLeft(end, now); ok {
				m[key] = left
			}
		}
		out = append(out, m)
	}
	return out
}

func ensembleSessionList(states []wire.EnsembleSession) []map[string]any {
	out := make([]map[string]any, 0, len(states))
	for _, st := range states {
		s := sessionList([]wire.SessionState{{SessionInfo: st.SessionInfo, Conn: st.Conn, Watches: st.Watches}})[0]
		if st.Member != 0 {
			s["server"] = fmt.Sprintf("s%d", st.Member)
		}
		out = append(out, s)
	}
	return out
}
