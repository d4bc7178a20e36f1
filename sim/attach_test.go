package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
)

// runTask runs fn as a task of c and the world until every task is done.
func runTask(t *testing.T, w *World, c *Client, fn func(ctx context.Context)) {
	t.Helper()
	w.Go(c, "step", fn)
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
}

// A session attached on a follower that has not applied what the client
// saw is refused (ZooKeeperServer.processConnectRequest); once the
// follower catches up it is attached there and the session moves: a read
// on the old follower is still answered, a write on it closes the
// connection unapplied, and the client takes its session back.
func TestAttachSessionMovesTheSessionAndIsRefusedBehindTheClient(t *testing.T) {
	w := New(Config{Seed: 3, Servers: 3, KeepTrace: true, CheckEveryStep: true})
	defer w.Close()
	l := w.Leader()
	var f []int
	for i := 1; i <= 3; i++ {
		if i != l {
			f = append(f, i)
		}
	}
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second, Servers: []int{f[0]}})
	if err != nil {
		t.Fatal(err)
	}
	runTask(t, w, c, func(ctx context.Context) {
		if _, err := c.Create(ctx, "/a", nil, 0, acl); err != nil {
			t.Errorf("create /a: %v", err)
		}
	})
	if err := w.Inject(Fault{Kind: FaultLag, Server: f[1], Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	runTask(t, w, c, func(ctx context.Context) {
		if _, err := c.Create(ctx, "/b", nil, 0, acl); err != nil {
			t.Errorf("create /b: %v", err)
		}
	})
	if w.Member(f[1]).LastZxid() >= c.LastZxid() {
		t.Fatalf("s%d has applied %#x, the client has seen %#x: the lag did not hold it back", f[1], w.Member(f[1]).LastZxid(), c.LastZxid())
	}
	runTask(t, w, c, func(ctx context.Context) {
		a, err := w.AttachSession(ctx, c, f[1], c.LastZxid())
		if !errors.Is(err, ErrAttachRefused) {
			t.Errorf("attach on the lagging s%d: %v, %v, want ErrAttachRefused", f[1], a, err)
		}
	})
	if err := w.RunFor(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	var a *Attachment
	runTask(t, w, c, func(ctx context.Context) {
		if a, err = w.AttachSession(ctx, c, f[1], c.LastZxid()); err != nil {
			t.Fatalf("attach on s%d after the lag: %v", f[1], err)
		}
	})
	if !a.Attached() || a.Server() != f[1] {
		t.Fatalf("attachment: attached %v on s%d", a.Attached(), a.Server())
	}
	before := c.Session()
	runTask(t, w, c, func(ctx context.Context) {
		if ok, _, err := c.Exists(ctx, "/b"); err != nil || !ok {
			t.Errorf("exists /b on the old follower: %v %v, want true, nil", ok, err)
		}
		if _, err := c.Set(ctx, "/a", []byte("x"), -1); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Errorf("set on the old follower: %v, want ErrConnectionClosed", err)
		}
		waitReconnectedToSession(ctx, t, c, before)
		d, _, err := c.Get(ctx, "/a")
		if err != nil || len(d) != 0 {
			t.Errorf("get /a: %q %v, want the set unapplied", d, err)
		}
	})
	a.Close()
	if a.Attached() {
		t.Error("attached after Close")
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
}

// On one server an attach takes the session's connection away at once
// (ServerCnxnFactory.closeSession); the client comes back with its
// session, which closes the attachment's connection in turn. An expired
// session is refused with session 0.
func TestAttachSessionOnOneServerClosesTheClientsConnection(t *testing.T) {
	w := New(Config{Seed: 1, KeepTrace: true, CheckEveryStep: true})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runTask(t, w, c, func(ctx context.Context) {
		if _, err := c.Create(ctx, "/e", nil, zk.FlagEphemeral, acl); err != nil {
			t.Errorf("create /e: %v", err)
		}
	})
	before := c.Session()
	var a *Attachment
	runTask(t, w, c, func(ctx context.Context) {
		if a, err = w.AttachSession(ctx, c, 1, c.LastZxid()); err != nil {
			t.Fatalf("attach: %v", err)
		}
		waitReconnectedToSession(ctx, t, c, before)
		if ok, _, err := c.Exists(ctx, "/e"); err != nil || !ok {
			t.Errorf("exists /e: %v %v, want true, nil", ok, err)
		}
	})
	if a.Attached() {
		t.Error("the attachment still holds its connection after the client took the session back")
	}
	if _, err := w.AttachSession(context.Background(), c, 1, 0); err == nil {
		t.Error("AttachSession outside a task: no error")
	}
	runTask(t, w, c, func(ctx context.Context) {
		if _, err := w.AttachSession(ctx, c, 2, 0); err == nil {
			t.Error("AttachSession on s2 of one server: no error")
		}
	})
	// An expired session cannot be attached: the server answers session 0.
	runTask(t, w, c, func(ctx context.Context) {
		if err := w.Inject(Fault{Kind: FaultExpire, Client: c.Number()}); err != nil {
			t.Fatal(err)
		}
		if a, err := w.AttachSession(ctx, c, 1, 0); !errors.Is(err, ErrAttachExpired) {
			t.Errorf("attach an expired session: %v, %v, want ErrAttachExpired", a, err)
		}
	})
}

// waitReconnectedToSession waits until c has connected again after
// before, and checks that it kept before's session.
func waitReconnectedToSession(ctx context.Context, t *testing.T, c *Client, before recipes.Session) {
	t.Helper()
	s := c.Session()
	for s.Generation == before.Generation || !s.Connected() {
		var err error
		if s, err = c.WaitSession(ctx, s); err != nil {
			t.Fatalf("reconnect: %v", err)
		}
	}
	if s.ID != before.ID {
		t.Errorf("session %#x after reconnecting, want %#x", s.ID, before.ID)
	}
}
