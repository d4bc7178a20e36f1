package wire_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// word sends a four-letter word to addr and returns the answer.
func word(t *testing.T, addr, w string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("%s to %s: %v", w, addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte(w))
	b, _ := io.ReadAll(c)
	return string(b)
}

func mode(t *testing.T, addr string) string {
	t.Helper()
	for _, line := range strings.Split(word(t, addr, "srvr"), "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return m
		}
	}
	return ""
}

// An EnsembleServer's members answer srvr with their mode; a crashed
// member's port closes; without a leader the others answer ZooKeeper's
// "not serving" until the election, which the highest id among the
// members with the highest zxid wins; a restarted member follows.
func TestEnsembleServerModesThroughCrashAndRestart(t *testing.T) {
	const electionDelay = 2 * time.Second
	flws := make([]*wire.FourLetterWords, 3)
	srv := wire.NewEnsemble(sim.NewEnsemble(sim.ServerConfig{}, 3), wire.EnsembleConfig{ElectionDelay: electionDelay,
		FourLetterWord: func(i int, w string, out io.Writer) { flws[i-1].Answer(w, out) }})
	defer srv.Close()
	addrs := make([]string, 3)
	serve := func(i int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[i-1] = ln.Addr().String()
		go srv.ServeMember(i, ln)
	}
	for i := 1; i <= 3; i++ {
		flws[i-1] = &wire.FourLetterWords{Server: srv.Member(i), Whitelist: []string{"*"}, Epoch: time.Now()}
		serve(i)
	}
	want := []string{"follower", "follower", "leader"}
	for i := range 3 {
		if got := mode(t, addrs[i]); got != want[i] {
			t.Errorf("s%d: mode %q, want %q", i+1, got, want[i])
		}
	}
	srv.Crash(3)
	start := time.Now()
	if c, err := net.DialTimeout("tcp", addrs[2], time.Second); err == nil {
		c.Close()
		t.Errorf("s3's port accepts after its crash")
	}
	got1, got2 := word(t, addrs[0], "srvr"), word(t, addrs[0], "ruok")+word(t, addrs[0], "isro")
	if time.Since(start) < electionDelay {
		if got1 != "This ZooKeeper instance is not currently serving requests\n" || got2 != "imoknull" {
			t.Errorf("s1 without a leader: srvr %q, ruok and isro %q", got1, got2)
		}
	}
	deadline := time.Now().Add(electionDelay + 5*time.Second)
	for srv.Leader() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if l := srv.Leader(); l != 2 {
		t.Fatalf("leader after s3's crash: s%d, want s2", l)
	}
	if m1, m2 := mode(t, addrs[0]), mode(t, addrs[1]); m1 != "follower" || m2 != "leader" {
		t.Errorf("after the election: s1 %q, s2 %q", m1, m2)
	}
	srv.Restart(3)
	serve(3)
	if m := mode(t, addrs[2]); m != "follower" {
		t.Errorf("s3 restarted: %q, want follower", m)
	}
}
