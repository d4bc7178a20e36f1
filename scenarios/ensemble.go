package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim"
	"pgregory.net/rapid"
)

// An ensemble in a scenario file: a "servers N" line (1, the default,
// is not written) and faults that strike the servers, named s1, s2...:
//
//	servers 3
//	fault at=2s lag s2 for=2s
//	fault step=40 crash-server s1 for=5s
//	fault step=60 partition-server s3 for=10s
//	fault at=1s isolate-leader for=10s
//	fault at=1s kill-leader for=5s
//	fault at=1s lose-quorum for=10s
//
// A server fault names no client; those aimed at the leader name no
// server either: the leader is whichever server leads when the fault
// strikes.

// serverFault reports whether k strikes the ensemble rather than a
// client.
func serverFault(k sim.FaultKind) bool { return slices.Contains(sim.ServerFaultKinds, k) }

// namesServer reports whether a fault of kind k names its server (sN).
func namesServer(k sim.FaultKind) bool {
	switch k {
	case sim.FaultLag, sim.FaultServerCrash, sim.FaultServerPartition:
		return true
	}
	return false
}

// namesClient reports whether a fault of kind k names its client (cN).
func namesClient(k sim.FaultKind) bool { return k != sim.FaultRestart && !serverFault(k) }

// lasts reports whether a fault of kind k has a duration (for=D).
func lasts(k sim.FaultKind) bool {
	switch k {
	case sim.FaultDisconnect, sim.FaultPartition, sim.FaultPause, sim.FaultRestart:
		return true
	}
	return serverFault(k)
}

// allFaultKinds are the kinds a scenario file may name.
func allFaultKinds() []sim.FaultKind {
	return append(slices.Clone(sim.FaultKinds), sim.ServerFaultKinds...)
}

// ValidServers checks an ensemble's size (a flag's, a file's): 1, 3 or
// 5, as sim.Config.Validate has it.
func ValidServers(n int) error { return validServers(n) }

// ExploredFaultKinds are the fault kinds an exploration of the ensemble
// sizes servers draws from by default: the ensemble's too when a size is
// above 1.
func ExploredFaultKinds(servers []int) []sim.FaultKind {
	if (&ExploreOptions{Servers: servers}).ensemble() {
		return allFaultKinds()
	}
	return sim.FaultKinds
}

// validServers checks an ensemble's size as sim does.
func validServers(n int) error {
	if n > MaxServers {
		return fmt.Errorf("want 1, 3 or 5 servers, got %d", n)
	}
	if err := (sim.Config{Servers: n}).Validate(); err != nil || n < 1 {
		return fmt.Errorf("want 1, 3 or 5 servers, got %d", n)
	}
	return nil
}

// MaxServers is the largest ensemble a scenario may run.
const MaxServers = 5

func parseServers(rest string, out *int) error {
	n, err := strconv.Atoi(rest)
	if err != nil {
		return fmt.Errorf("servers: want 1, 3 or 5, got %s", Cut(rest))
	}
	if err := validServers(n); err != nil {
		return fmt.Errorf("servers: %v", err)
	}
	*out = n
	return nil
}

func parseServer(s string, out *int) error {
	if !strings.HasPrefix(s, "s") {
		return fmt.Errorf("want a server like s1, got %s", Cut(s))
	}
	return parseInt(s[1:], 1, MaxServers, out)
}

// checkServerFaults reports the faults that strike an ensemble the
// scenario does not have, at their lines.
func (s *Scenario) checkServerFaults(fail func(line int, format string, args ...any)) {
	servers := max(s.Servers, 1)
	for i, f := range s.Faults {
		switch {
		case !serverFault(f.Kind):
		case servers == 1:
			fail(lineOf(s.layout, "fault", i), "fault %s strikes an ensemble, but the scenario runs one server (add a line: servers 3)", f.Kind)
		case namesServer(f.Kind) && f.Server > servers:
			fail(lineOf(s.layout, "fault", i), "fault on s%d, but there are %d servers", f.Server, servers)
		}
	}
}

// checkEnsemble is checkServerFaults for a scenario built in code.
func (s *Scenario) checkEnsemble() error {
	if s.Servers != 0 {
		if err := validServers(s.Servers); err != nil {
			return fmt.Errorf("scenario: %v", err)
		}
	}
	var errs []error
	s.checkServerFaults(func(_ int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("scenario: "+format, args...))
	})
	return errors.Join(errs...)
}

// ensemble reports whether some run of the exploration has more than one
// server.
func (o *ExploreOptions) ensemble() bool {
	return slices.ContainsFunc(o.Servers, func(n int) bool { return n > 1 })
}

// drawServers draws a run's ensemble size: nothing is drawn unless the
// exploration has sizes to choose from, so that a standalone exploration
// draws exactly what it drew before ensembles.
func drawServers(t *rapid.T, o *ExploreOptions) int {
	var n int
	switch len(o.Servers) {
	case 0:
		return 0
	case 1:
		n = o.Servers[0]
	default:
		n = rapid.SampledFrom(o.Servers).Draw(t, "servers")
	}
	if n == 1 {
		return 0 // the standalone server, written with no servers line
	}
	return n
}

// faultKindsFor are the fault kinds run sc may draw: a run of one server
// leaves out the ensemble's, in an exploration that draws both sizes.
func faultKindsFor(o *ExploreOptions, sc *Scenario) []sim.FaultKind {
	if sc.Servers > 1 || !slices.ContainsFunc(o.Faults, serverFault) {
		return o.Faults
	}
	return slices.DeleteFunc(slices.Clone(o.Faults), serverFault)
}

// drawServerOf draws the server a fault of f's kind names, if it names
// one.
func drawServerOf(t *rapid.T, sc *Scenario, f *sim.Fault) {
	if namesServer(f.Kind) {
		f.Server = intRange(1, sc.Servers).Draw(t, "fault_server")
	}
}

// checkEnsembleZnodes checks an ensemble's own history: the writes
// linearizable (zk-linearizable, model.Znode on the writes), the reads
// sequentially consistent per session (zk-sequential: each path's with
// model.SessionReads, and the session's whole view never going back, by
// its replies' zxids, with model.SessionOrder). Both are skipped unless
// the run kept its history (RunOptions.Znodes).
func (r *runner) checkEnsembleZnodes(ops []sim.Operation, lastStep uint64, timeout time.Duration) []CheckResult {
	if !r.opts.Znodes {
		return []CheckResult{{Name: CheckZnodes, Outcome: Skipped}, {Name: CheckSequential, Outcome: Skipped}}
	}
	hist := znodeHistory(ops, r.obs, lastStep)
	writes := checkZnodeHistory(CheckZnodes, model.Znode(), model.WritesOnly(hist), timeout)
	writes.Detail += " (the writes: reads may be stale on an ensemble)"
	reads := checkZnodeHistory(CheckSequential, model.SessionReads(), hist, timeout)
	if reads.Outcome != Fail {
		if err := model.SessionOrder(hist); err != nil {
			reads.Outcome, reads.Detail = Fail, err.Error()
		}
	}
	return []CheckResult{writes, reads}
}

// ensembleEvent follows the committed view of an ensemble: whenever its
// last zxid moved (a transaction committed and applied there, or the
// view moved to another member), it scans every lock directory a create
// went to for new nodes and looks again at every live one. A life's
// start and end are the steps at which the view first showed the change.
func (t *serverTree) ensembleEvent(e *sim.Event) {
	if e.Kind == "apply" && (e.Op == "create" || e.Op == "createContainer" || e.Op == "createTTL") {
		if t.addDir(t.dirOf(e.Path)) {
			t.rescan = true // the next look scans it
		}
	}
	s := t.view()
	if s == t.server && s.LastZxid() == t.lastZxid {
		return
	}
	before := min(t.lastZxid, s.LastZxid())
	// A look at a tree with no node created or deleted since the last
	// look, which found every node of every directory and ended no life,
	// would find nothing: skip it (most transactions create and delete
	// nothing, and the view moves to each member that applies one first).
	// The members' trees are prefixes of one committed log, each applied
	// from a new server (sim asserts it), so their TreeChanges count the
	// creates and deletes of their prefixes: equal counts, whichever
	// members, mean the same nodes.
	unmoved := s.TreeChanges() == t.treeChanges && !t.rescan
	lookedAt := t.treeChanges
	t.server, t.lastZxid, t.treeChanges = s, s.LastZxid(), s.TreeChanges()
	if unmoved {
		return
	}
	w := sim.Event{Step: e.Step, Op: "commit"}
	if !t.rescan && !t.lookAtEverything && t.lookAtChanges(s, lookedAt, w, before) {
		return
	}
	t.rescan = false
	for _, dir := range t.dirPaths() {
		t.scanDir(dir, w, before)
	}
	for _, z := range t.aliveNow() {
		t.recheckLife(z, e.Step, "commit", 0)
	}
}

// lookAtChanges looks at just the nodes created and deleted since the
// look at change count from, when s still keeps those changes
// (sim.Server.RecentTreeChange) and they are deletes only, or a single
// create: every other node names what it named at that look, so a look at
// every directory and every life would find what this look finds (the
// deleted nodes' lives end; the created node gets one). It reports false,
// having looked at nothing, when it cannot; the caller then looks at
// everything. Most looks follow a transaction that created or deleted one
// node, and looking at every directory (listing it in the member's order)
// and every life after each was the larger part of following an
// ensemble's tree.
func (t *serverTree) lookAtChanges(s *sim.Server, from uint64, w sim.Event, before int64) bool {
	to := s.TreeChanges()
	if to <= from {
		return false
	}
	created := ""
	for k := from + 1; k <= to; k++ {
		c, ok := s.RecentTreeChange(k)
		if !ok || c.Created && to-from > 1 {
			return false
		}
		if c.Created {
			created = c.Path
		}
	}
	if created != "" {
		// The directory's one child without a life is the one created:
		// every other was there at the last look, which gave it one.
		if dir, _ := sim.SplitPath(created); t.hasDir(dir) && t.lifeOf(created) == nil {
			t.addLife(created, w, before)
		}
		return true
	}
	for k := from + 1; k <= to; k++ {
		c, _ := s.RecentTreeChange(k)
		t.recheck(c.Path, w.Step, w.Op, 0)
	}
	return true
}

// followEnsemble makes the observer's tree follow the committed view of
// the ensemble of w, naming each node's creator from the session of the
// transaction that made it.
func (o *observer) followEnsemble(w *sim.World) {
	o.tree.view = committedView(w)
	o.tree.rescan = true // the first look looks at everything
	o.tree.creatorOf = func(czxid int64) int {
		s, ok := w.TxnSession(czxid)
		if !ok || s == 0 {
			return 0
		}
		return o.sessionClient[s]
	}
}

// committedView is the ensemble's committed view as the checks see it:
// the member that has applied the most (sim.World.MostApplied). Every
// member applies a prefix of the committed log (sim asserts it), so the
// longest prefix is the newest committed state anyone has applied; the
// leader's own may lag behind a quorum of followers that already applied
// a commit (a lag fault on the leader), and sim.World.Server follows the
// leader.
func committedView(w *sim.World) func() *sim.Server { return w.MostApplied }
