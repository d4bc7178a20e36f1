package sim

import (
	"fmt"
	"slices"
)

// Server faults: they act on the servers of an ensemble (Config.Servers 3
// or 5), named by their 1-based number in Fault.Server where they name one.
const (
	// FaultLag: server sN applies nothing and receives nothing from its
	// leader for Duration. Its clients still get answers to their reads,
	// which grow stale.
	FaultLag FaultKind = "lag"
	// FaultServerCrash: sN's process dies for Duration. Its connections
	// reset; it restarts with what it had logged, then syncs from the
	// leader.
	FaultServerCrash FaultKind = "crash-server"
	// FaultServerPartition cuts sN off from the other servers for Duration.
	// Its clients can still reach it, but a follower without its leader
	// closes its client connections and refuses new ones, and a leader
	// without a quorum steps down.
	FaultServerPartition FaultKind = "partition-server"
	// FaultIsolateLeader is partition-server of whichever server leads when
	// it is injected.
	FaultIsolateLeader FaultKind = "isolate-leader"
	// FaultKillLeader is crash-server of whichever server leads when it is
	// injected.
	FaultKillLeader FaultKind = "kill-leader"
	// FaultLoseQuorum crashes a majority of the servers for Duration: the
	// leader and the followers after it in number order, wrapping round
	// (the trace names them).
	FaultLoseQuorum FaultKind = "lose-quorum"
)

// ServerFaultKinds lists the faults that act on the servers of an
// ensemble. They are kept apart from FaultKinds, which exploration draws
// from, because a standalone world refuses them.
var ServerFaultKinds = []FaultKind{FaultLag, FaultServerCrash, FaultServerPartition, FaultIsolateLeader, FaultKillLeader, FaultLoseQuorum}

// QuorumLossVictims are the servers the lose-quorum fault crashes: the
// leader (s1 without one) and the servers after it in number order,
// wrapping round, a majority. Every driver of the fault (the simulated
// world, zklab serve's control API) crashes these.
func (e *Ensemble) QuorumLossVictims() []int {
	first := max(e.Leader(), 1)
	victims := make([]int, 0, e.quorum())
	for k := range e.quorum() {
		victims = append(victims, (first-1+k)%e.Servers()+1)
	}
	return victims
}

func isServerFault(k FaultKind) bool { return slices.Contains(ServerFaultKinds, k) }

// namesServer reports whether a server fault names its server in Server.
func namesServer(k FaultKind) bool {
	return k == FaultLag || k == FaultServerCrash || k == FaultServerPartition
}

func (f Fault) serverString() string {
	if namesServer(f.Kind) {
		return fmt.Sprintf("%s s%d for=%v", f.Kind, f.Server, f.Duration)
	}
	return fmt.Sprintf("%s for=%v", f.Kind, f.Duration)
}

// Validate reports what is wrong with a configuration: New panics on a
// configuration Validate rejects, so callers that take it from a user
// (scenario files, the CLI) call Validate first.
func (c Config) Validate() error {
	switch c.Servers {
	case 0, 1, 3, 5:
		return nil
	}
	return fmt.Errorf("sim: servers %d: an ensemble has 1, 3 or 5 servers", c.Servers)
}

// Servers is the number of ZooKeeper servers in the world: 1 for the
// standalone server.
func (w *World) Servers() int { return max(w.cfg.Servers, 1) }

// Leader is the number of the server that leads (1 for s1), or 0 while
// there is none. The standalone server counts as leading.
func (w *World) Leader() int {
	if w.ens == nil {
		if w.serverUp {
			return 1
		}
		return 0
	}
	return w.ens.Leader()
}

// Member returns server i's applied state (1 for s1), for inspection: the
// tree and sessions it serves reads from. It panics for a server the
// world does not have.
func (w *World) Member(i int) *Server {
	if i < 1 || i > w.Servers() {
		panic(fmt.Sprintf("sim: no server s%d (the world has %d)", i, w.Servers()))
	}
	if w.ens == nil {
		return w.server
	}
	return w.ens.Member(i)
}

// TxnSession is, on an ensemble, the session of the committed transaction
// that took zxid (the session whose request made it; 0 for a container
// sweep) and whether one committed with it: what names a node's creator
// when a member shows the node first. One server keeps no log: false.
func (w *World) TxnSession(zxid int64) (int64, bool) {
	if w.ens == nil {
		return 0, false
	}
	return w.ens.TxnSession(zxid)
}

// checkServerFault reports what is wrong with a server fault in a world of
// n servers.
func checkServerFault(f Fault, n int) error {
	if n < 3 {
		return fmt.Errorf("sim: fault %s: the world has %d server", f, n)
	}
	if namesServer(f.Kind) && (f.Server < 1 || f.Server > n) {
		return fmt.Errorf("sim: fault %s: no server s%d (the world has %d)", f, f.Server, n)
	}
	return nil
}
