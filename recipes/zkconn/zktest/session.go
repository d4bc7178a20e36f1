package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"
)

// Limits of the session protocol this package speaks itself.
const (
	// passwdBytesMax bounds a session password; ZooKeeper's are 16 bytes.
	passwdBytesMax = 256
	// connectResponseBytesMax bounds a ConnectResponse frame's body:
	// protocolVersion, timeOut, sessionId, the password and readOnly.
	connectResponseBytesMax = 4 + 4 + 8 + 4 + passwdBytesMax + 1
	// replyBytesMax bounds a reply frame's body read by ExpireSession;
	// a closeSession reply is a bare header of 16 bytes.
	replyBytesMax = 1 << 10
	// repliesSkippedMax bounds the frames ExpireSession skips (watch
	// events, pings) while it waits for the closeSession reply.
	repliesSkippedMax = 16
)

// The jute values ExpireSession sends.
const (
	protocolVersion  = 0
	opCloseSession   = -11
	xidCloseSession  = 1
	replyHeaderBytes = 4 + 8 + 4 // xid, zxid, err
)

// ErrSessionGone is the error of ExpireSession when the server will not
// attach to the session: it has already expired or been closed, or the
// password is wrong (ZooKeeper answers both the same way, with a
// ConnectResponse of timeOut 0 and sessionId 0, and closes).
var ErrSessionGone = errors.New("zktest: the server refused the session: expired, closed, or a wrong password")

// A connectResponse is the server's answer to a ConnectRequest, the first
// frame it sends on a connection.
type connectResponse struct {
	protocolVersion int32
	timeoutMs       int32
	sessionID       int64
	passwd          []byte
	readOnly        bool // optional on the wire: false when absent
}

// parseConnectResponse decodes a ConnectResponse body (the frame without
// its length prefix). A short or malformed body is an error, never a
// panic: the bytes come from the network.
func parseConnectResponse(body []byte) (connectResponse, error) {
	var r connectResponse
	const fixedBytes = 4 + 4 + 8 + 4
	if len(body) < fixedBytes {
		return r, fmt.Errorf("connect response of %d bytes, want at least %d", len(body), fixedBytes)
	}
	r.protocolVersion = int32(binary.BigEndian.Uint32(body[0:4]))
	r.timeoutMs = int32(binary.BigEndian.Uint32(body[4:8]))
	r.sessionID = int64(binary.BigEndian.Uint64(body[8:16]))
	n := int32(binary.BigEndian.Uint32(body[16:20]))
	rest := body[fixedBytes:]
	switch {
	case n == -1: // jute's null buffer
		n = 0
	case n < 0 || n > passwdBytesMax || int(n) > len(rest):
		return connectResponse{}, fmt.Errorf("connect response with a password of %d bytes in %d", n, len(rest))
	}
	r.passwd = append([]byte(nil), rest[:n]...)
	rest = rest[n:]
	if len(rest) > 0 {
		r.readOnly = rest[0] != 0
	}
	return r, nil
}

// connectRequestFrame encodes a ConnectRequest with its length prefix.
func connectRequestFrame(timeoutMs int32, id int64, passwd []byte) []byte {
	body := make([]byte, 0, 4+8+4+8+4+len(passwd)+1)
	body = binary.BigEndian.AppendUint32(body, protocolVersion)
	body = binary.BigEndian.AppendUint64(body, 0) // lastZxidSeen
	body = binary.BigEndian.AppendUint32(body, uint32(timeoutMs))
	body = binary.BigEndian.AppendUint64(body, uint64(id))
	body = binary.BigEndian.AppendUint32(body, uint32(len(passwd)))
	body = append(body, passwd...)
	body = append(body, 0) // readOnly: false
	return withLengthPrefix(body)
}

// requestHeaderFrame encodes a request of a header alone (xid, type), as
// closeSession is, with its length prefix.
func requestHeaderFrame(xid, op int32) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	return withLengthPrefix(binary.BigEndian.AppendUint32(body, uint32(op)))
}

func withLengthPrefix(body []byte) []byte {
	f := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(f, body...)
}

// ExpireSession expires a live session on the server now, the way
// ZooKeeper's own tests and Curator's old KillSession do: it dials server
// (HOST:PORT) directly, attaches to session id with its password, sends
// closeSession and reads the reply. The server deletes the session's
// ephemeral nodes and fires their watches at once.
//
// Attaching to the session makes the server close the connection the
// session had (ZooKeeper 3.8 does so as the second connection arrives;
// see TestExpireSessionWhatTheClientSees): the client sees a disconnect,
// none of its own session's close, and learns of the expiry when it
// reconnects (go-zookeeper: StateExpired, then a new session). A client
// that reconnected before the closeSession landed would, by the same
// rule, take its session back and make the expiry fail (not seen here:
// go-zookeeper waits a second before it retries its only server);
// Proxy.Expire keeps the client off meanwhile.
//
// A session the server will not attach to (expired, closed, or a wrong
// password) fails with ErrSessionGone, not nil: the server answers a
// wrong password the same way, and that must not pass for an expiry.
// Everything, the dial included, is
// bounded by timeout; the ConnectRequest also asks for timeout as the
// session timeout (the server clamps it), so that a session left attached
// by a failure part way lives about that long.
func ExpireSession(server string, id int64, passwd []byte, timeout time.Duration) error {
	conn, err := attachSession("expire", server, id, passwd, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	fail := func(what string, err error) error {
		return fmt.Errorf("zktest: expire session %#x on %s: %s: %w", id, server, what, err)
	}
	if _, err := conn.Write(requestHeaderFrame(xidCloseSession, opCloseSession)); err != nil {
		return fail("send closeSession", err)
	}
	for range repliesSkippedMax {
		f, err := readFrameMax(conn, replyBytesMax)
		if err != nil {
			return fail("read closeSession reply", err)
		}
		if len(f) < 4+replyHeaderBytes {
			return fail("read closeSession reply", fmt.Errorf("reply of %d bytes", len(f)-4))
		}
		xid := int32(binary.BigEndian.Uint32(f[4:8]))
		if xid != xidCloseSession {
			continue // a watch event or a ping: not the answer
		}
		if code := int32(binary.BigEndian.Uint32(f[16:20])); code != 0 {
			return fail("closeSession", fmt.Errorf("server error code %d", code))
		}
		return nil
	}
	return fail("read closeSession reply", fmt.Errorf("no reply among %d frames", repliesSkippedMax))
}

// AttachSession attaches a second connection to session id on server
// (HOST:PORT), with its password: the session moves to that server, as
// when its client reconnects there, and the leader records the new
// owner. The connection it returns is attached (the server answered
// with the session's id and a timeout) and sends nothing further; the
// caller closes it. Errors as ExpireSession's, ErrSessionGone for a
// session the server will not attach to. The dial and the answer are
// bounded by timeout, which the ConnectRequest also asks for as the
// session timeout (the server clamps it), and the connection's deadline
// is cleared before it is returned.
func AttachSession(server string, id int64, passwd []byte, timeout time.Duration) (net.Conn, error) {
	conn, err := attachSession("attach", server, id, passwd, timeout)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// attachSession dials server and attaches to session id; what names the
// caller's purpose in its errors. The connection keeps a deadline of
// timeout from now.
func attachSession(what, server string, id int64, passwd []byte, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("zktest: %s session %#x on %s: timeout %v is not positive", what, id, server, timeout)
	}
	if id == 0 {
		return nil, fmt.Errorf("zktest: %s session on %s: session id 0 names no session", what, server)
	}
	if len(passwd) > passwdBytesMax {
		return nil, fmt.Errorf("zktest: %s session %#x on %s: password of %d bytes", what, id, server, len(passwd))
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("zktest: %s session %#x on %s: %s: %w", what, id, server, step, err)
	}
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", server, timeout)
	if err != nil {
		return nil, fail("dial", err)
	}
	attached := false
	defer func() {
		if !attached {
			conn.Close()
		}
	}()
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fail("set deadline", err)
	}
	timeoutMs := int32(min(timeout.Milliseconds(), math.MaxInt32))
	if _, err := conn.Write(connectRequestFrame(timeoutMs, id, passwd)); err != nil {
		return nil, fail("send connect request", err)
	}
	f, err := readFrameMax(conn, connectResponseBytesMax)
	if err != nil {
		return nil, fail("read connect response", err)
	}
	r, err := parseConnectResponse(f[4:])
	if err != nil {
		return nil, fail("read connect response", err)
	}
	if r.sessionID != id || r.timeoutMs <= 0 {
		return nil, fail(fmt.Sprintf("attach (answered session %#x, timeout %d ms)", r.sessionID, r.timeoutMs), ErrSessionGone)
	}
	attached = true
	return conn, nil
}
