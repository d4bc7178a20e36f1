package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"

	"github.com/zklab/zklab/sim"
)

// A Journal makes a Server durable: it is a file of the simulated
// server's inputs (connections opened and closed, handshakes and requests
// as their frames, the passage of time, expiries), in the order the Server
// fed them, each with the virtual time it was fed at. The simulated server
// is a deterministic state machine, so replaying the inputs into a fresh
// one rebuilds its state exactly: the tree, ACLs, sessions, sequence
// counters and zxids. Nothing of ZooKeeper's semantics lives here
// (principle 3): there is no second model of the state to keep in step.
//
// Inputs are written before any output they cause leaves: the Server
// writes what it buffered before it queues a reply (ZooKeeper logs a
// transaction before it answers it). With Sync, the file is also fsynced
// when a transaction was applied since the last write (ZooKeeper's
// forceSync=yes, its default); a read is written but not synced, as
// ZooKeeper logs only transactions. A write(2) alone survives a kill -9;
// Sync is for the machine losing power.
//
// On open, a log is replayed and the server restarted at the end of it
// (sim.Server.Restart: every connection is dropped, every live session
// gets its full timeout again, as a restarted ZooKeeper loads sessions
// from its snapshot; measured on 3.8: see persist_test.go in cmd/zklab).
// Virtual time continues: the restarted server's time is the wall clock's
// distance from the log's epoch, and never less than the log's last time.
//
// The log is not compacted: it grows with every input, reads and pings
// included, until dataDir is cleared (see README, "zklab serve").
type Journal struct {
	f    *os.File
	path string
	sync bool

	buf        []byte // records not yet written
	syncedZxid int64  // the simulated server's last zxid at the last sync
	err        error  // the first write error: the journal is dead

	resumeMs int64      // the virtual time the server restarts at
	nextConn sim.ConnID // past every connection the log names
}

// JournalOptions configures OpenJournal.
type JournalOptions struct {
	// Sync fsyncs the file before a transaction's reply leaves.
	Sync bool
	// WallClockMs is the current time in milliseconds since 1970: a
	// restarted server's virtual time continues from it.
	WallClockMs int64
	// Warn is told of a log tail that was cut (a kill mid-write).
	Warn func(msg string)
}

// Recovered is an opened journal and the server it rebuilt.
type Recovered struct {
	Journal *Journal
	// Server is the simulated server, replayed and restarted; a new log's
	// is fresh. It must be given to New with this Journal.
	Server *sim.Server
	// Records is how many inputs were replayed.
	Records int
}

// journalMagic opens a journal file; the version after it changes when
// the record format, or the meaning of a replayed input, does.
const (
	journalMagic   = "ZKLABJNL"
	journalVersion = 1
)

// Record kinds: one per input method of sim.Server that a Server calls.
const (
	recOpen       byte = 'O' // conn, addr
	recConnect    byte = 'C' // nowMs, conn, connect frame
	recReceive    byte = 'R' // nowMs, conn, request frame
	recDisconnect byte = 'D' // conn
	recTick       byte = 'T' // nowMs
	recStep       byte = 'S' // nowMs
	recExpire     byte = 'E' // nowMs, session
	recRestart    byte = 'B' // nowMs
)

// journalHeader is the file's first record, after the magic and version.
type journalHeader struct {
	Config sim.ServerConfig
}

// recordBytesMax bounds one record: a request frame is at most
// jute.maxbuffer; a length past this is a torn or garbage tail.
const recordBytesMax = 64 << 20

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// OpenJournal opens the journal at path, creating it for a server with
// cfg if it does not exist. An existing journal is replayed: its server
// had cfg too (EpochMs aside, which the log keeps), else it is an error.
// A torn last record is cut off with a warning; a file that is not a
// journal of this version is an error naming it.
func OpenJournal(path string, cfg sim.ServerConfig, opts JournalOptions) (*Recovered, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	rec, err := openJournal(f, path, cfg, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return rec, nil
}

func openJournal(f *os.File, path string, cfg sim.ServerConfig, opts JournalOptions) (*Recovered, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	j := &Journal{f: f, path: path, sync: opts.Sync, nextConn: 1}
	if len(data) == 0 {
		hdr, err := json.Marshal(journalHeader{Config: cfg})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		var b []byte
		b = append(b, journalMagic...)
		b = binary.BigEndian.AppendUint32(b, journalVersion)
		b = appendRecord(b, hdr)
		if _, err := f.Write(b); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		if err := j.syncFile(); err != nil {
			return nil, err
		}
		srv := sim.NewServer(cfg)
		return &Recovered{Journal: j, Server: srv}, nil
	}
	if len(data) < len(journalMagic)+4 || string(data[:len(journalMagic)]) != journalMagic {
		return nil, fmt.Errorf("%s: not a zklab journal (it does not start with %q)", path, journalMagic)
	}
	if v := binary.BigEndian.Uint32(data[len(journalMagic):]); v != journalVersion {
		return nil, fmt.Errorf("%s: a zklab journal of version %d; this zklab reads version %d", path, v, journalVersion)
	}
	off := len(journalMagic) + 4
	hdrBytes, n, ok := nextRecord(data[off:])
	if !ok {
		return nil, fmt.Errorf("%s: the journal's header is torn or corrupt", path)
	}
	off += n
	var hdr journalHeader
	if err := json.Unmarshal(hdrBytes, &hdr); err != nil {
		return nil, fmt.Errorf("%s: the journal's header: %v", path, err)
	}
	logged := hdr.Config
	want := cfg
	want.EpochMs = logged.EpochMs
	if logged != want {
		return nil, fmt.Errorf("%s: written by a server configured %+v, not %+v: start with that configuration or an empty dataDir", path, logged, want)
	}
	srv := sim.NewServer(logged)
	lastMs := int64(0)
	records := 0
	for off < len(data) {
		payload, n, ok := nextRecord(data[off:])
		if !ok {
			if opts.Warn != nil {
				opts.Warn(fmt.Sprintf("%s: cut %d bytes of a torn or corrupt record at offset %d, after %d whole records (as ZooKeeper cuts its log at the last whole transaction)",
					path, len(data)-off, off, records))
			}
			if err := f.Truncate(int64(off)); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			break
		}
		nowMs, err := j.replay(srv, payload)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d at offset %d: %v", path, records+1, off, err)
		}
		lastMs = max(lastMs, nowMs)
		srv.Outputs() // what the replayed server sent went out before the kill
		records++
		off += n
	}
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	// The server restarts where the log ended, or at the wall clock if
	// that is later: virtual time never goes back, and ctime and mtime
	// stay wall-clock times across a restart.
	j.resumeMs = max(lastMs, opts.WallClockMs-logged.EpochMs)
	j.restart(srv, j.resumeMs)
	j.syncedZxid = -1
	if err := j.commit(srv); err != nil {
		return nil, err
	}
	return &Recovered{Journal: j, Server: srv, Records: records}, nil
}

// nextRecord reads one record: its length, its CRC-32C and its payload.
func nextRecord(b []byte) (payload []byte, n int, ok bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	sum := binary.BigEndian.Uint32(b[4:])
	if size > recordBytesMax || uint64(len(b)-8) < uint64(size) {
		return nil, 0, false
	}
	payload = b[8 : 8+size]
	if crc32.Checksum(payload, crcTable) != sum {
		return nil, 0, false
	}
	return payload, 8 + int(size), true
}

func appendRecord(b, payload []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, crcTable))
	return append(b, payload...)
}

// replay applies one record to srv and returns its virtual time (0 for
// records without one). A record the server could not have logged (a
// request on a connection it does not have) is an error, never a panic.
func (j *Journal) replay(srv *sim.Server, p []byte) (int64, error) {
	r := bytes.NewReader(p)
	kind, err := r.ReadByte()
	if err != nil {
		return 0, errors.New("empty record")
	}
	var nowMs int64
	var conn uint64
	read := func(v any) {
		if err == nil {
			err = binary.Read(r, binary.BigEndian, v)
		}
	}
	rest := func() []byte {
		b := p[len(p)-r.Len():]
		return b
	}
	switch kind {
	case recOpen:
		read(&conn)
		var addr netip.Addr
		if err == nil {
			err = addr.UnmarshalBinary(rest())
		}
		if err != nil {
			return 0, fmt.Errorf("open: %v", err)
		}
		if srv.HasConn(sim.ConnID(conn)) {
			return 0, fmt.Errorf("open of connection %d, which is open", conn)
		}
		srv.OpenFrom(sim.ConnID(conn), addr)
		j.nextConn = max(j.nextConn, sim.ConnID(conn)+1)
	case recConnect, recReceive:
		read(&nowMs)
		read(&conn)
		if err != nil {
			return 0, fmt.Errorf("record %q: %v", kind, err)
		}
		if !srv.HasConn(sim.ConnID(conn)) {
			return 0, fmt.Errorf("input on connection %d, which is not open", conn)
		}
		if kind == recConnect {
			req, err := DecodeConnectRequest(rest())
			if err != nil {
				return 0, fmt.Errorf("connect: %v", err)
			}
			srv.Connect(nowMs, sim.ConnID(conn), req.ConnectRequest)
		} else {
			req, err := DecodeRequest(rest())
			if err != nil && !req.Malformed {
				return 0, fmt.Errorf("request: %v", err)
			}
			srv.Receive(nowMs, sim.ConnID(conn), req)
		}
	case recDisconnect:
		read(&conn)
		if err != nil {
			return 0, fmt.Errorf("disconnect: %v", err)
		}
		srv.Disconnect(sim.ConnID(conn))
	case recTick, recStep, recRestart:
		read(&nowMs)
		if err != nil {
			return 0, fmt.Errorf("record %q: %v", kind, err)
		}
		switch kind {
		case recTick:
			srv.Tick(nowMs)
		case recStep:
			if !srv.HasInternal() {
				return 0, errors.New("an expired session's close, with none queued")
			}
			srv.StepInternal(nowMs)
		case recRestart:
			srv.Restart(nowMs)
		}
	case recExpire:
		read(&nowMs)
		var id int64
		read(&id)
		if err != nil {
			return 0, fmt.Errorf("expire: %v", err)
		}
		srv.ExpireSession(nowMs, id)
	default:
		return 0, fmt.Errorf("unknown record kind %q (a journal of another zklab?)", kind)
	}
	return nowMs, nil
}

// The input records, buffered until commit. Each is called under the
// Server's lock just before the simulated server's method it records.

func (j *Journal) record(kind byte, nowMs int64, conn sim.ConnID, tail []byte) {
	var p [1 + 8 + 8]byte
	payload := p[:1]
	payload[0] = kind
	switch kind {
	case recConnect, recReceive, recExpire:
		payload = binary.BigEndian.AppendUint64(payload, uint64(nowMs))
		payload = binary.BigEndian.AppendUint64(payload, uint64(conn))
	case recOpen, recDisconnect:
		payload = binary.BigEndian.AppendUint64(payload, uint64(conn))
	default:
		payload = binary.BigEndian.AppendUint64(payload, uint64(nowMs))
	}
	size := len(payload) + len(tail)
	j.buf = binary.BigEndian.AppendUint32(j.buf, uint32(size))
	crc := crc32.Update(crc32.Checksum(payload, crcTable), crcTable, tail)
	j.buf = binary.BigEndian.AppendUint32(j.buf, crc)
	j.buf = append(j.buf, payload...)
	j.buf = append(j.buf, tail...)
}

func (j *Journal) open(conn sim.ConnID, addr netip.Addr) {
	b, _ := addr.MarshalBinary()
	j.record(recOpen, 0, conn, b)
}
func (j *Journal) connect(nowMs int64, conn sim.ConnID, frame []byte) {
	j.record(recConnect, nowMs, conn, frame)
}
func (j *Journal) receive(nowMs int64, conn sim.ConnID, frame []byte) {
	j.record(recReceive, nowMs, conn, frame)
}
func (j *Journal) disconnect(conn sim.ConnID) { j.record(recDisconnect, 0, conn, nil) }
func (j *Journal) tick(nowMs int64)           { j.record(recTick, nowMs, 0, nil) }
func (j *Journal) step(nowMs int64)           { j.record(recStep, nowMs, 0, nil) }

// expire records ExpireSession; the session id travels in the conn field.
func (j *Journal) expire(nowMs int64, id int64) { j.record(recExpire, nowMs, sim.ConnID(id), nil) }

func (j *Journal) restart(srv *sim.Server, nowMs int64) {
	j.record(recRestart, nowMs, 0, nil)
	srv.Restart(nowMs)
}

// commit writes the buffered records, and fsyncs them if the journal
// syncs and srv has applied a transaction since the last sync. After a
// failure every commit fails: the Server stops, as ZooKeeper exits when
// it cannot write its log.
func (j *Journal) commit(srv *sim.Server) error {
	if j.err != nil {
		return j.err
	}
	if len(j.buf) == 0 {
		return nil
	}
	if _, err := j.f.Write(j.buf); err != nil {
		j.err = fmt.Errorf("%s: %v", j.path, err)
		return j.err
	}
	j.buf = j.buf[:0]
	if zxid := srv.LastZxid(); zxid != j.syncedZxid {
		if err := j.syncFile(); err != nil {
			j.err = err
			return err
		}
		j.syncedZxid = zxid
	}
	return nil
}

func (j *Journal) syncFile() error {
	if !j.sync {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %v", j.path, err)
	}
	return nil
}

// Close writes what is buffered and closes the file.
func (j *Journal) Close() error {
	if j.err == nil && len(j.buf) > 0 {
		if _, err := j.f.Write(j.buf); err != nil {
			j.err = fmt.Errorf("%s: %v", j.path, err)
		}
	}
	return errors.Join(j.err, j.f.Close())
}
