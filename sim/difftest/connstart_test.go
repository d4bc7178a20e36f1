package difftest

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// Records of goroutine profiles (debug=1) of a client labelled 7 over
// net.Pipe, as go-zookeeper v1.0.4 left it at each point.
const (
	// Taken right after WaitConnected had returned on the connection
	// that followed an AUTHFAILED, the client having a watch: the loop
	// goroutine is still in sendSetWatches, at its go statement, and the
	// goroutines it started have not run yet.
	profileInSendSetWatches = `1 @ 0x7d2921 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7d2920	github.com/go-zookeeper/zk.(*Conn).loop.func2+0x0	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:466

1 @ 0x7d2d81 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7d2d80	github.com/go-zookeeper/zk.(*Conn).loop.func1+0x0	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:451

1 @ 0x7d4b10 0x7d24ec 0x7d0f8b 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7d4b0f	github.com/go-zookeeper/zk.(*Conn).sendSetWatches+0xbaf	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:656
#	0x7d24eb	github.com/go-zookeeper/zk.(*Conn).loop+0x54b		/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:484
#	0x7d0f8a	github.com/go-zookeeper/zk.Connect.func1+0x4a		/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:224

1 @ 0x7d4b61 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7d4b60	github.com/go-zookeeper/zk.(*Conn).sendSetWatches.func1+0x0	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:642
`
	// The loop goroutine waiting for the connection's end.
	profileParked = `1 @ 0x4c93ce 0x4a5ab2 0x4a5a89 0x4cb5ce 0x4dfec5 0x7d24f9 0x7d0f8b 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x4cb5cd	sync.runtime_SemacquireWaitGroup+0x2d		/usr/local/go/src/runtime/sema.go:114
#	0x4dfec4	sync.(*WaitGroup).Wait+0xc4			/usr/local/go/src/sync/waitgroup.go:206
#	0x7d24f8	github.com/go-zookeeper/zk.(*Conn).loop+0x558	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:485
#	0x7d0f8a	github.com/go-zookeeper/zk.Connect.func1+0x4a	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:224
`
	// The receive loop, and zkconn's event goroutine: there while the
	// client lives, and the latter after its loop goroutine has ended.
	profileOthers = `1 @ 0x4c93ce 0x4a49d7 0x7a1e09 0x7a1969 0x525231 0x7d6bae 0x7d6b57 0x7d2ae5 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7a1e08	net.(*pipe).read+0x248					/usr/local/go/src/net/pipe.go:159
#	0x7a1968	net.(*pipe).Read+0x48					/usr/local/go/src/net/pipe.go:142
#	0x525230	io.ReadAtLeast+0xd0					/usr/local/go/src/io/io.go:335
#	0x7d6bad	io.ReadFull+0x2cd					/usr/local/go/src/io/io.go:354
#	0x7d6b56	github.com/go-zookeeper/zk.(*Conn).recvLoop+0x276	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:804
#	0x7d2ae4	github.com/go-zookeeper/zk.(*Conn).loop.func2+0x1c4	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:474

1 @ 0x4c93ce 0x455b6f 0x455712 0x7e9989 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7e9988	github.com/zklab/zklab/recipes/zkconn.(*Conn).watchSession+0xe8	/work/main/recipes/zkconn/conn.go:256
`
	// A setWatches request waiting for its answer (written for this
	// test, in the same form).
	profileRequesting = `1 @ 0x4c93ce 0x4a49d7 0x7d4c05 0x4d13a1
# labels: {"difftest.client":"7"}
#	0x7d5a24	github.com/go-zookeeper/zk.(*Conn).request+0x104		/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:959
#	0x7d4c04	github.com/go-zookeeper/zk.(*Conn).sendSetWatches.func1+0xa4	/root/go/pkg/mod/github.com/go-zookeeper/zk@v1.0.4/conn.go:649
`
)

func TestLoopStartedReadsTheProfile(t *testing.T) {
	for _, tc := range []struct {
		name             string
		profile, label   string
		looping, started bool
	}{
		{"in sendSetWatches", profileInSendSetWatches + "\n" + profileOthers, "7", true, false},
		{"parked", profileParked + "\n" + profileOthers, "7", true, true},
		{"parked, setWatches unanswered", profileParked + "\n" + profileRequesting + "\n" + profileOthers, "7", true, false},
		{"another client's", profileParked, "77", false, false},
		{"closed", profileOthers, "7", false, false},
		{"unlabelled", strings.ReplaceAll(profileParked, `# labels: {"difftest.client":"7"}`+"\n", ""), "7", false, false},
	} {
		looping, started := loopStarted("goroutine profile: total 9\n"+tc.profile, tc.label)
		if looping != tc.looping || started != tc.started {
			t.Errorf("%s: looping %v started %v, want %v %v", tc.name, looping, started, tc.looping, tc.started)
		}
	}
}

// After an AUTHFAILED reconnect, awaitStarted returns once go-zookeeper
// has sent the watches of a client that had some, and has done with
// sendSetWatches for one that had none: a watch set then, followed by
// another request (the pattern that let the race detector see
// go-zookeeper's own lastZxid race), is not sent again on that connection.
func TestAwaitStartedWaitsForSendSetWatches(t *testing.T) {
	srv, err := newWire()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close() // after the clients' closes, deferred below
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
		if err := b.awaitStarted(0); err != nil {
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
		if err := b.awaitStarted(0); err != nil {
			t.Fatal(err)
		}
		if got := tap.count() - before; withWatch && got != 1 || !withWatch && got != 0 {
			t.Errorf("with a watch %v: %d setWatches written after the reconnect", withWatch, got)
		}
		before = tap.count()
		if _, _, _, err := c.ZK().ExistsW(newRoot()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ZK().Exists(newRoot()); err != nil {
			t.Fatal(err)
		}
		if got := tap.count() - before; got != 0 {
			t.Errorf("with a watch %v: a watch set after awaitStarted was sent again (%d setWatches)", withWatch, got)
		}
	}
}
