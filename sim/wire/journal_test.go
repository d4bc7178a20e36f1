package wire_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// A journal replayed into a fresh server gives back the state the served
// server had: every node, Stat, ACL-guarded child, sequence counter,
// session and zxid. A torn last record (a kill mid-write) is cut with a
// warning and changes nothing else.
func TestJournalReplaysTheServedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal")
		rec, err := wire.OpenJournal(path, journalConfig, wire.JournalOptions{WallClockMs: sim.DefaultEpochMs})
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
		var want serverState
		srv.Inspect(func(s *sim.Server) { want = stateOf(s) })
		srv.Close()
		if err := rec.Journal.Close(); err != nil {
			t.Fatal(err)
		}
		if len(want.Sessions) != 1 || want.LastZxid < 9 {
			t.Fatalf("the served server has sessions %v and zxid %d: the workload did not run", want.Sessions, want.LastZxid)
		}

		reopen := func() (serverState, []string) {
			t.Helper()
			var warnings []string
			rec, err := wire.OpenJournal(path, journalConfig, wire.JournalOptions{
				WallClockMs: sim.DefaultEpochMs, Warn: func(msg string) { warnings = append(warnings, msg) },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Journal.Close()
			if rec.Records == 0 {
				t.Fatal("nothing replayed")
			}
			return stateOf(rec.Server), warnings
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
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	rec, err := wire.OpenJournal(good, journalConfig, wire.JournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Journal.Close()
	other := journalConfig
	other.TickTimeMs = 2000
	for _, tc := range []struct {
		name, content string
		cfg           sim.ServerConfig
		want          string
	}{
		{"garbage", "garbage\n", journalConfig, "not a zklab journal"},
		{"version", "ZKLABJNL\x00\x00\x00\x02", journalConfig, "version 2"},
		{"header", "ZKLABJNL\x00\x00\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00hello", journalConfig, "header is torn or corrupt"},
		{"config", "", other, "written by a server configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := good
			if tc.content != "" {
				path = filepath.Join(dir, tc.name)
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(path)
			_, err := wire.OpenJournal(path, tc.cfg, wire.JournalOptions{})
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, tc.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("the file changed")
			}
		})
	}
}
