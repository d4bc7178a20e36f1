// Package sim is a deterministic, in-memory ZooKeeper: a server that
// answers as ZooKeeper 3.8 does (or an ensemble of 3 or 5), clients with
// go-zookeeper's API, the network between them, virtual time, and the
// faults that break coordination code, all driven by one seeded scheduler.
//
// # Driving a world
//
// A World runs tasks: ordinary blocking Go functions, each belonging to a
// client's process, that call the client as they would a *zk.Conn. Exactly
// one runs at a time. Whenever the running task blocks (on a call, a
// sleep, a watch), the scheduler takes steps until one resumes a task: it
// delivers a message, fires a due timer, lets the server do its own work,
// or resumes a task that can go on, choosing among the enabled steps with
// the world's Strategy (a random walk over the seed unless told
// otherwise). Virtual time moves only when nothing else can happen.
//
//	w := sim.New(sim.Config{Seed: 7})
//	defer w.Close()
//	c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 4 * time.Second})
//	...
//	w.Go(c, "worker", func(ctx context.Context) {
//		path, err := c.Create(ctx, "/lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
//		...
//	})
//	if err := w.Run(); err != nil { // until every task has returned
//		...
//	}
//
// The same seed runs the same schedule, event for event: nothing reads the
// wall clock, the global random source or a map's order (TestDeterminism
// holds a busy run with every fault to a second run of it, in the same
// process and in another).
//
// # Faults
//
// Inject (now) and Config.Faults (at a step or a virtual time) break the
// world as real deployments break: a request dropped before the server saw
// it, a reply dropped after the server applied the request (the ambiguous
// failure lock recipes get wrong), a partition, a paused process, a crashed
// one, an expired session, a server restart, and on an ensemble a member's
// crash or partition, a lagging follower, the leader isolated or killed, a
// quorum lost. FaultKinds and ServerFaultKinds list them.
//
// # What a run leaves
//
// Config.Trace receives the run's events as they happen (TextTrace and
// JSONTrace write them; a KindFilter reads only the kinds it names), and
// KeepTrace and KeepHistory keep the trace and every call for a checker.
// Record, beside a Strategy, keeps the choices it made; Replay plays them
// back, which is how package scenarios shrinks and replays a failing
// schedule.
//
// # The layers
//
// Server is the pure state machine: requests in, outputs out, with every
// rule of ZooKeeper's it follows cited where it is kept. The world, the wire
// protocol (package sim/wire, behind zklab serve) and the in-process helper
// (package sim/inproc) drive it; none of them re-implements it. Ensemble
// runs several servers with ZooKeeper's leader, followers, proposals,
// commits and elections, each member a Server.
package sim
