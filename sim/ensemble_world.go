package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file runs an Ensemble inside a World (Config.Servers 3 or 5): the
// world's connections go to members, the ensemble's steps are the world's
// steps, and the server faults act on members.

// electionMinMs and electionSpreadMs bound the virtual time a leader
// election takes: a real three-server ensemble of ZooKeeper 3.8 on
// loopback failed over in 470 to 820 ms (ensemble_facts_test.go); each
// election draws its time in that range from the seeded source.
const (
	electionMinMs    = 470
	electionSpreadMs = 351
)

// ElectionMinMs is the shortest leader election measured on a real
// ensemble: a driver on wall-clock time (zklab serve) waits it after a
// leader is lost, or a quorum is back, before it elects.
const ElectionMinMs = electionMinMs

// ensembleFaults is what the world keeps of the server faults under way:
// each member's end of crash, partition and lag, so that overlapping
// faults end when the last one does.
type ensembleFaults struct {
	downUntilNs, cutUntilNs, lagUntilNs []int64
	electionPending                     bool
}

func (w *World) newEnsemble() {
	n := w.cfg.Servers
	w.ens = NewEnsembleWith(w.cfg.Server, n, w.cfg.Ensemble)
	for _, m := range w.ens.members {
		m.srv.checkEvery = w.cfg.CheckEveryStep
	}
	w.ensFaults = &ensembleFaults{downUntilNs: make([]int64, n+1), cutUntilNs: make([]int64, n+1), lagUntilNs: make([]int64, n+1)}
	w.ens.Notes() // the first election is the world's start, not an event
}

// MostApplied is the server that has applied the most transactions: on
// an ensemble the member furthest along the committed log, the
// lowest-numbered among equals; the server itself on one server. A
// checker that follows the committed view asks for it after every event.
func (w *World) MostApplied() *Server {
	if w.ens != nil {
		return w.ens.MostApplied()
	}
	return w.server
}

func (w *World) checkServerInvariants() error {
	if w.ens != nil {
		return w.ens.CheckInvariants()
	}
	return w.server.CheckInvariants()
}

func (w *World) serverDeadlineMs() int64 {
	if w.ens != nil {
		return w.ens.NextDeadlineMs()
	}
	return w.server.NextDeadlineMs()
}

func (w *World) serverHasConn(id ConnID) bool {
	if w.ens != nil {
		return w.ens.HasConn(id)
	}
	return w.server.HasConn(id)
}

// disconnectServer tells the connection's server it is gone, if it still
// has it.
func (w *World) disconnectServer(id ConnID) {
	if w.ens != nil {
		w.ens.Disconnect(id)
		return
	}
	if w.server.HasConn(id) {
		w.server.Disconnect(id)
	}
}

// serverOutputs returns what the server, or the ensemble's members, sent
// since the last call, and the server that sent it all when one did (the
// storage a driver may trade with KeepOutputs), else nil.
func (w *World) serverOutputs() ([]Output, *Server) {
	if w.ens == nil {
		return w.server.Outputs(), w.server
	}
	if len(w.ens.notes) > 0 { // most steps note nothing, and taking none cost a store of the slice
		for _, n := range w.ens.Notes() {
			w.emit(Event{Kind: "server", Detail: n})
		}
	}
	switch srv, several := w.ens.soleOutputs(); {
	case several:
		return w.ens.Outputs(), nil
	case srv != nil:
		return srv.Outputs(), srv
	}
	return nil, nil
}

func (w *World) expireSession(id int64) bool {
	if w.ens != nil {
		return w.ens.ExpireSession(w.nowMs(), id)
	}
	return w.server.ExpireSession(w.nowMs(), id)
}

// dialMember opens a connection from c to the server its host list is at;
// a member that is down or has no leader refuses it.
func (w *World) dialMember(c *Client) (*netConn, bool) {
	i := c.hosts.current()
	id := w.connSeq + 1
	if !w.ens.Open(i, id, c.addr()) {
		w.emit(Event{Kind: "session", Client: c.id, Detail: fmt.Sprintf("s%d refuses connections", i)})
		return nil, true
	}
	w.connSeq = id
	conn := &netConn{id: id, client: c}
	w.conns = append(w.conns, conn)
	w.emit(Event{Kind: "session", Client: c.id, Detail: fmt.Sprintf("conn%d to s%d", id, i)})
	return conn, false
}

// memberNames are the names of the members a trace gives: s1 for member 1.
var memberNames = [...]string{"s0", "s1", "s2", "s3", "s4", "s5"}

// memberName is fmt.Sprintf("s%d", i) without the allocation for the
// members an ensemble has.
func memberName(i int) string {
	if i >= 0 && i < len(memberNames) {
		return memberNames[i]
	}
	return "s" + strconv.Itoa(i)
}

// takeEnsembleStep takes an ensemble's step. It takes the step by
// pointer, as World.take does (a Step is some 80 bytes, and it was copied
// for every message between members), and reads it before it acts.
func (w *World) takeEnsembleStep(st *Step) {
	kind, server := st.Kind, st.Server
	rec := w.ens.Step(w.nowMs(), EnsembleStep{Kind: kind, Server: server, To: st.To})
	if rec != nil && w.trace.on() {
		switch kind {
		case StepApply:
			w.emit(Event{Kind: "server", Session: rec.Session, Zxid: rec.Zxid, Detail: w.appliedText(server, rec)})
		case StepServerInternal:
			w.emit(Event{Kind: "server", Session: rec.Session, Zxid: rec.Zxid, Detail: fmt.Sprintf("s%d proposes closeSession: session expired", server)})
		}
	}
	w.drainServer()
	if w.ens.Leader() == 0 {
		// A step lost the leader: a reconfig removed it and its
		// designated successor was down (Ensemble.handOff).
		w.scheduleElection()
	}
}

// appliedText is the trace's "sN applied <rec>" for member i, without
// fmt: it is said once by every member for every transaction. The first
// member to apply rec writes every member's text into one string, and
// each text is a slice of it: one allocation and one formatting of rec
// for all members, not one each (formatting rec was a fiftieth of an
// exploration on three servers).
func (w *World) appliedText(i int, rec *TxnRecord) string {
	n := w.Servers()
	if rec.appliedText == "" {
		first := memberName(1)
		b := append(w.textBuf[:0], first...)
		b = append(b, " applied "...)
		b = rec.appendText(b)
		one := len(b)
		for j := 2; j <= n; j++ {
			name := memberName(j)
			if len(name) != len(first) {
				break // a member's text would not be a slice of one length
			}
			b = append(b, name...)
			b = append(b, b[len(first):one]...)
		}
		w.textBuf = b
		rec.appliedText, rec.appliedTextLen = string(b), one
	}
	if end := i * rec.appliedTextLen; end <= len(rec.appliedText) {
		return rec.appliedText[end-rec.appliedTextLen : end]
	}
	b := append(w.textBuf[:0], memberName(i)...)
	b = append(b, rec.appliedText[len(memberName(1)):rec.appliedTextLen]...)
	w.textBuf = b
	return string(b)
}

// scheduleElection starts a leader election when there is no leader and
// none is under way; it ends after the election's time, with a leader if
// a quorum can then elect one (if not, the next heal or restart tries
// again).
func (w *World) scheduleElection() {
	f := w.ensFaults
	if w.ens.Leader() != 0 || f.electionPending {
		return
	}
	f.electionPending = true
	d := int64(electionMinMs+w.rng.IntN(electionSpreadMs)) * int64(time.Millisecond)
	w.after(d, nil, "leader election", func() {
		f.electionPending = false
		if !w.ens.Elect(w.nowMs()) {
			w.emit(Event{Kind: "server", Detail: "leader election: no quorum"})
		}
		w.drainServer()
	})
}

func (w *World) injectServerFault(f Fault) error {
	if err := checkServerFault(f, w.Servers()); err != nil {
		return err
	}
	i := f.Server
	detail := f.String()
	switch f.Kind {
	case FaultIsolateLeader, FaultKillLeader:
		i = w.ens.Leader()
		if i == 0 {
			w.emit(Event{Kind: "fault", Detail: detail + ": no leader, nothing to do"})
			return nil
		}
		detail += fmt.Sprintf(" (s%d)", i)
	case FaultLoseQuorum:
		victims := w.ens.QuorumLossVictims()
		var names []string
		for _, v := range victims {
			names = append(names, fmt.Sprintf("s%d", v))
		}
		w.emit(Event{Kind: "fault", Detail: detail + " (" + strings.Join(names, " ") + ")"})
		for _, v := range victims {
			w.crashMember(v, f.Duration)
		}
		w.drainServer()
		w.scheduleElection()
		return nil
	}
	w.emit(Event{Kind: "fault", Detail: detail})
	d := int64(f.Duration)
	switch f.Kind {
	case FaultLag:
		until := &w.ensFaults.lagUntilNs[i]
		*until = max(*until, w.nowNs+d)
		w.ens.SetLag(i, true)
		w.after(d, nil, fmt.Sprintf("s%d lag ends", i), func() {
			if w.nowNs < *until || !w.ens.Lagging(i) {
				return
			}
			w.ens.SetLag(i, false)
			w.emit(Event{Kind: "fault", Detail: fmt.Sprintf("s%d lag ended", i)})
		})
	case FaultServerCrash, FaultKillLeader:
		w.crashMember(i, f.Duration)
	case FaultServerPartition, FaultIsolateLeader:
		until := &w.ensFaults.cutUntilNs[i]
		*until = max(*until, w.nowNs+d)
		w.ens.SetCut(w.nowMs(), i, true)
		w.after(d, nil, fmt.Sprintf("s%d partition heals", i), func() {
			if w.nowNs < *until {
				return
			}
			w.ens.SetCut(w.nowMs(), i, false)
			w.emit(Event{Kind: "fault", Detail: fmt.Sprintf("s%d partition healed", i)})
			w.drainServer()
			w.scheduleElection()
		})
	}
	w.drainServer()
	w.scheduleElection()
	return nil
}

// crashMember crashes member i for d: its clients' connections reset, and
// it restarts when the last crash ends.
func (w *World) crashMember(i int, d time.Duration) {
	until := &w.ensFaults.downUntilNs[i]
	*until = max(*until, w.nowNs+int64(d))
	for _, id := range w.ens.Crash(i) {
		if conn := w.connByID(id); conn != nil && !conn.clientClosed {
			w.reset(conn, fmt.Sprintf("s%d crashed", i))
		}
	}
	w.after(int64(d), nil, fmt.Sprintf("s%d restarts", i), func() {
		if w.nowNs < *until || w.ens.Up(i) {
			return
		}
		w.ens.Restart(w.nowMs(), i)
		w.drainServer()
		w.scheduleElection()
	})
}

// restartEnsemble is the restart fault on an ensemble: every server
// crashes and comes back after d.
func (w *World) restartEnsemble(d time.Duration) {
	for i := 1; i <= w.Servers(); i++ {
		w.crashMember(i, d)
	}
	w.drainServer()
	w.scheduleElection()
}

// hostList is go-zookeeper's DNSHostProvider over the ensemble's servers:
// the list shuffled once (at Init), the next server on each attempt, and
// retryStart when an attempt comes back round to the server it last
// connected to (or to the first one tried), which makes the client flush
// its unsent requests with ErrNoServer and back off a second
// (zk.Conn.connect).
type hostList struct {
	servers    []int
	curr, last int
}

// newHostList is the client's connect string: the servers given, in their
// order, or every server shuffled by the seed when none is given.
func newHostList(w *World, servers []int) hostList {
	if len(servers) > 0 {
		return hostList{servers: servers, curr: -1, last: -1}
	}
	s := make([]int, w.Servers())
	for i := range s {
		s[i] = i + 1
	}
	w.rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return hostList{servers: s, curr: -1, last: -1}
}

// next moves to the next server (DNSHostProvider.Next).
func (h *hostList) next() (server int, retryStart bool) {
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

// connected marks the current server as the last one connected to
// (DNSHostProvider.Connected, called once a session is established).
func (h *hostList) connected() {
	if len(h.servers) > 0 {
		h.last = h.curr
	}
}

func (h *hostList) current() int { return h.servers[h.curr] }

// nextHost is a connection attempt of a client of an ensemble: the next
// server of its list, after a second's backoff and with the unsent
// requests failed once it has been round the list.
func (c *Client) nextHost() {
	c.setState(zk.StateConnecting)
	if _, retryStart := c.hosts.next(); retryStart {
		c.flushUnsent(zk.ErrNoServer)
		c.dialTimer = c.w.afterClient(&c.dialRec, int64(reconnectBackoff), c, "reconnect backoff", clientDial)
		return
	}
	c.dial()
}
