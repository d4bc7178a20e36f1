package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
)

// controlServer is an in-process `zklab serve --control`: the served
// server on a loopback port and its control API's base URL.
func controlServer(t *testing.T) (*served, string) {
	t.Helper()
	settings, err := newServeSettings(zooConfig{}, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServe(settings, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.close() })
	hs, addr, err := startControl("127.0.0.1:0", srv.srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.Close() })
	return srv, "http://" + addr
}

// control sends one command and returns its status and decoded answer.
func control(t *testing.T, base, path string) (int, map[string]any, string) {
	t.Helper()
	resp, err := http.Post(base+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatalf("POST %s: answer %q is not JSON: %v", path, body, err)
	}
	return resp.StatusCode, answer, string(body)
}

// Bad verbs, parameters and session ids get a 4xx and one line naming
// what is wrong; a fault for a session that is gone gets 404.
func TestControlBadInput(t *testing.T) {
	_, base := controlServer(t)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/command/EXPLODE", 400, `"EXPLODE": unknown verb`},
		{"/command/EXPIRESESSION/banana", 400, `EXPIRESESSION: session "banana": not a decimal or 0x hex number`},
		{"/command/LOSEREPLY/0xzz", 400, `LOSEREPLY: session "0xzz": not a hex number`},
		{"/command/LOSEREPLY", 400, "LOSEREPLY takes 1 to 2 parameters, got 0"},
		{"/command/LOSEREPLY/0x1/frobnicate", 400, `LOSEREPLY: "frobnicate" is not a request type`},
		{"/command/DROPREQUEST/0x1234/create", 404, "DROPREQUEST: session 0x1234: no such session"},
		{"/command/PARTITION/0x1/-5", 400, `PARTITION: milliseconds "-5"`},
		{"/command/ADDDELAY/soon", 400, `ADDDELAY: milliseconds "soon"`},
		{"/command/PING/extra", 400, "PING takes 0 to 0 parameters, got 1"},
		{"/command/LAG/s2/100", 400, "LAG: only with a simulated ensemble (zklab serve --servers 3 or 5)"},
		{"/nothing", 404, "not a command"},
		{"/command/EXPIRESESSION/0x1234", 404, "EXPIRESESSION: session 0x1234: no such session"},
		{"/command/CLOSECONNECTION/4660", 404, "CLOSECONNECTION: session 0x1234: no such session"},
		{"/command/DROPREQUEST/0x1234", 404, "no such session"},
		{"/command/PARTITION/0x1234/100", 404, "no such session"},
	} {
		status, answer, body := control(t, base, tc.path)
		msg, _ := answer["error"].(string)
		if status != tc.status || !strings.Contains(msg, tc.want) || strings.Count(body, "\n") != 1 || msg == "" {
			t.Errorf("POST %s: %d %q; want %d and one line containing %q", tc.path, status, body, tc.status, tc.want)
		}
	}
}

// EXPIRESESSION through the control API is a server-side expiry: the
// session's ephemeral goes, and the session list shows it gone.
func TestControlExpireSessionAndSessions(t *testing.T) {
	srv, base := controlServer(t)
	c := connect(t, srv.addr)
	if _, err := c.Create("/leader", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Children("/"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.ChildrenW("/"); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("0x%x", c.SessionID())
	status, answer, body := control(t, base, "/sessions")
	want := fmt.Sprintf(`{"session":%q,"timeout_ms":10000,"watches":[{"kind":"child","mode":"standard","path":"/"}]}`, id)
	sessions, _ := answer["sessions"].([]any)
	if status != 200 || len(sessions) != 1 {
		t.Fatalf("sessions: %d %s", status, body)
	}
	got := sessions[0].(map[string]any)
	if got["session"] != id || fmt.Sprint(got["ephemerals"]) != "[/leader]" || got["connected"] != true || !strings.Contains(body, `"watches":[{"kind":"child","mode":"standard","path":"/"}]`) {
		t.Fatalf("sessions: %s, want one like %s", body, want)
	}
	if status, _, body := control(t, base, "/command/EXPIRESESSION/"+id); status != 200 {
		t.Fatalf("EXPIRESESSION: %d %s", status, body)
	}
	var exists bool
	srv.srv.Inspect(func(s *sim.Server) { _, exists = s.Node("/leader") })
	if exists {
		t.Fatal("/leader outlived its expired session")
	}
	if status, _, body := control(t, base, "/command/EXPIRESESSION/"+id); status != 404 {
		t.Fatalf("EXPIRESESSION of an expired session: %d %s, want 404", status, body)
	}
	if status, answer, body := control(t, base, "/command/SESSIONS"); status != 200 || len(answer["sessions"].([]any)) != 0 {
		t.Fatalf("sessions after the expiry: %d %s", status, body)
	}
}

// Control requests racing client traffic never corrupt the server: clients
// write, read and watch while every fault is fired at random at their
// sessions; the answers are 200 or 404, never a 500, and the simulated
// server's invariants hold after.
func TestControlRacesClientTraffic(t *testing.T) {
	srv, base := controlServer(t)
	const clients = 4
	conns := make([]*zk.Conn, clients)
	for i := range conns {
		conns[i] = connect(t, srv.addr)
	}
	stopTraffic := clientTraffic(conns, false)
	rng := rand.New(rand.NewPCG(12, 0))
	verbs := []string{"CLOSECONNECTION/%s", "EXPIRESESSION/%s", "LOSEREPLY/%s", "DROPREQUEST/%s", "PARTITION/%s/50",
		"FAILREQUESTS/2", "NORESPONSE/1", "ADDDELAY/1", "RESET", "RESTART/20", "SESSIONS", "CLOSECONNECTION", "REJECTCONNECTIONS"}
	deadline := time.Now().Add(3 * time.Second)
	fired := 0
	for time.Now().Before(deadline) {
		verb := verbs[rng.IntN(len(verbs))]
		if strings.Contains(verb, "%s") {
			verb = fmt.Sprintf(verb, fmt.Sprintf("0x%x", conns[rng.IntN(clients)].SessionID()))
		}
		status, _, body := control(t, base, "/command/"+verb)
		if status != 200 && status != 404 {
			t.Errorf("%s: %d %s", verb, status, body)
		}
		if rng.IntN(4) == 0 {
			control(t, base, "/command/RESET")
		}
		fired++
		time.Sleep(2 * time.Millisecond)
	}
	control(t, base, "/command/RESET")
	stopTraffic()
	var err error
	srv.srv.Inspect(func(s *sim.Server) { err = s.CheckInvariants() })
	if err != nil {
		t.Fatalf("after %d control requests: %v", fired, err)
	}
	t.Logf("%d control requests raced %d clients", fired, clients)
}

// clientTraffic has each client create, read, set and delete ephemerals
// of its own under /, watching them and the root's children (and
// syncing, withSync), over and over until the returned stop, which
// closes the clients (unblocking one waiting on a held reply) and waits
// for their loops.
func clientTraffic(conns []*zk.Conn, withSync bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			acl := zk.WorldACL(zk.PermAll)
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				p := fmt.Sprintf("/c%d-%d", i, n%5)
				c.Create(p, []byte("x"), zk.FlagEphemeral, acl)
				c.GetW(p)
				if withSync {
					c.Sync(p)
				}
				c.Set(p, []byte("y"), -1)
				c.ChildrenW("/")
				c.Delete(p, -1)
			}
		})
	}
	return func() {
		close(done)
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}
}

// LOSEREPLY/SESSION/OP aims at the session's next request of a type: the
// reads before it are answered, the create is applied and its reply lost
// with the connection; RESET disarms one not yet fired.
func TestControlLoseReplyOfAType(t *testing.T) {
	srv, base := controlServer(t)
	c := connect(t, srv.addr)
	id := fmt.Sprintf("0x%x", c.SessionID())
	if status, answer, body := control(t, base, "/command/LOSEREPLY/"+id+"/CREATE"); status != 200 || answer["op"] != "create" {
		t.Fatalf("LOSEREPLY of a create: %d %s", status, body)
	}
	if _, _, err := c.Get("/"); err != nil {
		t.Fatalf("a getData before the create: %v", err)
	}
	if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create with its reply lost: %v, want ErrConnectionClosed", err)
	}
	// A request sent while go-zookeeper is still reconnecting may fail
	// with ErrNoServer (it flushes its queue after a lap of its one
	// server): retried, only that.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, _, err := c.Exists("/x")
		if err == nil && ok {
			break
		}
		if !errors.Is(err, zk.ErrNoServer) || time.Now().After(deadline) {
			t.Fatalf("/x after its lost reply: exists %v, %v; want applied", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	control(t, base, "/command/DROPREQUEST/"+id+"/delete")
	control(t, base, "/command/RESET")
	if err := c.Delete("/x", -1); err != nil {
		t.Fatalf("delete after RESET: %v, want the dropped-request fault disarmed", err)
	}
}

// PARTITION is silent over TCP, as a network partition: a short one only
// delays a request on the same connection; a long one is noticed by the
// client's own read timeout (two thirds of its 2 s session), not by a
// close, the server expires the session meanwhile, and the client hears
// of the expiry when the partition ends.
func TestControlPartitionIsSilent(t *testing.T) {
	addr, base, w, _ := realFaultsServer(t, "/unused")
	c, events, err := zk.Connect([]string{addr}, 2*time.Second, zk.WithLogInfo(false), zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("0x%x", c.SessionID())

	start := time.Now()
	if status, _, body := control(t, base, "/command/PARTITION/"+id+"/500"); status != 200 {
		t.Fatalf("PARTITION: %d %s", status, body)
	}
	if _, _, err := c.Get("/e"); err != nil {
		t.Fatalf("get into a 500 ms partition: %v, want it answered after", err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Fatalf("answered after %v, inside the partition", waited)
	}
	select {
	case ev := <-events:
		t.Fatalf("the client saw %+v during a partition shorter than its read timeout", ev)
	default:
	}

	start = time.Now()
	if status, _, body := control(t, base, "/command/PARTITION/"+id+"/4000"); status != 200 {
		t.Fatalf("PARTITION: %d %s", status, body)
	}
	if _, _, err := c.Get("/e"); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("get into a 4 s partition: %v, want ErrConnectionClosed from the client's read timeout", err)
	}
	if waited := time.Since(start); waited < 1300*time.Millisecond {
		t.Fatalf("the client gave up after %v, before its 1.33 s read timeout: the connection was closed on it", waited)
	}
	time.Sleep(3500*time.Millisecond - time.Since(start)) // past the expiry (2 s, on 1 s ticks), within the partition
	var exists bool
	w.Inspect(func(s *sim.Server) { _, exists = s.Node("/e") })
	if exists {
		t.Fatal("/e outlived its partitioned session")
	}
	for ev := range events {
		if ev.State == zk.StateExpired {
			break
		}
	}
	if waited := time.Since(start); waited < 4*time.Second {
		t.Fatalf("the client heard of its expiry after %v, inside the partition", waited)
	}
}
