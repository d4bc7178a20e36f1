package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// The control API of `zklab serve --control HOST:PORT`: HTTP, one command
// per request, in the URL scheme of ZooKeeper's own test controller
// (ControlCommand.createCommandUri: /command/VERB[/PARAMETER]), and a JSON
// answer on one line. The handler only parses and answers: every fault is
// wire.Server's (sim/wire/faults.go), every expiry and restart the
// simulated server's.
//
//	PING                       is the server up
//	CLOSECONNECTION[/SESSION]  close the session's connection, or all
//	EXPIRESESSION[/SESSION]    expire the session on the server, or all
//	REJECTCONNECTIONS          refuse new connections until RESET
//	ADDDELAY[/MS]              delay every request by MS (default 1000)
//	FAILREQUESTS[/N]           answer N requests APIERROR (default all)
//	NORESPONSE[/N]             apply N requests, send no reply (default all)
//	RESET                      disarm every fault
//	LOSEREPLY/SESSION[/OP]     apply the session's next request (of type OP:
//	                           create, delete, getChildren, ...), lose its reply
//	DROPREQUEST/SESSION[/OP]   lose the session's next request (of type OP)
//	PARTITION/SESSION/MS       cut the session off for MS, silently
//	RESTART[/MS]               restart the server, down for MS (default 0)
//	SESSIONS                   list sessions, ephemerals and watches
//
// SESSION is a session id as Java's Long.decode reads it: decimal, or hex
// after 0x or #. A simulated ensemble (zklab serve --servers N) takes the
// ensemble's verbs instead (controlEnsemble below).

// controlVerbs are the verbs with how many parameters each takes at least
// and at most.
var controlVerbs = map[string][2]int{
	"PING": {0, 0}, "CLOSECONNECTION": {0, 1}, "EXPIRESESSION": {0, 1},
	"REJECTCONNECTIONS": {0, 0}, "ADDDELAY": {0, 1}, "FAILREQUESTS": {0, 1},
	"NORESPONSE": {0, 1}, "RESET": {0, 0}, "LOSEREPLY": {1, 2},
	"DROPREQUEST": {1, 2}, "PARTITION": {2, 2}, "RESTART": {0, 1},
	"SESSIONS": {0, 0},
}

// controlHandler serves the control API for srv, or for the simulated
// ensemble ens.
type controlHandler struct {
	srv *wire.Server
	ens *wire.EnsembleServer
}

// controlError is a command's failure: the HTTP status and one line.
type controlError struct {
	status int
	msg    string
}

func (h controlHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer, cerr := h.command(r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	if cerr != nil {
		w.WriteHeader(cerr.status)
		answer = map[string]any{"error": cerr.msg}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		panic(err) // the answers are plain maps and slices
	}
	w.Write(append(b, '\n'))
}

func badControl(format string, args ...any) *controlError {
	return &controlError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// parseCommand splits a request's path into its verb, in upper case and
// without dashes (so that the scenario files' names, crash-server, work
// too), and its parameters.
func parseCommand(urlPath string) (verb string, params []string, cerr *controlError) {
	path := strings.TrimPrefix(urlPath, "/")
	switch path {
	case "sessions":
		path = "command/SESSIONS"
	case "servers":
		path = "command/SERVERS"
	}
	rest, ok := strings.CutPrefix(path, "command/")
	if !ok {
		return "", nil, &controlError{http.StatusNotFound, fmt.Sprintf("%s: not a command: use /command/VERB[/PARAMETER], /sessions or /servers", urlPath)}
	}
	parts := strings.Split(rest, "/")
	verb = strings.ToUpper(strings.ReplaceAll(parts[0], "-", ""))
	params = parts[1:]
	if len(params) > 0 && params[len(params)-1] == "" {
		params = params[:len(params)-1] // a trailing slash
	}
	return verb, params, nil
}

// checkArity answers a verb given too few or too many parameters.
func checkArity(verb string, params []string, arity [2]int) *controlError {
	if len(params) < arity[0] || len(params) > arity[1] {
		return badControl("%s takes %d to %d parameters, got %d", verb, arity[0], arity[1], len(params))
	}
	return nil
}

func (h controlHandler) command(urlPath string) (map[string]any, *controlError) {
	verb, params, cerr := parseCommand(urlPath)
	if cerr != nil {
		return nil, cerr
	}
	if h.ens != nil {
		return controlEnsemble(h.ens, verb, params)
	}
	arity, ok := controlVerbs[verb]
	if !ok {
		if _, ok := ensembleVerbs[verb]; ok {
			return nil, badControl("%s: only with a simulated ensemble (zklab serve --servers 3 or 5); this is one server", verb)
		}
		return nil, badControl("%q: unknown verb; known: %s", verb, knownVerbs())
	}
	if cerr := checkArity(verb, params, arity); cerr != nil {
		return nil, cerr
	}
	answer := map[string]any{"command": verb}
	srv := h.srv
	session, cerr := sessionArg(verb, params, answer, "CLOSECONNECTION", "EXPIRESESSION", "LOSEREPLY", "DROPREQUEST", "PARTITION")
	if cerr != nil {
		return nil, cerr
	}
	var err error
	switch verb {
	case "PING":
	case "CLOSECONNECTION":
		err = srv.CloseConnection(session)
	case "EXPIRESESSION":
		if len(params) == 0 {
			answer["expired"] = hexIDs(srv.ExpireSessions())
		} else if !srv.ExpireSession(session) {
			err = fmt.Errorf("session 0x%x: %w", session, wire.ErrNoSession)
		}
	case "REJECTCONNECTIONS":
		srv.RejectConnections()
	case "ADDDELAY":
		ms := int64(1000) // ZooKeeperServerController's DEFAULT_DELAY_MS
		if len(params) == 1 {
			if ms, err = parseCount(params[0]); err != nil {
				return nil, badControl("ADDDELAY: milliseconds %q: %v", params[0], err)
			}
		}
		srv.AddDelay(time.Duration(ms) * time.Millisecond)
		answer["delay_ms"] = ms
	case "FAILREQUESTS", "NORESPONSE":
		n := int64(-1) // all until RESET, as ZooKeeper's controller
		if len(params) == 1 {
			if n, err = parseCount(params[0]); err != nil {
				return nil, badControl("%s: count %q: %v", verb, params[0], err)
			}
		}
		if verb == "FAILREQUESTS" {
			srv.FailRequests(n)
		} else {
			srv.HoldResponses(n)
		}
		answer["count"] = n
	case "RESET":
		srv.ResetFaults()
		srv.ClearKeyedFaults()
	case "LOSEREPLY", "DROPREQUEST":
		if len(params) == 2 {
			// Keyed to the type: the session's next request of it.
			op, ok := parseOpName(params[1])
			if !ok {
				return nil, badControl("%s: %q is not a request type (create, delete, setData, getChildren, ...)", verb, params[1])
			}
			action := wire.FaultLoseReply
			if verb == "DROPREQUEST" {
				action = wire.FaultDropRequest
			}
			if !srv.SessionLive(session) {
				err = fmt.Errorf("session 0x%x: %w", session, wire.ErrNoSession)
			} else {
				err = srv.AddKeyedFault(wire.KeyedFault{Session: session, Op: op, Action: action})
			}
			answer["op"] = op.String()
		} else if verb == "LOSEREPLY" {
			err = srv.LoseNextReply(session)
		} else {
			err = srv.DropNextRequest(session)
		}
	case "PARTITION":
		ms, perr := parseCount(params[1])
		if perr != nil {
			return nil, badControl("PARTITION: milliseconds %q: %v", params[1], perr)
		}
		err = srv.Partition(session, time.Duration(ms)*time.Millisecond)
		answer["ms"] = ms
	case "RESTART":
		var ms int64
		if len(params) == 1 {
			if ms, err = parseCount(params[0]); err != nil {
				return nil, badControl("RESTART: milliseconds %q: %v", params[0], err)
			}
		}
		srv.Restart(time.Duration(ms) * time.Millisecond)
		answer["down_ms"] = ms
	case "SESSIONS":
		answer["sessions"] = sessionList(srv.SessionStates())
	}
	switch {
	case errors.Is(err, wire.ErrNoSession), errors.Is(err, wire.ErrNoConnection):
		return nil, &controlError{http.StatusNotFound, fmt.Sprintf("%s: %v", verb, err)}
	case err != nil:
		return nil, &controlError{http.StatusInternalServerError, fmt.Sprintf("%s: %v", verb, err)}
	}
	answer["ok"] = true
	armed := srv.Armed()
	answer["armed"] = map[string]any{
		"reject_connections": armed.RejectConnections, "delay_ms": armed.DelayMs,
		"fail_requests": armed.FailRequests, "no_response": armed.HoldResponses,
		"lose_reply": hexIDs(armed.LoseReply), "drop_request": hexIDs(armed.DropRequest),
		"partitioned": hexIDs(armed.Partitioned),
	}
	return answer, nil
}

// sessionArg reads the session a verb of sessionVerbs takes as its first
// parameter, if it has one, and notes it in the answer; 0 for any other.
func sessionArg(verb string, params []string, answer map[string]any, sessionVerbs ...string) (int64, *controlError) {
	if len(params) == 0 || !slices.Contains(sessionVerbs, verb) {
		return 0, nil
	}
	session, cerr := sessionParam(verb, params[0])
	if cerr != nil {
		return 0, cerr
	}
	answer["session"] = sessionHex(session)
	return session, nil
}

// sessionParam reads a verb's SESSION parameter.
func sessionParam(verb, text string) (int64, *controlError) {
	id, err := parseSessionID(text)
	if err != nil {
		return 0, badControl("%s: session %q: %v", verb, text, err)
	}
	return id, nil
}

func knownVerbs() string {
	return "PING, CLOSECONNECTION, EXPIRESESSION, REJECTCONNECTIONS, ADDDELAY, FAILREQUESTS, NORESPONSE, RESET, LOSEREPLY, DROPREQUEST, PARTITION, RESTART, SESSIONS"
}

// parseSessionID reads a session id as Java's Long.decode does, for
// ZooKeeper's controller takes it so: decimal, or hex after 0x, 0X or #.
// Ids with the top bit set (a server id of 128 or more) are written in
// hex as unsigned 64-bit numbers, as ZooKeeper prints them.
func parseSessionID(text string) (int64, error) {
	hex, ok := strings.CutPrefix(strings.ToLower(text), "0x")
	if !ok {
		hex, ok = strings.CutPrefix(text, "#")
	}
	if ok {
		u, err := strconv.ParseUint(hex, 16, 64)
		if err != nil || hex == "" {
			return 0, errors.New("not a hex number")
		}
		return int64(u), nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errors.New("not a decimal or 0x hex number")
	}
	return n, nil
}

// parseOpName reads a request type by ZooKeeper's name for it
// (ZooDefs.OpCode), in any case.
func parseOpName(name string) (sim.OpCode, bool) {
	for op := sim.OpCode(-11); op <= 110; op++ {
		if op != sim.OpError && op != sim.OpNotification && strings.EqualFold(op.String(), name) {
			return op, true
		}
	}
	return 0, false
}

func parseCount(text string) (int64, error) {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("not a whole number of 0 or more")
	}
	return n, nil
}

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", uint64(id)) }

func hexIDs(ids []int64) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, sessionHex(id))
	}
	return out
}

func sessionList(states []wire.SessionState) []map[string]any {
	out := make([]map[string]any, 0, len(states))
	for _, st := range states {
		watches := make([]map[string]any, 0, len(st.Watches))
		for _, w := range st.Watches {
			kind := "data"
			if w.Child {
				kind = "child"
			}
			mode := "standard"
			switch {
			case w.Recursive:
				mode = "persistent_recursive"
			case w.Persistent:
				mode = "persistent"
			}
			watches = append(watches, map[string]any{"path": w.Path, "kind": kind, "mode": mode})
		}
		s := map[string]any{
			"session": sessionHex(st.ID), "timeout_ms": st.TimeoutMs,
			"ephemerals": st.Ephemerals, "watches": watches, "connected": st.Conn != nil,
		}
		if st.Conn != nil {
			s["remote"] = st.Conn.Remote
		}
		out = append(out, s)
	}
	return out
}

// startControl serves the control API on addr in the background; the
// returned server is shut down with close.
func startControl(addr string, srv *wire.Server) (*http.Server, string, error) {
	ln, err := listenControl(addr)
	if err != nil {
		return nil, "", err
	}
	return serveControl(ln, controlHandler{srv: srv}), ln.Addr().String(), nil
}

// listenControl listens for the control API on addr.
func listenControl(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--control %s: %v", addr, err)
	}
	return ln, nil
}

// serveControl serves the control API on ln in the background; the
// returned server is shut down with close.
func serveControl(ln net.Listener, h controlHandler) *http.Server {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return hs
}
