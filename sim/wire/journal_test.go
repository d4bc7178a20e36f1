package wire_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// serverState is what a journal must bring back: every node with its
// Stat, data, children and owner, the live sessions and the last zxid.
type serverState struct {
	Nodes    []sim.NodeInfo
	Sessions []int64
	LastZxid int64
}

func stateOf(srv *sim.Server) serverState {
	st := serverState{Sessions: srv.Sessions(), LastZxid: srv.LastZxid()}
	var walk func(path string)
	walk = func(path string) {
		n, ok := srv.Node(path)
		if !ok {
			panic("no node " + path)
		}
		st.Nodes = append(st.Nodes, n)
		for _, child := range n.Children {
			walk(strings.TrimSuffix(path, "/") + "/" + child)
		}
	}
	walk("/")
	return st
}

var journalConfig = sim.ServerConfig{TickTimeMs: 500, EpochMs: sim.DefaultEpochMs}

// stopServing closes srv and its journal, and returns the state srv
// served last: what recovering the journal must bring back.
func stopServing(t *testing.T, srv *wire.Server, j *wire.Journal) serverState {
	t.Helper()
	var want serverState
	srv.Inspect(func(s *sim.Server) { want = stateOf(s) })
	srv.Close()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

// reopenJournal recovers the journal in dir as serve does at start-up,
// closes it, and returns the state recovered and the warnings given.
func reopenJournal(t *testing.T, dir string, opts wire.JournalOptions) (serverState, *wire.Recovered, []string) {
	t.Helper()
	var warnings []string
	opts.Warn = func(msg string) { warnings = append(warnings, msg) }
	rec, err := wire.OpenJournal(dir, journalConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec.Journal.Close()
	return stateOf(rec.Server), rec, warnings
}

// A journal replayed into a fresh server gives back the state the served
// server had: every node, Stat, ACL-guarded child, sequence counter,
// session and zxid. A torn last record (a kill mid-write) is cut with a
// warning and changes nothing else.
func TestJournalReplaysTheServedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "zklab-log.0000000000000000")
		rec, err := wire.OpenJournal(dir, journalConfig, wire.JournalOptions{WallClockMs: sim.DefaultEpochMs})
		if err != nil {
			t.Fatal(err)
		}
		srv := wire.New(rec.Server, wire.Config{Journal: rec.Journal})
		c, _ := pipeServer{srv}.connect(t, 5*time.Second)
		if err := c.AddAuth("digest", []byte("bob:pw")); err != nil {
			t.Fatal(err)
		}
		mustCreate := func(path string, flags int32, acl []zk.ACL) {
			t.Helper()
			if _, err := c.Create(path, []byte(path), flags, acl); err != nil {
				t.Fatalf("create %s: %v", path, err)
			}
		}
		mustCreate("/dir", 0, zk.WorldACL(zk.PermAll))
		mustCreate("/dir/bob", 0, zk.DigestACL(zk.PermAll, "bob", "pw"))
		for range 3 {
			mustCreate("/dir/s-", zk.FlagSequence, zk.WorldACL(zk.PermAll))
		}
		mustCreate("/dir/eph", zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		if err := c.Delete("/dir/s-0000000001", -1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Set("/dir/bob", []byte("new"), 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // pings and ticks are inputs too
		want := stopServing(t, srv, rec.Journal)
		if len(want.Sessions) != 1 || want.LastZxid < 9 {
			t.Fatalf("the served server has sessions %v and zxid %d: the workload did not run", want.Sessions, want.LastZxid)
		}

		reopen := func() (serverState, []string) {
			t.Helper()
			st, rec, warnings := reopenJournal(t, dir, wire.JournalOptions{WallClockMs: sim.DefaultEpochMs})
			if rec.Records == 0 {
				t.Fatal("nothing replayed")
			}
			return st, warnings
		}
		got, warnings := reopen()
		if !reflect.DeepEqual(got, want) || len(warnings) != 0 {
			t.Fatalf("replayed state (warnings %q):\n%+v\nwant\n%+v", warnings, got, want)
		}

		// A torn record at the end: a length and checksum, half a payload.
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0, 0, 0, 40, 1, 2, 3, 4, 'R', 0, 0})
		f.Close()
		got, warnings = reopen()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("state after cutting a torn record:\n%+v\nwant\n%+v", got, want)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], path) || !strings.Contains(warnings[0], "cut 11 bytes") {
			t.Errorf("warnings %q, want one naming %s and the 11 bytes cut", warnings, path)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// The second open appended a restart record of its own.
		if after.Size() <= info.Size() || after.Size() > info.Size()+32 {
			t.Errorf("journal is %d bytes after the cut, was %d before the torn record", after.Size(), info.Size())
		}
	})
}

// A file that is not a journal of this version, or one written by a server
// configured otherwise, is refused with an error naming it, and left as
// it is.
func TestJournalRefusesWhatItCannotReplay(t *testing.T) {
	goodDir := t.TempDir()
	rec, err := wire.OpenJournal(goodDir, journalConfig, wire.JournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Journal.Close()
	other := journalConfig
	other.TickTimeMs = 2000
	for _, tc := range []struct {
		name, file, content string
		cfg                 sim.ServerConfig
		want                string
	}{
		{"garbage", "zklab-log.0000000000000000", "garbage\n", journalConfig, "not a zklab journal"},
		{"legacy garbage", "zklab-journal", "garbage\n", journalConfig, "not a zklab journal"},
		{"version", "zklab-log.0000000000000000", "ZKLABJNL\x00\x00\x00\x02", journalConfig, "version 2"},
		{"header", "zklab-log.0000000000000000", "ZKLABJNL\x00\x00\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00hello", journalConfig, "header is torn or corrupt"},
		{"config", "", "", other, "written by a server configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := goodDir, filepath.Join(goodDir, "zklab-log.0000000000000000")
			if tc.content != "" {
				dir = t.TempDir()
				path = filepath.Join(dir, tc.file)
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(path)
			_, err := wire.OpenJournal(dir, tc.cfg, wire.JournalOptions{})
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, tc.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("the file changed")
			}
		})
	}
}

// journalFiles lists the journal's files in dir, by name.
func journalFiles(t *testing.T, dir string) (logs, snapshots []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "zklab-log."):
			logs = append(logs, e.Name())
		case strings.HasPrefix(e.Name(), "zklab-snapshot."):
			snapshots = append(snapshots, e.Name())
		default:
			t.Errorf("unexpected file %s in the journal's directory", e.Name())
		}
	}
	return logs, snapshots
}

// With a snapCount, the journal writes a snapshot and starts a new log
// every snapCount inputs, and keeps the three newest snapshots and the
// logs from the oldest of them on (ZooKeeper's autopurge). A reopened
// journal loads the newest snapshot and replays the log after it: the same
// state as the served server's. If that snapshot is damaged, the one
// before it and the logs after that give the same state.
func TestJournalCompactsWithSnapshots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		opts := wire.JournalOptions{WallClockMs: sim.DefaultEpochMs, SnapCount: 25}
		rec, err := wire.OpenJournal(dir, journalConfig, opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := wire.New(rec.Server, wire.Config{Journal: rec.Journal})
		c, _ := pipeServer{srv}.connect(t, 5*time.Second)
		if _, err := c.Create("/dir", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create("/dir/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			name, err := c.Create("/dir/s-", []byte{byte(i)}, zk.FlagSequence, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				if err := c.Delete(name, -1); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A watch and a connection that live across snapshots: the log
		// after the snapshot needs them to replay.
		if _, _, _, err := c.GetW("/dir"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Set("/dir", []byte("last"), -1); err != nil {
			t.Fatal(err)
		}
		want := stopServing(t, srv, rec.Journal)

		logs, snapshots := journalFiles(t, dir)
		if len(snapshots) != 3 {
			t.Fatalf("snapshots %v, want the 3 newest of about %d", snapshots, 400/25)
		}
		if logs[0][len("zklab-log."):] != snapshots[0][len("zklab-snapshot."):] {
			t.Errorf("logs %v: want those from the oldest snapshot kept, %s, on", logs, snapshots[0])
		}

		reopen := func() (serverState, *wire.Recovered, []string) {
			t.Helper()
			return reopenJournal(t, dir, opts)
		}
		got, r, warnings := reopen()
		if !reflect.DeepEqual(got, want) || len(warnings) != 0 {
			t.Fatalf("recovered state (warnings %q):\n%+v\nwant\n%+v", warnings, got, want)
		}
		newest := filepath.Join(dir, snapshots[len(snapshots)-1])
		if r.Snapshot != newest || r.Records >= 25+1 {
			t.Errorf("recovered from %q and %d records, want %s and fewer than snapCount", r.Snapshot, r.Records, newest)
		}

		// Damage the newest snapshot: one flipped byte.
		b, err := os.ReadFile(newest)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-1] ^= 0xff
		if err := os.WriteFile(newest, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, r, warnings = reopen()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("state recovered past a damaged snapshot:\n%+v\nwant\n%+v", got, want)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], newest) || r.Snapshot != filepath.Join(dir, snapshots[len(snapshots)-2]) {
			t.Errorf("recovered from %q with warnings %q; want the snapshot before %s, and a warning naming it", r.Snapshot, warnings, newest)
		}
	})
}

// Group commit, as ZooKeeper's SyncRequestProcessor does it: with fsync
// on, no output leaves before the fsync of the last write applied before
// it (not the write's own reply, nor another client's read that could
// show the write), and the writes of other clients that arrive while one
// fsync runs share the next one.
func TestJournalGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		rec, err := wire.OpenJournal(dir, journalConfig, wire.JournalOptions{Sync: true, WallClockMs: sim.DefaultEpochMs})
		if err != nil {
			t.Fatal(err)
		}
		var blocked atomic.Bool
		gate := make(chan struct{})
		var opened sync.Once
		open := func() { opened.Do(func() { close(gate) }) }
		defer wire.SetSyncHook(func() {
			if blocked.Load() {
				<-gate
			}
		})()
		srv := wire.New(rec.Server, wire.Config{Journal: rec.Journal})
		defer func() {
			open()
			srv.Close()
			rec.Journal.Close()
		}()
		var clients []*zk.Conn
		for range 4 {
			c, _ := pipeServer{srv}.connect(t, 5*time.Second)
			clients = append(clients, c)
		}
		if _, err := clients[0].Create("/n", []byte("old"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}

		blocked.Store(true) // the next fsync waits for the gate
		var setDone, getDone atomic.Bool
		go func() {
			if _, err := clients[0].Set("/n", []byte("new"), -1); err == nil {
				setDone.Store(true)
			}
		}()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		var read []byte
		go func() {
			data, _, err := clients[1].Get("/n")
			if err == nil {
				read = data
				getDone.Store(true)
			}
		}()
		const writes = 12
		var wrote atomic.Int32
		for i := range writes {
			go func() {
				if _, err := clients[2+i%2].Create("/w-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err == nil {
					wrote.Add(1)
				}
			}()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if setDone.Load() || getDone.Load() || wrote.Load() > 0 {
			t.Fatalf("with the write's fsync not done: set answered %v, a read of it answered %v, %d later writes answered", setDone.Load(), getDone.Load(), wrote.Load())
		}
		var applied int
		srv.Inspect(func(s *sim.Server) { applied = s.NodeCount() })
		if applied < 4+1+writes { // /, /zookeeper, quota, config, /n and the writes
			t.Fatalf("%d nodes: the writes waiting on the fsync were not applied meanwhile", applied)
		}
		syncsBefore := wire.JournalSyncs(rec.Journal)
		blocked.Store(false)
		open()
		time.Sleep(time.Second)
		synctest.Wait()
		if !setDone.Load() || !getDone.Load() || string(read) != "new" || wrote.Load() != writes {
			t.Fatalf("after the fsync: set answered %v, read %q (answered %v), %d of %d writes answered", setDone.Load(), read, getDone.Load(), wrote.Load(), writes)
		}
		// The blocked fsync (counted once it returns), and one for the
		// writes that queued behind it.
		if n := wire.JournalSyncs(rec.Journal) - syncsBefore; n != 2 {
			t.Errorf("%d fsyncs for the blocked write and the %d that queued behind it, want 2", n, writes)
		}
	})
}

// A kill while a new log gets its header leaves only a temporary file
// (the log takes its name once its header is written): recovery removes
// it and brings the state back, where a log without its header would
// have been refused as "not a zklab journal" and serve would not start.
func TestJournalSurvivesAKillWhileALogStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		opts := wire.JournalOptions{WallClockMs: sim.DefaultEpochMs}
		rec, err := wire.OpenJournal(dir, journalConfig, opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := wire.New(rec.Server, wire.Config{Journal: rec.Journal})
		c, _ := pipeServer{srv}.connect(t, 5*time.Second)
		if _, err := c.Create("/kept", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		want := stopServing(t, srv, rec.Journal)
		if entries, _ := os.ReadDir(dir); len(entries) == 0 || strings.HasSuffix(entries[len(entries)-1].Name(), ".tmp") {
			t.Fatalf("the journal left %v: want its log under its own name, no temporary file", entries)
		}

		torn := filepath.Join(dir, "zklab-log.0000000000000001.tmp")
		if err := os.WriteFile(torn, []byte("ZKLAB"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _, warnings := reopenJournal(t, dir, opts); !reflect.DeepEqual(got, want) || len(warnings) != 0 {
			t.Fatalf("recovered state (warnings %q):\n%+v\nwant\n%+v", warnings, got, want)
		}
		if _, err := os.Stat(torn); !os.IsNotExist(err) {
			t.Errorf("%s: still there after recovery (%v)", torn, err)
		}
	})
}
