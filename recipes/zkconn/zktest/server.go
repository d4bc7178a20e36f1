// Package zktest runs tests against a real ZooKeeper: it starts one (Debian's
// zookeeper package, ZooKeeper 3.8) or uses the one named by ZKLAB_ZK, and
// it injects faults through an in-process TCP proxy.
//
// Without a server and without the zookeeper install, a test that asks for
// a server is skipped with one line saying how to run it; under CI=true it
// fails instead.
package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn"
)

// Where the server comes from, and the limits of starting it.
const (
	// EnvServer names an existing server, HOST:PORT, to use instead of
	// starting one.
	EnvServer = "ZKLAB_ZK"
	// ZkServerScript is Debian's start script.
	ZkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

	startTimeoutMax   = 60 * time.Second // from exec to a granted session
	startAttemptsMax  = 3                // a free port can be taken before the server binds it
	ruokTimeout       = time.Second
	readyPollInterval = 50 * time.Millisecond
	readyProbeTimeout = time.Second      // one probe's dial, handshake and close
	connectTimeoutMax = 30 * time.Second // Dial's wait for a session
	// readyProbeTimeoutMs is the session timeout the readiness probe asks
	// for (the server clamps it to at least two ticks), so that a probe
	// session left open by a failed close goes soon.
	readyProbeTimeoutMs = 4000
)

// HowToRun is the line a test skips with when there is no server.
const HowToRun = "zktest: no ZooKeeper: install Debian's zookeeper (make deps, or apt-get install zookeeper) or set ZKLAB_ZK=HOST:PORT; with CI=true this is a failure"

// A Server is a ZooKeeper server for tests: one this package started, or
// the one named by ZKLAB_ZK.
type Server struct {
	// Addr is the client address, HOST:PORT on loopback.
	Addr string

	dir  string // the config, data and log directory of a started server
	cmd  *exec.Cmd
	exit chan struct{} // closed when a started server's process has exited
	stop sync.Once
}

// Start gives the test its own server, stopped when the test ends; with
// ZKLAB_ZK set it gives that server instead. It skips the test (or fails
// it under CI=true) when there is no server to be had.
func Start(t testing.TB) *Server {
	t.Helper()
	if addr := os.Getenv(EnvServer); addr != "" {
		return external(t, addr)
	}
	requireInstall(t)
	s, err := start(t.TempDir(), nil)
	if err != nil {
		t.Fatalf("zktest: starting ZooKeeper: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartWithJVMFlags gives the test its own server started with extra JVM
// flags (SERVER_JVMFLAGS), such as -Dzookeeper.extendedTypesEnabled=true.
// With ZKLAB_ZK set it skips the test: that server's flags are not this
// package's to choose.
func StartWithJVMFlags(t testing.TB, flags ...string) *Server {
	t.Helper()
	if addr := os.Getenv(EnvServer); addr != "" {
		t.Skipf("zktest: the test needs a server started with %v, not %s=%s", flags, EnvServer, addr)
	}
	requireInstall(t)
	s, err := start(t.TempDir(), flags)
	if err != nil {
		t.Fatalf("zktest: starting ZooKeeper with %v: %v", flags, err)
	}
	t.Cleanup(s.Stop)
	return s
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
	dir  string
}

// Shared gives the test the package's one shared server, started at the
// first call and stopped by Main (or, without Main, killed when the test
// binary exits). Tests that share it must keep to their own paths.
func Shared(t testing.TB) *Server {
	t.Helper()
	if addr := os.Getenv(EnvServer); addr != "" {
		return external(t, addr)
	}
	requireInstall(t)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "zktest-")
		if shared.err != nil {
			return
		}
		shared.s, shared.err = start(shared.dir, nil)
	})
	if shared.err != nil {
		t.Fatalf("zktest: starting the shared ZooKeeper: %v", shared.err)
	}
	return shared.s
}

// Main runs the package's tests (m.Run) and then stops the shared server
// and the shared ensemble: call it from TestMain as
// os.Exit(zktest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	stopSharedEnsemble()
	if shared.s != nil {
		shared.s.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

func requireInstall(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(ZkServerScript); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(HowToRun)
	}
	t.Skip(HowToRun)
}

func external(t testing.TB, addr string) *Server {
	t.Helper()
	if err := checkLoopback(addr); err != nil {
		t.Fatalf("zktest: %s=%s: %v", EnvServer, addr, err)
	}
	if err := Ruok(addr); err != nil {
		t.Fatalf("zktest: %s=%s does not answer ruok: %v", EnvServer, addr, err)
	}
	return &Server{Addr: addr}
}

// start launches zkServer.sh start-foreground with a generated config in
// dir and waits until it grants a session (waitReady).
func start(dir string, jvmFlags []string) (*Server, error) {
	var errs []error
	for attempt := range startAttemptsMax {
		s, err := startOnce(filepath.Join(dir, fmt.Sprintf("zk%d", attempt)), jvmFlags)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func startOnce(dir string, jvmFlags []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	config := strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0", // the default of 60 per IP blocks 100 clients silently
		"4lw.commands.whitelist=*",
		"admin.enableServer=false",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, exit: make(chan struct{})}
	s.cmd = exec.Command(ZkServerScript, "start-foreground", cfg)
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "ZOO_LOG_DIR="+dir)
	if len(jvmFlags) > 0 {
		s.cmd.Env = append(s.cmd.Env, "SERVER_JVMFLAGS="+strings.Join(jvmFlags, " "))
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Its own process group, so that Stop kills the script and the JVM; and
	// killed with the test binary if that dies without stopping it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go s.runProcess(started)
	if err := <-started; err != nil {
		return nil, err
	}
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tail(logPath, 20))
	}
	return s, nil
}

// runProcess starts the server on a goroutine locked to its OS thread and
// stays there until the process exits: Pdeathsig fires when the thread
// that started the child ends, so that thread must live as long as it.
func (s *Server) runProcess(started chan<- error) {
	runtime.LockOSThread()
	if err := s.cmd.Start(); err != nil {
		started <- err
		runtime.UnlockOSThread()
		return
	}
	started <- nil
	_ = s.cmd.Wait()
	close(s.exit)
	runtime.UnlockOSThread()
}

// waitReady waits, at most startTimeoutMax, until the server grants a
// session. Answering ruok is not enough: a fresh ZooKeeper answers imok
// about 100 ms before it serves sessions, and closes the session
// connections that come meanwhile, which cost the first client
// go-zookeeper's one-second backoff. So it polls with probeSession, which
// retries at once.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeoutMax)
	var last error
	for {
		if last = probeSession(s.Addr, deadline); last == nil {
			return nil
		}
		if time.Until(deadline) < readyPollInterval {
			return fmt.Errorf("%s granted no session within %v: %v", s.Addr, startTimeoutMax, last)
		}
		select {
		case <-s.exit:
			return fmt.Errorf("zkServer.sh exited before %s granted a session: %v", s.Addr, last)
		case <-time.After(readyPollInterval):
		}
	}
}

// probeSession asks addr for a new session, once, and closes it; it
// reports why no session was granted. It waits at most
// readyProbeTimeout, and not past deadline. The close is best effort: the session is granted
// already, and a probe session left open expires on its own.
func probeSession(addr string, deadline time.Time) error {
	if soon := time.Now().Add(readyProbeTimeout); soon.Before(deadline) {
		deadline = soon
	}
	dialer := net.Dialer{Deadline: deadline}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write(connectRequestFrame(readyProbeTimeoutMs, 0, nil)); err != nil {
		return fmt.Errorf("send connect request: %w", err)
	}
	f, err := readFrameMax(conn, connectResponseBytesMax)
	if err != nil {
		return fmt.Errorf("read connect response: %w", err)
	}
	r, err := parseConnectResponse(f[4:])
	if err != nil {
		return err
	}
	if r.sessionID == 0 || r.timeoutMs <= 0 {
		return fmt.Errorf("no session granted (session %#x, timeout %d ms)", r.sessionID, r.timeoutMs)
	}
	if _, err := conn.Write(requestHeaderFrame(xidCloseSession, opCloseSession)); err == nil {
		_, _ = readFrameMax(conn, replyBytesMax)
	}
	return nil
}

// Stop kills a started server's process group and waits for it; for a
// server named by ZKLAB_ZK it does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.stop.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-s.exit:
		case <-time.After(10 * time.Second):
		}
	})
}

// Dial connects a zkconn client to the server, waits for its session and
// closes it when the test ends.
func (s *Server) Dial(t testing.TB, sessionTimeout time.Duration, opts ...zkconn.Option) *zkconn.Conn {
	t.Helper()
	c, err := zkconn.Dial([]string{s.Addr}, sessionTimeout, opts...)
	if err != nil {
		t.Fatalf("zktest: dial %s: %v", s.Addr, err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeoutMax)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatalf("zktest: %s: %v", s.Addr, err)
	}
	return c
}

// Ruok sends the four-letter word ruok and checks for imok.
func Ruok(addr string) error {
	out, err := FourLetterWord(addr, "ruok")
	if err != nil {
		return err
	}
	if out != "imok" {
		return fmt.Errorf("ruok answered %q", out)
	}
	return nil
}

// FourLetterWord sends a four-letter word (stat, mntr, cons, ...) and
// returns the answer.
func FourLetterWord(addr, word string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, ruokTimeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(ruokTimeout))
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
