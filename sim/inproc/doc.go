// Package inproc gives a Go test real, unmodified go-zookeeper clients
// (*zk.Conn from github.com/go-zookeeper/zk) connected to a simulated
// ZooKeeper server in the same process, over net.Pipe, so that code written
// against *zk.Conn is tested as it ships, without a ZooKeeper and without
// rewriting it against recipes.Conn.
//
// Run the test inside testing/synctest's bubble and time is virtual: the
// server's session expiry, go-zookeeper's pings, read timeouts and
// reconnect back-offs, and the test's own time.Sleep all run on the
// bubble's clock, so an hour of session timeouts costs milliseconds.
//
//	func TestMyLock(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			srv := inproc.Start(t, inproc.Config{})
//			a, _ := srv.Connect(t) // a *zk.Conn with a session
//			b, _ := srv.Connect(t)
//			srv.Partition(a)        // faults: Partition/Heal, Disconnect, CutWhen, ExpireSessionOf
//			time.Sleep(time.Hour)   // virtual
//			...
//		})
//	}
//
// Everything Start and Connect make is closed when the test ends, and the
// server's goroutines end with it (synctest fails a test that leaves a
// goroutine behind). Every goroutine involved (go-zookeeper's send, receive
// and event loops, the net.Pipe ends, the server's readers, writers and
// timer) blocks only on channels, mutexes, pipes and timers, which the
// bubble treats as durably blocked: nothing waits on the wall clock or the
// network.
//
// What is reproducible, and what is not. The server is sim.Server, a pure
// state machine with no randomness: given the order in which requests
// reach it and the virtual times at which they do, every reply, zxid,
// session id and password, Stat, watch event and expiry is fixed, and the
// faults (Partition, CutWhen, ...) act on exactly the requests and times
// the test names. That order, however, is made by go-zookeeper's own
// goroutines and the test's, which the Go scheduler orders: two clients
// that send at the same virtual instant may reach the server in either
// order from one run to the next. A test whose outcome depends on such a
// race can differ between runs; a test that orders its clients (through
// their results, synctest.Wait or virtual sleeps) is reproducible. For
// runs that are reproducible byte for byte, seed included, use the
// simulated world (package sim) and its go-zookeeper-like client.
package inproc
