package sim

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The simulated client's AddAuth, GetACL and SetACL answer as zk.Conn's
// do on a real server (measured with go-zookeeper v1.0.4 on 3.8.0).
func TestClientACLCalls(t *testing.T) {
	w, cs := newWorld(t, 1, 2, 10*time.Second)
	a, b := cs[0], cs[1]
	w.Go(a, "acl", func(ctx context.Context) {
		if _, err := a.Create(ctx, "/x", nil, 0, zk.AuthACL(zk.PermAll)); err != zk.ErrInvalidACL {
			t.Errorf("auth ACL without credentials: %v, want zk.ErrInvalidACL", err)
		}
		if err := a.AddAuth(ctx, "digest", []byte("alice:pw")); err != nil {
			t.Fatalf("AddAuth: %v", err)
		}
		if _, err := a.Create(ctx, "/x", []byte("d"), 0, zk.AuthACL(zk.PermRead|zk.PermAdmin)); err != nil {
			t.Fatalf("create with an auth ACL: %v", err)
		}
		got, stat, err := a.GetACL(ctx, "/x")
		if want := zk.DigestACL(zk.PermRead|zk.PermAdmin, "alice", "pw"); err != nil || !slices.Equal(got, want) || stat.Aversion != 0 {
			t.Errorf("GetACL: %v %+v %v, want %v", got, stat, err, want)
		}
		if _, err := a.SetACL(ctx, "/x", zk.WorldACL(zk.PermRead|zk.PermWrite), 5); err != zk.ErrBadVersion {
			t.Errorf("SetACL with a wrong aversion: %v", err)
		}
		stat, err = a.SetACL(ctx, "/x", zk.WorldACL(zk.PermWrite), 0)
		if err != nil || stat.Aversion != 1 || stat.DataLength != 1 {
			t.Errorf("SetACL: %+v %v", stat, err)
		}
		if _, _, err := a.GetACL(ctx, "x"); err != zk.ErrInvalidPath {
			t.Errorf("GetACL of a bad path: %v", err)
		}
	})
	run(t, w)
	w.Go(b, "other", func(ctx context.Context) {
		acl, stat, err := b.GetACL(ctx, "/x")
		if err != zk.ErrNoAuth || acl != nil || stat == nil || *stat != (zk.Stat{}) {
			t.Errorf("GetACL without READ or ADMIN: %v %v %v, want no ACL, a zero Stat and zk.ErrNoAuth", acl, stat, err)
		}
		if _, _, err := b.Get(ctx, "/x"); err != zk.ErrNoAuth {
			t.Errorf("Get without READ: %v", err)
		}
		if ok, _, err := b.Exists(ctx, "/x"); !ok || err != nil {
			t.Errorf("Exists needs no permission: %v %v", ok, err)
		}
		if _, err := b.Set(ctx, "/x", []byte("e"), -1); err != nil {
			t.Errorf("Set with world WRITE: %v", err)
		}
	})
	run(t, w)
}

// A scheme the server does not know fails with zk.ErrAuthFailed and costs
// the connection (the server closes it); the client reconnects with its
// session and the credentials it had, which go again first thing on the
// new connection (go-zookeeper's resendZkAuth).
func TestAuthFailureAndCredentialsSurviveReconnect(t *testing.T) {
	w, cs := newWorld(t, 1, 1, 10*time.Second)
	c := cs[0]
	w.Go(c, "auth", func(ctx context.Context) {
		if err := c.AddAuth(ctx, "digest", []byte("alice:pw")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, "/mine", []byte("d"), 0, zk.DigestACL(zk.PermAll, "alice", "pw")); err != nil {
			t.Fatal(err)
		}
		sid := c.SessionID()
		if err := c.AddAuth(ctx, "foo", []byte("bar")); err != zk.ErrAuthFailed {
			t.Errorf("AddAuth with an unknown scheme: %v, want zk.ErrAuthFailed", err)
		}
		// The connection is closed: a request sent now is lost with it.
		if err := c.Sleep(ctx, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get(ctx, "/mine"); err != nil {
			t.Errorf("Get after the auth failure's reconnect: %v", err)
		}
		if err := w.Inject(Fault{Kind: FaultDisconnect, Client: 1, Duration: 2 * time.Second}); err != nil {
			t.Error(err)
		}
		if err := c.Sleep(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get(ctx, "/mine"); err != nil {
			t.Errorf("Get after a reconnect: %v", err)
		}
		if c.SessionID() != sid {
			t.Errorf("the session changed")
		}
	})
	run(t, w)
	trace := w.TraceText()
	if !strings.Contains(trace, "closed by the server") {
		t.Errorf("the auth failure did not close the connection:\n%s", tail(trace, 40))
	}
	// Every connection after the first sends the credentials again.
	var resent int
	for _, line := range strings.Split(trace, "\n") {
		if strings.Contains(line, " send ") && strings.Contains(line, " auth ") {
			resent++
		}
	}
	if resent < 3 {
		t.Errorf("auth sent %d times, want the AddAuth and a resend on each of two reconnects:\n%s", resent, tail(trace, 60))
	}
}

// Each client connects from its own address, which the ip scheme matches.
func TestClientAddressForIPScheme(t *testing.T) {
	w := New(Config{Seed: 1, KeepTrace: true, CheckEveryStep: true})
	t.Cleanup(w.Close)
	a, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second, Addr: netip.MustParseAddr("10.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second, Addr: netip.MustParseAddr("10.0.1.1")})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(a, "a", func(ctx context.Context) {
		if _, err := a.Create(ctx, "/net0", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/24"}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get(ctx, "/net0"); err != nil {
			t.Errorf("10.0.0.1 reads a 10.0.0.0/24 node: %v", err)
		}
	})
	run(t, w)
	w.Go(b, "b", func(ctx context.Context) {
		if _, _, err := b.Get(ctx, "/net0"); err != zk.ErrNoAuth {
			t.Errorf("10.0.1.1 reads a 10.0.0.0/24 node: %v", err)
		}
	})
	run(t, w)
}
