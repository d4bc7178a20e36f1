package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// recordServedHistory runs go-zookeeper clients against an in-process
// `zklab serve --history FILE --control`, injects faults through the
// control API, and returns the history's path. What happens, in order:
// s1 makes /app and watches /app/x; s2 creates /app/x (s1's watch
// fires); a LOSEREPLY on s1 makes its create of /app/lost applied with
// the reply lost (ambiguous: s1 reconnects to its session); s2 is
// expired by EXPIRESESSION (its client starts a new session, s3); s1 is
// partitioned for 300 ms.
func recordServedHistory(t *testing.T, path string) {
	t.Helper()
	settings, err := newServeSettings(zooConfig{}, "127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServe(settings, f)
	if err != nil {
		t.Fatal(err)
	}
	hs, caddr, err := startControl("127.0.0.1:0", srv.srv)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + caddr
	acl := zk.WorldACL(zk.PermAll)
	a, b := connect(t, srv.addr), connect(t, srv.addr)
	if _, err := a.Create("/app", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := a.ExistsW("/app/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create("/app/x", []byte("b"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeCreated {
			t.Fatalf("watch: %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for /app/x")
	}
	must := func(status int, answer map[string]any, body string) {
		t.Helper()
		if status != 200 {
			t.Fatalf("control: %d %s", status, body)
		}
	}
	must(control(t, base, fmt.Sprintf("/command/LOSEREPLY/0x%x", a.SessionID())))
	if _, err := a.Create("/app/lost", []byte("a"), 0, acl); err != zk.ErrConnectionClosed {
		t.Fatalf("create with its reply lost: %v, want %v", err, zk.ErrConnectionClosed)
	}
	// The create was applied: a reconnected s1 finds the node. A request
	// sent while go-zookeeper is still reconnecting may fail with
	// ErrNoServer (it flushes its queue after a lap of its one server).
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, _, err := a.Exists("/app/lost")
		if err == nil && ok {
			break
		}
		if (err != zk.ErrNoServer && err != zk.ErrConnectionClosed) || time.Now().After(deadline) {
			t.Fatalf("exists /app/lost after the lost reply: %v %v", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(control(t, base, fmt.Sprintf("/command/EXPIRESESSION/0x%x", b.SessionID())))
	// b's client learns of the expiry when it reconnects, and starts a
	// new session.
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, _, err := b.Get("/app"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b found no new session")
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(control(t, base, fmt.Sprintf("/command/PARTITION/0x%x/300", a.SessionID())))
	deadline = time.Now().Add(20 * time.Second)
	for {
		if _, err := a.Set("/app", []byte("after the partition"), -1); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a did not come back after its partition")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Delete("/app/lost", -1); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	hs.Close()
	if err := srv.close(); err != nil {
		t.Fatal(err)
	}
}

// classCount counts the marks of a class in a report.
func classCount(page, class string) int {
	return len(regexp.MustCompile(`class="`+regexp.QuoteMeta(class)+`"`).FindAllStringIndex(page, -1))
}

// A real client's run, recorded by zklab serve --history with faults from
// the control API, drawn by `zklab run --history`: one lane a session;
// requests as spans to their replies, the one whose reply the fault lost
// marked ambiguous; the faults where they were injected and what they did;
// the watch event; the connections opened and closed; the server's
// expiry; check-history's verdict; porcupine's view of the znodes.
func TestRunHistoryReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "faults.history")
	recordServedHistory(t, path)
	if out := os.Getenv("ZKLAB_WRITE_SERVED_HISTORY"); out != "" {
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page := filepath.Join(dir, "report.html")
	code, out, errOut := zklab(t, "run", "--history", path, "--html", page)
	if code != 0 {
		t.Fatalf("zklab run --history: exit %d\n%s%s", code, out, errOut)
	}
	if want := path + ": "; !strings.HasPrefix(out, want) || !strings.Contains(out, "znode operations: linearizable\nreport: "+page+"\n") {
		t.Errorf("zklab run --history printed %q", out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkServedReport(t, string(b))
}

// checkServedReport holds a served report of recordServedHistory's run
// to what that run did.
func checkServedReport(t *testing.T, html string) {
	t.Helper()
	lanes := regexp.MustCompile(`<g class="lane" data-client="([^"]*)"`).FindAllStringSubmatch(html, -1)
	var names []string
	for _, l := range lanes {
		names = append(names, l[1])
	}
	// s1 (a), s2 (b until it expired), s3 (b's new session), and the
	// server's lane for the server-wide... none: every fault here names
	// a session.
	if strings.Join(names, " ") != "s1 s2 s3" {
		t.Errorf("lanes %q, want s1 s2 s3", names)
	}
	for _, want := range []string{
		`id="zklab-badge">PASS</span>`, "znode operations: linearizable",
		"a served history: ", "3 sessions",
		`class="fault-label"`, ">next reply to be lost<", "reply dropped: connection", ">partitioned 300ms<", ">session expired by a fault<",
		`class="expired-label"`, "the server expires the session",
		`id="zklab-sessions"`, "s1   session 0x", "expired by the server at seq",
		"zklab check-history ", "porcupine: the znodes",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(html, "seed 0") || strings.Contains(html, "believes it holds the lock") {
		t.Error("the served report shows a simulated run's seed or lock legend")
	}
	// The one ambiguous request: s1's create of /app/lost, its reply lost.
	amb := regexp.MustCompile(`<rect class="span-ambiguous"[^>]*><title>([^<]*)</title>`).FindAllStringSubmatch(html, -1)
	if len(amb) != 1 || !strings.Contains(amb[0][1], "create request") || !strings.Contains(amb[0][1], "/app/lost") ||
		!strings.Contains(amb[0][1], "may or may not have been applied") {
		t.Errorf("ambiguous spans %q, want s1's create of /app/lost", amb)
	}
	if n := classCount(html, "span"); n < 8 {
		t.Errorf("%d answered request spans, want the run's 8 or more", n)
	}
	if n := classCount(html, "watch"); n != 1 {
		t.Errorf("%d watch events drawn, want s1's one", n)
	}
	// Connections: s1's first, its reconnection after the lost reply and
	// after the partition; s2's; s3's.
	if n := classCount(html, "conn-opened"); n < 5 {
		t.Errorf("%d connections opened drawn, want 5 or more", n)
	}
	if n := classCount(html, "conn-closed"); n < 5 {
		t.Errorf("%d connections closed drawn, want 5 or more", n)
	}
	// s2's client learns its session expired on reconnecting: the mark
	// the simulated report gives a client that sees StateExpired.
	if n := classCount(html, "sees-expired"); n != 1 {
		t.Errorf("%d sees-expired marks, want 1", n)
	}
}

// The README's served history (testdata/served/faults.history, recorded
// by TestRunHistoryReport with ZKLAB_WRITE_SERVED_HISTORY=FILE) draws the
// same report, opened in Chromium: the swimlanes and porcupine's view,
// its sessions named s1, s2, s3 in both.
func TestRunHistoryReportInChromium(t *testing.T) {
	path := filepath.Join("testdata", "served", "faults.history")
	page, html := htmlOf(t, 0, "run", "--history", path)
	checkServedReport(t, html)
	dom := renderDOM(t, page)
	screenshot(t, page, "run-history", 1500, 900)
	if !strings.Contains(dom, `<g class="lane" data-client="s3"`) {
		t.Error("the rendered page has no lane s3")
	}
	// porcupine's rows, relabelled by the page's script.
	rows := regexp.MustCompile(`>(s\d+)</text>`).FindAllStringSubmatch(dom, -1)
	if len(rows) < 2 {
		t.Errorf("porcupine's rows are not named s1, s2, ...: %q", rows)
	}
}

// Bad input is one clear line naming the file (and line), exit 2.
func TestRunHistoryBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.history")
	good := `{"seq":1,"t_ns":1,"kind":"conn","conn":1,"what":"opened"}` + "\n"
	os.WriteFile(bad, []byte(good+good+"{\"seq\":3,\"kind\":\n"), 0o644)
	unknown := filepath.Join(dir, "unknown.history")
	os.WriteFile(unknown, []byte(good+`{"seq":2,"kind":"gossip"}`+"\n"), 0o644)
	empty := filepath.Join(dir, "empty.history")
	os.WriteFile(empty, nil, 0o644)
	html := filepath.Join(dir, "out.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--history", filepath.Join(dir, "missing.history"), "--html", html}, "missing.history: no such file or directory"},
		{[]string{"run", "--history", bad, "--html", html}, bad + ":3: "},
		{[]string{"run", "--history", unknown, "--html", html}, unknown + `:2: unknown record kind "gossip"`},
		{[]string{"run", "--history", empty, "--html", html}, empty + ": no records"},
		{[]string{"run", "--history", bad}, "--history draws a served history: give --html OUT"},
		{[]string{"run", "--history", bad, "--html", html, "split-brain-unfenced"}, "no scenario with it"},
	} {
		code, out, errOut := zklab(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("zklab %s: exit %d, stderr %q (stdout %q); want exit 2 and %q", strings.Join(c.args, " "), code, errOut, out, c.want)
		}
	}
	if _, err := os.Stat(html); err == nil {
		t.Error("bad input wrote a report")
	}
}

// A served history that no linearizable ZooKeeper could have given (s3
// reads data /app never held) is drawn with check-history's verdict: FAIL,
// exit 1.
func TestRunHistoryReportOfAViolation(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "served", "faults.history"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	const getData = `"kind":"reply","conn":5,"session":"0x1a20af43ee80002","xid":3,"op":"getData",`
	if !strings.Contains(lines[35], getData) {
		t.Fatalf("line 36 is not s3's getData reply: %s", lines[35])
	}
	lines[35] = strings.Replace(lines[35], getData, getData+`"data":"bmV2ZXIgd3JpdHRlbg==",`, 1)
	path := filepath.Join(t.TempDir(), "tampered.history")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, html := htmlOf(t, 1, "run", "--history", path)
	for _, want := range []string{`id="zklab-badge">FAIL</span>zk-linearizable found a violation`, "znode operations: NOT linearizable"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
