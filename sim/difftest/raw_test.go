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
)

// rawConn is a minimal ZooKeeper client that speaks jute itself, so that
// the differential tests can send a real server the requests go-zookeeper
// v1.0.4 cannot (addWatch, checkWatches, removeWatches, setWatches2,
// getEphemerals, getAllChildrenNumber, multiRead, create2, reconfig, an
// unknown opcode). It sends sim.Request values and decodes the replies
// into sim.Response values, so that both sides are compared as the
// simulator's own types. It is test code, not a codec: it encodes what the
// tests send and no more.
type rawConn struct {
	nc        net.Conn
	r         *bufio.Reader
	sessionID int64
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
	nc, err := net.DialTimeout("tcp", addr, rawReadTimeout)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, r: bufio.NewReader(nc)}
	var w juteWriter
	w.i32(0) // protocolVersion
	w.i64(0) // lastZxidSeen
	w.i32(timeoutMs)
	w.i64(0)                   // sessionId
	w.buffer(make([]byte, 16)) // passwd
	w.bool(false)              // readOnly
	if err := c.write(w.b); err != nil {
		nc.Close()
		return nil, err
	}
	frame, err := c.readFrame()
	if err != nil {
		nc.Close()
		return nil, err
	}
	r := juteReader{b: frame}
	r.i32() // protocolVersion
	r.i32() // timeOut
	c.sessionID = r.i64()
	if r.err != nil || c.sessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("raw connect: no session (%v)", r.err)
	}
	return c, nil
}

func (c *rawConn) Close() { c.nc.Close() }

func (c *rawConn) write(body []byte) error {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	c.nc.SetWriteDeadline(time.Now().Add(rawReadTimeout))
	_, err := c.nc.Write(append(frame, body...))
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

// do sends req (its Xid is set here) and returns every message up to and
// including its reply. If the server closes the connection instead, the
// messages before the close are returned with closed set.
func (c *rawConn) do(req sim.Request) ([]rawMsg, error) {
	c.xid++
	req.Xid = c.xid
	var w juteWriter
	w.i32(req.Xid)
	w.i32(int32(req.Op))
	encodeBody(&w, req)
	if err := c.write(w.b); err != nil {
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
		r := juteReader{b: frame}
		xid, zxid, code := r.i32(), r.i64(), sim.Code(r.i32())
		if xid == -1 {
			ev := &zk.Event{Type: zk.EventType(r.i32()), State: zk.State(r.i32()), Path: r.str()}
			msgs = append(msgs, rawMsg{event: ev})
			continue
		}
		resp := sim.Response{Xid: xid, Zxid: zxid, Err: code}
		if code == sim.CodeOK {
			decodeBody(&r, req, &resp)
		}
		if r.err != nil {
			return msgs, fmt.Errorf("decoding the reply to %v: %v", req.Op, r.err)
		}
		if len(r.b) != 0 {
			return msgs, fmt.Errorf("%d bytes left in the reply to %v", len(r.b), req.Op)
		}
		msgs = append(msgs, rawMsg{reply: resp})
		if xid == req.Xid {
			return msgs, nil
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func encodeBody(w *juteWriter, req sim.Request) {
	switch req.Op {
	case sim.OpCreate, sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		w.str(req.Path)
		w.buffer(req.Data)
		w.i32(int32(len(req.ACL)))
		for _, a := range req.ACL {
			w.i32(a.Perms)
			w.str(a.Scheme)
			w.str(a.ID)
		}
		w.i32(req.Mode)
		if req.Op == sim.OpCreateTTL {
			w.i64(req.TTLMs)
		}
	case sim.OpDelete, sim.OpCheck:
		w.str(req.Path)
		w.i32(req.Version)
	case sim.OpSetData:
		w.str(req.Path)
		w.buffer(req.Data)
		w.i32(req.Version)
	case sim.OpExists, sim.OpGetData, sim.OpGetChildren, sim.OpGetChildrenNoStat:
		w.str(req.Path)
		w.bool(req.Watch)
	case sim.OpSync, sim.OpGetEphemerals, sim.OpGetAllChildrenNum:
		w.str(req.Path)
	case sim.OpAddWatch:
		w.str(req.Path)
		w.i32(int32(req.AddWatchMode))
	case sim.OpCheckWatches, sim.OpRemoveWatches:
		w.str(req.Path)
		w.i32(int32(req.WatcherType))
	case sim.OpSetWatches, sim.OpSetWatches2:
		w.i64(req.RelativeZxid)
		lists := [][]string{req.DataWatches, req.ExistWatches, req.ChildWatches}
		if req.Op == sim.OpSetWatches2 {
			lists = append(lists, req.PersistentWatches, req.PersistentRecursiveWatches)
		}
		for _, l := range lists {
			w.i32(int32(len(l)))
			for _, p := range l {
				w.str(p)
			}
		}
	case sim.OpMulti, sim.OpMultiRead:
		for _, op := range req.Ops {
			w.i32(int32(op.Op))
			w.bool(false)
			w.i32(-1)
			encodeBody(w, op)
		}
		w.i32(-1)
		w.bool(true)
		w.i32(-1)
	case sim.OpReconfig:
		w.str(req.JoiningServers)
		w.str(req.LeavingServers)
		w.str(req.NewMembers)
		w.i64(req.CurConfigID)
	}
}

func decodeBody(r *juteReader, req sim.Request, resp *sim.Response) {
	switch req.Op {
	case sim.OpCreate:
		resp.Path = r.str()
	case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
		resp.Path = r.str()
		resp.Stat = r.stat()
	case sim.OpSetData, sim.OpExists:
		resp.Stat = r.stat()
	case sim.OpGetData:
		resp.Data = r.buffer()
		resp.Stat = r.stat()
	case sim.OpGetChildren:
		resp.Children = r.strs()
		resp.Stat = r.stat()
	case sim.OpGetChildrenNoStat:
		resp.Children = r.strs()
	case sim.OpSync:
		resp.Path = r.str()
	case sim.OpGetEphemerals:
		resp.Ephemerals = r.strs()
	case sim.OpGetAllChildrenNum:
		resp.TotalNumber = r.i32()
	case sim.OpAddWatch:
		if code := r.i32(); code != 0 {
			r.fail(fmt.Errorf("addWatch's ErrorResponse carries %d", code))
		}
	case sim.OpReconfig:
		resp.Data = r.buffer()
		resp.Stat = r.stat()
	case sim.OpMulti, sim.OpMultiRead:
		resp.Multi = []sim.MultiResult{}
		for r.err == nil {
			typ, done, code := sim.OpCode(r.i32()), r.bool(), sim.Code(r.i32())
			if done {
				break
			}
			res := sim.MultiResult{Op: typ}
			switch typ {
			case sim.OpCreate:
				res.Path = r.str()
			case sim.OpCreate2, sim.OpCreateCont, sim.OpCreateTTL:
				res.Path = r.str()
				res.Stat = r.stat()
			case sim.OpSetData:
				res.Stat = r.stat()
			case sim.OpGetData:
				res.Data = r.buffer()
				res.Stat = r.stat()
			case sim.OpGetChildrenNoStat:
				res.Children = r.strs()
			case sim.OpError:
				res.Op = 0
				res.Err = sim.Code(r.i32())
			}
			_ = code
			resp.Multi = append(resp.Multi, res)
		}
	}
}

type juteWriter struct{ b []byte }

func (w *juteWriter) i32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *juteWriter) i64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *juteWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}
func (w *juteWriter) str(s string) {
	w.i32(int32(len(s)))
	w.b = append(w.b, s...)
}
func (w *juteWriter) buffer(b []byte) {
	if b == nil {
		w.i32(-1)
		return
	}
	w.i32(int32(len(b)))
	w.b = append(w.b, b...)
}

type juteReader struct {
	b   []byte
	err error
}

func (r *juteReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *juteReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail(fmt.Errorf("short reply: want %d bytes, have %d", n, len(r.b)))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *juteReader) i32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *juteReader) i64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *juteReader) bool() bool {
	b := r.take(1)
	return b != nil && b[0] != 0
}

func (r *juteReader) buffer() []byte {
	n := r.i32()
	if n == -1 {
		return nil
	}
	return append([]byte{}, r.take(int(n))...)
}

func (r *juteReader) str() string { return string(r.buffer()) }

func (r *juteReader) strs() []string {
	n := r.i32()
	if n == -1 {
		return nil
	}
	out := []string{}
	for range n {
		out = append(out, r.str())
	}
	return out
}

func (r *juteReader) stat() zk.Stat {
	return zk.Stat{
		Czxid: r.i64(), Mzxid: r.i64(), Ctime: r.i64(), Mtime: r.i64(),
		Version: r.i32(), Cversion: r.i32(), Aversion: r.i32(),
		EphemeralOwner: r.i64(), DataLength: r.i32(), NumChildren: r.i32(), Pzxid: r.i64(),
	}
}
