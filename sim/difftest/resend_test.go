package difftest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// A client that had a watch when the server closed its connection (an
// AUTHFAILED does) writes a setWatches packet on its next connection, and
// its tap counts it; one that had none writes none. awaitWatchesResent
// depends on both.
func TestSetWatchesTapSeesTheWatchesResent(t *testing.T) {
	srv := sharedWire(t)
	for _, withWatch := range []bool{true, false} {
		b := &RealBackend{}
		c, err := b.dialTapped("127.0.0.1:2181", sessionWaitMax, pipeDialer(srv.Server, netip.Addr{}))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if err := waitConnected(c); err != nil {
			t.Fatal(err)
		}
		if withWatch {
			if _, _, _, err := c.ZK().ExistsW(newRoot()); err != nil {
				t.Fatal(err)
			}
		}
		tap := b.setWatchesTap(0)
		before := tap.count()
		seen := c.Session()
		if err := c.ZK().AddAuth("foo", []byte("bar")); err != zk.ErrAuthFailed {
			t.Fatalf("AddAuth with an unknown scheme: %v, want %v", err, zk.ErrAuthFailed)
		}
		ctx, cancel := context.WithTimeout(context.Background(), sessionWaitMax)
		s, err := c.WaitUntil(ctx, func(s recipes.Session) bool { return s.Generation > seen.Generation && s.Connected() })
		cancel()
		if err != nil {
			t.Fatalf("no new connection after AUTHFAILED: %v (%+v)", err, s)
		}
		tap.await(before)
		if got := tap.count() - before; withWatch && got != 1 || !withWatch && got != 0 {
			t.Errorf("with a watch %v: %d setWatches written after the reconnect", withWatch, got)
		}
	}
}
