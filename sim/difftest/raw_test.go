package difftest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// rawConn is a minimal ZooKeeper client on sim/wire's codec, so that the
// differential tests can send a real server the requests go-zookeeper
// v1.0.4 cannot (addWatch, checkWatches, removeWatches, setWatches2,
// getEphemerals, getAllChildrenNumber, multiRead, create2, reconfig, an
// unknown opcode). It sends sim.Request values and decodes the replies
// into sim.Response values, so that both sides are compared as the
// simulator's own types; the codec is held to the real server on the way.
type rawConn struct {
	nc        net.Conn
	r         *bufio.Reader
	sessionID int64
	passwd    []byte
	xid       int32
	closed    bool // the server closed the connection
}

// rawMsg is one message the server sent: a reply or an event.
type rawMsg struct {
	event *zk.Event
	reply sim.Response
}

const rawReadTimeout = 10 * time.Second

func dialRaw(addr string, timeoutMs int32) (*rawConn, error) {
	return dialRawSession(addr, timeoutMs, 0, make([]byte, 16))
}

// dialRawSession connects and opens a session, or reattaches the one
// named.
func dialRawSession(addr string, timeoutMs int32, sessionID int64, passwd []byte) (*rawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, rawReadTimeout)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, r: bufio.NewReader(nc)}
	connect := wire.ConnectRequest{HasReadOnly: true}
	connect.TimeoutMs, connect.SessionID, connect.Passwd = timeoutMs, sessionID, passwd
	if err := c.write(wire.AppendConnectRequest(nil, connect)); err != nil {
		nc.Close()
		return nil, err
	}
	frame, err := c.readFrame()
	if err != nil {
		nc.Close()
		return nil, err
	}
	resp, _, err := wire.DecodeConnectResponse(frame)
	if err != nil || resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("raw connect: no session (%v)", err)
	}
	c.sessionID, c.passwd = resp.SessionID, resp.Passwd
	return c, nil
}

// Close ends the session (closeSession, waiting for its reply) and the
// connection: a session left to expire would delete its ephemerals, and
// take zxids, in the middle of a later case.
func (c *rawConn) Close() {
	if !c.closed {
		c.do(sim.Request{Op: sim.OpCloseSession})
	} else if again, err := dialRawSession(c.nc.RemoteAddr().String(), 10000, c.sessionID, c.passwd); err == nil {
		// The server closed the connection; the session lives on.
		again.Close()
	}
	c.nc.Close()
}

func (c *rawConn) write(frame []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(rawReadTimeout))
	_, err := c.nc.Write(frame)
	return err
}

func (c *rawConn) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(rawReadTimeout))
	var n [4]byte
	if _, err := io.ReadFull(c.r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(c.r, b)
	return b, err
}

// awaitClose waits until the server closes the connection, which it
// was asked to, or rawReadTimeout passes; a frame that comes first is an
// error.
func (c *rawConn) awaitClose() error {
	frame, err := c.readFrame()
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
		c.closed = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("waiting for the server to close the connection: %v", err)
	}
	return fmt.Errorf("waiting for the server to close the connection: a frame of %d bytes came instead", len(frame))
}

// do sends req (its Xid is set here) and returns every message up to and
// including its reply. If the server closes the connection instead, the
// messages before the close are returned with closed set.
func (c *rawConn) do(req sim.Request) ([]rawMsg, error) {
	c.xid++
	req.Xid = c.xid
	if err := c.write(wire.AppendRequest(nil, req)); err != nil {
		return nil, err
	}
	var msgs []rawMsg
	for {
		frame, err := c.readFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			c.closed = true
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		h, err := wire.DecodeReplyHeader(frame)
		if err != nil {
			return msgs, err
		}
		if h.Xid == -1 {
			ev, err := wire.DecodeEvent(frame)
			if err != nil {
				return msgs, err
			}
			msgs = append(msgs, rawMsg{event: &ev})
			continue
		}
		resp, err := wire.DecodeReply(req.Op, frame)
		if err != nil {
			return msgs, fmt.Errorf("decoding the reply to %v: %v", req.Op, err)
		}
		msgs = append(msgs, rawMsg{reply: resp})
		if h.Xid == req.Xid {
			return msgs, nil
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
