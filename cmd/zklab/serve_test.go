package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// zklabBinary builds the zklab command once per test binary, for the tests
// that run it as a process (as a harness or a user would).
func zklabBinary(t testing.TB) string {
	t.Helper()
	builtZklab.once.Do(func() {
		dir, err := os.MkdirTemp("", "zklab-bin-")
		if err != nil {
			builtZklab.err = err
			return
		}
		builtZklab.path = filepath.Join(dir, "zklab")
		out, err := exec.Command(goTool(), "build", "-o", builtZklab.path, ".").CombinedOutput()
		if err != nil {
			builtZklab.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if builtZklab.err != nil {
		t.Fatal(builtZklab.err)
	}
	return builtZklab.path
}

var builtZklab struct {
	once sync.Once
	path string
	err  error
}

// goTool is the go command that runs these tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// startServeProcess runs `zklab serve ARGS...` and returns the process,
// the address it printed, and a function that waits for the rest of its
// output (call it before cmd.Wait: it reads the pipe to its end).
func startServeProcess(t *testing.T, args ...string) (*exec.Cmd, string, func() string) {
	t.Helper()
	cmd := exec.Command(zklabBinary(t), append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("zklab serve printed no address: %v; stderr: %s", err, stderr.String())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "zklab serve: listening on ")
	if !ok {
		t.Fatalf("zklab serve's first line %q does not name its address", line)
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&rest, r)
		close(copied)
	}()
	return cmd, addr, func() string {
		<-copied
		return rest.String()
	}
}

func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session from %s in 20 s", addr)
		}
	}
}

// `zklab serve` prints its address, serves real clients, and stops
// cleanly, exit 0, on SIGINT and on SIGTERM.
func TestServeStopsCleanlyOnSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, addr, rest := startServeProcess(t, "--listen", "127.0.0.1:0")
			c := connect(t, addr)
			if _, err := c.Create("/served", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			data, _, err := c.Get("/served")
			if err != nil || string(data) != "x" {
				t.Fatalf("get: %q, %v", data, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			out := rest()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("zklab serve after %v: %v", sig, err)
			}
			if !strings.Contains(out, "zklab serve: stopped") {
				t.Errorf("no stop line after %v; output %q", sig, out)
			}
		})
	}
}

// A zoo.cfg sets the port and address; a flag overrides it.
func TestServeReadsZooCfgAndFlagsOverride(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	dataDir := filepath.Join(dir, "data")
	text := fmt.Sprintf("tickTime=500\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=conf,ruok\n", dataDir, port)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, _ := startServeProcess(t, "--zoo-cfg", cfg, "--max-session-timeout", "3000")
	if want := fmt.Sprintf("127.0.0.1:%d", port); addr != want {
		t.Fatalf("listening on %s, want %s from clientPortAddress:clientPort", addr, want)
	}
	conf := fourLetter(t, addr, "conf")
	for _, want := range []string{
		fmt.Sprintf("clientPort=%d\n", port), "dataDir=" + dataDir + "/version-2\n", "tickTime=500\n",
		"maxClientCnxns=0\n", "minSessionTimeout=1000\n", "maxSessionTimeout=3000\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %q:\n%s", want, conf)
		}
	}
	if got := fourLetter(t, addr, "stat"); got != "stat is not executed because it is not in the whitelist.\n" {
		t.Errorf("stat, not whitelisted: %q", got)
	}
	// The session timeout is negotiated within the configured bounds.
	c, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if got := c.SessionID(); got == 0 {
		t.Fatal("no session")
	}
	if got := fourLetter(t, addr, "ruok"); got != "imok" {
		t.Errorf("ruok: %q", got)
	}
}

func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: %v", word, err)
	}
	return string(out)
}

// Bad input exits 2 with one line naming what is wrong; a bad zoo.cfg
// line is named FILE:LINE.
func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(bad, []byte("tickTime=2000\nclientPort=2181x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.cfg")
	if err := os.WriteFile(unknown, []byte("dataDir=/tmp\n\nquorum.magic=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A pairing of sessions that is not one, kept for the cross-check in
	// a dataDir; any listener passes for the oracle, whose check comes
	// first.
	pairedDir := filepath.Join(dir, "paired")
	pairings := filepath.Join(pairedDir, oracleSessionsFile)
	if err := os.MkdirAll(pairedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pairings, []byte("0x1 0x2 00ff\n0x3 oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oracle, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", pairedDir, "--oracle", oracle.Addr().String()}, pairings + `:2: not a pairing of sessions`},
		{[]string{"serve", "--zoo-cfg", bad}, bad + `:2: clientPort "2181x" is not a whole number`},
		{[]string{"serve", "--zoo-cfg", unknown}, unknown + `:3: unknown key "quorum.magic"`},
		{[]string{"serve", "--zoo-cfg", filepath.Join(dir, "none.cfg")}, "none.cfg: no such file"},
		{[]string{"serve", "--listen", "nowhere"}, `--listen "nowhere"`},
		{[]string{"serve", "--listen", "127.0.0.1:99999"}, `port "99999" is not 0..65535`},
		{[]string{"serve", "--max-client-cnxns", "-2"}, "--max-client-cnxns -2"},
		{[]string{"serve", "--tick-time", "0"}, "--tick-time 0"},
		{[]string{"serve", "--4lw", "ruok,toolong"}, `--4lw: 4lw.commands.whitelist: "toolong" is not a four-letter word`},
		{[]string{"serve", "--min-session-timeout", "9000", "--max-session-timeout", "5000"}, "minSessionTimeout 9000 ms is above maxSessionTimeout 5000 ms"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--super-digest", "super:secret"}, `--super-digest: "super:secret": "secret" is not the base64 of a SHA-1`},
		{[]string{"serve", "--super-digest", "nocolon"}, `--super-digest: "nocolon" is not user:base64hash`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--control", "nowhere"}, `--control nowhere`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--oracle", "127.0.0.1:1"}, `--oracle 127.0.0.1:1: dial tcp 127.0.0.1:1`},
	} {
		code, _, errOut := zklab(t, tc.args...)
		if code != 2 {
			t.Errorf("zklab %s: exit %d, want 2", strings.Join(tc.args, " "), code)
		}
		if !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("zklab %s: stderr %q, want one line containing %q", strings.Join(tc.args, " "), errOut, tc.want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtZklab.path != "" {
		os.RemoveAll(filepath.Dir(builtZklab.path))
	}
	os.Exit(code)
}

// maxClientCnxns bounds the connections of one client IP: past it a new
// connection is closed unanswered, as ZooKeeper refuses it.
func TestServeMaxClientCnxns(t *testing.T) {
	_, addr, _ := startServeProcess(t, "--listen", "127.0.0.1:0", "--max-client-cnxns", "1")
	c := connect(t, addr)
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("ruok"))
	// Closed with the word unread, the socket may answer with a reset.
	b, err := io.ReadAll(nc)
	if len(b) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("a second connection got %q, %v; want it closed unanswered", b, err)
	}
}
