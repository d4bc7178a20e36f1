package zktest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
)

const sessionWaitMax = 20 * time.Second

// awaitSession waits, at most sessionWaitMax, for c's session to satisfy ok.
func awaitSession(t *testing.T, c *zkconn.Conn, what string, ok func(recipes.Session) bool) recipes.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sessionWaitMax)
	defer cancel()
	s, err := c.WaitUntil(ctx, ok)
	if err != nil {
		t.Fatalf("waiting for %s: %v (session %+v)", what, err, s)
	}
	return s
}

func connectResponseBody(timeoutMs int32, id int64, passwd []byte, readOnly ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	return append(b, readOnly...)
}

func TestParseConnectResponse(t *testing.T) {
	passwd := bytes.Repeat([]byte{7}, 16)
	for _, readOnly := range [][]byte{nil, {1}} {
		r, err := parseConnectResponse(connectResponseBody(4000, 0x1234, passwd, readOnly...))
		if err != nil || r.timeoutMs != 4000 || r.sessionID != 0x1234 || !bytes.Equal(r.passwd, passwd) || r.readOnly != (len(readOnly) > 0) {
			t.Errorf("readOnly %v: %+v, %v", readOnly, r, err)
		}
	}
	valid := connectResponseBody(4000, 0x1234, passwd)
	malformed := map[string][]byte{
		"empty":           nil,
		"short":           valid[:19],
		"cut password":    valid[:len(valid)-1],
		"negative length": append(valid[:16:16], 0xff, 0xff, 0xff, 0xfe),
		"huge length":     append(valid[:16:16], 0x7f, 0xff, 0xff, 0xff),
	}
	for name, body := range malformed {
		if r, err := parseConnectResponse(body); err == nil {
			t.Errorf("%s: parsed as %+v", name, r)
		}
	}
}

func FuzzParseConnectResponse(f *testing.F) {
	f.Add(connectResponseBody(4000, 0x1234, bytes.Repeat([]byte{7}, 16), 0))
	f.Add(connectResponseBody(0, 0, make([]byte, 16)))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseConnectResponse(body)
		if err == nil && len(r.passwd) > min(len(body), passwdBytesMax) {
			t.Fatalf("a password of %d bytes from %d", len(r.passwd), len(body))
		}
	})
}

// fakeServer accepts one connection, reads its first frame and answers
// with reply as the first frame's body; it then holds the connection open
// until the test ends.
func fakeServer(t *testing.T, reply []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := readFrame(conn); err != nil {
			return
		}
		if _, err := conn.Write(withLengthPrefix(reply)); err != nil {
			return
		}
		_, _ = readFrame(conn) // until the client or the cleanup closes
	}()
	return ln.Addr().String()
}

// TestProxySessionIgnoresMalformed: the proxy passes a malformed
// ConnectResponse along and keeps no session from it.
func TestProxySessionIgnoresMalformed(t *testing.T) {
	for name, tc := range map[string]struct {
		reply []byte
		ok    bool
	}{
		"short":     {reply: []byte{0, 0, 0, 0, 0}},
		"bad":       {reply: append(connectResponseBody(4000, 0x99, nil)[:16], 0, 0, 1, 0)},
		"expired":   {reply: connectResponseBody(0, 0, make([]byte, 16))},
		"well made": {reply: connectResponseBody(4000, 0x99, []byte("sixteen bytes..."), 0), ok: true},
	} {
		t.Run(name, func(t *testing.T) {
			p := NewProxy(t, fakeServer(t, tc.reply))
			conn, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write(connectRequestFrame(4000, 0, nil)); err != nil {
				t.Fatal(err)
			}
			f, err := readFrame(conn)
			if err != nil || !bytes.Equal(f[4:], tc.reply) {
				t.Fatalf("the proxy passed %x, %v; want %x", f, err, tc.reply)
			}
			id, passwd, ok := p.Session()
			if ok != tc.ok || (ok && (id != 0x99 || string(passwd) != "sixteen bytes...")) {
				t.Fatalf("Session() = %#x %q %v", id, passwd, ok)
			}
		})
	}
}

// TestExpireSessionWhatTheClientSees records what ZooKeeper 3.8 does to
// the session's own client when ExpireSession works, step by step:
//  1. A second connection attaching to the session (the ConnectRequest
//     with its id and password) makes the server close the client's
//     connection at once; the session lives, and so does its node.
//  2. closeSession on the second connection ends the session: its
//     ephemeral node goes, and the other clients' watches fire.
//  3. The client, reconnecting (go-zookeeper waits 1 s before it retries
//     its only server), is told the session expired (StateExpired), and
//     then gets a new session.
func TestExpireSessionWhatTheClientSees(t *testing.T) {
	t.Parallel()
	srv := Shared(t)
	p := NewProxy(t, srv.Addr) // only to capture the password
	c := srv.Dial(t, 10*time.Second, zkconn.WithDialer(p.Dialer()))
	other := srv.Dial(t, 10*time.Second)
	ctx := context.Background()
	node := "/expire-session-" + c.GUID()
	if _, err := c.Create(ctx, node, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, gone, err := other.ExistsW(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Session()
	id, passwd, ok := p.Session()
	if !ok || id != before.ID {
		t.Fatalf("captured session %#x %v, client's %#x", id, ok, before.ID)
	}

	// 1. Attach.
	conn, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(sessionWaitMax))
	if _, err := conn.Write(connectRequestFrame(4000, id, passwd)); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(conn)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := parseConnectResponse(f[4:]); err != nil || r.sessionID != id {
		t.Fatalf("attach: %+v, %v", r, err)
	}
	awaitSession(t, c, "the client's disconnect at the attach", func(s recipes.Session) bool { return !s.Connected() })
	if ok, _, err := other.Exists(ctx, node); err != nil || !ok {
		t.Fatalf("after the attach, before closeSession: exists = %v, %v", ok, err)
	}

	// 2. closeSession.
	if _, err := conn.Write(requestHeaderFrame(xidCloseSession, opCloseSession)); err != nil {
		t.Fatal(err)
	}
	if f, err := readFrame(conn); err != nil || len(f) != 4+replyHeaderBytes || binary.BigEndian.Uint32(f[16:20]) != 0 {
		t.Fatalf("closeSession reply %x, %v", f, err)
	}
	wctx, cancel := context.WithTimeout(ctx, sessionWaitMax)
	defer cancel()
	if ev, err := other.Wait(wctx, gone); err != nil || ev.Type != zk.EventNodeDeleted {
		t.Fatalf("the other client's watch = %+v, %v", ev, err)
	}

	// 3. The client learns of it when it reconnects. zkconn clears the id
	// only on StateExpired.
	awaitSession(t, c, "the expiry", func(s recipes.Session) bool { return s.ID == 0 })
	after := awaitSession(t, c, "a new session", recipes.Session.Connected)
	if after.ID == before.ID {
		t.Fatalf("the client kept session %#x", before.ID)
	}
	if ok, _, err := other.Exists(ctx, node); err != nil || ok {
		t.Fatalf("after the expiry: exists = %v, %v", ok, err)
	}
	// The session is gone for good.
	if err := ExpireSession(srv.Addr, id, passwd, 5*time.Second); !errors.Is(err, ErrSessionGone) {
		t.Fatalf("expiring it again = %v, want ErrSessionGone", err)
	}
}

func TestExpireSessionErrors(t *testing.T) {
	srv := Shared(t)
	// A server just started answers ruok before it serves sessions: it
	// closes the first connections without a word. Dial waits for a
	// session, and so past that.
	srv.Dial(t, 10*time.Second)
	const timeout = 300 * time.Millisecond
	// No such session (and no such password).
	err := ExpireSession(srv.Addr, 0x7777, make([]byte, 16), 5*time.Second)
	if !errors.Is(err, ErrSessionGone) || !strings.Contains(err.Error(), srv.Addr) {
		t.Fatalf("an unknown session: %v", err)
	}
	if err := ExpireSession(srv.Addr, 0x7777, nil, 0); err == nil {
		t.Fatal("a zero timeout was taken")
	}
	if err := ExpireSession(srv.Addr, 0, nil, timeout); err == nil {
		t.Fatal("session id 0 was taken")
	}
	// A server that never answers: bounded by the timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	err = ExpireSession(ln.Addr().String(), 0x7777, nil, timeout)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "connect response") {
		t.Fatalf("a silent server: %v", err)
	}
	if d := time.Since(start); d > timeout+time.Second {
		t.Fatalf("a silent server took %v with a timeout of %v", d, timeout)
	}
}
