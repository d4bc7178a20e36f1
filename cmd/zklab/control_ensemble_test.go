package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ensembleControlServer is an in-process `zklab serve --servers 3 --control`
// whose first leader has been elected: the served ensemble and its control
// API's base URL.
func ensembleControlServer(t *testing.T) (*servedEnsemble, string) {
	t.Helper()
	settings, err := newServeSettings(zooConfig{}, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := startServeServers(settings, 3, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.srv.Close() })
	ln, err := listenControl("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := serveControl(ln, controlHandler{ens: e.srv})
	t.Cleanup(func() { hs.Close() })
	waitLeader(t, e, 0)
	return e, "http://" + ln.Addr().String()
}

// waitLeader waits for a leader other than not, and returns it.
func waitLeader(t *testing.T, e *servedEnsemble, not int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if l := e.srv.Leader(); l != 0 && l != not {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader (but s%d) after 10 s", not)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ensembleClient connects a go-zookeeper client to the given members
// with a session of timeout, and returns it with its events once it has a
// session.
func ensembleClient(t *testing.T, addrs []string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect(addrs, timeout, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession, 20*time.Second)
	return c, events
}

// waitState waits for an event of state, failing on an expiry first.
func waitState(t *testing.T, events <-chan zk.Event, state zk.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.State == state {
				return
			}
			if ev.State == zk.StateExpired {
				t.Fatalf("session expired while waiting for %v", state)
			}
		case <-deadline:
			t.Fatalf("no %v within %v", state, within)
		}
	}
}

// member is one member as /servers answers, by name.
func member(t *testing.T, answer map[string]any, name string) map[string]any {
	t.Helper()
	servers, _ := answer["servers"].([]any)
	for _, s := range servers {
		if m := s.(map[string]any); m["server"] == name {
			return m
		}
	}
	t.Fatalf("%s not in the answer's servers: %v", name, answer)
	return nil
}

// LAG holds a follower back: a client pinned to it reads a node another
// member's client created as absent, and its sync waits out the lag, after
// which it reads the node. SERVERS shows the lag and the zxids apart.
func TestControlEnsembleLagStaleReadThenSync(t *testing.T) {
	e, base := ensembleControlServer(t)
	if l := e.srv.Leader(); l != 3 {
		t.Fatalf("s%d leads; want s3 (the highest id among equal zxids)", l)
	}
	onS1, _ := ensembleClient(t, e.addrs[:1], 10*time.Second)
	onS2, _ := ensembleClient(t, e.addrs[1:2], 10*time.Second)
	const lag = 2 * time.Second
	lagStart := time.Now()
	status, answer, body := control(t, base, "/command/LAG/s1/2000")
	if status != 200 || member(t, answer, "s1")["lagging"] != true {
		t.Fatalf("LAG: %d %s", status, body)
	}
	if _, err := onS2.Create("/x", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := onS1.Exists("/x"); err != nil || ok {
		t.Fatalf("exists /x on the lagging s1: %v, %v; want a stale false", ok, err)
	}
	_, answer, body = control(t, base, "/servers")
	if z1, z2 := member(t, answer, "s1")["last_zxid"], member(t, answer, "s2")["last_zxid"]; z1 == z2 {
		t.Fatalf("s1 lags but has applied what s2 has (%v): %s", z1, body)
	}
	if _, err := onS1.Sync("/x"); err != nil {
		t.Fatalf("sync on s1: %v", err)
	}
	if waited := time.Since(lagStart); waited < lag {
		t.Fatalf("sync on the lagging s1 answered %v into a %v lag", waited, lag)
	}
	if data, _, err := onS1.Get("/x"); err != nil || string(data) != "v1" {
		t.Fatalf("get /x on s1 after its lag and a sync: %q, %v", data, err)
	}
	_, answer, body = control(t, base, "/servers")
	if s1 := member(t, answer, "s1"); s1["lagging"] != false || s1["last_zxid"] != member(t, answer, "s2")["last_zxid"] {
		t.Fatalf("after the lag: %s", body)
	}
}

// KILLLEADER crashes the leader: its port closes, the others elect the
// next (s2), a client on it reconnects elsewhere to the same session with
// its ephemeral, and when the crash is over the old leader listens again
// and follows.
func TestControlEnsembleKillLeaderSessionSurvives(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs, 10*time.Second)
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()
	status, answer, body := control(t, base, "/command/KILLLEADER/1500")
	if status != 200 || answer["server"] != "s3" || member(t, answer, "s3")["mode"] != "down" {
		t.Fatalf("KILLLEADER: %d %s; want s3 killed", status, body)
	}
	// Every member loses its leader and closes its clients' connections.
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	if l := waitLeader(t, e, 3); l != 2 {
		t.Fatalf("s%d leads after s3's death; want s2", l)
	}
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	if c.SessionID() != session {
		t.Fatalf("session 0x%x after the failover; want 0x%x", c.SessionID(), session)
	}
	_, st, err := c.Get("/e")
	if err != nil || st.EphemeralOwner != session {
		t.Fatalf("/e after the failover: %+v, %v", st, err)
	}
	// s3 restarts 1.5 s after its death, listens again and follows.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, answer, body = control(t, base, "/servers")
		if member(t, answer, "s3")["mode"] == "follower" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s3 not following 10 s after its crash: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	onS3, _ := ensembleClient(t, e.addrs[2:], 10*time.Second)
	if _, st, err := onS3.Get("/e"); err != nil || st.EphemeralOwner != session {
		t.Fatalf("/e on the restarted s3: %+v, %v", st, err)
	}
}

// LOSEQUORUM crashes a majority (the leader s3 and s1) for longer than the
// session timeout: the client's connection closes, and when the quorum is
// back it reconnects to the same session, not expired, ephemeral kept, as
// a new leader starts every session's timeout again.
func TestControlEnsembleLoseQuorumNoExpiry(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs, 4*time.Second)
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()
	start := time.Now()
	status, answer, body := control(t, base, "/command/LOSEQUORUM/5000")
	if status != 200 || fmt.Sprint(answer["crashed"]) != "[s3 s1]" || member(t, answer, "s2")["mode"] != "looking" {
		t.Fatalf("LOSEQUORUM: %d %s; want s3 and s1 crashed, s2 looking", status, body)
	}
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	for _, verb := range []string{"KILLLEADER", "ISOLATELEADER/100", "EXPIRESESSION", fmt.Sprintf("EXPIRESESSION/0x%x", session)} {
		if status, _, body := control(t, base, "/command/"+verb); status != 409 || !strings.Contains(body, "no leader") || strings.Count(body, "\n") != 1 {
			t.Fatalf("%s without a leader: %d %s; want 409 and one line saying there is no leader", verb, status, body)
		}
	}
	waitState(t, events, zk.StateHasSession, 20*time.Second)
	if back := time.Since(start); back < 5*time.Second {
		t.Fatalf("a session again %v into a 5 s quorum loss", back)
	}
	if c.SessionID() != session {
		t.Fatalf("session 0x%x after the quorum came back; want 0x%x", c.SessionID(), session)
	}
	if _, st, err := c.Get("/e"); err != nil || st.EphemeralOwner != session {
		t.Fatalf("/e after the quorum loss: %+v, %v", st, err)
	}
}

// EXPIRESESSION on an ensemble is the leader's expiry: the session's
// ephemeral goes on every member, and its client, on a follower, hears it
// expired. SESSIONS names the member the session is connected to.
func TestControlEnsembleExpireSession(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs[:1], 10*time.Second)
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("0x%x", c.SessionID())
	status, answer, body := control(t, base, "/sessions")
	sessions, _ := answer["sessions"].([]any)
	if status != 200 || len(sessions) != 1 || sessions[0].(map[string]any)["session"] != id || sessions[0].(map[string]any)["server"] != "s1" ||
		fmt.Sprint(sessions[0].(map[string]any)["ephemerals"]) != "[/e]" {
		t.Fatalf("sessions: %d %s; want %s on s1 with /e", status, body, id)
	}
	if status, _, body := control(t, base, "/command/EXPIRESESSION/"+id); status != 200 {
		t.Fatalf("EXPIRESESSION: %d %s", status, body)
	}
	for ev := range events {
		if ev.State == zk.StateExpired {
			break
		}
	}
	other, _ := ensembleClient(t, e.addrs[1:2], 10*time.Second)
	if ok, _, err := other.Exists("/e"); err != nil || ok {
		t.Fatalf("/e on s2 after its session's expiry: %v, %v", ok, err)
	}
	if status, _, body := control(t, base, "/command/EXPIRESESSION/"+id); status != 404 {
		t.Fatalf("EXPIRESESSION of an expired session: %d %s; want 404", status, body)
	}
}

// ISOLATELEADER cuts the leader off: s1 and s2 elect s2, the old leader
// is looking while cut, and it follows once the partition heals.
func TestControlEnsembleIsolateLeader(t *testing.T) {
	e, base := ensembleControlServer(t)
	onS3, events := ensembleClient(t, e.addrs[2:], 10*time.Second)
	status, answer, body := control(t, base, "/command/ISOLATELEADER/1500")
	if s3 := member(t, answer, "s3"); status != 200 || answer["server"] != "s3" || s3["partitioned"] != true || s3["mode"] != "looking" {
		t.Fatalf("ISOLATELEADER: %d %s", status, body)
	}
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	if l := waitLeader(t, e, 3); l != 2 {
		t.Fatalf("s%d leads without s3; want s2", l)
	}
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	if _, err := onS3.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create on s3 after the partition healed: %v", err)
	}
	_, answer, body = control(t, base, "/servers")
	if s3 := member(t, answer, "s3"); s3["mode"] != "follower" || s3["partitioned"] != false {
		t.Fatalf("s3 after the partition: %s", body)
	}
}

// CRASHSERVER without a duration lasts until RESTARTSERVER (or HEAL); a
// client pinned to the crashed member gets no session until then.
func TestControlEnsembleCrashUntilRestart(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs[:1], 10*time.Second)
	status, answer, body := control(t, base, "/command/CRASHSERVER/s1")
	if s1 := member(t, answer, "s1"); status != 200 || s1["mode"] != "down" || s1["down_ms_left"] != float64(-1) || answer["until"] != "HEAL" {
		t.Fatalf("CRASHSERVER: %d %s", status, body)
	}
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	if _, _, err := c.Exists("/"); err == nil {
		t.Fatal("a request answered with its only server crashed")
	}
	if status, answer, body := control(t, base, "/command/RESTARTSERVER/s1"); status != 200 || answer["was_down"] != true {
		t.Fatalf("RESTARTSERVER: %d %s", status, body)
	}
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	if status, answer, body := control(t, base, "/command/RESTARTSERVER/s1"); status != 200 || answer["was_down"] != false {
		t.Fatalf("RESTARTSERVER of a running member: %d %s", status, body)
	}
}

// Bad verbs, parameters and server names get a 4xx and one line naming
// what is wrong; the single server's verbs that have no meaning on an
// ensemble are refused saying so.
func TestControlEnsembleBadInput(t *testing.T) {
	_, base := ensembleControlServer(t)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/command/LAG/s9/100", 404, "LAG: s9: no such server (the ensemble has s1..s3)"},
		{"/command/CRASHSERVER/0", 404, "CRASHSERVER: s0: no such server"},
		{"/command/LAG/banana", 400, `LAG: server "banana": not a server name (s1, s2, ...)`},
		{"/command/LAG/s-1", 400, `LAG: server "s-1": not a server name`},
		{"/command/LAG/s1/0", 400, `LAG: milliseconds "0": a fault lasts at least 1 ms`},
		{"/command/PARTITIONSERVER/s1/soon", 400, `PARTITIONSERVER: milliseconds "soon"`},
		{"/command/LAG", 400, "LAG takes 1 to 2 parameters, got 0"},
		{"/command/RESTARTSERVER", 400, "RESTARTSERVER takes 1 to 1 parameters, got 0"},
		{"/command/PARTITION/0x1/5", 400, "PARTITION: not supported with a simulated ensemble"},
		{"/command/ADDDELAY", 400, "ADDDELAY: not supported with a simulated ensemble"},
		{"/command/EXPLODE", 400, `"EXPLODE": unknown verb; known with an ensemble: PING, SERVERS, LAG`},
		{"/command/EXPIRESESSION/0x1234", 404, "EXPIRESESSION: session 0x1234: no such session"},
		{"/command/CLOSECONNECTION/0x1234", 404, "CLOSECONNECTION: session 0x1234: no such session"},
		{"/command/EXPIRESESSION/nope", 400, `EXPIRESESSION: session "nope": not a decimal or 0x hex number`},
	} {
		status, answer, body := control(t, base, tc.path)
		msg, _ := answer["error"].(string)
		if status != tc.status || !strings.Contains(msg, tc.want) || strings.Count(body, "\n") != 1 {
			t.Errorf("POST %s: %d %q; want %d and one line containing %q", tc.path, status, body, tc.status, tc.want)
		}
	}
	// The scenario files' names work as verbs too.
	status, answer, body := control(t, base, "/command/partition-server/s2/50")
	if status != 200 || answer["command"] != "PARTITIONSERVER" || member(t, answer, "s2")["partitioned"] != true {
		t.Fatalf("partition-server/s2/50: %d %s", status, body)
	}
	verbs := strings.Split(ensembleVerbList(), ", ")
	for v := range ensembleVerbs {
		if !slices.Contains(verbs, v) {
			t.Errorf("%s missing from the list of verbs", v)
		}
	}
	if len(verbs) != len(ensembleVerbs) {
		t.Errorf("the list of verbs %v has %d, the table %d", verbs, len(verbs), len(ensembleVerbs))
	}
}

// CLOSECONNECTION on an ensemble closes the session's connection; the
// client reconnects to the same session.
func TestControlEnsembleCloseConnection(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs, 10*time.Second)
	session := c.SessionID()
	if status, _, body := control(t, base, fmt.Sprintf("/command/CLOSECONNECTION/0x%x", session)); status != 200 {
		t.Fatalf("CLOSECONNECTION: %d %s", status, body)
	}
	waitState(t, events, zk.StateDisconnected, 5*time.Second)
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	if c.SessionID() != session {
		t.Fatalf("session 0x%x after the close; want 0x%x", c.SessionID(), session)
	}
	if _, _, err := c.Exists("/"); err != nil && !errors.Is(err, zk.ErrNoServer) {
		t.Fatal(err)
	}
}

// The ambiguous write on an ensemble, from the ensemble's own faults: a
// client's member lags, its create commits on the leader and the other
// follower but its reply waits on the lagging member, and CLOSECONNECTION
// loses it with the connection. The client sees a connection loss; the
// create was applied.
func TestControlEnsembleLostReplyOfACommittedWrite(t *testing.T) {
	e, base := ensembleControlServer(t)
	c, events := ensembleClient(t, e.addrs[:1], 10*time.Second)
	if status, _, body := control(t, base, "/command/LAG/s1"); status != 200 {
		t.Fatalf("LAG: %d %s", status, body)
	}
	created := make(chan error, 1)
	go func() {
		_, err := c.Create("/amb", nil, 0, zk.WorldACL(zk.PermAll))
		created <- err
	}()
	// Wait for the create to commit: the leader's zxid moves past s1's.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, answer, body := control(t, base, "/servers")
		if member(t, answer, "s3")["last_zxid"] != member(t, answer, "s1")["last_zxid"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the create never committed: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-created:
		t.Fatalf("create answered (%v) while its member lags", err)
	default:
	}
	if status, _, body := control(t, base, fmt.Sprintf("/command/CLOSECONNECTION/0x%x", c.SessionID())); status != 200 {
		t.Fatalf("CLOSECONNECTION: %d %s", status, body)
	}
	if err := <-created; !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create with its connection closed: %v; want ErrConnectionClosed", err)
	}
	if status, _, body := control(t, base, "/command/HEAL"); status != 200 {
		t.Fatalf("HEAL: %d %s", status, body)
	}
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	if ok, _, err := c.Exists("/amb"); err != nil || !ok {
		t.Fatalf("/amb after its lost reply: %v, %v; want applied", ok, err)
	}
}

// Ensemble faults racing client traffic never corrupt the ensemble:
// clients on every member write, read, sync and watch while every verb
// is fired at random; the answers are 200, 404 or 409 (no leader at the
// moment), never a 500, the ensemble's invariants hold after, and once
// healed every client works again.
func TestControlEnsembleRacesClientTraffic(t *testing.T) {
	e, base := ensembleControlServer(t)
	const clients = 3
	conns := make([]*zk.Conn, clients)
	for i := range conns {
		conns[i], _ = ensembleClient(t, e.addrs, 4*time.Second)
	}
	stopTraffic := clientTraffic(conns, true)
	rng := rand.New(rand.NewPCG(13, 0))
	verbs := []string{"LAG/s%[1]d/%[2]d", "CRASHSERVER/s%[1]d/%[2]d", "PARTITIONSERVER/s%[1]d/%[2]d", "RESTARTSERVER/s%[1]d",
		"ISOLATELEADER/%[2]d", "KILLLEADER/%[2]d", "LOSEQUORUM/%[2]d", "RESTART/%[2]d", "HEAL", "SERVERS", "SESSIONS",
		"EXPIRESESSION/%[3]s", "CLOSECONNECTION/%[3]s", "CLOSECONNECTION"}
	deadline := time.Now().Add(4 * time.Second)
	fired := 0
	for time.Now().Before(deadline) {
		verb := verbs[rng.IntN(len(verbs))]
		session := fmt.Sprintf("0x%x", conns[rng.IntN(clients)].SessionID())
		if strings.Contains(verb, "%") {
			verb = fmt.Sprintf(verb, 1+rng.IntN(3), 1+rng.IntN(400), session)
		}
		status, _, body := control(t, base, "/command/"+verb)
		if status != 200 && status != 404 && status != 409 {
			t.Errorf("%s: %d %s", verb, status, body)
		}
		fired++
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
	}
	control(t, base, "/command/HEAL")
	stopTraffic()
	if err := e.srv.CheckInvariants(); err != nil {
		t.Fatalf("after %d control requests: %v", fired, err)
	}
	waitLeader(t, e, 0)
	c, _ := ensembleClient(t, e.addrs, 4*time.Second)
	if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a write after HEAL: %v", err)
	}
	_, answer, body := control(t, base, "/servers")
	for _, name := range []string{"s1", "s2", "s3"} {
		if m := member(t, answer, name); m["mode"] != "leader" && m["mode"] != "follower" {
			t.Errorf("%s after HEAL: %s", name, body)
		}
	}
	t.Logf("%d control requests raced %d clients", fired, clients)
}
