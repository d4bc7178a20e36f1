package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// A HistoryRecord is one line of a served history (`zklab serve
// --history FILE`): one JSON object per line, in the order the server
// served them. The format:
//
//	seq      1, 2, 3, ...: the order served; a checker's clock
//	t_ns     wall-clock nanoseconds since the history began (not reproducible)
//	kind     "request", "reply", "event", "session", "conn" or "fault"
//	conn     the server's connection number (0 for a session's own events)
//	session  the session id, "0x..." hex ("" before the handshake)
//
// A request adds xid, op (sim.OpCode names: create, delete, exists,
// getData, setData, getChildren, multi, ...), path, data (base64),
// version (delete, setData, check), mode (the create flags), ttl_ms,
// watch, and for a multi its ops (each with op, path, data, version,
// mode). A reply adds xid, op (its request's), zxid, code and err
// (ZooKeeper's error code and name; absent for OK), path (a create's
// name), data, stat, children, and for a multi its results (each with op,
// code, err, path, stat). An event adds type (NodeCreated, NodeDeleted,
// NodeDataChanged, NodeChildrenChanged) and path.
//
// A session record's what is "connect" (the handshake: timeout_ms is the
// client's ask, session the one it asked for, 0x0 for a new one),
// "established" (timeout_ms negotiated), "refused" (the session asked for
// is gone), "created", "expired" or "closed" (the client's closeSession
// was applied). A conn record's what is "opened" (remote is the peer),
// "refused" (past maxClientCnxns) or "closed", with a reason.
//
// A fault record is a fault injected (the control API of `zklab serve
// --control`, or the Server's fault methods), written when it was
// injected, before what it caused: what is the verb (CLOSECONNECTION,
// EXPIRESESSION, REJECTCONNECTIONS, ADDDELAY, FAILREQUESTS, NORESPONSE,
// RESET, LOSEREPLY, DROPREQUEST, PARTITION, RESTART), session the session
// it aims at (absent: every session, or none), ms the delay, the
// partition's length or the restart's down time, count the requests
// FAILREQUESTS and NORESPONSE take (-1: all until RESET). What a fault
// then does shows in the records after it: a connection closed with a
// "fault: ..." reason, a request with no reply.
//
// Pings (xid -2) are left out: they change nothing.
type HistoryRecord struct {
	Seq     int64  `json:"seq"`
	TimeNs  int64  `json:"t_ns"`
	Kind    string `json:"kind"`
	Conn    int64  `json:"conn,omitempty"`
	Session string `json:"session,omitempty"`

	Xid      int32          `json:"xid,omitempty"`
	Op       string         `json:"op,omitempty"`
	Path     string         `json:"path,omitempty"`
	Data     []byte         `json:"data,omitempty"`
	Version  *int32         `json:"version,omitempty"`
	Mode     int32          `json:"mode,omitempty"`
	TTLMs    int64          `json:"ttl_ms,omitempty"`
	Watch    bool           `json:"watch,omitempty"`
	Ops      []HistorySubOp `json:"ops,omitempty"`
	Zxid     int64          `json:"zxid,omitempty"`
	Code     int32          `json:"code,omitempty"`
	Err      string         `json:"err,omitempty"`
	Stat     *zk.Stat       `json:"stat,omitempty"`
	Children []string       `json:"children,omitempty"`
	Results  []HistorySubOp `json:"results,omitempty"`

	Type      string `json:"type,omitempty"`
	What      string `json:"what,omitempty"`
	TimeoutMs int32  `json:"timeout_ms,omitempty"`
	Remote    string `json:"remote,omitempty"`
	Reason    string `json:"reason,omitempty"`

	Ms    int64 `json:"ms,omitempty"`
	Count int64 `json:"count,omitempty"`
}

// A HistorySubOp is one op of a multi request, or one result of its reply.
type HistorySubOp struct {
	Op      string   `json:"op,omitempty"`
	Path    string   `json:"path,omitempty"`
	Data    []byte   `json:"data,omitempty"`
	Version *int32   `json:"version,omitempty"`
	Mode    int32    `json:"mode,omitempty"`
	Code    int32    `json:"code,omitempty"`
	Err     string   `json:"err,omitempty"`
	Stat    *zk.Stat `json:"stat,omitempty"`
}

// SessionHex formats a session id as a history does; 0 is "".
func SessionHex(id int64) string {
	if id == 0 {
		return ""
	}
	return "0x" + strconv.FormatUint(uint64(id), 16)
}

// A HistoryWriter writes a served history: it is the Observer that
// `zklab serve --history` gives its Server. The Server calls it under its
// lock, one call at a time, so seq is the order the simulated server
// served things in. Write errors stick: Close returns the first.
type HistoryWriter struct {
	mu    sync.Mutex
	out   *bufio.Writer
	enc   *json.Encoder
	start time.Time
	seq   int64
	err   error
}

var _ Observer = (*HistoryWriter)(nil)

// NewHistoryWriter writes to w; t_ns counts from start.
func NewHistoryWriter(w io.Writer, start time.Time) *HistoryWriter {
	out := bufio.NewWriterSize(w, 64*1024)
	return &HistoryWriter{out: out, enc: json.NewEncoder(out), start: start}
}

func (h *HistoryWriter) emit(at time.Time, r *HistoryRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	r.Seq = h.seq
	r.TimeNs = int64(at.Sub(h.start))
	if h.err == nil {
		h.err = h.enc.Encode(r)
	}
}

func version(v int32) *int32 { return &v }

// hasVersion reports whether a request carries an expected version.
func hasVersion(op sim.OpCode) bool {
	return op == sim.OpDelete || op == sim.OpSetData || op == sim.OpCheck
}

func statOrNil(st zk.Stat) *zk.Stat {
	if st == (zk.Stat{}) {
		return nil
	}
	return &st
}

func (h *HistoryWriter) ConnOpened(at time.Time, c ConnInfo) {
	h.emit(at, &HistoryRecord{Kind: "conn", What: "opened", Conn: int64(c.ID), Remote: c.Remote})
}

func (h *HistoryWriter) ConnRefused(at time.Time, remote string, reason string) {
	h.emit(at, &HistoryRecord{Kind: "conn", What: "refused", Remote: remote, Reason: reason})
}

func (h *HistoryWriter) ConnClosed(at time.Time, c ConnInfo, reason string) {
	h.emit(at, &HistoryRecord{Kind: "conn", What: "closed", Conn: int64(c.ID), Session: SessionHex(c.Session), Reason: reason})
}

func (h *HistoryWriter) Handshake(at time.Time, conn sim.ConnID, req ConnectRequest, resp sim.ConnectResponse) {
	asked := SessionHex(req.SessionID)
	if asked == "" {
		asked = "0x0"
	}
	h.emit(at, &HistoryRecord{Kind: "session", What: "connect", Conn: int64(conn), Session: asked, TimeoutMs: req.TimeoutMs})
	if resp.SessionID == 0 {
		h.emit(at, &HistoryRecord{Kind: "session", What: "refused", Conn: int64(conn), Session: asked})
		return
	}
	h.emit(at, &HistoryRecord{Kind: "session", What: "established", Conn: int64(conn), Session: SessionHex(resp.SessionID), TimeoutMs: resp.TimeoutMs})
}

func (h *HistoryWriter) SessionCreated(at time.Time, conn sim.ConnID, session int64, timeoutMs int32) {
	h.emit(at, &HistoryRecord{Kind: "session", What: "created", Conn: int64(conn), Session: SessionHex(session), TimeoutMs: timeoutMs})
}

func (h *HistoryWriter) SessionExpired(at time.Time, session int64) {
	h.emit(at, &HistoryRecord{Kind: "session", What: "expired", Session: SessionHex(session)})
}

func (h *HistoryWriter) SessionClosed(at time.Time, session int64) {
	h.emit(at, &HistoryRecord{Kind: "session", What: "closed", Session: SessionHex(session)})
}

func (h *HistoryWriter) RequestReceived(at time.Time, conn sim.ConnID, session int64, req sim.Request) {
	if req.Op == sim.OpPing {
		return
	}
	r := &HistoryRecord{Kind: "request", Conn: int64(conn), Session: SessionHex(session),
		Xid: req.Xid, Op: req.Op.String(), Path: req.Path, Data: req.Data, Mode: req.Mode, TTLMs: req.TTLMs, Watch: req.Watch}
	if hasVersion(req.Op) {
		r.Version = version(req.Version)
	}
	for i := range req.Ops {
		o := &req.Ops[i]
		sub := HistorySubOp{Op: o.Op.String(), Path: o.Path, Data: o.Data, Mode: o.Mode}
		if hasVersion(o.Op) {
			sub.Version = version(o.Version)
		}
		r.Ops = append(r.Ops, sub)
	}
	h.emit(at, r)
}

func (h *HistoryWriter) ReplySent(at time.Time, conn sim.ConnID, session int64, op sim.OpCode, resp sim.Response) {
	if op == sim.OpPing || resp.Xid == -2 {
		return
	}
	r := &HistoryRecord{Kind: "reply", Conn: int64(conn), Session: SessionHex(session), Xid: resp.Xid, Op: op.String(),
		Zxid: resp.Zxid, Path: resp.Path, Data: resp.Data, Children: resp.Children, Stat: statOrNil(resp.Stat)}
	if resp.Err != sim.CodeOK {
		r.Code, r.Err = int32(resp.Err), resp.Err.String()
	}
	for i := range resp.Multi {
		m := &resp.Multi[i]
		sub := HistorySubOp{Path: m.Path, Stat: statOrNil(m.Stat)}
		if m.Op != 0 {
			sub.Op = m.Op.String()
		}
		if m.Err != sim.CodeOK {
			sub.Code, sub.Err = int32(m.Err), m.Err.String()
		}
		r.Results = append(r.Results, sub)
	}
	h.emit(at, r)
}

func (h *HistoryWriter) WatchEventSent(at time.Time, conn sim.ConnID, session int64, ev zk.Event) {
	h.emit(at, &HistoryRecord{Kind: "event", Conn: int64(conn), Session: SessionHex(session), Type: ev.Type.String(), Path: ev.Path})
}

var _ FaultObserver = (*HistoryWriter)(nil)

func (h *HistoryWriter) FaultInjected(at time.Time, f Fault) {
	h.emit(at, &HistoryRecord{Kind: "fault", What: f.Verb, Session: SessionHex(f.Session), Ms: f.Duration.Milliseconds(), Count: f.Count})
}

// Close flushes the history and returns the first write error.
func (h *HistoryWriter) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.out.Flush(); h.err == nil {
		h.err = err
	}
	return h.err
}

// ReadHistory reads a served history. A line that is not a record is an
// error naming name:line.
func ReadHistory(name string, r io.Reader) ([]HistoryRecord, error) {
	var recs []HistoryRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec HistoryRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		switch rec.Kind {
		case "request", "reply", "event", "session", "conn", "fault":
		default:
			return nil, fmt.Errorf("%s:%d: unknown record kind %q", name, line, rec.Kind)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	return recs, nil
}
