package sim

// Ensemble is a ZooKeeper ensemble of a leader and followers as a pure
// state machine. It is being built (issue 13): until it is, New refuses
// Config.Servers above 1.
type Ensemble struct {
	members []*Server
	leader  int
}

// Leader is the number of the leading member, 0 while there is none.
func (e *Ensemble) Leader() int { return e.leader }

// Member is member i's applied state (1 for s1).
func (e *Ensemble) Member(i int) *Server { return e.members[i-1] }

// View is the replica that stands for the committed view.
func (e *Ensemble) View() *Server {
	if e.leader != 0 {
		return e.members[e.leader-1]
	}
	return e.members[0]
}

func (w *World) injectServerFault(f Fault) error {
	if err := checkServerFault(f, w.Servers()); err != nil {
		return err
	}
	panic("sim: server faults need an ensemble, which is not built yet")
}
