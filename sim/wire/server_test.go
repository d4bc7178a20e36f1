package wire_test

import (
	"errors"
	"io"
	"log"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// pipeServer is a wire.Server over a fresh simulated server, reached over
// net.Pipe; it is closed when the test ends.
type pipeServer struct {
	*wire.Server
}

func newPipeServer(t *testing.T, scfg sim.ServerConfig, cfg wire.Config) pipeServer {
	t.Helper()
	s := wire.New(sim.NewServer(scfg), cfg)
	t.Cleanup(func() { s.Close() })
	return pipeServer{s}
}

func (p pipeServer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	client, server := net.Pipe()
	if err := p.ServeConn(server); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// quietLogger drops go-zookeeper's log lines.
var quietLogger = zk.Logger(log.New(io.Discard, "", 0))

// connect gives the test a go-zookeeper client over the pipe, with a
// session, closed when the test ends. Call it inside a synctest bubble.
func (p pipeServer) connect(t *testing.T, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{"127.0.0.1:2181"}, timeout, zk.WithDialer(p.dial), zk.WithLogger(quietLogger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession)
	// go-zookeeper reports the session before its loop calls
	// sendSetWatches, which races with its receive loop on a watch set at
	// once (see sim/inproc's settle); let it get past that.
	synctest.Wait()
	return c, events
}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State) zk.Event {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v within a virtual minute", want)
		}
	}
}

// The 3.4 operations, a watch and close through go-zookeeper's own client.
func TestGoZookeeperBasicOps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, sim.ServerConfig{}, wire.Config{})
		c, _ := srv.connect(t, 10*time.Second)
		acl := zk.WorldACL(zk.PermAll)
		if p, err := c.Create("/a", []byte("x"), 0, acl); err != nil || p != "/a" {
			t.Fatalf("create: %q %v", p, err)
		}
		if p, err := c.Create("/a/s-", nil, zk.FlagEphemeralSequential, acl); err != nil || p != "/a/s-0000000000" {
			t.Fatalf("create sequential: %q %v", p, err)
		}
		data, stat, err := c.Get("/a")
		if err != nil || string(data) != "x" || stat.NumChildren != 1 || stat.Version != 0 {
			t.Fatalf("get: %q %+v %v", data, stat, err)
		}
		_, _, ch, err := c.GetW("/a")
		if err != nil {
			t.Fatal(err)
		}
		if stat, err := c.Set("/a", []byte("y"), 0); err != nil || stat.Version != 1 {
			t.Fatalf("set: %+v %v", stat, err)
		}
		if ev := <-ch; ev.Type != zk.EventNodeDataChanged || ev.Path != "/a" {
			t.Fatalf("watch: %+v", ev)
		}
		kids, _, err := c.Children("/")
		slices.Sort(kids)
		if err != nil || !slices.Equal(kids, []string{"a", "zookeeper"}) {
			t.Fatalf("children: %q %v", kids, err)
		}
		if _, err := c.Set("/a", nil, 7); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("set bad version: %v", err)
		}
		ok, _, err := c.Exists("/nope")
		if ok || err != nil {
			t.Fatalf("exists: %v %v", ok, err)
		}
		res, err := c.Multi(&zk.CreateRequest{Path: "/m", Acl: acl}, &zk.CheckVersionRequest{Path: "/a", Version: 9})
		if !errors.Is(err, zk.ErrBadVersion) || len(res) != 2 || res[0].Error != nil || !errors.Is(res[1].Error, zk.ErrBadVersion) {
			t.Fatalf("failed multi: %+v %v", res, err)
		}
		res, err = c.Multi(&zk.CreateRequest{Path: "/m", Acl: acl}, &zk.SetDataRequest{Path: "/a", Data: []byte("z"), Version: -1}, &zk.DeleteRequest{Path: "/m", Version: -1})
		if err != nil || res[0].String != "/m" || res[1].Stat == nil || res[1].Stat.Version != 2 {
			t.Fatalf("multi: %+v %v", res, err)
		}
		if p, err := c.Sync("/a"); err != nil || p != "/a" {
			t.Fatalf("sync: %q %v", p, err)
		}
		if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatalf("delete non-empty: %v", err)
		}
	})
}
