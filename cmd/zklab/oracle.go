package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// The cross-check mode of `zklab serve --oracle HOST:PORT`, after zetcd's
// xchk: every connection a client opens to zklab serve is mirrored by a
// connection to a real ZooKeeper (the oracle), every request the
// simulated server applies is sent to the oracle first, in the same order,
// and the two replies and the watch events of each connection are
// compared. A difference is reported as one line and counted.
//
// The oracle must be a fresh server that nothing else uses: the two
// servers start from the same empty tree and see the same requests in the
// same order, so they must answer alike. The requests of all connections
// go to the oracle one at a time, each after the oracle answered the one
// before (the checker runs under the wire server's lock), which makes the
// order the same on both; it is slow, and meant to be.
//
// But it does not make zklab's own replies slow: a request is sent to the
// oracle as zklab receives it, and the oracle's answer is waited for only
// before the next thing is sent to the oracle (a request, a handshake, an
// expiry, a close), not before zklab's reply goes out; the two replies are
// compared when both are there. Waiting before zklab answered would add
// the oracle's whole latency to each reply's: a client's read timeout
// (go-zookeeper's is two thirds of the session timeout, 6.7 s for its
// suite's 10 s sessions) then runs out on a big reply, as go-zookeeper's
// TestIntegration_Children's 20 MB listing of 10,000 names did on a loaded
// machine (its client saw "connection closed" while the checker waited on
// the oracle's 20 MB answer and then encoded, decoded and compared both
// under the server's lock).
//
// What is compared, and how:
//   - error codes, paths, data, children (in order), ACLs, multi results,
//     getEphemerals, getAllChildrenNumber, whoAmI, and Stat's version,
//     cversion, aversion, dataLength and numChildren: exactly;
//   - zxids (reply headers; czxid, mzxid, pzxid): the two servers number
//     transactions alike only if they start alike, so a zxid of one is
//     paired with the zxid of the other the first time they meet, and a
//     later pair that contradicts it (either way) is a difference;
//   - session ids (the handshake, ephemeralOwner): paired the same way;
//   - handshakes: established or refused alike (the negotiated timeout
//     depends on each server's own tick and bounds, and is not compared);
//   - watch events: per connection, in order, type, state and path.
//
// Not compared: ctime and mtime (wall clocks), passwords, and anything of
// a session's timing: when zklab expires a session (its timeout, or the
// control API), the checker closes the oracle's session at once with
// zktest.ExpireSession, so that both trees lose its ephemerals at the same
// point of the order.
//
// Across a restart: with a dataDir, the checker keeps its pairing of
// sessions there (oracleSessionsFile), so that zklab serve started again
// on that dataDir, cross-checked against the oracle started again on its
// own dataDir (a real ZooKeeper restores its sessions from its snapshot
// and log, as zklab from its journal), resumes the sessions of both: a
// client that reconnects to its session is paired with the oracle's.
// The zxids are paired afresh: the first meeting after the restart pairs
// them again, and a client's last zxid that this run has not met is sent
// to the oracle as the last zxid the oracle had when the check started
// (its srvr Zxid), what both servers had when they stopped together.
type crossCheck struct {
	addr   string
	report io.Writer
	// sessionsFile, if not nil, receives each new pairing of sessions
	// (oracleSessionsFile); nil without a dataDir.
	sessionsFile *os.File

	mu          sync.Mutex // guards everything below, and report
	conns       map[sim.ConnID]*oracleConn
	sessions    map[int64]oracleSession // zklab's session -> the oracle's
	oracleToSim map[int64]int64
	zxidToOr    map[int64]int64
	zxidToSim   map[int64]int64
	lastOracle  int64                       // the largest oracle zxid seen
	pending     map[sim.ConnID]sim.Response // the oracle's replies zklab's are yet to meet
	simPending  map[sim.ConnID]sim.Response // zklab's replies the oracle's are yet to meet
	// inflight is the last request sent to the oracle; done is closed when
	// its answer came (or its connection ended). Nothing more goes to the
	// oracle before.
	inflight    *oracleRequest
	compared    int64 // replies
	events      int64 // watch events matched
	differences int64
	first       []string // the first differences, for a summary
}

type oracleSession struct {
	id     int64
	passwd []byte
}

// oracleRequest is a request sent to the oracle and not yet settled.
type oracleRequest struct {
	conn    sim.ConnID
	oc      *oracleConn
	session int64
	req     sim.Request
	done    chan struct{}
}

// oracleConn is the oracle's side of one client connection.
type oracleConn struct {
	nc        net.Conn
	ops       map[int32]sim.OpCode // by xid: the requests sent and not answered
	pings     int                  // pings sent and not answered (all of xid -2)
	events    []zk.Event           // the oracle's events not yet matched
	simEvents []zk.Event           // zklab's events not yet matched
	session   int64                // zklab's session id
	tallied   bool                 // a tally was reported at its closeSession
}

// differenceBytesMax cuts a reported difference short (paths of
// thousands of bytes).
const differenceBytesMax = 400

// oracleFrameBytesMax bounds a frame from the oracle: a server answers a
// getChildren of any size (go-zookeeper's suite lists 10,000 names of
// 2,000 bytes: 20 MB).
const oracleFrameBytesMax = 256 << 20

// oracleWait bounds how long the checker waits for the oracle's answer.
const oracleWait = 5 * time.Second

// dialOracle checks that the oracle is a ZooKeeper server that answers,
// so that a wrong address is one clear error at start-up. With a dataDir
// ("" for none), the pairing of sessions kept there by the run before is
// resumed, and this run's are added to it.
func dialOracle(addr, dataDir string) (*crossCheck, error) {
	if err := zktest.Ruok(addr); err != nil {
		nc, derr := net.DialTimeout("tcp", addr, 2*time.Second)
		if derr != nil {
			return nil, fmt.Errorf("--oracle %s: %v", addr, derr)
		}
		nc.Close()
	}
	x := &crossCheck{
		addr: addr, conns: map[sim.ConnID]*oracleConn{}, sessions: map[int64]oracleSession{},
		oracleToSim: map[int64]int64{}, zxidToOr: map[int64]int64{}, zxidToSim: map[int64]int64{},
		pending: map[sim.ConnID]sim.Response{}, simPending: map[sim.ConnID]sim.Response{},
	}
	if dataDir == "" {
		return x, nil
	}
	path := filepath.Join(dataDir, oracleSessionsFile)
	resumed, err := x.loadSessions(path)
	if err != nil {
		return nil, err
	}
	if resumed > 0 {
		if x.lastOracle, err = zktest.SrvrZxid(addr); err != nil {
			return nil, fmt.Errorf("--oracle %s: %v", addr, err)
		}
	}
	if x.sessionsFile, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
		return nil, fmt.Errorf("dataDir: %v", err)
	}
	return x, nil
}

// oracleSessionsFile, in the dataDir, pairs zklab's sessions with the
// oracle's, one a line: zklab's id, the oracle's id and the oracle's
// password in hex ("0x1a2b 0x3c4d 00ff..."), appended as sessions are
// made. It is written at the handshake, after zklab's journal has the
// session: a kill between the two leaves a session the checker cannot
// pair after the restart, reported as a difference at its reconnect.
const oracleSessionsFile = "zklab-oracle-sessions"

// loadSessions reads the pairings kept at path, if the file is there, and
// returns how many. A line that is not a pairing is bad input, named
// path:line.
func (x *crossCheck) loadSessions(path string) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("dataDir: %v", err)
	}
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		var simID, oracleID int64
		var passwd []byte
		if _, err := fmt.Sscanf(line, "0x%x 0x%x %x", &simID, &oracleID, &passwd); err != nil || simID == 0 || oracleID == 0 {
			return 0, fmt.Errorf("%s:%d: not a pairing of sessions (0xZKLAB 0xORACLE PASSWDHEX): %q", path, i+1, line)
		}
		x.sessions[simID] = oracleSession{oracleID, passwd}
		x.oracleToSim[oracleID] = simID
		n++
	}
	return n, nil
}

// close releases the file of pairings.
func (x *crossCheck) close() error {
	if x.sessionsFile == nil {
		return nil
	}
	return x.sessionsFile.Close()
}

// differ reports one difference.
func (x *crossCheck) differ(format string, args ...any) {
	x.differences++
	line := fmt.Sprintf(format, args...)
	if len(line) > differenceBytesMax {
		line = line[:differenceBytesMax] + "(...)"
	}
	if len(x.first) < 20 {
		x.first = append(x.first, line)
	}
	if x.report != nil {
		fmt.Fprintf(x.report, "zklab serve: cross-check: %s\n", line)
	}
}

// crossCheckSummary is the checker's tally.
type crossCheckSummary struct {
	Replies, Events, Differences int64
	First                        []string // the first differences
}

func (s crossCheckSummary) String() string {
	return fmt.Sprintf("%d replies and %d watch events compared, %d differences", s.Replies, s.Events, s.Differences)
}

// Summary is the checker's tally so far, the last request's answer
// waited for.
func (x *crossCheck) Summary() crossCheckSummary {
	x.settle()
	x.mu.Lock()
	defer x.mu.Unlock()
	return crossCheckSummary{x.compared, x.events, x.differences, slices.Clone(x.first)}
}

func (x *crossCheck) sameZxid(simZxid, oracleZxid int64) bool {
	x.lastOracle = max(x.lastOracle, oracleZxid)
	if o, ok := x.zxidToOr[simZxid]; ok {
		return o == oracleZxid
	}
	if s, ok := x.zxidToSim[oracleZxid]; ok {
		return s == simZxid
	}
	x.zxidToOr[simZxid], x.zxidToSim[oracleZxid] = oracleZxid, simZxid
	return true
}

func (x *crossCheck) oracleZxid(simZxid int64) int64 {
	if o, ok := x.zxidToOr[simZxid]; ok {
		return o
	}
	return x.lastOracle
}

func (x *crossCheck) sameOwner(simOwner, oracleOwner int64) bool {
	if s, ok := x.oracleToSim[oracleOwner]; ok {
		return s == simOwner
	}
	return simOwner == oracleOwner // 0, or a container's or TTL node's mark
}

var _ wire.Observer = (*crossCheck)(nil)

func (x *crossCheck) ConnOpened(time.Time, wire.ConnInfo)                {}
func (x *crossCheck) ConnRefused(time.Time, string, string)              {}
func (x *crossCheck) SessionCreated(time.Time, sim.ConnID, int64, int32) {}
func (x *crossCheck) SessionClosed(time.Time, int64)                     {}

// settle waits for the oracle's answer to the request in flight, if any,
// for at most oracleWait: nothing may reach the oracle before it applied
// what came before.
func (x *crossCheck) settle() {
	x.mu.Lock()
	in := x.inflight
	x.mu.Unlock()
	if in == nil {
		return
	}
	select {
	case <-in.done:
	case <-time.After(oracleWait):
		x.mu.Lock()
		if x.inflight == in {
			x.differ("conn %d session 0x%x: xid %d %v %s: no reply from the oracle in %v", in.conn, in.session, in.req.Xid, in.req.Op, in.req.Path, oracleWait)
		}
		x.mu.Unlock()
	}
	x.mu.Lock()
	if x.inflight == in {
		x.inflight = nil
	}
	x.mu.Unlock()
}

func (x *crossCheck) Handshake(at time.Time, conn sim.ConnID, req wire.ConnectRequest, resp sim.ConnectResponse) {
	x.settle()
	x.mu.Lock()
	defer x.mu.Unlock()
	oreq := req
	if req.SessionID != 0 {
		if o, ok := x.sessions[req.SessionID]; ok {
			oreq.SessionID, oreq.Passwd = o.id, o.passwd
		}
	}
	oreq.LastZxidSeen = x.oracleZxid(req.LastZxidSeen)
	if req.LastZxidSeen == 0 {
		oreq.LastZxidSeen = 0
	}
	nc, err := net.DialTimeout("tcp", x.addr, oracleWait)
	if err != nil {
		x.differ("conn %d: the oracle: %v", conn, err)
		return
	}
	nc.SetDeadline(time.Now().Add(oracleWait))
	r := bufio.NewReader(nc)
	var oresp sim.ConnectResponse
	if _, err = nc.Write(wire.AppendConnectRequest(nil, oreq)); err == nil {
		var body []byte
		if body, err = readFrame(r); err == nil {
			oresp, _, err = wire.DecodeConnectResponse(body)
		}
	}
	if err != nil {
		nc.Close()
		if resp.SessionID != 0 {
			x.differ("conn %d: handshake for session 0x%x: zklab established 0x%x, the oracle: %v", conn, req.SessionID, resp.SessionID, err)
		}
		return
	}
	nc.SetDeadline(time.Time{})
	if (resp.SessionID == 0) != (oresp.SessionID == 0) {
		x.differ("conn %d: handshake for session 0x%x: zklab answered session 0x%x, ZooKeeper 0x%x", conn, req.SessionID, resp.SessionID, oresp.SessionID)
	}
	if resp.SessionID == 0 || oresp.SessionID == 0 {
		nc.Close()
		return
	}
	if req.SessionID == 0 {
		x.sessions[resp.SessionID] = oracleSession{oresp.SessionID, oresp.Passwd}
		x.oracleToSim[oresp.SessionID] = resp.SessionID
		if x.sessionsFile != nil {
			if _, err := fmt.Fprintf(x.sessionsFile, "0x%x 0x%x %x\n", resp.SessionID, oresp.SessionID, oresp.Passwd); err != nil {
				x.differ("conn %d: session 0x%x: keeping its pairing with the oracle's 0x%x: %v", conn, resp.SessionID, oresp.SessionID, err)
			}
		}
	} else if o := x.sessions[resp.SessionID]; o.id != oresp.SessionID {
		x.differ("conn %d: session 0x%x resumed as the oracle's 0x%x, paired with 0x%x", conn, resp.SessionID, oresp.SessionID, o.id)
	}
	oc := &oracleConn{nc: nc, ops: map[int32]sim.OpCode{}, session: resp.SessionID}
	x.conns[conn] = oc
	go x.readOracle(conn, oc, r)
}

func readFrame(r *bufio.Reader) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(prefix[:])
	if n > oracleFrameBytesMax {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	body := make([]byte, n)
	_, err := io.ReadFull(r, body)
	return body, err
}

// readOracle reads the oracle's frames: a reply is met with zklab's (or
// waits for it) and settles the request in flight; events are matched
// with zklab's. When the connection ends, a request in flight on it is
// settled: no answer will come.
func (x *crossCheck) readOracle(conn sim.ConnID, oc *oracleConn, r *bufio.Reader) {
	defer func() {
		x.mu.Lock()
		if in := x.inflight; in != nil && in.oc == oc {
			x.inflight = nil
			close(in.done)
		}
		x.mu.Unlock()
	}()
	for {
		body, err := readFrame(r)
		if err != nil {
			return
		}
		h, err := wire.DecodeReplyHeader(body)
		if err != nil {
			return
		}
		if h.Xid != -1 {
			x.oracleReplied(conn, oc, h.Xid, body)
			continue
		}
		ev, err := wire.DecodeEvent(body)
		if err != nil {
			return
		}
		x.mu.Lock()
		oc.events = append(oc.events, ev)
		x.matchEvents(conn, oc)
		x.mu.Unlock()
	}
}

func (x *crossCheck) matchEvents(conn sim.ConnID, oc *oracleConn) {
	for len(oc.events) > 0 && len(oc.simEvents) > 0 {
		o, s := oc.events[0], oc.simEvents[0]
		oc.events, oc.simEvents = oc.events[1:], oc.simEvents[1:]
		x.events++
		if o.Type != s.Type || o.State != s.State || o.Path != s.Path {
			x.differ("conn %d session 0x%x: watch event: zklab %v %s, ZooKeeper %v %s", conn, oc.session, s.Type, s.Path, o.Type, o.Path)
		}
	}
}

// RequestReceived sends the request to the oracle once the one before
// was answered; it does not wait for this one's answer (settle does,
// before the next).
//
// A ping goes at once, and its replies are not compared: it changes
// nothing, it only keeps the oracle's session alive, and waiting for the
// oracle before it would hold the server's lock, and with it the sending
// of the replies zklab already queued (a client pings when a reply is
// slow to come: a 20 MB listing's).
func (x *crossCheck) RequestReceived(at time.Time, conn sim.ConnID, session int64, req sim.Request) {
	if req.Op == sim.OpPing {
		x.mu.Lock()
		oc := x.conns[conn]
		if oc != nil {
			oc.pings++
		}
		x.mu.Unlock()
		if oc != nil {
			oc.nc.Write(wire.AppendRequest(nil, req)) // an error shows on the next request
		}
		return
	}
	x.settle()
	x.mu.Lock()
	oc := x.conns[conn]
	if oc == nil {
		x.mu.Unlock()
		return
	}
	if req.Op == sim.OpCloseSession && x.report != nil {
		// The tally before zklab answers the close: a harness may kill
		// the server (SIGKILL) as soon as its client has closed, before
		// the connection's close below (or a summary) is reached.
		x.reportTallyLocked()
		oc.tallied = true
	}
	oreq := req
	if req.Op == sim.OpSetWatches || req.Op == sim.OpSetWatches2 {
		oreq.RelativeZxid = x.oracleZxid(req.RelativeZxid)
	}
	oc.ops[req.Xid] = req.Op
	delete(x.simPending, conn)
	in := &oracleRequest{conn: conn, oc: oc, session: session, req: req, done: make(chan struct{})}
	x.inflight = in
	x.mu.Unlock()
	if _, err := oc.nc.Write(wire.AppendRequest(nil, oreq)); err != nil {
		x.mu.Lock()
		x.differ("conn %d session 0x%x: xid %d %v %s: the oracle: %v", conn, session, req.Xid, req.Op, req.Path, err)
		if x.inflight == in {
			x.inflight = nil
			close(in.done)
		}
		x.mu.Unlock()
	}
}

// oracleReplied takes the oracle's reply to xid on a connection: it is
// compared with zklab's if that was sent, or waits for it; the request in
// flight, if this is its answer, is settled.
func (x *crossCheck) oracleReplied(conn sim.ConnID, oc *oracleConn, xid int32, body []byte) {
	x.mu.Lock()
	if xid == wire.XidPing && oc.pings > 0 {
		oc.pings-- // a ping's answer, not compared
		x.mu.Unlock()
		return
	}
	op, known := oc.ops[xid]
	delete(oc.ops, xid)
	x.mu.Unlock()
	var resp sim.Response
	var err error
	if known {
		resp, err = wire.DecodeReply(op, body) // 20 MB for a big listing: not under x.mu
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if in := x.inflight; in != nil && in.oc == oc && in.req.Xid == xid {
		x.inflight = nil
		close(in.done)
	}
	if !known || err != nil || resp.Xid != xid {
		x.differ("conn %d session 0x%x: the oracle's reply to xid %d (op known: %v): %v", conn, oc.session, xid, known, err)
		return
	}
	if s, ok := x.simPending[conn]; ok && s.Xid == xid {
		delete(x.simPending, conn)
		x.compareLocked(conn, oc.session, op, s, resp)
		return
	}
	x.pending[conn] = resp
}

// ReplySent meets zklab's reply with the oracle's, or leaves it for the
// oracle's to meet.
func (x *crossCheck) ReplySent(at time.Time, conn sim.ConnID, session int64, op sim.OpCode, resp sim.Response) {
	if op == sim.OpPing {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	o, ok := x.pending[conn]
	if !ok || o.Xid != resp.Xid {
		if in := x.inflight; in != nil && in.conn == conn && in.req.Xid == resp.Xid {
			x.simPending[conn] = resp
		}
		return
	}
	delete(x.pending, conn)
	x.compareLocked(conn, session, op, resp, o)
}

// compareLocked compares zklab's reply resp with the oracle's o.
func (x *crossCheck) compareLocked(conn sim.ConnID, session int64, op sim.OpCode, resp, o sim.Response) {
	x.compared++
	what := fmt.Sprintf("conn %d session 0x%x: xid %d %v", conn, session, resp.Xid, op)
	// Compare what the client sees: the simulated server's reply as the
	// wire carries it (a create's reply has no Stat on the wire).
	frame := wire.AppendReply(nil, op, &resp)
	seen, err := wire.DecodeReply(op, frame[4:])
	if err != nil {
		x.differ("%s: zklab's own reply does not decode: %v", what, err)
		return
	}
	resp = seen
	for _, d := range x.compareReplies(resp, o) {
		x.differ("%s: %s", what, d)
	}
}

// compareReplies lists how zklab's reply s differs from the oracle's o.
func (x *crossCheck) compareReplies(s, o sim.Response) []string {
	var out []string
	diff := func(field string, sv, ov any) {
		out = append(out, fmt.Sprintf("%s: zklab %v, ZooKeeper %v", field, sv, ov))
	}
	if s.Err != o.Err {
		diff("error", s.Err, o.Err)
		return out
	}
	if !x.sameZxid(s.Zxid, o.Zxid) {
		diff("reply zxid (paired)", fmt.Sprintf("0x%x", s.Zxid), fmt.Sprintf("0x%x", o.Zxid))
	}
	if s.Path != o.Path {
		diff("path", s.Path, o.Path)
	}
	out = append(out, x.compareStat("stat", s.Stat, o.Stat)...)
	if string(s.Data) != string(o.Data) {
		diff("data", fmt.Sprintf("%q", s.Data), fmt.Sprintf("%q", o.Data))
	}
	if !slices.Equal(s.Children, o.Children) {
		diff("children", s.Children, o.Children)
	}
	if !slices.Equal(s.Ephemerals, o.Ephemerals) {
		diff("ephemerals", s.Ephemerals, o.Ephemerals)
	}
	if s.TotalNumber != o.TotalNumber {
		diff("totalNumber", s.TotalNumber, o.TotalNumber)
	}
	if !slices.Equal(s.ACL, o.ACL) {
		diff("acl", s.ACL, o.ACL)
	}
	if !slices.Equal(s.Clients, o.Clients) {
		diff("whoAmI", s.Clients, o.Clients)
	}
	if len(s.Multi) != len(o.Multi) {
		diff("multi results", len(s.Multi), len(o.Multi))
		return out
	}
	for i, sm := range s.Multi {
		om := o.Multi[i]
		at := fmt.Sprintf("multi[%d] ", i)
		if sm.Op != om.Op || sm.Err != om.Err {
			diff(at+"op/error", fmt.Sprintf("%v/%v", sm.Op, sm.Err), fmt.Sprintf("%v/%v", om.Op, om.Err))
			continue
		}
		if sm.Path != om.Path {
			diff(at+"path", sm.Path, om.Path)
		}
		if string(sm.Data) != string(om.Data) {
			diff(at+"data", fmt.Sprintf("%q", sm.Data), fmt.Sprintf("%q", om.Data))
		}
		if !slices.Equal(sm.Children, om.Children) {
			diff(at+"children", sm.Children, om.Children)
		}
		out = append(out, x.compareStat(at+"stat", sm.Stat, om.Stat)...)
	}
	return out
}

func (x *crossCheck) compareStat(field string, s, o zk.Stat) []string {
	var out []string
	diff := func(name string, sv, ov any) {
		out = append(out, fmt.Sprintf("%s.%s: zklab %v, ZooKeeper %v", field, name, sv, ov))
	}
	for _, z := range []struct {
		name string
		s, o int64
	}{{"czxid", s.Czxid, o.Czxid}, {"mzxid", s.Mzxid, o.Mzxid}, {"pzxid", s.Pzxid, o.Pzxid}} {
		if !x.sameZxid(z.s, z.o) {
			diff(z.name+" (paired)", fmt.Sprintf("0x%x", z.s), fmt.Sprintf("0x%x", z.o))
		}
	}
	if s.Version != o.Version {
		diff("version", s.Version, o.Version)
	}
	if s.Cversion != o.Cversion {
		diff("cversion", s.Cversion, o.Cversion)
	}
	if s.Aversion != o.Aversion {
		diff("aversion", s.Aversion, o.Aversion)
	}
	if s.DataLength != o.DataLength {
		diff("dataLength", s.DataLength, o.DataLength)
	}
	if s.NumChildren != o.NumChildren {
		diff("numChildren", s.NumChildren, o.NumChildren)
	}
	if !x.sameOwner(s.EphemeralOwner, o.EphemeralOwner) {
		diff("ephemeralOwner", fmt.Sprintf("0x%x", s.EphemeralOwner), fmt.Sprintf("0x%x", o.EphemeralOwner))
	}
	return out
}

func (x *crossCheck) WatchEventSent(at time.Time, conn sim.ConnID, session int64, ev zk.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	oc := x.conns[conn]
	if oc == nil {
		return
	}
	oc.simEvents = append(oc.simEvents, ev)
	x.matchEvents(conn, oc)
}

// SessionExpired: zklab expired a session (its timeout or the control
// API); the oracle's copy is closed at once, at the same point of the
// order, so that both trees lose its ephemerals together.
func (x *crossCheck) SessionExpired(at time.Time, session int64) {
	x.settle()
	x.mu.Lock()
	o, ok := x.sessions[session]
	x.mu.Unlock()
	if !ok {
		return
	}
	// ErrSessionGone: the oracle's own clock expired it first; both agree.
	if err := zktest.ExpireSession(x.addr, o.id, o.passwd, oracleWait); err != nil && !errors.Is(err, zktest.ErrSessionGone) {
		x.mu.Lock()
		x.differ("session 0x%x expired on zklab; on the oracle (0x%x): %v", session, o.id, err)
		x.mu.Unlock()
	}
}

// reportTallyLocked reports the tally so far.
func (x *crossCheck) reportTallyLocked() {
	fmt.Fprintf(x.report, "zklab serve: cross-check: so far %d replies and %d watch events compared, %d differences\n", x.compared, x.events, x.differences)
}

// eventsSettleWait bounds how long a closing connection waits for the
// oracle's events to catch up with zklab's.
const eventsSettleWait = 500 * time.Millisecond

func (x *crossCheck) ConnClosed(at time.Time, c wire.ConnInfo, reason string) {
	x.mu.Lock()
	if oc := x.conns[c.ID]; x.report != nil && oc != nil && !oc.tallied {
		// A tally at each close (unless its closeSession had one), before
		// waiting for the oracle: a harness may kill the server (SIGKILL)
		// as soon as its client has gone, before it can print its summary.
		x.reportTallyLocked()
	}
	x.mu.Unlock()
	x.settle()
	x.mu.Lock()
	oc := x.conns[c.ID]
	if oc == nil {
		x.mu.Unlock()
		return
	}
	delete(x.conns, c.ID)
	delete(x.pending, c.ID)
	delete(x.simPending, c.ID)
	deadline := time.Now().Add(eventsSettleWait)
	for len(oc.simEvents) > len(oc.events) && time.Now().Before(deadline) {
		x.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		x.mu.Lock()
	}
	x.matchEvents(c.ID, oc)
	for _, ev := range oc.simEvents {
		x.differ("conn %d session 0x%x: watch event %v %s from zklab only", c.ID, oc.session, ev.Type, ev.Path)
	}
	for _, ev := range oc.events {
		x.differ("conn %d session 0x%x: watch event %v %s from ZooKeeper only", c.ID, oc.session, ev.Type, ev.Path)
	}
	x.mu.Unlock()
	oc.nc.Close()
}

// teeObserver tells two observers everything, in order.
type teeObserver struct{ a, b wire.Observer }

var _ wire.FaultObserver = teeObserver{}

func (t teeObserver) FaultInjected(at time.Time, f wire.Fault) {
	for _, o := range []wire.Observer{t.a, t.b} {
		if fo, ok := o.(wire.FaultObserver); ok {
			fo.FaultInjected(at, f)
		}
	}
}

func (t teeObserver) ConnOpened(at time.Time, c wire.ConnInfo) {
	t.a.ConnOpened(at, c)
	t.b.ConnOpened(at, c)
}
func (t teeObserver) ConnRefused(at time.Time, remote, reason string) {
	t.a.ConnRefused(at, remote, reason)
	t.b.ConnRefused(at, remote, reason)
}
func (t teeObserver) ConnClosed(at time.Time, c wire.ConnInfo, reason string) {
	t.a.ConnClosed(at, c, reason)
	t.b.ConnClosed(at, c, reason)
}
func (t teeObserver) Handshake(at time.Time, conn sim.ConnID, req wire.ConnectRequest, resp sim.ConnectResponse) {
	t.a.Handshake(at, conn, req, resp)
	t.b.Handshake(at, conn, req, resp)
}
func (t teeObserver) SessionCreated(at time.Time, conn sim.ConnID, session int64, timeoutMs int32) {
	t.a.SessionCreated(at, conn, session, timeoutMs)
	t.b.SessionCreated(at, conn, session, timeoutMs)
}
func (t teeObserver) SessionExpired(at time.Time, session int64) {
	t.a.SessionExpired(at, session)
	t.b.SessionExpired(at, session)
}
func (t teeObserver) SessionClosed(at time.Time, session int64) {
	t.a.SessionClosed(at, session)
	t.b.SessionClosed(at, session)
}
func (t teeObserver) RequestReceived(at time.Time, conn sim.ConnID, session int64, req sim.Request) {
	t.a.RequestReceived(at, conn, session, req)
	t.b.RequestReceived(at, conn, session, req)
}
func (t teeObserver) ReplySent(at time.Time, conn sim.ConnID, session int64, op sim.OpCode, resp sim.Response) {
	t.a.ReplySent(at, conn, session, op, resp)
	t.b.ReplySent(at, conn, session, op, resp)
}
func (t teeObserver) WatchEventSent(at time.Time, conn sim.ConnID, session int64, ev zk.Event) {
	t.a.WatchEventSent(at, conn, session, ev)
	t.b.WatchEventSent(at, conn, session, ev)
}
