package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn"
)

// EnvEnsembleLong, set to 1, runs the ensemble tests that take longest
// (a quorum lost for twice a session timeout, a five-server ensemble);
// without it the ensemble tests keep to about a minute.
const EnvEnsembleLong = "ZKLAB_ENSEMBLE_LONG"

// The ensemble's configuration, chosen for a fast start and fast failure
// detection on loopback (figures measured on the 2-core test machine, see
// ensemble_test.go):
//   - tickTime 200 ms (ZooKeeper's default is 2000): the leader pings its
//     followers every tick/2, sessions expire on tick boundaries, and the
//     session timeout is clamped to [2, 20] ticks unless set (it is set to
//     [400 ms, 60 s] below, so that tests may ask for long sessions).
//   - initLimit 25 ticks (5 s) for a follower to connect and sync, syncLimit
//     10 ticks (2 s) before the leader drops a follower that does not
//     answer (and a follower its leader): small enough that a paused
//     server drops out fast, large enough that a loaded machine's JVM
//     pauses do not break the quorum.
//   - JVM flags for start-up speed: the serial collector, C1 only, a small
//     heap, no perf data.
const (
	ensembleTickMs          = 200
	ensembleInitLimitTicks  = 25
	ensembleSyncLimitTicks  = 10
	ensembleMinSessionMs    = 2 * ensembleTickMs
	ensembleMaxSessionMs    = 60000
	ensembleStartTimeoutMax = 90 * time.Second // n JVMs on 2 loaded cores
	ensembleStopTimeoutMax  = 10 * time.Second
	// ensembleHostBase: server i (myid i) has the address 127.0.0.(base+i),
	// all on Linux's loopback /8.
	ensembleHostBase = 10
)

// ensembleJVMFlags are the SERVER_JVMFLAGS of every ensemble server.
var ensembleJVMFlags = []string{
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xms32m", "-Xmx256m", "-XX:-UsePerfData",
}

// An Ensemble is n real ZooKeeper servers (Debian's zookeeper package) on
// loopback, a quorum of them, started by StartEnsemble and stopped when
// the test ends. Servers are numbered 1..n, as their myid and their
// server.N lines; member i listens for clients on 127.0.0.(10+i).
//
// Isolating a server: client traffic goes through a Proxy per server when
// the client dials with Dialer (Member.Proxy's Refuse, Blackhole, Kill...).
// Peer traffic (election and quorum ports) goes through a link per pair
// of servers (ensemble_peers.go): Lag holds a follower's traffic with the
// others, and its reads grow stale. A server is isolated from its peers
// and clients alike by Pause (SIGSTOP: it neither answers nor closes
// anything, as in a partition, until Resume) or taken away by Kill or
// Stop.
type Ensemble struct {
	Members []*Member // Members[i-1] is server i

	links []peerPair // server from's links to server to (ensemble_peers.go)

	t   testing.TB
	dir string
}

// A Member is one server of an Ensemble.
type Member struct {
	ID    int    // myid, 1..n
	Addr  string // client address, 127.0.0.(10+ID):port
	Proxy *Proxy // client traffic, for clients that dial with Ensemble.Dialer

	dir, cfg string
	jvmFlags []string // its SERVER_JVMFLAGS
	mu       sync.Mutex
	srv      *Server // the running process, nil while stopped
}

// StartEnsemble starts n (3 or 5) servers in parallel and waits until
// each serves a session and the quorum has one leader (srvr's Mode line).
// It stops them when the test ends, whatever its outcome. Without the
// zookeeper install it skips (fails under CI=true); with ZKLAB_ZK set it
// still starts its own servers: the named server is one, not an ensemble.
func StartEnsemble(t testing.TB, n int) *Ensemble {
	t.Helper()
	return StartEnsembleWith(t, n, EnsembleOptions{})
}

// EnsembleOptions are what an ensemble's servers get beyond the
// configuration above.
type EnsembleOptions struct {
	// Config holds zoo.cfg lines each server's configuration ends with
	// (reconfigEnabled=true, say).
	Config []string
	// JVMFlags are SERVER_JVMFLAGS each server gets after the ones above
	// (-Dzookeeper.DigestAuthenticationProvider.superDigest=..., say).
	JVMFlags []string
	// DirectPeers names each server by its own address in every server's
	// server.N lines, without the peer links Lag holds (Lag is then
	// unavailable): with reconfigEnabled=true, the leader hands its own
	// server.N lines to its followers as the dynamic configuration, and a
	// follower given the leader's names for the links would take another
	// server's link address for its own.
	DirectPeers bool
}

// StartEnsembleWith is StartEnsemble with opts.
func StartEnsembleWith(t testing.TB, n int, opts EnsembleOptions) *Ensemble {
	t.Helper()
	if n != 3 && n != 5 {
		t.Fatalf("zktest: an ensemble of %d servers: want 3 or 5", n)
	}
	requireInstall(t)
	e, err := startEnsembleAttempts(t, t.TempDir(), n, opts)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(e.close)
	return e
}

var sharedEnsemble struct {
	once sync.Once
	e    *Ensemble
	err  error
	dir  string
}

// SharedEnsemble gives the test the package's one shared three-server
// ensemble, started at the first call and stopped by Main (or, without
// Main, killed when the test binary exits): one ensemble's start for the
// whole test binary. Tests that share it must keep to their own paths and
// leave its servers as they found them (a test that kills, pauses or
// partitions servers starts its own with StartEnsemble).
func SharedEnsemble(t testing.TB) *Ensemble {
	t.Helper()
	requireInstall(t)
	sharedEnsemble.once.Do(func() {
		sharedEnsemble.dir, sharedEnsemble.err = os.MkdirTemp("", "zktest-ensemble-")
		if sharedEnsemble.err != nil {
			return
		}
		sharedEnsemble.e, sharedEnsemble.err = startEnsembleAttempts(nil, sharedEnsemble.dir, 3, EnsembleOptions{})
	})
	if sharedEnsemble.err != nil {
		t.Fatalf("zktest: the shared ensemble: %v", sharedEnsemble.err)
	}
	return sharedEnsemble.e
}

// stopSharedEnsemble stops the shared ensemble, if one was started.
func stopSharedEnsemble() {
	if sharedEnsemble.e != nil {
		sharedEnsemble.e.close()
	}
	if sharedEnsemble.dir != "" {
		os.RemoveAll(sharedEnsemble.dir)
	}
}

// startEnsembleAttempts starts n servers under dir, trying again (in a
// fresh directory, on fresh ports) when a start fails. t is the test the
// ensemble belongs to, nil for the shared one.
func startEnsembleAttempts(t testing.TB, dir string, n int, opts EnsembleOptions) (*Ensemble, error) {
	var errs []error
	for attempt := range startAttemptsMax {
		e, err := startEnsemble(t, filepath.Join(dir, fmt.Sprintf("ensemble%d", attempt)), n, opts)
		if err == nil {
			return e, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("starting an ensemble of %d: %w", n, errors.Join(errs...))
}

// startEnsemble starts n servers under dir; on an error every process it
// started is stopped. The caller closes the ensemble.
func startEnsemble(t testing.TB, dir string, n int, opts EnsembleOptions) (_ *Ensemble, err error) {
	e := &Ensemble{t: t, dir: dir}
	jvmFlags := append(slices.Clone(ensembleJVMFlags), opts.JVMFlags...)
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	type ports struct{ client, quorum, election int }
	all := make([]ports, n)
	for i := range n {
		host := ensembleHost(i + 1)
		for _, p := range []*int{&all[i].client, &all[i].quorum, &all[i].election} {
			port, err := freePortOn(host)
			if err != nil {
				return nil, err
			}
			*p = port
		}
	}
	// Server i names itself by its own address and server j by its link
	// to j (ensemble_peers.go), which Lag can hold.
	for from := 1; from <= n && !opts.DirectPeers; from++ {
		for to := 1; to <= n; to++ {
			if from == to {
				continue
			}
			p, err := startPeerLinks(from, to, all[to-1].quorum, all[to-1].election)
			if err != nil {
				return nil, err
			}
			e.links = append(e.links, p)
		}
	}
	for i := range n {
		id := i + 1
		var servers []string
		for j := range n {
			host := ensembleHost(j + 1)
			if j != i && !opts.DirectPeers {
				host = peerHost(id, j+1)
			}
			servers = append(servers, fmt.Sprintf("server.%d=%s:%d:%d", j+1, host, all[j].quorum, all[j].election))
		}
		m := &Member{ID: id, Addr: net.JoinHostPort(ensembleHost(id), fmt.Sprint(all[i].client)), dir: filepath.Join(dir, fmt.Sprintf("s%d", id)), jvmFlags: jvmFlags}
		data := filepath.Join(m.dir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", id)), 0o644); err != nil {
			return nil, err
		}
		config := append([]string{
			fmt.Sprintf("tickTime=%d", ensembleTickMs),
			fmt.Sprintf("initLimit=%d", ensembleInitLimitTicks),
			fmt.Sprintf("syncLimit=%d", ensembleSyncLimitTicks),
			fmt.Sprintf("minSessionTimeout=%d", ensembleMinSessionMs),
			fmt.Sprintf("maxSessionTimeout=%d", ensembleMaxSessionMs),
			"dataDir=" + data,
			fmt.Sprintf("clientPort=%d", all[i].client),
			"clientPortAddress=" + ensembleHost(id),
			"maxClientCnxns=0",
			"4lw.commands.whitelist=*",
			"admin.enableServer=false",
		}, servers...)
		config = append(config, opts.Config...)
		m.cfg = filepath.Join(m.dir, "zoo.cfg")
		if err := os.WriteFile(m.cfg, []byte(strings.Join(config, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		e.Members = append(e.Members, m)
	}
	for _, m := range e.Members {
		if err := m.launch(); err != nil {
			return nil, err
		}
	}
	if err := e.waitServing(e.all(), ensembleStartTimeoutMax); err != nil {
		return nil, err
	}
	if _, err := e.WaitLeader(ensembleStartTimeoutMax); err != nil {
		return nil, err
	}
	for _, m := range e.Members {
		p, err := StartProxy(m.Addr)
		if err != nil {
			return nil, err
		}
		m.Proxy = p
	}
	return e, nil
}

// close stops every server and closes the members' proxies and the
// peer links.
func (e *Ensemble) close() {
	e.stopAll()
	for _, m := range e.Members {
		if m.Proxy != nil {
			m.Proxy.Close()
		}
	}
	for _, l := range e.links {
		l.close()
	}
	e.links = nil
}

func ensembleHost(id int) string { return fmt.Sprintf("127.0.0.%d", ensembleHostBase+id) }

func freePortOn(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (e *Ensemble) all() []int {
	ids := make([]int, len(e.Members))
	for i := range ids {
		ids[i] = i + 1
	}
	return ids
}

// Member returns server id (1..n); another id fails the test.
func (e *Ensemble) Member(id int) *Member {
	if id < 1 || id > len(e.Members) {
		if e.t == nil { // the shared ensemble: no one test to fail
			panic(fmt.Sprintf("zktest: no server %d in an ensemble of %d", id, len(e.Members)))
		}
		e.t.Fatalf("zktest: no server %d in an ensemble of %d", id, len(e.Members))
	}
	return e.Members[id-1]
}

// Addrs are the client addresses of all servers, in myid order: a
// connect string.
func (e *Ensemble) Addrs() []string {
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	return addrs
}

// Dialer is a zk.Dialer that sends a connection for a server's address
// through that server's Proxy, so that each server's client traffic can
// be faulted alone.
func (e *Ensemble) Dialer() zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		for _, m := range e.Members {
			if m.Addr == address {
				return net.DialTimeout("tcp", m.Proxy.Addr(), timeout)
			}
		}
		return nil, fmt.Errorf("zktest: %s is no server of the ensemble", address)
	}
}

// Dial connects a zkconn client to the given servers (all of them
// without ids), in the order given (go-zookeeper shuffles it), through
// their proxies; it waits for the session and closes the client when the
// test ends. Dial(t, d, 2) talks to server 2 only: a read from a follower.
func (e *Ensemble) Dial(t testing.TB, sessionTimeout time.Duration, ids ...int) *zkconn.Conn {
	t.Helper()
	if len(ids) == 0 {
		ids = e.all()
	}
	var addrs []string
	for _, id := range ids {
		addrs = append(addrs, e.Member(id).Addr)
	}
	c, err := zkconn.Dial(addrs, sessionTimeout, zkconn.WithDialer(e.Dialer()))
	if err != nil {
		t.Fatalf("zktest: dial %v: %v", addrs, err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeoutMax)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatalf("zktest: %v: %v", addrs, err)
	}
	return c
}

// Mode asks server id for its srvr Mode line: "leader", "follower", or
// an error (a server without a leader answers "This ZooKeeper instance is
// not currently serving requests", a stopped one does not answer).
func (e *Ensemble) Mode(id int) (string, error) {
	out, err := FourLetterWord(e.Member(id).Addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("server %d: no Mode line in srvr: %q", id, strings.TrimSpace(out))
}

// Zxid asks server id for its srvr Zxid line: the last zxid it processed.
func (e *Ensemble) Zxid(id int) (int64, error) {
	zxid, err := SrvrZxid(e.Member(id).Addr)
	if err != nil {
		return 0, fmt.Errorf("server %d: %v", id, err)
	}
	return zxid, nil
}

// SrvrZxid asks the server at addr for its srvr Zxid line: the last zxid
// it processed.
func SrvrZxid(addr string) (int64, error) {
	out, err := FourLetterWord(addr, "srvr")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if z, ok := strings.CutPrefix(line, "Zxid: "); ok {
			var zxid int64
			if _, err := fmt.Sscanf(strings.TrimSpace(z), "0x%x", &zxid); err != nil {
				return 0, fmt.Errorf("srvr's Zxid line %q: %v", line, err)
			}
			return zxid, nil
		}
	}
	return 0, fmt.Errorf("no Zxid line in srvr: %q", strings.TrimSpace(out))
}

// Leader returns the server whose Mode is leader, with every other
// running, unpaused server a follower; it reports false when there is
// none such now.
func (e *Ensemble) Leader() (int, bool) {
	leader := 0
	for _, m := range e.Members {
		if !m.Running() {
			continue
		}
		mode, err := e.Mode(m.ID)
		switch {
		case err != nil:
			return 0, false
		case mode == "leader" && leader == 0:
			leader = m.ID
		case mode == "follower":
		default:
			return 0, false
		}
	}
	return leader, leader != 0
}

// WaitLeader waits, at most timeout, until Leader reports one, and
// returns it.
func (e *Ensemble) WaitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		if id, ok := e.Leader(); ok {
			return id, nil
		}
		if time.Now().After(deadline) {
			var modes []string
			for _, m := range e.Members {
				mode, err := e.Mode(m.ID)
				modes = append(modes, fmt.Sprintf("s%d: %q %v", m.ID, mode, err))
			}
			return 0, fmt.Errorf("no leader within %v: %s", timeout, strings.Join(modes, "; "))
		}
		time.Sleep(readyPollInterval)
	}
}

// Follower returns a server that is a follower now (the lowest id), or
// fails the test.
func (e *Ensemble) Follower(t testing.TB) int {
	t.Helper()
	leader, err := e.WaitLeader(ensembleStartTimeoutMax)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range e.Members {
		if m.ID != leader && m.Running() {
			return m.ID
		}
	}
	t.Fatal("zktest: no follower running")
	return 0
}

// waitServing waits until each of the servers ids grants a session.
func (e *Ensemble) waitServing(ids []int, timeout time.Duration) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.Member(id).waitServing(timeout)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WaitServing waits, at most timeout, until server id grants sessions
// (it has a leader and is in sync with it).
func (e *Ensemble) WaitServing(id int, timeout time.Duration) error {
	return e.Member(id).waitServing(timeout)
}

// Kill kills server id's process at once (SIGKILL): its connections
// close, its data stays on disk for Restart.
func (e *Ensemble) Kill(id int) { e.Member(id).kill(syscall.SIGKILL) }

// Stop stops server id with SIGTERM and waits for it to exit (killing it
// if it has not within 10 s).
func (e *Ensemble) Stop(id int) { e.Member(id).kill(syscall.SIGTERM) }

// Restart starts server id again on its data directory and ports; it
// does not wait for it to serve (WaitServing).
func (e *Ensemble) Restart(id int) error {
	m := e.Member(id)
	if m.Running() {
		return fmt.Errorf("zktest: server %d is running", id)
	}
	return m.launch()
}

// Pause stops server id's processes with SIGSTOP: it keeps its sockets
// open and answers nothing, to clients and peers alike, until Resume.
// It returns once every thread of them has stopped (waitGroupStopped).
func (e *Ensemble) Pause(id int) error {
	m := e.Member(id)
	m.mu.Lock()
	s := m.srv
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("zktest: server %d is not running", m.ID)
	}
	pgid := s.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		return err
	}
	if err := waitGroupStopped(pgid, pauseWaitMax); err != nil {
		return fmt.Errorf("zktest: pausing server %d: %w", id, err)
	}
	return nil
}

// Resume continues a paused server (SIGCONT).
func (e *Ensemble) Resume(id int) error { return e.Member(id).signal(syscall.SIGCONT) }

func (e *Ensemble) stopAll() {
	var wg sync.WaitGroup
	for _, m := range e.Members {
		wg.Add(1)
		go func() { defer wg.Done(); m.kill(syscall.SIGKILL) }()
	}
	wg.Wait()
}

// Running reports whether the member's process is running (paused or not).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv == nil {
		return false
	}
	select {
	case <-m.srv.exit:
		return false
	default:
		return true
	}
}

// launch starts zkServer.sh start-foreground on the member's config.
func (m *Member) launch() error {
	logFile, err := os.OpenFile(filepath.Join(m.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	s := &Server{Addr: m.Addr, dir: m.dir, exit: make(chan struct{})}
	s.cmd = exec.Command(ZkServerScript, "start-foreground", m.cfg)
	s.cmd.Dir = m.dir
	s.cmd.Env = append(os.Environ(), "ZOO_LOG_DIR="+m.dir, "SERVER_JVMFLAGS="+strings.Join(m.jvmFlags, " "))
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// As in startOnce: its own process group, killed with the test binary.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go s.runProcess(started)
	if err := <-started; err != nil {
		return fmt.Errorf("server %d: %w", m.ID, err)
	}
	m.mu.Lock()
	m.srv = s
	m.mu.Unlock()
	return nil
}

func (m *Member) waitServing(timeout time.Duration) error {
	m.mu.Lock()
	s := m.srv
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("server %d is not running", m.ID)
	}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = probeSession(m.Addr, deadline); last == nil {
			return nil
		}
		if time.Until(deadline) < readyPollInterval {
			return fmt.Errorf("server %d (%s) granted no session within %v: %v\n%s", m.ID, m.Addr, timeout, last, tail(filepath.Join(m.dir, "server.log"), 20))
		}
		select {
		case <-s.exit:
			return fmt.Errorf("server %d exited before it granted a session: %v\n%s", m.ID, last, tail(filepath.Join(m.dir, "server.log"), 20))
		case <-time.After(readyPollInterval):
		}
	}
}

// kill sends sig to the member's process group (SIGCONT too, so that a
// paused server can die of SIGTERM) and waits for it to exit.
func (m *Member) kill(sig syscall.Signal) {
	m.mu.Lock()
	s := m.srv
	m.srv = nil
	m.mu.Unlock()
	if s == nil {
		return
	}
	pgid := -s.cmd.Process.Pid
	_ = syscall.Kill(pgid, sig)
	_ = syscall.Kill(pgid, syscall.SIGCONT)
	select {
	case <-s.exit:
		return
	case <-time.After(ensembleStopTimeoutMax):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-s.exit:
	case <-time.After(ensembleStopTimeoutMax):
	}
}

func (m *Member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	s := m.srv
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("zktest: server %d is not running", m.ID)
	}
	return syscall.Kill(-s.cmd.Process.Pid, sig)
}
