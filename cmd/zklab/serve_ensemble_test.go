package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// srvrMode is the Mode line of a member's srvr answer, "" if it answers
// none (not serving, or not listening).
func srvrMode(addr string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	c.Write([]byte("srvr"))
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return mode
		}
	}
	return ""
}

// waitForModes waits until every member answers srvr with a mode, and
// returns the leader's index in addrs.
func waitForModes(t *testing.T, addrs []string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		leader, followers := -1, 0
		var modes []string
		for i, a := range addrs {
			m := srvrMode(a)
			modes = append(modes, m)
			switch m {
			case "leader":
				if leader != -1 {
					t.Fatalf("two leaders: %v", modes)
				}
				leader = i
			case "follower":
				followers++
			}
		}
		if leader != -1 && followers == len(addrs)-1 {
			return leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ensemble at %v has modes %v after 20 s", addrs, modes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// zklab serve --servers 3 serves an ensemble from one process: one
// leader and two followers by srvr, a write on one member read on another
// after sync, the same zxid everywhere.
func TestServeEnsembleServers(t *testing.T) {
	cmd := exec.Command(zklabBinary(t), "serve", "--servers", "3", "--listen", "127.0.0.1:0", "--4lw", "*")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(stdout)
	var addrs []string
	re := regexp.MustCompile(`^zklab serve: s(\d) of 3 listening on (\S+)\n$`)
	for i := 1; i <= 3; i++ {
		line, err := r.ReadString('\n')
		m := re.FindStringSubmatch(line)
		if err != nil || m == nil || m[1] != fmt.Sprint(i) {
			t.Fatalf("line %d: %q (%v)", i, line, err)
		}
		addrs = append(addrs, m[2])
	}
	leader := waitForModes(t, addrs)
	if leader != 2 {
		t.Errorf("s%d leads the first epoch; want s3, as FastLeaderElection picks the highest id among equal zxids", leader+1)
	}
	a, b := connect(t, addrs[0]), connect(t, addrs[1])
	if _, err := a.Create("/x", []byte("on s1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sync("/x"); err != nil {
		t.Fatal(err)
	}
	data, _, err := b.Get("/x")
	if err != nil || string(data) != "on s1" {
		t.Fatalf("get /x on s2 after sync: %q, %v", data, err)
	}
	var zxids []string
	for _, addr := range addrs {
		for _, line := range strings.Split(fourLetter(t, addr, "srvr"), "\n") {
			if z, ok := strings.CutPrefix(line, "Zxid: "); ok {
				zxids = append(zxids, z)
			}
		}
	}
	// Two sessions and a create: the followers apply at once, as the
	// driver takes the ensemble's steps as soon as they are enabled.
	if len(zxids) != 3 || zxids[0] != "0x100000003" || zxids[1] != zxids[0] || zxids[2] != zxids[0] {
		t.Errorf("zxids by srvr: %v, want 0x100000003 on every member", zxids)
	}
	if got := fourLetter(t, addrs[0], "mntr"); !strings.Contains(got, "zk_server_state\tfollower\n") {
		t.Errorf("mntr on s1:\n%s", got)
	}
}

// ensembleCluster writes the zoo.cfg and myid of n members as go-zookeeper's
// StartTestCluster does (DIR/srvN/zoo.cfg, DIR/srvN/myid), on free ports,
// and returns the zoo.cfg paths and client addresses.
func ensembleCluster(t *testing.T, n int) (cfgs, addrs []string) {
	t.Helper()
	dir := t.TempDir()
	var servers strings.Builder
	var ports []int
	for i := 1; i <= n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", i, 20000+i, 21000+i) // never listened on
	}
	for i := 1; i <= n; i++ {
		srv := filepath.Join(dir, fmt.Sprintf("srv%d", i))
		if err := os.Mkdir(srv, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(srv, "myid"), fmt.Sprintf("%d\n", i))
		cfg := filepath.Join(srv, "zoo.cfg")
		writeFile(t, cfg, fmt.Sprintf("admin.enableServer=false\ndataDir=%s\ntickTime=500\ninitLimit=10\nsyncLimit=5\nclientPort=%d\nreconfigEnabled=true\n4lw.commands.whitelist=*\nstandaloneEnabled=false\n%s",
			srv, ports[i-1], servers.String()))
		cfgs = append(cfgs, cfg)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", ports[i-1]))
	}
	return cfgs, addrs
}

// memberProcess starts one member's zklab serve and waits for its first
// line.
func memberProcess(t *testing.T, cfg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(zklabBinary(t), "serve", "--zoo-cfg", cfg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "of a simulated ensemble of 3, listening on") {
		t.Fatalf("%s: first line %q (%v); stderr %s", cfg, line, err, stderr.String())
	}
	return cmd
}

// One zklab serve per member, as go-zookeeper's harness starts a real
// ensemble: they make one simulated ensemble. A member process killed
// with SIGKILL crash-stops its member (its port closes, its clients move
// on, the others elect a leader without it), and the process started
// again rejoins as a follower with the data.
func TestServeEnsembleMemberProcesses(t *testing.T) {
	cfgs, addrs := ensembleCluster(t, 3)
	procs := make([]*exec.Cmd, 3)
	for i, cfg := range cfgs {
		procs[i] = memberProcess(t, cfg)
	}
	leader := waitForModes(t, addrs)
	c, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/x", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := c.SessionID()

	// kill -9 the leader's process.
	procs[leader].Process.Signal(syscall.SIGKILL)
	procs[leader].Wait()
	deadline := time.Now().Add(5 * time.Second)
	for srvrMode(addrs[leader]) != "" || dialable(addrs[leader]) {
		if time.Now().After(deadline) {
			t.Fatalf("s%d's port still answers 5 s after its process was killed", leader+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rest []string
	for i, a := range addrs {
		if i != leader {
			rest = append(rest, a)
		}
	}
	newLeader := waitForModes(t, rest)
	drain(events)
	data, _, err := c.Get("/x")
	if err != nil || string(data) != "kept" || c.SessionID() != session {
		t.Fatalf("after the leader's kill: get /x %q, %v; session %#x, was %#x", data, err, c.SessionID(), session)
	}
	t.Logf("s%d killed; %s leads", leader+1, rest[newLeader])

	// Started again, it rejoins as a follower.
	procs[leader] = memberProcess(t, cfgs[leader])
	waitForModes(t, addrs)
	if got := srvrMode(addrs[leader]); got != "follower" {
		t.Errorf("s%d restarted: mode %q, want follower", leader+1, got)
	}
	only, _, err := zk.Connect([]string{addrs[leader]}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer only.Close()
	if data, _, err := only.Get("/x"); err != nil || string(data) != "kept" {
		t.Errorf("get /x on the restarted s%d: %q, %v", leader+1, data, err)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(cfgs[0])), hostLogFile))
	if err != nil || !strings.Contains(string(log), fmt.Sprintf("s%d's process ended", leader+1)) {
		t.Errorf("the host's log (%v):\n%s", err, log)
	}
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func drain(events <-chan zk.Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

// Bad ensemble input exits 2 naming the file and line (server.N lines,
// myid) or the flag.
func TestServeEnsembleBadInput(t *testing.T) {
	dir := t.TempDir()
	badServer := filepath.Join(dir, "bad-server.cfg")
	writeFile(t, badServer, "tickTime=500\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889\nserver.3=127.0.0.1:2890:3890\n")
	two := filepath.Join(dir, "two.cfg")
	writeFile(t, two, "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n")
	noMyID := filepath.Join(dir, "nomyid", "zoo.cfg")
	os.Mkdir(filepath.Dir(noMyID), 0o755)
	three := "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nserver.3=127.0.0.1:2890:3890\n"
	writeFile(t, noMyID, "dataDir="+filepath.Dir(noMyID)+"\n"+three)
	badMyID := filepath.Join(dir, "badmyid", "zoo.cfg")
	os.Mkdir(filepath.Dir(badMyID), 0o755)
	writeFile(t, badMyID, "dataDir="+filepath.Dir(badMyID)+"\n"+three)
	writeFile(t, filepath.Join(filepath.Dir(badMyID), "myid"), "7\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--zoo-cfg", badServer}, badServer + `:3: server.2=127.0.0.1:2889 is not host:quorumPort:electionPort`},
		{[]string{"serve", "--zoo-cfg", two}, two + `:2: 2 server.N lines: zklab serve simulates an ensemble of 3 or 5 servers`},
		{[]string{"serve", "--zoo-cfg", noMyID}, filepath.Join(filepath.Dir(noMyID), "myid") + ": no such file"},
		{[]string{"serve", "--zoo-cfg", badMyID}, filepath.Join(filepath.Dir(badMyID), "myid") + `:1: myid "7" is not a server of the zoo.cfg's server.1..server.3`},
		{[]string{"serve", "--servers", "4"}, "--servers 4: the simulated ensembles have 3 or 5 servers"},
		{[]string{"serve", "--servers", "3", "--zoo-cfg", badMyID}, "--servers: the zoo.cfg " + badMyID + " lists its servers (line 2)"},
		{[]string{"serve", "--servers", "3", "--history", filepath.Join(dir, "h")}, "--history: not supported with a simulated ensemble"},
		{[]string{"serve", "--zoo-cfg", badMyID, "--control", "127.0.0.1:0"}, "--control: with a zoo.cfg's server.N lines each member is a process of its own"},
		{[]string{"serve", "--servers", "3", "--listen", "127.0.0.1:0", "--control", "nowhere"}, "--control nowhere"},
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
