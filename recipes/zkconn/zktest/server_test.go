package zktest_test

import (
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// TestStartServesSessions: a server Start returns grants the first
// client's first connection a session. A fresh ZooKeeper answers ruok
// before it serves sessions and closes the connections that come
// meanwhile; Start waits that out, so the client connects once.
func TestStartServesSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own")
	}
	srv := zktest.Start(t)
	p := zktest.NewProxy(t, srv.Addr)
	srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	if n := p.Accepted(); n != 1 {
		t.Fatalf("the client connected %d times to a fresh server, want once", n)
	}
}
