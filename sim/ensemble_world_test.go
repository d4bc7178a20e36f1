package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// lockWorkload runs clients taking a lock-like turn on /lock the way the
// recipes do (an ephemeral sequential node, the children list, a watch on
// the predecessor, a write while holding, the node deleted), with the
// given faults, on a world of the given size. It returns the world after
// the run and the text it showed: trace, history and final tree.
func lockWorkload(t *testing.T, seed uint64, servers int, faults []ScheduledFault) (*World, string) {
	w := New(Config{Seed: seed, Servers: servers, KeepTrace: true, KeepHistory: true, Faults: faults, CheckEveryStep: true})
	setup, err := w.NewClient(ClientConfig{SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(setup, "setup", func(ctx context.Context) {
		for {
			if _, err := setup.Create(ctx, "/lock", nil, 0, acl); err == nil || errors.Is(err, zk.ErrNodeExists) {
				return
			}
			setup.Sleep(ctx, 100*time.Millisecond)
		}
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c, err := w.NewClient(ClientConfig{SessionTimeout: time.Duration(4+i) * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w.Go(c, fmt.Sprintf("locker%d", i+1), func(ctx context.Context) {
			for round := range 15 {
				me, err := c.Create(ctx, "/lock/n-", []byte{byte(round)}, zk.FlagEphemeralSequential, acl)
				if err != nil {
					// The create may have been applied with its reply
					// lost: remove this session's nodes before trying
					// again, or it would wait on itself.
					removeOwnNodes(ctx, c)
					c.Sleep(ctx, 300*time.Millisecond)
					continue
				}
				for {
					kids, _, err := c.Children(ctx, "/lock")
					if err != nil {
						removeOwnNodes(ctx, c)
						break
					}
					if !slices.Contains(kids, me[len("/lock/"):]) {
						break // the session that made it expired
					}
					if "/lock/"+minName(kids) == me {
						c.Set(ctx, "/lock", []byte(me), -1)
						removeOwnNodes(ctx, c)
						break
					}
					_, _, ch, err := c.ExistsW(ctx, "/lock/"+minName(kids))
					if err != nil {
						removeOwnNodes(ctx, c)
						break
					}
					tctx, cancel := c.WithTimeout(ctx, 2*time.Second)
					c.Wait(tctx, ch)
					cancel()
				}
				c.Sleep(ctx, time.Duration(w.Rand().IntN(3000))*time.Millisecond)
			}
		})
	}
	var b strings.Builder
	if err := w.Run(); err != nil {
		t.Fatalf("run: %v", err)
	}
	// Let every fault end and every member catch up.
	if err := w.RunFor(30 * time.Second); err != nil {
		t.Fatalf("settling: %v", err)
	}
	b.WriteString(w.TraceText())
	for _, o := range w.History() {
		fmt.Fprintf(&b, "op %d c%d %s %s -> %q %v [%d,%d]\n", o.ID, o.Client, o.Op, o.Path, o.OutPath, o.Err, o.CallStep, o.ReturnStep)
	}
	fmt.Fprintf(&b, "final zxid %#x nodes %d leader s%d\n", w.Server().LastZxid(), w.Server().NodeCount(), w.Leader())
	return w, b.String()
}

func removeOwnNodes(ctx context.Context, c *Client) {
	for range 100 {
		if removedOwnNodes(ctx, c) {
			return
		}
		c.Sleep(ctx, 200*time.Millisecond)
	}
}

func removedOwnNodes(ctx context.Context, c *Client) bool {
	kids, _, err := c.Children(ctx, "/lock")
	if err != nil {
		return false
	}
	for _, k := range kids {
		ok, st, err := c.Exists(ctx, "/lock/"+k)
		if err != nil {
			return false
		}
		if ok && st.EphemeralOwner == c.SessionID() {
			if err := c.Delete(ctx, "/lock/"+k, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false
			}
		}
	}
	return true
}

func minName(kids []string) string {
	m := kids[0]
	for _, k := range kids[1:] {
		if k[len(k)-10:] < m[len(m)-10:] {
			m = k
		}
	}
	return m
}

func everyServerFault() []ScheduledFault {
	return []ScheduledFault{
		{AtTime: 1 * time.Second, Fault: Fault{Kind: FaultLag, Server: 1, Duration: 2 * time.Second}},
		{AtTime: 3 * time.Second, Fault: Fault{Kind: FaultServerCrash, Server: 2, Duration: 2 * time.Second}},
		{AtTime: 6 * time.Second, Fault: Fault{Kind: FaultServerPartition, Server: 1, Duration: 2 * time.Second}},
		{AtTime: 9 * time.Second, Fault: Fault{Kind: FaultKillLeader, Duration: 2 * time.Second}},
		{AtTime: 13 * time.Second, Fault: Fault{Kind: FaultIsolateLeader, Duration: 2 * time.Second}},
		{AtTime: 17 * time.Second, Fault: Fault{Kind: FaultLoseQuorum, Duration: 3 * time.Second}},
		{AtTime: 22 * time.Second, Fault: Fault{Kind: FaultDropReply, Client: 2}},
		{AtTime: 23 * time.Second, Fault: Fault{Kind: FaultExpire, Client: 3}},
		{AtTime: 25 * time.Second, Fault: Fault{Kind: FaultRestart, Duration: time.Second}},
	}
}

// A three-server world runs lock-like clients through every server fault
// and the client faults that change meaning on an ensemble; afterwards
// every member holds the same tree, the one World.Server shows, and no
// lock node is left behind by a live session.
func TestAThreeServerWorldRunsThroughEveryServerFault(t *testing.T) {
	w, text := lockWorkload(t, 7, 3, everyServerFault())
	defer w.Close()
	for _, k := range ServerFaultKinds {
		if !strings.Contains(text, " fault "+string(k)) {
			t.Errorf("no %s fault in the trace", k)
		}
	}
	for _, want := range []string{"leads epoch 2", "s2 crashed", "closes", "lose-quorum for=3s (s"} {
		if !strings.Contains(text, want) {
			t.Errorf("the trace never says %q", want)
		}
	}
	want := replicaDigest(w.Server())
	for i := 1; i <= 3; i++ {
		if got := replicaDigest(w.Member(i)); got != want {
			t.Fatalf("s%d differs from the committed view:\n%s\nview:\n%s", i, got, want)
		}
	}
	if w.Leader() == 0 {
		t.Fatal("no leader after every fault healed")
	}
	n, _ := w.Server().Node("/lock")
	if n.Stat.Version == 0 {
		t.Fatal("no client ever held the lock")
	}
}

// The same seed gives the same three-server run byte for byte, faults and
// elections included; another seed another run.
func TestEnsembleDeterminism(t *testing.T) {
	w1, first := lockWorkload(t, 11, 3, everyServerFault())
	w1.Close()
	w2, second := lockWorkload(t, 11, 3, everyServerFault())
	w2.Close()
	if first != second {
		t.Fatalf("two runs of seed 11 differ:\n%s", firstDifference(first, second))
	}
	w3, other := lockWorkload(t, 12, 3, everyServerFault())
	w3.Close()
	if other == first {
		t.Fatal("seeds 11 and 12 gave the same run")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnsembleDeterminismChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZKLAB_ENSEMBLE_DETERMINISM=11")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	if want := "digest " + digest(first) + "\n"; !strings.Contains(string(out), want) {
		t.Fatalf("the child process's run of seed 11 differs: it printed\n%s\nwant %s", out, want)
	}
}

// TestEnsembleDeterminismChild runs TestEnsembleDeterminism's workload in
// a separate process (its own map hash seeds) and prints its digest.
func TestEnsembleDeterminismChild(t *testing.T) {
	if os.Getenv("ZKLAB_ENSEMBLE_DETERMINISM") == "" {
		t.Skip("run by TestEnsembleDeterminism")
	}
	w, text := lockWorkload(t, 11, 3, everyServerFault())
	w.Close()
	fmt.Printf("digest %s\n", digest(text))
}

// A five-server world commits on three and survives two crashed
// followers.
func TestAFiveServerWorldSurvivesTwoCrashes(t *testing.T) {
	w, _ := lockWorkload(t, 3, 5, []ScheduledFault{
		{AtTime: time.Second, Fault: Fault{Kind: FaultServerCrash, Server: 1, Duration: 10 * time.Second}},
		{AtTime: time.Second, Fault: Fault{Kind: FaultServerCrash, Server: 2, Duration: 10 * time.Second}},
	})
	defer w.Close()
	if w.Leader() != 5 || w.ens.Epoch() != 1 {
		t.Fatalf("leader s%d epoch %d: two follower crashes should not cost the leader", w.Leader(), w.ens.Epoch())
	}
	for i := 1; i <= 5; i++ {
		if w.Member(i).LastZxid() != w.Server().LastZxid() {
			t.Fatalf("s%d at %#x, the view at %#x", i, w.Member(i).LastZxid(), w.Server().LastZxid())
		}
	}
}

// The client walks its shuffled server list as go-zookeeper does: when its
// server crashes it connects to the next one and keeps its session; when
// no server answers (quorum lost) it goes round the list, fails its unsent
// requests with ErrNoServer, and its session survives: nothing expires
// without a leader, and the new leader gives it a full timeout.
func TestTheClientWalksTheServerListAndKeepsItsSession(t *testing.T) {
	w := New(Config{Seed: 5, Servers: 3, KeepTrace: true})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	first := w.ens.ServerOf(c.conn.id)
	if sid == 0 || first != c.hosts.servers[0] {
		t.Fatalf("session %#x on s%d, list %v", sid, first, c.hosts.servers)
	}
	if err := w.Inject(Fault{Kind: FaultServerCrash, Server: first, Duration: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != sid || c.conn == nil || w.ens.ServerOf(c.conn.id) == first {
		t.Fatalf("after s%d crashed: session %#x (was %#x)", first, c.SessionID(), sid)
	}
	if err := w.Inject(Fault{Kind: FaultLoseQuorum, Duration: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var errs []error
	w.Go(c, "writer", func(ctx context.Context) {
		for range 5 {
			_, err := c.Create(ctx, "/x", nil, 0, acl)
			errs = append(errs, err)
			if err == nil {
				return
			}
			c.Sleep(ctx, 3*time.Second)
		}
	})
	if err := w.RunFor(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[0], zk.ErrNoServer) && !errors.Is(errs[0], zk.ErrConnectionClosed) {
		t.Fatalf("a write during quorum loss: %v", errs[0])
	}
	if errs[len(errs)-1] != nil || c.SessionID() != sid {
		t.Fatalf("after the quorum came back: %v, session %#x (was %#x)", errs, c.SessionID(), sid)
	}
	if strings.Contains(w.TraceText(), "StateExpired") {
		t.Fatal("a session expired during the quorum loss")
	}
}

// A server fault names a server the world has.
func TestAServerFaultOnAThreeServerWorldNamesAServerItHas(t *testing.T) {
	w := New(Config{Servers: 3})
	defer w.Close()
	err := w.Inject(Fault{Kind: FaultLag, Server: 4, Duration: time.Second})
	if err == nil || err.Error() != "sim: fault lag s4 for=1s: no server s4 (the world has 3)" {
		t.Fatalf("got %v", err)
	}
	if w.Servers() != 3 || w.Leader() != 3 {
		t.Fatalf("servers %d leader s%d", w.Servers(), w.Leader())
	}
}

// A client given a connect string walks those servers in the given order
// and no others: pinned to a follower it connects there, and when that
// follower crashes it moves to the next server of its list, s3, past s2,
// which comes first in number order but is not in its list. ServerNumber tells which server it is on.
func TestAClientGivenServersWalksThemInOrder(t *testing.T) {
	w := New(Config{Seed: 5, Servers: 3})
	defer w.Close()
	if w.Leader() != 3 {
		t.Fatalf("leader s%d, want s3", w.Leader())
	}
	c, err := w.NewClient(ClientConfig{SessionTimeout: 4 * time.Second, Servers: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.ServerNumber(); n != 0 {
		t.Fatalf("on s%d before it dialed", n)
	}
	if err := w.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	if sid == 0 || c.ServerNumber() != 1 || w.ens.ServerOf(c.conn.id) != 1 {
		t.Fatalf("session %#x on s%d (ensemble: s%d), want s1, the first of its list", sid, c.ServerNumber(), w.ens.ServerOf(c.conn.id))
	}
	if err := w.Inject(Fault{Kind: FaultServerCrash, Server: 1, Duration: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != sid || c.ServerNumber() != 3 || w.ens.ServerOf(c.conn.id) != 3 {
		t.Fatalf("after s1 crashed: session %#x (was %#x) on s%d, want s3, the next of its list", c.SessionID(), sid, c.ServerNumber())
	}
}

// A connect string names servers of the world, each once.
func TestAClientsServersAreChecked(t *testing.T) {
	w := New(Config{Seed: 1, Servers: 3})
	defer w.Close()
	for _, servers := range [][]int{{0}, {4}, {1, 2, 1}} {
		if _, err := w.NewClient(ClientConfig{SessionTimeout: time.Second, Servers: servers}); err == nil {
			t.Errorf("servers %v: accepted", servers)
		}
	}
	single := New(Config{Seed: 1})
	defer single.Close()
	if _, err := single.NewClient(ClientConfig{SessionTimeout: time.Second, Servers: []int{2}}); err == nil {
		t.Error("a single server's client given s2: accepted")
	}
	c, err := single.NewClient(ClientConfig{SessionTimeout: time.Second, Servers: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := single.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	if c.ServerNumber() != 1 {
		t.Fatalf("the single server's client on s%d", c.ServerNumber())
	}
}

// The history keeps each reply's zxid: a write's is its transaction's, a
// read's the last its server had applied, so a session's never go back;
// a call without a reply has none.
func TestTheHistoryKeepsTheRepliesZxids(t *testing.T) {
	w := New(Config{Seed: 2, Servers: 3, KeepHistory: true})
	defer w.Close()
	c, err := w.NewClient(ClientConfig{SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Go(c, "c", func(ctx context.Context) {
		c.Create(ctx, "/a", nil, 0, acl)
		c.Get(ctx, "/a")
		c.Exists(ctx, "/b")
		c.Create(ctx, "/b", nil, 0, acl)
		c.Get(ctx, "/a")
		c.Get(ctx, "bad path")
	})
	if err := w.Run(); err != nil {
		t.Fatal(err)
	}
	h := w.History()
	if len(h) != 6 {
		t.Fatalf("%d operations", len(h))
	}
	last := int64(0)
	for _, o := range h[:5] {
		if o.Zxid == 0 || o.Zxid < last {
			t.Errorf("%s %s: zxid %#x after %#x", o.Op, o.Path, o.Zxid, last)
		}
		last = o.Zxid
	}
	if h[0].Zxid == h[3].Zxid || h[1].Zxid < h[0].Zxid || h[4].Zxid < h[3].Zxid {
		t.Errorf("zxids %#x %#x %#x %#x %#x", h[0].Zxid, h[1].Zxid, h[2].Zxid, h[3].Zxid, h[4].Zxid)
	}
	if h[5].Zxid != 0 {
		t.Errorf("a call refused before it was sent has zxid %#x", h[5].Zxid)
	}
}

// TestAppliedTextIsWhatFmtWrites holds each member's "sN applied <rec>",
// which the first member to apply a record writes for every member at
// once, to what fmt writes, whichever member asks first and in whatever
// order the others follow.
func TestAppliedTextIsWhatFmtWrites(t *testing.T) {
	for _, servers := range []int{3, 5} {
		w := New(Config{Servers: servers})
		recs := []*TxnRecord{
			{Kind: RecCreateSession, Zxid: 0x100000001, LastZxid: 0x100000001, Session: 0x1000000aa0000},
			{Kind: RecWrite, Zxid: 0x100000002, LastZxid: 0x100000002, Session: 0x1000000aa0000, Req: Request{Op: OpCreate, Path: "/lock/n-0000000001"}, Resp: Response{Err: CodeNodeExists}},
			{Kind: RecSweep, Zxid: 0x200000003, LastZxid: 0x200000005},
		}
		for k, rec := range recs {
			order := make([]int, 0, servers)
			for i := range servers {
				order = append(order, (i+k)%servers+1) // each record applied first by another member
			}
			for _, i := range order {
				if got, want := w.appliedText(i, rec), fmt.Sprintf("s%d applied %v", i, rec); got != want {
					t.Fatalf("servers=%d: member %d: got %q, want %q", servers, i, got, want)
				}
			}
			// A member past those the text was written for (one a
			// reconfiguration added) is written on its own.
			if got, want := w.appliedText(servers+1, rec), fmt.Sprintf("s%d applied %v", servers+1, rec); got != want {
				t.Fatalf("servers=%d: member %d: got %q, want %q", servers, servers+1, got, want)
			}
		}
	}
}
