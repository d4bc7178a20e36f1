// Package recipes holds ZooKeeper lock recipes, written once against Conn
// so that they run unchanged on the simulator (package sim) and on a real
// ZooKeeper (package zkconn), and named so that the CLI and the testbed
// find them (Lookup, Names).
//
// Correct recipes:
//
//	exclusive-lock   ExclusiveLock      seeds 001, 003
//	herd-lock        QueueLock          seed 002 (first), seed 004 (ordinary)
//	fair-lock        QueueLock          seeds 000, 002, 004; ZooKeeper's recipe
//	reentrant-mutex  ReentrantMutex     Curator InterProcessMutex
//	semaphore-mutex  Semaphore (1)      Curator InterProcessSemaphoreMutex
//	semaphore        Semaphore (N)      Curator InterProcessSemaphoreV2, kazoo
//	rw-lock          RWLock             seed 003 (improved), Curator InterProcessReadWriteLock
//	herd-rw-lock     RWLock             seed 003 (first)
//	multi-lock       MultiLock          Curator InterProcessMultiLock
//
// Flawed variants, for teaching: persistent-lock, unprotected-lock,
// lost-wakeup-lock (QueueLock), and stale-resume-lock (ResumeLock), whose
// flaw shows on an ensemble only; its correct twin sync-resume-lock is a
// QueueLock that syncs before each listing it decides on (resume.go).
//
// The common core (core.go) makes the sequential lock nodes, with
// protected names carrying a GUID and the session id; runs the
// list-and-wait loop, watching the node in the way with getData (or the
// children, for the herd variants); and deletes a node until it is known
// gone. A Lease carries a fencing token (the czxid of the lock node) and
// reports whether it is held, suspended or lost (Curator's SUSPENDED and
// LOST).
//
// Recipe code blocks, waits and sleeps only through Conn: no goroutines,
// no clocks or timers of package time, no channel receives or selects. A
// test (TestNoConcurrencyPrimitives) keeps it so.
package recipes
