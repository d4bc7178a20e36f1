package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim/wire"
)

// serveInProcess starts a served server on a free loopback port, with its
// history in historyPath ("" for none); stop stops it.
func serveInProcess(t *testing.T, historyPath string, words ...string) (addr string, stop func()) {
	t.Helper()
	s, err := newServeSettings(zooConfig{fourLetterWords: words, maxClientCnxnsSet: true}, "127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	var f *os.File
	if historyPath != "" {
		if f, err = os.Create(historyPath); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := startServe(s, f)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if err := srv.close(); err != nil {
				t.Errorf("closing the server: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv.addr, stop
}

// What `zklab serve --history` writes checks as linearizable against the
// znode model; the same history with one reply changed does not.
func TestServedHistoryIsLinearizable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	addr, stop := serveInProcess(t, path)
	const clients, rounds = 4, 15
	conns := make([]*zk.Conn, clients)
	for i := range conns {
		conns[i] = connect(t, addr)
	}
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conns[0].Create("/h", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				p := fmt.Sprintf("/h/k%d", r%3)
				c.Create(p, []byte(fmt.Sprintf("c%d-%d", i, r)), 0, acl)
				c.Set(p, []byte(fmt.Sprintf("set c%d-%d", i, r)), -1)
				c.Get(p)
				c.Exists(p)
				if r%4 == i {
					c.Delete(p, -1)
				}
				c.Create(fmt.Sprintf("/h/e%d-", i), nil, zk.FlagEphemeral|zk.FlagSequence, acl)
				c.Multi(&zk.CreateRequest{Path: fmt.Sprintf("/h/m%d", r%2), Data: []byte("multi"), Acl: acl},
					&zk.SetDataRequest{Path: "/h", Data: []byte(fmt.Sprintf("m%d", r)), Version: -1})
				c.Get("/h")
			}
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	stop()

	if d := os.Getenv("KEEP_HISTORY"); d != "" {
		b, _ := os.ReadFile(path)
		os.WriteFile(d, b, 0o644)
	}
	code, out, errOut := zklab(t, "check-history", path)
	if code != 0 {
		t.Fatalf("check-history: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "linearizable") {
		t.Errorf("check-history said %q", out)
	}
	records := readHistoryFile(t, path)
	kinds := map[string]int{}
	for _, r := range records {
		kinds[r.Kind]++
	}
	for _, k := range []string{"request", "reply", "session", "conn"} {
		if kinds[k] == 0 {
			t.Errorf("the history has no %s record: %v", k, kinds)
		}
	}

	// Tamper with the data of one successful getData reply: the history
	// can no longer be explained.
	tampered := false
	for i := range records {
		r := &records[i]
		if r.Kind == "reply" && r.Op == "getData" && r.Err == "" && strings.HasPrefix(r.Path, "") && len(r.Data) > 0 {
			r.Data = []byte("never written")
			tampered = true
			break
		}
	}
	if !tampered {
		t.Fatal("no getData reply to tamper with")
	}
	bad := filepath.Join(t.TempDir(), "tampered.jsonl")
	writeHistoryFile(t, bad, records)
	html := filepath.Join(t.TempDir(), "violation.html")
	code, out, _ = zklab(t, "check-history", "--html", html, bad)
	if code != 1 || !strings.Contains(out, "NOT linearizable") {
		t.Fatalf("check-history of a tampered history: exit %d, %q", code, out)
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Errorf("no visualization written: %v", err)
	}
}

func TestCheckHistoryBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"seq":1,"kind":"request"}`+"\n"+`{"seq":2,"kind":"teleport"}`+"\n"), 0o644)
	code, _, errOut := zklab(t, "check-history", bad)
	if code != 2 || !strings.Contains(errOut, bad+`:2: unknown record kind "teleport"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	os.WriteFile(bad, []byte("{\"seq\":1,\"kind\":\"request\"}\nnot json\n"), 0o644)
	code, _, errOut = zklab(t, "check-history", bad)
	if code != 2 || !strings.Contains(errOut, bad+":2:") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func readHistoryFile(t *testing.T, path string) []wire.HistoryRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := wire.ReadHistory(path, f)
	if err != nil {
		t.Fatal(err)
	}
	return records
}

func writeHistoryFile(t *testing.T, path string, records []wire.HistoryRecord) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range records {
		if err := enc.Encode(&records[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
