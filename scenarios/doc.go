// Package scenarios is zklab's testbed: it runs lock workloads on the
// simulator, records their histories (acquires with their tokens,
// releases, the protected store's reads and writes, stamped with the
// simulator's step), checks them by name (linearizability of the lock
// and of the store with porcupine, holders in ZooKeeper's view,
// split-brain, liveness, dead watches, herd figures), explores
// workloads, fault schedules and interleavings with rapid (random walk
// or PCT), and writes every failure, shrunk, as a scenario file that
// replays byte for byte.
//
// The same workloads, faults and checks run on a real ZooKeeper with
// RunOptions.ZK and ExploreOptions.ZK (zk.go says what carries over: not
// the schedule, and not a server restart).
//
// The CLI calls Parse, Format, Run, Replay and Explore, and prints a
// Verdict. Users test their own lock recipes with Test inside go test.
// README.md describes the file format, the checks and the API.
package scenarios
