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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/zklab/zklab/sim"
)

// A Journal makes a Server durable: it keeps, in a directory (ZooKeeper's
// dataDir), logs of the simulated server's inputs (connections opened and
// closed, handshakes and requests as their frames, the passage of time,
// expiries), in the order the Server fed them, each with the virtual time
// it was fed at, and snapshots of the simulated server's state. The
// simulated server is a deterministic state machine, so a snapshot and the
// inputs logged after it rebuild its state exactly: the tree, ACLs,
// sessions, sequence counters and zxids. Nothing of ZooKeeper's semantics
// lives here (principle 3): a snapshot is sim.Server.Snapshot, the pure
// server's own serialization, and replay feeds the pure server.
//
// Inputs are written before any output they cause leaves: the Server
// writes what it buffered before it queues a reply (ZooKeeper logs a
// transaction before it answers it). With Sync, the file is also fsynced
// when a transaction was applied since the last write (ZooKeeper's
// forceSync=yes, its default); a read is written but not synced, as
// ZooKeeper logs only transactions. A write(2) alone survives a kill -9;
// Sync is for the machine losing power.
//
// Compaction is ZooKeeper's (SyncRequestProcessor and
// FileTxnSnapLog): after SnapCount inputs logged, the Server writes a
// snapshot, zklab-snapshot.N, and starts a new log, zklab-log.N, of the
// inputs after it; N counts the snapshots. A snapshot is written to a
// temporary file and renamed into place, so a kill leaves the old one or
// the new one, never half of one. Old files are then pruned as ZooKeeper's
// autopurge prunes them: the SnapRetainCount newest snapshots stay, with
// the logs from the oldest of them on.
//
// On open, the newest snapshot that reads whole is loaded (a damaged one
// is skipped with a warning, as ZooKeeper skips an invalid snapshot), the
// logs from it on are replayed, and the server restarted at the end of
// them (sim.Server.Restart: every connection is dropped, every live
// session gets its full timeout again, as a restarted ZooKeeper loads
// sessions from its snapshot; measured on 3.8: see persist_test.go in
// cmd/zklab). A torn last record of the last log (a kill mid-write) is cut
// with a warning. Virtual time continues: the restarted server's time is
// the wall clock's distance from the log's epoch, and never less than the
// log's last time.
type Journal struct {
	dir  string
	f    *os.File // the current log
	path string   // its path
	gen  uint64   // its number: the snapshot it follows
	sync bool
	warn func(msg string)

	snapCount       int // inputs per log before a snapshot; 0 never
	snapRetainCount int // snapshots kept by pruning; 0 prunes nothing
	logged          int // inputs in the current log

	buf        []byte // records not yet written
	syncedZxid int64  // the simulated server's last zxid at the last sync
	err        error  // the first write error: the journal is dead

	// Group commit (see startGroupCommit).
	group                         bool
	kick                          chan struct{} // the syncer's wake-up
	writing                       bool          // the syncer is writing a batch
	syncs                         atomic.Int64  // fsyncs of the log, for tests
	spare                         []byte        // the buffer the syncer gives back
	appendSeq, txnSeq, durableSeq uint64

	cfg      sim.ServerConfig // as the journal's first log has it (its EpochMs)
	resumeMs int64            // the virtual time the server restarts at
	lastMs   int64            // the latest virtual time of an input
	nextConn sim.ConnID       // past every connection the journal names
}

// JournalOptions configures OpenJournal.
type JournalOptions struct {
	// Sync fsyncs the file before a transaction's reply leaves.
	Sync bool
	// WallClockMs is the current time in milliseconds since 1970: a
	// restarted server's virtual time continues from it.
	WallClockMs int64
	// Warn is told of a log tail that was cut (a kill mid-write), a
	// snapshot skipped and a file pruning could not remove.
	Warn func(msg string)
	// SnapCount is ZooKeeper's snapCount: the inputs logged before a
	// snapshot is written and a new log started. Zero means
	// DefaultSnapCount; negative, never (the log grows without bound).
	SnapCount int
	// SnapRetainCount is ZooKeeper's autopurge.snapRetainCount: the
	// snapshots kept, with the logs after the oldest of them, when a
	// snapshot is written. Zero means DefaultSnapRetainCount; negative
	// keeps every file (ZooKeeper's autopurge.purgeInterval=0). ZooKeeper
	// raises a count below 3 to 3, and so does OpenJournal.
	SnapRetainCount int
}

// ZooKeeper's defaults: snapCount 100,000 transactions, and autopurge
// keeping 3 snapshots (its minimum).
const (
	DefaultSnapCount       = 100000
	DefaultSnapRetainCount = 3
)

// Recovered is an opened journal and the server it rebuilt.
type Recovered struct {
	Journal *Journal
	// Server is the simulated server, replayed and restarted; a new
	// journal's is fresh. It must be given to New with this Journal.
	Server *sim.Server
	// Snapshot is the snapshot file loaded, "" if none.
	Snapshot string
	// Records is how many logged inputs were replayed after it.
	Records int
}

// journalMagic opens a log file, snapshotMagic a snapshot file; the
// version after each changes when the format, or the meaning of a replayed
// input, does.
const (
	journalMagic    = "ZKLABJNL"
	journalVersion  = 1
	snapshotMagic   = "ZKLABSNP"
	snapshotVersion = 1
)

// The files in the journal's directory. N is 16 hex digits, so that the
// names sort in order. A dataDir of an earlier zklab has one log,
// zklab-journal, which becomes zklab-log.0000000000000000.
const (
	logPrefix      = "zklab-log."
	snapshotPrefix = "zklab-snapshot."
	tmpSuffix      = ".tmp"
	legacyLogName  = "zklab-journal"
)

func logName(gen uint64) string      { return fmt.Sprintf("%s%016x", logPrefix, gen) }
func snapshotName(gen uint64) string { return fmt.Sprintf("%s%016x", snapshotPrefix, gen) }

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

// journalHeader is a log's first record, after the magic and version.
type journalHeader struct {
	Config sim.ServerConfig
}

// snapshotHeader is a snapshot's first record; the second is the
// simulated server's Snapshot.
type snapshotHeader struct {
	Config   sim.ServerConfig
	LastMs   int64      // the latest virtual time of an input before it
	NextConn sim.ConnID // past every connection named before it
}

// recordBytesMax bounds one record: a request frame is at most
// jute.maxbuffer; a length past this is a torn or garbage tail. A
// snapshot's state is one record, of up to snapshotBytesMax.
const (
	recordBytesMax   = 64 << 20
	snapshotBytesMax = 1 << 31
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// OpenJournal opens the journal in dir, starting one for a server with cfg
// if there is none. An existing journal is recovered: its server had cfg
// too (EpochMs aside, which the journal keeps), else it is an error. A
// file that is not a journal's, or a journal that cannot be recovered, is
// an error naming the file.
func OpenJournal(dir string, cfg sim.ServerConfig, opts JournalOptions) (*Recovered, error) {
	j := &Journal{dir: dir, sync: opts.Sync, warn: opts.Warn, nextConn: 1,
		snapCount: opts.SnapCount, snapRetainCount: opts.SnapRetainCount}
	if j.warn == nil {
		j.warn = func(string) {}
	}
	switch {
	case j.snapCount == 0:
		j.snapCount = DefaultSnapCount
	case j.snapCount < 0:
		j.snapCount = 0
	}
	switch {
	case j.snapRetainCount == 0:
		j.snapRetainCount = DefaultSnapRetainCount
	case j.snapRetainCount < 0:
		j.snapRetainCount = 0
	case j.snapRetainCount < 3:
		j.snapRetainCount = 3 // PurgeTxnLog: "snapRetainCount should be at least 3"
	}
	rec, err := j.recover(cfg, opts.WallClockMs)
	if err != nil {
		if j.f != nil {
			j.f.Close()
		}
		return nil, err
	}
	return rec, nil
}

// files lists the generations of the logs and snapshots in the journal's
// directory, in order.
func (j *Journal) files() (logs, snapshots []uint64, err error) {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		var list *[]uint64
		var rest string
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			continue
		case strings.HasPrefix(name, logPrefix):
			list, rest = &logs, name[len(logPrefix):]
		case strings.HasPrefix(name, snapshotPrefix):
			list, rest = &snapshots, name[len(snapshotPrefix):]
		default:
			continue
		}
		gen, err := strconv.ParseUint(rest, 16, 64)
		if err != nil || len(rest) != 16 {
			continue // not one of ours
		}
		*list = append(*list, gen)
	}
	slices.Sort(logs)
	slices.Sort(snapshots)
	return logs, snapshots, nil
}

func (j *Journal) recover(cfg sim.ServerConfig, wallClockMs int64) (*Recovered, error) {
	// A snapshot, or a new log's header, that a kill cut while it was
	// being written is only ever a temporary file.
	for _, prefix := range []string{snapshotPrefix, logPrefix} {
		if tmps, err := filepath.Glob(filepath.Join(j.dir, prefix+"*"+tmpSuffix)); err == nil {
			for _, tmp := range tmps {
				os.Remove(tmp)
			}
		}
	}
	logs, snapshots, err := j.files()
	if err != nil {
		return nil, err
	}
	if len(logs) == 0 && len(snapshots) == 0 {
		legacy := filepath.Join(j.dir, legacyLogName)
		if head, err := readHead(legacy, len(journalMagic)); err == nil {
			if string(head) != journalMagic {
				return nil, fmt.Errorf("%s: not a zklab journal (it does not start with %q)", legacy, journalMagic)
			}
			if err := os.Rename(legacy, filepath.Join(j.dir, logName(0))); err != nil {
				return nil, err
			}
			logs = []uint64{0}
		}
	}
	if len(logs) == 0 && len(snapshots) == 0 {
		j.cfg = cfg
		if err := j.startLog(0); err != nil {
			return nil, err
		}
		return &Recovered{Journal: j, Server: sim.NewServer(cfg)}, nil
	}

	// The newest snapshot that loads, or none (a fresh server, then
	// log 0 on).
	out := &Recovered{Journal: j}
	var srv *sim.Server
	base := uint64(0)
	for i := len(snapshots) - 1; i >= 0 && srv == nil; i-- {
		path := filepath.Join(j.dir, snapshotName(snapshots[i]))
		loaded, err := j.loadSnapshot(path, cfg)
		if err != nil {
			var mismatch *configMismatch
			if errors.As(err, &mismatch) {
				return nil, err
			}
			j.warn(fmt.Sprintf("%v: skipped, an older snapshot is used (as ZooKeeper skips an invalid snapshot)", err))
			continue
		}
		srv, base, out.Snapshot = loaded, snapshots[i], path
	}
	if srv == nil && len(snapshots) > 0 && (len(logs) == 0 || logs[0] != 0) {
		return nil, fmt.Errorf("%s: no snapshot loads, and the log of the first inputs is gone", filepath.Join(j.dir, snapshotName(snapshots[len(snapshots)-1])))
	}
	replay := slices.DeleteFunc(slices.Clone(logs), func(gen uint64) bool { return gen < base })
	for i, gen := range replay {
		if gen != base+uint64(i) {
			return nil, fmt.Errorf("%s: missing; the logs after %s do not follow one another", filepath.Join(j.dir, logName(base+uint64(i))), filepath.Join(j.dir, logName(base)))
		}
	}
	for i, gen := range replay {
		last := i == len(replay)-1
		n, err := j.replayLog(gen, cfg, &srv, last)
		if err != nil {
			return nil, err
		}
		out.Records += n
		if last {
			j.logged = n
		}
	}
	if len(replay) == 0 {
		// Killed after the snapshot was written and before its log was.
		if err := j.startLog(base); err != nil {
			return nil, err
		}
	}
	// The server restarts where the journal ended, or at the wall clock if
	// that is later: virtual time never goes back, and ctime and mtime
	// stay wall-clock times across a restart.
	j.resumeMs = max(j.lastMs, wallClockMs-j.cfg.EpochMs)
	j.restart(srv, j.resumeMs)
	j.syncedZxid = -1
	if err := j.commit(srv); err != nil {
		return nil, err
	}
	out.Server = srv
	return out, nil
}

// readHead reads the first n bytes of a file, or fewer if it is shorter.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return b[:k], err
}

// configMismatch is a journal written by a server configured otherwise:
// never skipped, always the caller's to settle.
type configMismatch struct {
	path         string
	logged, want sim.ServerConfig
}

func (e *configMismatch) Error() string {
	return fmt.Sprintf("%s: written by a server configured %+v, not %+v: start with that configuration or an empty dataDir", e.path, e.logged, e.want)
}

func checkConfig(path string, logged, cfg sim.ServerConfig) error {
	want := cfg
	want.EpochMs = logged.EpochMs
	if logged != want {
		return &configMismatch{path, logged, want}
	}
	return nil
}

// loadSnapshot reads a snapshot file whole, or says why not.
func (j *Journal) loadSnapshot(path string, cfg sim.ServerConfig) (*sim.Server, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%s: not a zklab snapshot (it does not start with %q)", path, snapshotMagic)
	}
	if v := binary.BigEndian.Uint32(data[len(snapshotMagic):]); v != snapshotVersion {
		return nil, fmt.Errorf("%s: a zklab snapshot of version %d; this zklab reads version %d", path, v, snapshotVersion)
	}
	off := len(snapshotMagic) + 4
	hdrBytes, n, ok := nextRecordMax(data[off:], recordBytesMax)
	if !ok {
		return nil, fmt.Errorf("%s: the snapshot's header is torn or corrupt", path)
	}
	off += n
	var hdr snapshotHeader
	if err := json.Unmarshal(hdrBytes, &hdr); err != nil {
		return nil, fmt.Errorf("%s: the snapshot's header: %v", path, err)
	}
	if err := checkConfig(path, hdr.Config, cfg); err != nil {
		return nil, err
	}
	state, n, ok := nextRecordMax(data[off:], snapshotBytesMax)
	if !ok || off+n != len(data) {
		return nil, fmt.Errorf("%s: the snapshot's state is torn or corrupt", path)
	}
	srv, err := sim.RestoreServer(state)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	j.cfg = hdr.Config
	j.lastMs = max(j.lastMs, hdr.LastMs)
	j.nextConn = max(j.nextConn, hdr.NextConn)
	return srv, nil
}

// replayLog replays log gen into *srv (a fresh server if nil, which needs
// log 0's header). The last log is opened for appending, its torn tail
// cut; a torn record in an earlier one is corruption.
func (j *Journal) replayLog(gen uint64, cfg sim.ServerConfig, srv **sim.Server, last bool) (int, error) {
	path := filepath.Join(j.dir, logName(gen))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) < len(journalMagic)+4 || string(data[:len(journalMagic)]) != journalMagic {
		return 0, fmt.Errorf("%s: not a zklab journal (it does not start with %q)", path, journalMagic)
	}
	if v := binary.BigEndian.Uint32(data[len(journalMagic):]); v != journalVersion {
		return 0, fmt.Errorf("%s: a zklab journal of version %d; this zklab reads version %d", path, v, journalVersion)
	}
	off := len(journalMagic) + 4
	hdrBytes, n, ok := nextRecord(data[off:])
	if !ok {
		return 0, fmt.Errorf("%s: the journal's header is torn or corrupt", path)
	}
	off += n
	var hdr journalHeader
	if err := json.Unmarshal(hdrBytes, &hdr); err != nil {
		return 0, fmt.Errorf("%s: the journal's header: %v", path, err)
	}
	if err := checkConfig(path, hdr.Config, cfg); err != nil {
		return 0, err
	}
	if *srv == nil {
		*srv = sim.NewServer(hdr.Config)
		j.cfg = hdr.Config
	}
	records := 0
	for off < len(data) {
		payload, n, ok := nextRecord(data[off:])
		if !ok {
			if !last {
				return 0, fmt.Errorf("%s: a torn or corrupt record at offset %d, after %d whole records, and later logs follow it", path, off, records)
			}
			j.warn(fmt.Sprintf("%s: cut %d bytes of a torn or corrupt record at offset %d, after %d whole records (as ZooKeeper cuts its log at the last whole transaction)",
				path, len(data)-off, off, records))
			if err := f.Truncate(int64(off)); err != nil {
				return 0, fmt.Errorf("%s: %v", path, err)
			}
			break
		}
		nowMs, err := j.replay(*srv, payload)
		if err != nil {
			return 0, fmt.Errorf("%s: record %d at offset %d: %v", path, records+1, off, err)
		}
		j.lastMs = max(j.lastMs, nowMs)
		(*srv).Outputs() // what the replayed server sent went out before the kill
		records++
		off += n
	}
	if last {
		if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
			return 0, fmt.Errorf("%s: %v", path, err)
		}
		keep = true
		j.f, j.path, j.gen = f, path, gen
	}
	return records, nil
}

// startLog creates log gen, with its header, and makes it the current log.
func (j *Journal) startLog(gen uint64) error {
	// The log gets its header under a temporary name and takes its own
	// name only then: a kill between the file's creation and its header
	// would otherwise leave a log that is not a journal, and recovery
	// would refuse to start (a temporary file is removed at recovery).
	path := filepath.Join(j.dir, logName(gen))
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	hdr, err := json.Marshal(journalHeader{Config: j.cfg})
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	var b []byte
	b = append(b, journalMagic...)
	b = binary.BigEndian.AppendUint32(b, journalVersion)
	b = appendRecord(b, hdr)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	if j.sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("%s: fsync: %v", tmp, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		return err
	}
	if j.sync {
		if err := syncDir(j.dir); err != nil {
			f.Close()
			return err
		}
	}
	old := j.f
	j.f, j.path, j.gen, j.logged = f, path, gen, 0
	if old != nil {
		old.Close()
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %v", dir, err)
	}
	return nil
}

// snapshotDue reports whether the current log has SnapCount inputs.
func (j *Journal) snapshotDue() bool {
	return j.err == nil && j.snapCount > 0 && j.logged >= j.snapCount && !j.writing
}

// snapshot writes srv's state, between two inputs with its outputs taken,
// as snapshot N+1, starts log N+1 after it, and prunes. The snapshot is
// whole on disk (written, fsynced with Sync, renamed) before the new log
// exists, so that a kill at any point leaves a journal that recovers the
// same state.
func (j *Journal) snapshot(srv *sim.Server) error {
	if j.group {
		if err := j.drainLocked(); err != nil {
			return err
		}
	} else if err := j.commit(srv); err != nil {
		return err
	}
	fail := func(err error) error {
		j.err = err
		return err
	}
	if j.sync {
		if err := j.f.Sync(); err != nil {
			return fail(fmt.Errorf("%s: fsync: %v", j.path, err))
		}
	}
	state, err := srv.Snapshot()
	if err != nil {
		return fail(err)
	}
	next := j.gen + 1
	path := filepath.Join(j.dir, snapshotName(next))
	hdr, err := json.Marshal(snapshotHeader{Config: j.cfg, LastMs: j.lastMs, NextConn: j.nextConn})
	if err != nil {
		return fail(fmt.Errorf("%s: %v", path, err))
	}
	var b []byte
	b = append(b, snapshotMagic...)
	b = binary.BigEndian.AppendUint32(b, snapshotVersion)
	b = appendRecord(b, hdr)
	b = appendRecord(b, state)
	if err := writeFileAtomic(path, b, j.sync); err != nil {
		return fail(err)
	}
	if err := j.startLog(next); err != nil {
		return fail(err)
	}
	j.prune()
	return nil
}

// writeFileAtomic writes b to path through a temporary file renamed into
// place, fsynced with sync.
func writeFileAtomic(path string, b []byte, sync bool) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil && sync {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// prune keeps the SnapRetainCount newest snapshots and the logs from the
// oldest of them on (PurgeTxnLog.purge). What it cannot remove is warned
// of, not fatal.
func (j *Journal) prune() {
	if j.snapRetainCount == 0 {
		return
	}
	logs, snapshots, err := j.files()
	if err != nil {
		j.warn(fmt.Sprintf("%s: pruning: %v", j.dir, err))
		return
	}
	if len(snapshots) <= j.snapRetainCount {
		return
	}
	oldest := snapshots[len(snapshots)-j.snapRetainCount]
	var remove []string
	for _, gen := range snapshots {
		if gen < oldest {
			remove = append(remove, snapshotName(gen))
		}
	}
	for _, gen := range logs {
		if gen < oldest {
			remove = append(remove, logName(gen))
		}
	}
	for _, name := range remove {
		if err := os.Remove(filepath.Join(j.dir, name)); err != nil {
			j.warn(fmt.Sprintf("pruning: %v", err))
		}
	}
}

// nextRecord reads one record: its length, its CRC-32C and its payload.
func nextRecord(b []byte) (payload []byte, n int, ok bool) {
	return nextRecordMax(b, recordBytesMax)
}

func nextRecordMax(b []byte, limit uint32) (payload []byte, n int, ok bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	sum := binary.BigEndian.Uint32(b[4:])
	if size > limit || uint64(len(b)-8) < uint64(size) {
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
	j.logged++
	j.appendSeq++
	if kind == recOpen {
		j.nextConn = max(j.nextConn, conn+1)
	}
	if nowMs > j.lastMs {
		j.lastMs = nowMs
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
	if j.group {
		// Group commit: the syncer writes and fsyncs; the caller holds
		// back every output until durableSeq reaches txnSeq.
		if zxid := srv.LastZxid(); zxid != j.syncedZxid {
			j.txnSeq = j.appendSeq
			j.syncedZxid = zxid
		}
		if len(j.buf) > 0 {
			select {
			case j.kick <- struct{}{}:
			default:
			}
		}
		return nil
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
	if j.f == nil {
		return nil
	}
	if syncHook != nil {
		syncHook()
	}
	j.syncs.Add(1)
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("%s: fsync: %v", j.path, err)
	}
	return nil
}

// Group commit (ZooKeeper's SyncRequestProcessor, which fsyncs once for
// every request that queued while the last fsync ran). With Sync, a Server
// writes and fsyncs the log from one goroutine of its own, outside its
// lock: while one fsync runs, the inputs of other connections are applied
// and their records buffered, and the next fsync covers them all. No
// output leaves before the fsync of the last transaction applied before it
// (txnSeq): not a reply to a write before its own fsync, nor a read, an
// event or another client's reply that could show that write, as
// ZooKeeper applies a write only after logging it.
//
// The sequence numbers count records: appendSeq the records buffered,
// txnSeq the last of them that applied a transaction, durableSeq the last
// written and, if a transaction is among them, fsynced. They and buf are
// guarded by the Server's lock. The file is the syncer's while writing is
// set (from takeBatch to batchDone); a snapshot, which writes the file
// under the lock, waits for a moment when it is not, so that the log
// keeps the order of the inputs.

// startGroupCommit turns group commit on; the Server then runs syncLoop.
func (j *Journal) startGroupCommit() {
	j.group = true
	j.kick = make(chan struct{}, 1)
	j.durableSeq = j.appendSeq
	j.txnSeq = j.appendSeq
}

// takeBatch hands the syncer what is buffered; with the Server's lock.
func (j *Journal) takeBatch() (batch []byte, seq uint64, needSync bool) {
	batch = j.buf
	j.buf = j.spare[:0]
	j.spare = nil
	j.writing = true
	return batch, j.appendSeq, j.txnSeq > j.durableSeq
}

// writeBatch writes a batch and fsyncs it if it holds a transaction;
// without the Server's lock.
func (j *Journal) writeBatch(batch []byte, needSync bool) error {
	if len(batch) > 0 {
		if _, err := j.f.Write(batch); err != nil {
			return fmt.Errorf("%s: %v", j.path, err)
		}
	}
	if needSync {
		return j.syncFile()
	}
	return nil
}

// batchDone records a batch written; with the Server's lock.
func (j *Journal) batchDone(batch []byte, seq uint64, err error) error {
	j.spare = batch[:0]
	j.writing = false
	if err != nil {
		if j.err == nil {
			j.err = err
		}
		return j.err
	}
	j.durableSeq = max(j.durableSeq, seq)
	return nil
}

// drainLocked writes and fsyncs everything buffered, with the Server's
// lock and no batch being written: before a snapshot.
func (j *Journal) drainLocked() error {
	if j.writing {
		panic("wire: journal drained while the syncer writes")
	}
	if len(j.buf) > 0 {
		if _, err := j.f.Write(j.buf); err != nil {
			j.err = fmt.Errorf("%s: %v", j.path, err)
			return j.err
		}
		j.buf = j.buf[:0]
	}
	if err := j.syncFile(); err != nil {
		j.err = err
		return err
	}
	j.durableSeq = j.appendSeq
	return nil
}

// holding reports whether an output now must wait for an fsync.
func (j *Journal) holding() bool { return j.group && j.txnSeq > j.durableSeq }

// syncHook, if set (by tests), runs before every fsync of a log.
var syncHook func()

// Close writes what is buffered and closes the file.
func (j *Journal) Close() error {
	if j.err == nil && len(j.buf) > 0 {
		if _, err := j.f.Write(j.buf); err != nil {
			j.err = fmt.Errorf("%s: %v", j.path, err)
		}
	}
	return errors.Join(j.err, j.f.Close())
}
