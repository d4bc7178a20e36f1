// Package model holds the sequential specifications zklab checks
// histories against, as porcupine models
// (github.com/anishathalye/porcupine): a mutex, a read/write lock and a
// semaphore of N holders (lock.go); the protected store a critical
// section updates, without and with fencing tokens (store.go); and a
// znode model, partitioned by path, that checks the simulator's own
// operation histories (znode.go); and, for an ensemble, whose reads may
// be stale, SessionReads: linearizable writes, and each session's reads
// moving forward and seeing its own writes (sessionreads.go), with
// SessionOrder, not a porcupine model, holding each session's replies'
// zxids to their order across paths (sessionorder.go).
//
// Every model has DescribeOperation and DescribeState, so that a failing
// history can be rendered with porcupine.Visualize. States are comparable
// values, so porcupine's default equality applies.
//
// The models are pure: they know nothing of the simulator's scheduler.
// Package scenarios records histories on the simulator, stamps them with
// the simulator's step, and turns them into porcupine operations with the
// functions of this package.
package model
