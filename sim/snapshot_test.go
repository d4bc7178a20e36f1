package sim

import (
	"bytes"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// A server restored from a snapshot is the server it was taken of: fed the
// same inputs after it, it sends the same outputs, byte for byte, and its
// own snapshot is the same. The inputs are drawn at random over every kind
// the drivers feed (connections with their addresses and auth, sessions
// created, reattached, closed and expired, writes of every create mode,
// one-shot, persistent and recursive watches, ACLs, multis, restarts, the
// passage of time), and the server under test is replaced by its
// snapshot's at random points, many times in a run.
func TestSnapshotRestoresTheSameServer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := ServerConfig{TickTimeMs: 100, MinSessionTimeoutMs: 200, MaxSessionTimeoutMs: 2000,
			ExtendedTypes: true, ContainerCheckIntervalMs: 500, EpochMs: DefaultEpochMs}
		ref, live := NewServer(cfg), NewServer(cfg)
		d := &snapDriver{}
		restores := 0
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for step := range steps {
			if rapid.IntRange(0, 9).Draw(t, "snapshot") == 0 {
				b, err := live.Snapshot()
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if live, err = RestoreServer(b); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				restores++
			}
			in := d.draw(t, ref)
			want := slices.Clone(in(ref))
			got := in(live)
			if (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, after %d restores: the restored server sent\n%+v\nthe server never snapshotted sent\n%+v", step, restores, got, want)
			}
			d.observe(want)
		}
		a, err := ref.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		b, err := live.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("after %d restores the snapshots differ", restores)
		}
		if err := live.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

// A snapshot that is not one is an error, not a panic.
func TestRestoreServerRefusesGarbage(t *testing.T) {
	good, err := NewServer(ServerConfig{}).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{nil, []byte("garbage"), good[:len(good)/2]} {
		if _, err := RestoreServer(b); err == nil {
			t.Errorf("RestoreServer(%q) succeeded", b)
		}
	}
	s := NewServer(ServerConfig{})
	s.Open(1)
	s.Connect(0, 1, ConnectRequest{TimeoutMs: 30000})
	if _, err := s.Snapshot(); err == nil {
		t.Error("a snapshot with outputs not taken succeeded")
	}
}

// snapDriver draws inputs as a driver would feed them: requests only on
// connections that have a session, xids in order.
type snapDriver struct {
	nowMs    int64
	nextConn ConnID
	open     []ConnID         // opened and not closed
	session  map[ConnID]int64 // connections with a session
	sessions []int64          // every session ever created
	passwd   map[int64][]byte
	xid      int32
}

// observe learns the sessions and closes from what the server sent.
func (d *snapDriver) observe(outs []Output) {
	for _, o := range outs {
		switch o.Kind {
		case OutConnect:
			if o.Connect.SessionID != 0 {
				d.session[o.Conn] = o.Connect.SessionID
				if !slices.Contains(d.sessions, o.Connect.SessionID) {
					d.sessions = append(d.sessions, o.Connect.SessionID)
				}
				d.passwd[o.Connect.SessionID] = o.Connect.Passwd
			}
		case OutClose:
			d.drop(o.Conn)
		}
	}
}

func (d *snapDriver) drop(c ConnID) {
	d.open = slices.DeleteFunc(d.open, func(x ConnID) bool { return x == c })
	delete(d.session, c)
}

var snapPaths = []string{"/a", "/a/b", "/a/b/c", "/l", "/l/x", "/zookeeper/quota", "/missing/x"}

// draw returns the next input, as a function that applies it to a server
// and returns the outputs it caused.
func (d *snapDriver) draw(t *rapid.T, ref *Server) func(*Server) []Output {
	if d.session == nil {
		d.session = map[ConnID]int64{}
		d.passwd = map[int64][]byte{}
	}
	d.nowMs += rapid.Int64Range(0, 150).Draw(t, "ms")
	now := d.nowMs
	run := func(f func(s *Server)) func(*Server) []Output {
		return func(s *Server) []Output {
			s.Tick(now)
			for s.HasInternal() {
				s.StepInternal(now)
			}
			f(s)
			return s.Outputs()
		}
	}
	var connected []ConnID
	for _, c := range d.open {
		if _, ok := d.session[c]; ok && ref.HasConn(c) {
			connected = append(connected, c)
		}
	}
	kind := rapid.IntRange(0, 9).Draw(t, "kind")
	switch {
	case kind == 0 || len(d.open) == 0:
		d.nextConn++
		c := d.nextConn
		d.open = append(d.open, c)
		addr := netip.AddrFrom4([4]byte{10, 0, 0, byte(rapid.IntRange(1, 3).Draw(t, "addr"))})
		return run(func(s *Server) { s.OpenFrom(c, addr) })
	case kind == 1:
		c := rapid.SampledFrom(d.open).Draw(t, "conn")
		if !ref.HasConn(c) {
			d.drop(c)
			return run(func(*Server) {})
		}
		if _, ok := d.session[c]; ok {
			d.drop(c)
			return run(func(s *Server) {
				if s.HasConn(c) {
					s.Disconnect(c)
				}
			})
		}
		req := ConnectRequest{TimeoutMs: int32(rapid.IntRange(100, 3000).Draw(t, "timeout"))}
		if len(d.sessions) > 0 && rapid.Bool().Draw(t, "reattach") {
			req.SessionID = rapid.SampledFrom(d.sessions).Draw(t, "session")
			req.Passwd = d.passwd[req.SessionID]
		}
		return run(func(s *Server) {
			if s.HasConn(c) {
				s.Connect(now, c, req)
			}
		})
	case kind == 2 && len(d.sessions) > 0:
		id := rapid.SampledFrom(d.sessions).Draw(t, "expire")
		return run(func(s *Server) { s.ExpireSession(now, id) })
	case kind == 3 && rapid.IntRange(0, 4).Draw(t, "restart") == 0:
		d.open = nil
		clear(d.session)
		return run(func(s *Server) { s.Restart(now) })
	case len(connected) == 0:
		return run(func(*Server) {})
	}
	c := rapid.SampledFrom(connected).Draw(t, "conn")
	d.xid++
	req := d.drawRequest(t)
	req.Xid = d.xid
	return run(func(s *Server) {
		if s.HasConn(c) { // an expiry's close, applied first, may have closed it
			s.Receive(now, c, req)
		}
	})
}

func (d *snapDriver) drawRequest(t *rapid.T) Request {
	path := rapid.SampledFrom(snapPaths).Draw(t, "path")
	data := []byte(fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "data")))
	if rapid.IntRange(0, 5).Draw(t, "nil") == 0 {
		data = nil
	}
	acls := [][]zk.ACL{zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "u", "p"),
		zk.AuthACL(zk.PermRead | zk.PermWrite), zk.WorldACL(zk.PermRead | zk.PermCreate), {}}
	acl := rapid.SampledFrom(acls).Draw(t, "acl")
	version := int32(rapid.IntRange(-1, 2).Draw(t, "version"))
	write := func() Request {
		switch rapid.IntRange(0, 3).Draw(t, "sub") {
		case 0:
			return Request{Op: OpCreate, Path: path, Data: data, ACL: acl}
		case 1:
			return Request{Op: OpDelete, Path: path, Version: version}
		case 2:
			return Request{Op: OpSetData, Path: path, Data: data, Version: version}
		}
		return Request{Op: OpCheck, Path: path, Version: version}
	}
	switch rapid.IntRange(0, 16).Draw(t, "op") {
	case 0, 1:
		modes := []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential}
		return Request{Op: OpCreate2, Path: path, Data: data, ACL: acl, Mode: rapid.SampledFrom(modes).Draw(t, "mode")}
	case 2:
		return Request{Op: OpCreateCont, Path: path, Data: data, ACL: acl, Mode: zk.FlagContainer}
	case 3:
		return Request{Op: OpCreateTTL, Path: path, Data: data, ACL: acl, Mode: zk.FlagTTL, TTLMs: rapid.Int64Range(1, 500).Draw(t, "ttl")}
	case 4:
		return Request{Op: OpDelete, Path: path, Version: version}
	case 5:
		return Request{Op: OpSetData, Path: path, Data: data, Version: version}
	case 6:
		return Request{Op: OpGetData, Path: path, Watch: rapid.Bool().Draw(t, "watch")}
	case 7:
		return Request{Op: OpGetChildren, Path: path, Watch: rapid.Bool().Draw(t, "watch")}
	case 8:
		return Request{Op: OpExists, Path: path, Watch: rapid.Bool().Draw(t, "watch")}
	case 9:
		mode := rapid.SampledFrom([]AddWatchMode{AddWatchPersistent, AddWatchPersistentRecursive}).Draw(t, "addwatch")
		return Request{Op: OpAddWatch, Path: path, AddWatchMode: mode}
	case 10:
		return Request{Op: OpSetACL, Path: path, ACL: acl, Version: version}
	case 11:
		return Request{Op: OpAuth, AuthScheme: "digest", AuthData: []byte(rapid.SampledFrom([]string{"u:p", "v:q"}).Draw(t, "auth"))}
	case 12:
		return Request{Op: OpMulti, Ops: []Request{write(), write()}}
	case 13:
		return Request{Op: OpGetEphemerals, Path: "/"}
	case 14:
		return Request{Op: OpWhoAmI}
	case 15:
		return Request{Op: OpRemoveWatches, Path: path, WatcherType: WatcherAny}
	}
	return Request{Op: OpCloseSession}
}

// Snapshot knows every field of Server: one added later must be either
// serialized (snapshotState) or named here as transient, one input's
// scratch that is empty between inputs, else a restored server would
// silently lose it.
func TestSnapshotKnowsEveryServerField(t *testing.T) {
	known := []string{
		// serialized
		"cfg", "nodes", "lastZxid", "sessions", "conns", "dataWatches", "childWatches",
		"nextSessionID", "nextContainer", "closingQueue", "acls", "expiringNodes", "checkEvery", "auth",
		// transient: empty or rebuilt between inputs
		"outputs", "txn", "overlay", "records", "recordsUsed", "caller", "replayAuth",
		"nodesCheckedElsewhere", "checkPathBuf",
		// counted from the server's making or restoring, as TreeChanges says
		"treeChanges", "recentChanges",
		// deleted nodes kept for reuse: a restored server starts with none,
		// and a reused node is written whole, so nothing shows the difference
		"freeNodes",
		// the unused rest of a block child lists are carved from: a
		// restored server starts without one, and allocates one when it needs it
		"names",
		// fire's buffers for the connections it fired, read within one trigger
		"fired",
		// a cache of the text of the last connection's address
		"hostAddr",
		// a cache of lookups in the tree, which a restored server rebuilds
		"lookups",
		// the sessions again, in id order, which restoring them rebuilds
		"sessionsByID",
		// the session of the last request, which the next looks up again
		"lastSession",
		// the last connection looked up, which the next lookup asks the table for again
		"connHint",
		// a leader's prep server's, which is never snapshotted
		"prep", "prepWrite",
	}
	typ := reflect.TypeFor[Server]()
	for i := range typ.NumField() {
		if name := typ.Field(i).Name; !slices.Contains(known, name) {
			t.Errorf("Server has a field %q that Snapshot does not know: serialize it in snapshot.go or name it transient here", name)
		}
	}
}
