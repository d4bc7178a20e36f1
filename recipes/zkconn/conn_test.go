package zkconn_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

var acl = zk.WorldACL(zk.PermAll)

func TestSessionAndCalls(t *testing.T) {
	srv := zktest.Shared(t)
	c := srv.Dial(t, 4*time.Second)
	ctx := context.Background()
	s := c.Session()
	if !s.Connected() || s.ID == 0 || s.Generation == 0 {
		t.Fatalf("session after WaitConnected = %+v", s)
	}
	if s.TimeoutMs != 4000 {
		t.Errorf("negotiated timeout = %d ms, want 4000", s.TimeoutMs)
	}
	if s.ID != c.ZK().SessionID() {
		t.Errorf("session id %#x, zk says %#x", s.ID, c.ZK().SessionID())
	}

	root := "/zkconn-" + c.GUID()
	if p, err := c.Create(ctx, root, []byte("x"), 0, acl); err != nil || p != root {
		t.Fatalf("Create = %q, %v", p, err)
	}
	ok, _, ch, err := c.ExistsW(ctx, root+"/n")
	if ok || err != nil {
		t.Fatalf("ExistsW = %v, %v", ok, err)
	}
	if _, err := c.Create(ctx, root+"/n", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ev, err := c.Wait(wctx, ch)
	if err != nil || ev.Type != zk.EventNodeCreated || ev.Path != root+"/n" {
		t.Fatalf("Wait = %+v, %v", ev, err)
	}

	// Wait on several watches, one of which fires.
	_, _, ch1, err := c.GetW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	_, _, ch2, err := c.ChildrenW(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, root, []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	ev, err = c.Wait(wctx, ch2, ch1)
	if err != nil || ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("Wait(children, data) = %+v, %v", ev, err)
	}
	short, cancelShort := c.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := c.Wait(short, ch2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an idle watch = %v, want DeadlineExceeded", err)
	}
	// A cancelled context fails the call before it is sent.
	if _, err := c.Create(short, root+"/never", nil, 0, acl); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create with a done context = %v", err)
	}
	if ok, _, _ := c.Exists(ctx, root+"/never"); ok {
		t.Fatal("a call with a done context was sent")
	}
	if err := c.Sleep(short, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sleep = %v", err)
	}
	if got := c.GUID(); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(got) || got == c.GUID() {
		t.Fatalf("GUID = %q", got)
	}
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Fatalf("Now is %v off", d)
	}
	if err := c.Delete(ctx, root+"/n", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, root, -1); err != nil {
		t.Fatal(err)
	}
}

func TestWaitSessionAfterClose(t *testing.T) {
	srv := zktest.Shared(t)
	c, err := zkconn.Dial([]string{srv.Addr}, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := c.ExistsW(ctx, "/zkconn-missing-"+c.GUID())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	s := c.Session()
	if s.Connected() {
		t.Fatalf("session after Close = %+v", s)
	}
	if _, err := c.WaitSession(ctx, s); !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("WaitSession after Close = %v, want ErrClosing", err)
	}
	ev, err := c.Wait(ctx, ch)
	if err != nil || ev.Type != zk.EventNotWatching || !errors.Is(ev.Err, zk.ErrClosing) {
		t.Fatalf("watch after Close = %+v, %v", ev, err)
	}
}

// A failingWriteConn fails the first write of a create request once
// armed, as a socket closed under a request being sent fails it, and
// closes the connection.
type failingWriteConn struct {
	net.Conn
	armed *atomic.Bool
}

// opCreate is the create request's opcode (ZooKeeper's ZooDefs.OpCode).
const opCreate = 1

func (c failingWriteConn) Write(frame []byte) (int, error) {
	// A frame is its length, then the request header: xid, opcode.
	if len(frame) >= 12 && binary.BigEndian.Uint32(frame[8:12]) == opCreate && c.armed.CompareAndSwap(true, false) {
		c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
	}
	return c.Conn.Write(frame)
}

// TestWriteFailureIsConnectionLoss: go-zookeeper answers a request whose
// write fails with the write's own error; Conn reports it as the
// connection loss recipes.Conn promises, zk.ErrConnectionClosed, and the
// client reconnects in the same session.
func TestWriteFailureIsConnectionLoss(t *testing.T) {
	srv := zktest.Shared(t)
	var armed atomic.Bool
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return failingWriteConn{Conn: conn, armed: &armed}, nil
	}
	c := srv.Dial(t, 4*time.Second, zkconn.WithDialer(dial))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := c.Session()
	path := "/zkconn-write-" + c.GUID()

	armed.Store(true)
	if _, err := c.Create(ctx, path, nil, 0, acl); err != zk.ErrConnectionClosed {
		t.Fatalf("Create whose write failed = %v, want zk.ErrConnectionClosed", err)
	}
	if armed.Load() {
		t.Fatal("the create was never written")
	}
	// Wait for the client to see the loss, then for it to reconnect.
	if _, err := c.WaitSession(ctx, before); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if after := c.Session(); after.ID != before.ID {
		t.Errorf("session %#x after the loss, want %#x", after.ID, before.ID)
	}
	// The write failed before any byte left: the server never saw it.
	if ok, _, err := c.Exists(ctx, path); ok || err != nil {
		t.Fatalf("Exists after the failed write = %v, %v", ok, err)
	}
	// Errors of the server's own pass unchanged.
	if _, err := c.Create(ctx, "/zkconn-write-missing-"+c.GUID()+"/child", nil, 0, acl); err != zk.ErrNoNode {
		t.Fatalf("Create under a missing parent = %v, want zk.ErrNoNode", err)
	}
}
