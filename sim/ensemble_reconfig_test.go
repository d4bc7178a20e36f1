package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// reconfigWorld is a three-server world with reconfigEnabled and a super
// user, and the client pinned to server id (authenticated as super when
// super is set).
func reconfigWorld(t *testing.T, seed uint64, enabled bool) *World {
	t.Helper()
	w := New(Config{Seed: seed, Servers: 3, KeepTrace: true, CheckEveryStep: true,
		Server:   ServerConfig{SuperDigest: DigestID("super:secret")},
		Ensemble: EnsembleConfig{ReconfigEnabled: enabled}})
	t.Cleanup(w.Close)
	return w
}

// runOn runs fn on a new client of server id until it returns.
func runOn(t *testing.T, w *World, id int, super bool, fn func(ctx context.Context, c *Client)) {
	t.Helper()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 10 * time.Second, Servers: []int{id}})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "reconfig", func(ctx context.Context) {
		if super {
			if err := c.AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
				t.Errorf("addAuth: %v", err)
				return
			}
		}
		fn(ctx, c)
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
}

func configOf(t *testing.T, w *World, id int) string {
	t.Helper()
	var data string
	runOn(t, w, id, false, func(ctx context.Context, c *Client) {
		d, _, err := c.Get(ctx, "/zookeeper/config")
		if err != nil {
			t.Errorf("get /zookeeper/config on s%d: %v", id, err)
		}
		data = string(d)
	})
	return data
}

const defaultConfigText = "server.1=127.0.0.1:2888:3888:participant\nserver.2=127.0.0.1:2889:3889:participant\nserver.3=127.0.0.1:2890:3890:participant\n"

// What a 3.8.0 ensemble answers reconfig with (measured by
// sim/difftest's TestEnsembleReconfig, where the same steps run on a real
// ensemble): the refusals in pRequest2Txn's order, a removed follower
// that goes on serving, a removed leader handing over to the lowest
// voter that acked, and the configuration's text on every member.
func TestEnsembleReconfig(t *testing.T) {
	for seed := range uint64(5) {
		reconfigScenario(t, seed)
	}
}

// The reconfig scenario's run is the same, event for event, for the same
// seed, and its trace tells the handover.
func TestEnsembleReconfigDeterministic(t *testing.T) {
	for seed := range uint64(3) {
		a, b := reconfigScenario(t, seed).TraceText(), reconfigScenario(t, seed).TraceText()
		if a != b {
			t.Fatalf("seed %d: two runs differ:\n%s\n---\n%s", seed, a, b)
		}
		if !strings.Contains(a, "is the designated leader") {
			t.Fatalf("seed %d: the trace does not tell the handover:\n%s", seed, a)
		}
	}
}

func reconfigScenario(t *testing.T, seed uint64) *World {
	w := reconfigWorld(t, seed, true)
	if got, want := configOf(t, w, 1), defaultConfigText+"version=100000000"; got != want {
		t.Fatalf("initial /zookeeper/config:\n%s\nwant\n%s", got, want)
	}
	l := w.Leader()
	f := 1 + l%3 // a follower
	steps := []struct {
		what             string
		super            bool
		joining, leaving []string
		members          []string
		version          int64
		want             error
	}{
		{what: "without auth", leaving: []string{"1"}, version: -1, want: zk.ErrNoAuth},
		{what: "without auth, a bad version first", leaving: []string{"1"}, version: 77, want: zk.ErrBadVersion},
		{what: "a bad version", super: true, leaving: []string{"1"}, version: 77, want: zk.ErrBadVersion},
		{what: "a joiner without ports", super: true, joining: []string{"server.9=garbage"}, version: -1, want: zk.ErrBadArguments},
		{what: "a joiner without a client port", super: true, joining: []string{"server.9=127.0.0.1:1234:1235"}, version: -1, want: zk.ErrBadArguments},
		{what: "a leaving id that is no number", super: true, leaving: []string{"x"}, version: -1, want: CodeMarshallingError.Error()},
		{what: "one voter left", super: true, members: []string{"server.1=127.0.0.1:2888:3888;2181"}, version: -1, want: zk.ErrBadArguments},
		{what: "no synced quorum in the new configuration", super: true, joining: []string{"server.9=127.0.0.99:1234:1235;1236"},
			leaving: []string{fmt.Sprint(f), fmt.Sprint(6 - l - f)}, version: -1, want: CodeNewConfigNoQuorum.Error()},
	}
	for _, st := range steps {
		runOn(t, w, l, st.super, func(ctx context.Context, c *Client) {
			var err error
			if st.members != nil {
				_, err = c.Reconfig(ctx, st.members, st.version)
			} else {
				_, err = c.IncrementalReconfig(ctx, st.joining, st.leaving, st.version)
			}
			if fmt.Sprint(err) != fmt.Sprint(st.want) {
				t.Errorf("%s: %v, want %v", st.what, err, st.want)
			}
		})
	}
	// Remove a follower: its client keeps its session and writes.
	var stat *zk.Stat
	runOn(t, w, l, true, func(ctx context.Context, c *Client) {
		var err error
		if stat, err = c.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(f)}, -1); err != nil {
			t.Errorf("removing s%d: %v", f, err)
		}
	})
	if stat.Version != -1 {
		t.Errorf("the reconfig's Stat: %+v, want version -1", stat)
	}
	want := ""
	for _, line := range strings.Split(defaultConfigText, "\n") {
		if line != "" && !strings.HasPrefix(line, fmt.Sprintf("server.%d=", f)) {
			want += line + "\n"
		}
	}
	want += fmt.Sprintf("version=%x", stat.Mzxid)
	for i := 1; i <= 3; i++ {
		if got := configOf(t, w, i); got != want {
			t.Errorf("s%d's /zookeeper/config after removing s%d:\n%s\nwant\n%s", i, f, got, want)
		}
	}
	runOn(t, w, f, false, func(ctx context.Context, c *Client) {
		if _, err := c.Create(ctx, "/on-removed", nil, 0, acl); err != nil {
			t.Errorf("a create on the removed s%d: %v", f, err)
		}
	})
	// The version check passes with the current version; s9 joins in a
	// table of 4 (new HashMap<>(two servers)), so it goes first.
	runOn(t, w, l, true, func(ctx context.Context, c *Client) {
		if _, err := c.IncrementalReconfig(ctx, []string{"server.9=127.0.0.99:1234:1235;1236"}, nil, stat.Mzxid); err != nil {
			t.Errorf("adding s9: %v", err)
		}
	})
	if got := configOf(t, w, l); !strings.HasPrefix(got, "server.9=127.0.0.99:1234:1235:participant;0.0.0.0:1236\n") {
		t.Errorf("/zookeeper/config after adding s9:\n%s", got)
	}
	// s9 leaves and s%d joins again, with a client port now.
	runOn(t, w, l, true, func(ctx context.Context, c *Client) {
		if _, err := c.IncrementalReconfig(ctx, []string{fmt.Sprintf("server.%d=127.0.0.1:%d:%d;2181", f, 2887+f, 3887+f)}, []string{"9"}, -1); err != nil {
			t.Errorf("adding s%d back: %v", f, err)
		}
	})
	// Remove the leader: the lowest voter that acked leads a new epoch,
	// and the leader answered its own client first.
	before := w.ens.Epoch()
	runOn(t, w, l, true, func(ctx context.Context, c *Client) {
		if _, err := c.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(l)}, -1); err != nil {
			t.Errorf("removing the leader s%d: %v", l, err)
		}
	})
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	designated := min(f, 6-l-f)
	if w.Leader() != designated || w.ens.Epoch() != before+1 {
		t.Errorf("after removing leader s%d: s%d leads epoch %d, want s%d in epoch %d", l, w.Leader(), w.ens.Epoch(), designated, before+1)
	}
	if got := configOf(t, w, l); strings.Contains(got, fmt.Sprintf("server.%d=", l)) || !strings.Contains(got, fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;0.0.0.0:2181\n", f, 2887+f, 3887+f)) {
		t.Errorf("/zookeeper/config on the removed s%d:\n%s", l, got)
	}
	if err := w.ens.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return w
}

// Without reconfigEnabled a reconfig is RECONFIGDISABLED, whoever asks,
// and /zookeeper/config holds the static configuration at version 0
// (measured on 3.8.0).
func TestEnsembleReconfigDisabled(t *testing.T) {
	w := reconfigWorld(t, 1, false)
	if got, want := configOf(t, w, 2), defaultConfigText+"version=0"; got != want {
		t.Fatalf("/zookeeper/config:\n%s\nwant\n%s", got, want)
	}
	for _, super := range []bool{false, true} {
		runOn(t, w, 2, super, func(ctx context.Context, c *Client) {
			if _, err := c.IncrementalReconfig(ctx, nil, []string{"1"}, -1); err != zk.ErrReconfigDisabled {
				t.Errorf("super %v: %v, want %v", super, err, zk.ErrReconfigDisabled)
			}
		})
	}
}

// A reconfig while another is outstanding (its proposal not yet
// committed: both followers lag) is RECONFIGINPROGRESS (pRequest2Txn:
// lastSeenQV's version is not the committed one's), an error
// transaction, answered when it commits after the first, once the
// followers catch up.
func TestEnsembleReconfigInProgress(t *testing.T) {
	w := reconfigWorld(t, 1, true)
	l := w.Leader()
	var errs [2]error
	var done [2]bool
	for i, leaving := range []string{"9", "8"} {
		c, err := w.NewClient(ClientConfig{SessionTimeout: 20 * time.Second, Servers: []int{l}})
		if err != nil {
			t.Fatal(err)
		}
		w.Go(c, fmt.Sprint("reconfig", i), func(ctx context.Context) {
			if err := c.AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
				t.Errorf("addAuth: %v", err)
				return
			}
			if i == 0 {
				for id := 1; id <= 3; id++ {
					if id != l {
						w.ens.SetLag(id, true)
					}
				}
			} else {
				c.Sleep(ctx, time.Second)
			}
			_, errs[i] = c.IncrementalReconfig(ctx, nil, []string{leaving}, -1)
			done[i] = true
		})
	}
	if err := w.RunFor(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	if done[0] || done[1] {
		t.Fatalf("answered while the followers lag: %v %v", done, errs)
	}
	for id := 1; id <= 3; id++ {
		w.ens.SetLag(id, false)
	}
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	if !done[0] || errs[0] != nil || !done[1] || fmt.Sprint(errs[1]) != fmt.Sprint(CodeReconfigInProgress.Error()) {
		t.Fatalf("once the followers caught up: done %v, %v; want the first ok, the second %v", done, errs, CodeReconfigInProgress.Error())
	}
}

// Once a follower is removed, the quorum is a majority of the two voters
// left: the removed one, up and following, does not make up for the other
// follower's crash, and cannot be elected.
func TestEnsembleReconfigQuorumOfTheNewVoters(t *testing.T) {
	w := reconfigWorld(t, 1, true)
	l := w.Leader()
	f := 1 + l%3
	g := 6 - l - f
	runOn(t, w, l, true, func(ctx context.Context, c *Client) {
		if _, err := c.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(f)}, -1); err != nil {
			t.Errorf("removing s%d: %v", f, err)
		}
	})
	w.ens.Crash(g)
	if w.ens.Leader() != 0 || w.ens.Serving(f) {
		t.Fatalf("s%d crashed with s%d removed: s%d still leads, or s%d serves", g, f, w.ens.Leader(), f)
	}
	w.ens.Crash(l)
	w.ens.Restart(0, l)
	if w.ens.CanElect() {
		t.Fatalf("s%d and the removed s%d can elect without s%d", l, f, g)
	}
	w.ens.Restart(0, g)
	if !w.ens.Elect(0) || w.ens.Leader() == f {
		t.Fatalf("with s%d back: leader s%d, want one of s%d and s%d", g, w.ens.Leader(), l, g)
	}
	if err := w.ens.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A reconfig that removed a follower, logged by that follower but not
// committed (the other follower lagged) when the leader crashed: the
// follower, with the highest zxid, is elected, commits it, and is out of
// the configuration it committed; it hands over to the other follower,
// the one voter of it that follows, which has no quorum of it without
// the crashed leader, so no one leads until that one is back.
func TestEnsembleReconfigLoggedByTheServerItRemoves(t *testing.T) {
	w := reconfigWorld(t, 1, true)
	l := w.Leader()
	f := 1 + l%3
	g := 6 - l - f
	c, err := w.NewClient(ClientConfig{SessionTimeout: 20 * time.Second, Servers: []int{l}})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "reconfig", func(ctx context.Context) {
		if err := c.AddAuth(ctx, "digest", []byte("super:secret")); err != nil {
			t.Errorf("addAuth: %v", err)
			return
		}
		w.ens.SetLag(g, true)
		c.IncrementalReconfig(ctx, nil, []string{fmt.Sprint(f)}, -1)
	})
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if w.ens.pending == nil || w.ens.config.version != 1<<32 {
		t.Fatalf("the reconfig committed, or was not proposed: pending %v, configuration %#x", w.ens.pending, w.ens.config.version)
	}
	w.ens.SetLag(g, false)
	w.ens.Crash(l)
	if !w.ens.Elect(0) {
		t.Fatal("no election")
	}
	notes := strings.Join(w.ens.Notes(), "\n")
	if w.ens.Leader() != 0 || w.ens.config.votes(f) || !w.ens.config.votes(g) || !w.ens.config.votes(l) {
		t.Fatalf("s%d leads (want none), configuration %s\n%s", w.ens.Leader(), w.ens.config.text(), notes)
	}
	if !strings.Contains(notes, fmt.Sprintf("s%d is not in configuration", f)) || !strings.Contains(notes, fmt.Sprintf("s%d is the designated leader", g)) {
		t.Fatalf("the notes do not tell the handover:\n%s", notes)
	}
	w.ens.Restart(0, l)
	if !w.ens.Elect(0) || w.ens.Leader() == f || w.ens.Leader() == 0 {
		t.Fatalf("with s%d back: s%d leads", l, w.ens.Leader())
	}
	if err := w.ens.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
