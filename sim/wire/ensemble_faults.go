package wire

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zklab/zklab/sim"
)

// Faults a test injects into a running EnsembleServer: the server faults
// of the simulator's one fault language (sim.FaultLag,
// sim.FaultServerCrash, sim.FaultServerPartition, sim.FaultIsolateLeader,
// sim.FaultKillLeader, sim.FaultLoseQuorum; scenario files name them lag,
// crash-server, partition-server, isolate-leader, kill-leader,
// lose-quorum), on wall-clock time, and the per-session faults that have
// a meaning on an ensemble (an expiry, which is the leader's, and a
// closed connection).
//
// Every fault is the pure ensemble's (sim.Ensemble.SetLag, SetCut, Crash,
// Restart, ExpireSession): the driver only calls it, then takes the
// ensemble's enabled steps as always, and ends the fault when its time is
// over. Overlapping faults on one member end with the last of them, as
// in the simulated world. A duration of 0 or less lasts until
// HealServers (or RestartServer, for a crash).

// ErrNoMember is returned for a fault aimed at a member the ensemble does
// not have.
var ErrNoMember = errors.New("no such server")

// ErrNoLeader is returned for a fault aimed at the leader while there is
// none (an election is under way, or the quorum is lost).
var ErrNoLeader = errors.New("no leader")

// ErrMemberCrashed is ServeMember's answer when its member crashed: the
// crash closed the listener.
var ErrMemberCrashed = errors.New("wire: member crashed")

// untilHealed is the end of a fault with no duration.
var untilHealed = time.Unix(1<<62, 0)

// ensembleFaults is when each member's faults end, zero for none;
// guarded by EnsembleServer.mu. Indexed by member - 1.
type ensembleFaults struct {
	lagUntil, cutUntil, downUntil []time.Time
}

func newEnsembleFaults(n int) ensembleFaults {
	return ensembleFaults{lagUntil: make([]time.Time, n), cutUntil: make([]time.Time, n), downUntil: make([]time.Time, n)}
}

// MemberState is one member as the control API lists it.
type MemberState struct {
	ID int
	// Mode is "leader", "follower", "looking" (it runs but follows no
	// leader: it refuses clients) or "down" (crashed).
	Mode string
	// LastZxid is the last transaction it applied.
	LastZxid int64
	// Connections counts its open client connections.
	Connections int
	// Lagging, Cut: a lag or a partition from the other servers holds
	// it now.
	Lagging, Cut bool
	// LagEnds, CutEnds, DownEnds are when its faults end: zero for none
	// (a fault's end is zeroed as it ends), and a time past the year
	// 10000 for one that lasts until healed.
	LagEnds, CutEnds, DownEnds time.Time
}

func (s *EnsembleServer) checkMember(i int) error {
	if i < 1 || i > len(s.members) {
		return fmt.Errorf("s%d: %w (the ensemble has s1..s%d)", i, ErrNoMember, len(s.members))
	}
	return nil
}

// faultEnd is when a fault of d injected at now ends.
func faultEnd(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return untilHealed
	}
	return now.Add(d)
}

// extend moves *until to end if end is later, and reports whether a
// timer must end the fault at end.
func extend(until *time.Time, end time.Time) bool {
	if end.After(*until) {
		*until = end
	}
	return !end.Equal(untilHealed)
}

// afterLocked runs end under the lock after d, unless the server closed
// by then or the fault's end (*until) has moved past now.
func (s *EnsembleServer) afterLocked(d time.Duration, until *time.Time, end func(nowMs int64)) {
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || until.IsZero() || time.Now().Before(*until) {
			return
		}
		*until = time.Time{}
		nowMs := s.nowMs()
		s.advanceLocked(nowMs)
		end(nowMs)
		s.settleLocked(nowMs)
		s.rearmLocked(nowMs)
	})
}

// faultLocked injects one fault at now (a crash, a restart, an expiry,
// a lag...): inject runs after the ensemble reached now, and then the
// ensemble takes its steps.
func (s *EnsembleServer) faultLocked(inject func(nowMs int64)) {
	nowMs := s.nowMs()
	s.advanceLocked(nowMs)
	inject(nowMs)
	s.settleLocked(nowMs)
	s.rearmLocked(nowMs)
}

// Lag makes member i receive nothing from its leader and apply nothing for
// d (sim.FaultLag): its clients' reads are answered from its state, which
// grows stale, and its writes and syncs wait; then it catches up.
func (s *EnsembleServer) Lag(i int, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkMember(i); err != nil {
		return err
	}
	until := &s.faults.lagUntil[i-1]
	s.faultLocked(func(int64) { s.ens.SetLag(i, true) })
	if extend(until, faultEnd(time.Now(), d)) {
		s.afterLocked(d, until, func(int64) { s.ens.SetLag(i, false) })
	}
	s.logf("fault: s%d lags for %s", i, forText(d))
	return nil
}

// PartitionServer cuts member i off from the other servers for d
// (sim.FaultServerPartition): its clients still reach it, but a follower
// without its leader closes its client connections and refuses new ones,
// and a leader without a quorum steps down.
func (s *EnsembleServer) PartitionServer(i int, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkMember(i); err != nil {
		return err
	}
	s.partitionLocked(i, d)
	return nil
}

func (s *EnsembleServer) partitionLocked(i int, d time.Duration) {
	until := &s.faults.cutUntil[i-1]
	s.faultLocked(func(nowMs int64) { s.ens.SetCut(nowMs, i, true) })
	if extend(until, faultEnd(time.Now(), d)) {
		s.afterLocked(d, until, func(nowMs int64) { s.ens.SetCut(nowMs, i, false) })
	}
	s.logf("fault: s%d partitioned from the other servers for %s", i, forText(d))
}

// IsolateLeader is PartitionServer of the member that leads now
// (sim.FaultIsolateLeader); it returns that member.
func (s *EnsembleServer) IsolateLeader(d time.Duration) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.ens.Leader()
	if l == 0 {
		return 0, fmt.Errorf("isolate-leader: %w now", ErrNoLeader)
	}
	s.partitionLocked(l, d)
	return l, nil
}

// CrashServer kills member i's process for d (sim.FaultServerCrash): its
// client connections and listeners close; then it restarts with what it
// had logged and syncs with the leader, and Config.Restarted is called to
// serve it again. A member already down stays down until the later end.
func (s *EnsembleServer) CrashServer(i int, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkMember(i); err != nil {
		return err
	}
	s.faultLocked(func(int64) { s.crashForLocked(i, d) })
	return nil
}

func (s *EnsembleServer) crashForLocked(i int, d time.Duration) {
	until := &s.faults.downUntil[i-1]
	if s.ens.Up(i) {
		s.crashLocked(i)
	}
	if extend(until, faultEnd(time.Now(), d)) {
		s.afterLocked(d, until, func(nowMs int64) { s.restartFaultedLocked(nowMs, i) })
	}
	s.logf("fault: s%d crashed for %s", i, forText(d))
}

// restartFaultedLocked restarts a member a fault crashed, and has it
// served again.
func (s *EnsembleServer) restartFaultedLocked(nowMs int64, i int) {
	if s.ens.Up(i) {
		return
	}
	s.restartLocked(nowMs, i)
	if f := s.cfg.Restarted; f != nil {
		go f(i)
	}
}

// KillLeader is CrashServer of the member that leads now
// (sim.FaultKillLeader); it returns that member.
func (s *EnsembleServer) KillLeader(d time.Duration) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.ens.Leader()
	if l == 0 {
		return 0, fmt.Errorf("kill-leader: %w now", ErrNoLeader)
	}
	s.faultLocked(func(int64) { s.crashForLocked(l, d) })
	return l, nil
}

// LoseQuorum crashes a majority for d (sim.FaultLoseQuorum), the members
// sim.Ensemble.QuorumLossVictims names, and returns them.
func (s *EnsembleServer) LoseQuorum(d time.Duration) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	victims := s.ens.QuorumLossVictims()
	s.faultLocked(func(int64) {
		for _, v := range victims {
			s.crashForLocked(v, d)
		}
	})
	return victims
}

// RestartAll crashes every member for d, as the restart fault does on an
// ensemble in the simulated world; with d of 0 or less they restart at
// once.
func (s *EnsembleServer) RestartAll(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultLocked(func(nowMs int64) {
		for i := range s.members {
			if d > 0 {
				s.crashForLocked(i+1, d)
			} else if s.ens.Up(i + 1) {
				s.crashLocked(i + 1)
			}
		}
		if d <= 0 {
			for i := range s.members {
				s.faults.downUntil[i] = time.Time{}
				s.restartFaultedLocked(nowMs, i+1)
			}
		}
	})
}

// RestartServer ends member i's crash now: it restarts and is served
// again. It reports whether the member was down.
func (s *EnsembleServer) RestartServer(i int) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkMember(i); err != nil {
		return false, err
	}
	if s.closed || s.ens.Up(i) {
		return false, nil
	}
	s.faults.downUntil[i-1] = time.Time{}
	s.faultLocked(func(nowMs int64) { s.restartFaultedLocked(nowMs, i) })
	s.logf("fault: s%d restarted", i)
	return true, nil
}

// HealServers ends every server fault now: lags end, partitions heal,
// crashed members restart (and are served again).
func (s *EnsembleServer) HealServers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	f := &s.faults
	s.faultLocked(func(nowMs int64) {
		for k := range s.members {
			i := k + 1
			f.lagUntil[k], f.cutUntil[k], f.downUntil[k] = time.Time{}, time.Time{}, time.Time{}
			s.ens.SetLag(i, false)
			s.ens.SetCut(nowMs, i, false)
			s.restartFaultedLocked(nowMs, i)
		}
	})
	s.logf("fault: every server healed")
}

// MemberStates lists the members in number order.
func (s *EnsembleServer) MemberStates() []MemberState {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MemberState
	for k := range s.members {
		i := k + 1
		st := MemberState{ID: i, LastZxid: s.ens.Member(i).LastZxid(), Lagging: s.ens.Lagging(i),
			Cut: !s.faults.cutUntil[k].IsZero()}
		switch {
		case !s.ens.Up(i):
			st.Mode = "down"
		case s.ens.Leader() == i:
			st.Mode = "leader"
		case s.ens.Serving(i):
			st.Mode = "follower"
		default:
			st.Mode = "looking"
		}
		for _, c := range s.conns {
			if c.member == i && c.open {
				st.Connections++
			}
		}
		st.LagEnds, st.CutEnds, st.DownEnds = s.faults.lagUntil[k], s.faults.cutUntil[k], s.faults.downUntil[k]
		out = append(out, st)
	}
	return out
}

// ExpireSession expires a session on the leader now, as its timeout
// would (sim.Ensemble.ExpireSession): the expiry is a transaction the
// members apply. It reports false without a leader or for a session the
// leader does not hold.
func (s *EnsembleServer) ExpireSession(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	var ok bool
	s.faultLocked(func(nowMs int64) { ok = s.ens.ExpireSession(nowMs, id) })
	return ok
}

// Sessions lists the sessions of the committed view (sim.Ensemble.View),
// in id order.
func (s *EnsembleServer) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ens.View().Sessions()
}

// EnsembleSession is one session of the committed view for the control
// API's session list.
type EnsembleSession struct {
	sim.SessionInfo
	// Member is the member its connection is open on, 0 while it has
	// none; Conn is that connection.
	Member int
	Conn   *ConnInfo
	// Watches are the watches its connection holds on its member.
	Watches []sim.Watch
}

// SessionStates lists the sessions of the committed view in id order, with
// their connections, ephemerals and watches.
func (s *EnsembleServer) SessionStates() []EnsembleSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []EnsembleSession
	for _, info := range s.ens.View().SessionInfos() {
		st := EnsembleSession{SessionInfo: info, Watches: []sim.Watch{}}
		if st.Ephemerals == nil {
			st.Ephemerals = []string{}
		}
		if c := s.connOfLocked(info.ID); c != nil {
			st.Member = c.member
			ci := c.infoLocked()
			st.Conn = &ci
			for _, w := range s.ens.Member(c.member).Watches() {
				if w.Conn == c.id {
					st.Watches = append(st.Watches, w)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// connOfLocked is the open connection a session is attached to, the
// newest if the session moved and the old one has not closed yet.
func (s *EnsembleServer) connOfLocked(session int64) *ensConn {
	var found *ensConn
	for _, c := range s.conns {
		if c.session == session && c.open && s.ens.HasConn(c.id) && (found == nil || c.id > found.id) {
			found = c
		}
	}
	return found
}

// CloseConnection closes the connection of a session (CLOSECONNECTION),
// or every client connection when session is 0. The session lives on: its
// client reconnects to it, to any member.
func (s *EnsembleServer) CloseConnection(session int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var victims []*ensConn
	if session == 0 {
		for _, c := range s.conns {
			victims = append(victims, c)
		}
		// In the order they were opened, not the map's: the ensemble
		// takes the disconnects in this order.
		slices.SortFunc(victims, func(a, b *ensConn) int { return cmp.Compare(a.id, b.id) })
	} else {
		if !slices.Contains(s.ens.View().Sessions(), session) {
			return fmt.Errorf("session 0x%x: %w", session, ErrNoSession)
		}
		c := s.connOfLocked(session)
		if c == nil {
			return fmt.Errorf("session 0x%x: %w", session, ErrNoConnection)
		}
		victims = append(victims, c)
	}
	for _, c := range victims {
		c.open = false
		if s.ens.HasConn(c.id) {
			s.ens.Disconnect(c.id)
		}
		c.nc.Close()
	}
	s.settleLocked(s.nowMs())
	return nil
}

// infoLocked is the connection as the four-letter words describe it.
func (c *ensConn) infoLocked() ConnInfo {
	return c.stats.info(ConnInfo{ID: c.id, Remote: c.remote, Session: c.session, TimeoutMs: c.timeoutMs, Opened: c.opened,
		Queued: c.queued, Outstanding: len(c.pending)})
}

func (s *EnsembleServer) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

func forText(d time.Duration) string {
	if d <= 0 {
		return "until healed"
	}
	return d.String()
}

// CheckInvariants checks the ensemble's invariants (sim.Ensemble's): for
// tests that drive it hard.
func (s *EnsembleServer) CheckInvariants() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ens.CheckInvariants()
}
