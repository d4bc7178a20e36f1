package inproc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/inproc"
)

// go-zookeeper's zk.Lock leaves its lock node behind when Lock fails after
// the create: the node is ephemeral, but its session lives on (the client
// reconnects), so every later locker waits for ever. The README's
// "Testing code written against *zk.Conn" shows this test as a user would
// write it, failing with "b still waits after an hour"; here it holds that
// the bug is caught.
func TestZkLockOrphanCaught(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := inproc.Start(t, inproc.Config{})
		a, _ := srv.Connect(t)
		b, _ := srv.Connect(t)
		// a's connection fails under the getChildren right after its create.
		srv.CutWhen(func(r sim.Request) bool { return r.Op == sim.OpGetChildren })
		if err := zk.NewLock(a, "/lock", zk.WorldACL(zk.PermAll)).Lock(); err == nil {
			t.Fatal("a got the lock through a cut connection")
		}
		got := make(chan error, 1)
		go func() { got <- zk.NewLock(b, "/lock", zk.WorldACL(zk.PermAll)).Lock() }()
		time.Sleep(time.Hour) // virtual: the test takes milliseconds
		if len(got) != 0 {
			t.Fatalf("b got the lock (%v): zk.Lock no longer orphans its node", <-got)
		}
		// The node that blocks b is a's, and a's session is alive.
		var orphans []string
		srv.Inspect(func(s *sim.Server) {
			info, _ := s.Node("/lock")
			for _, child := range info.Children {
				if n, _ := s.Node("/lock/" + child); n.Owner == a.SessionID() {
					orphans = append(orphans, child)
				}
			}
		})
		if len(orphans) != 1 || a.State() != zk.StateHasSession {
			t.Fatalf("a's nodes under /lock: %q, a's state %v; want one orphan and a live session", orphans, a.State())
		}
	})
}
