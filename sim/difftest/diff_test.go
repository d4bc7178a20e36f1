package difftest

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
)

func TestMain(m *testing.M) {
	// The server this package starts has a super user (SuperPassword).
	if os.Getenv(zktest.EnvServer) == "" && os.Getenv("SERVER_JVMFLAGS") == "" {
		os.Setenv("SERVER_JVMFLAGS", SuperJVMFlag)
		superConfigured = true
	}
	os.Exit(zktest.Main(m))
}

// superConfigured reports whether the real server knows SuperPassword: it
// does when this package started it.
var superConfigured bool

// sessionTimeout is every client's requested session timeout in the
// sequences: long enough that nothing expires during one.
const sessionTimeout = 10 * time.Second

var runSeq atomic.Int64

// newRoot names a run's root, unique on the shared server.
func newRoot() string {
	// A fixed length, so that the size limits fall at the same data length.
	return fmt.Sprintf("/d%09d%06d", time.Now().UnixNano()%1e9, runSeq.Add(1)%1e6)
}

// Sequence is one differential case: operations by clients, each with its
// own session.
type Sequence struct {
	Clients        int
	Ops            []Op
	Seed           uint64        // the simulator's seed
	SessionTimeout time.Duration // zero: sessionTimeout
	// Addrs are the clients' addresses, by client (none: the default),
	// which the ip scheme sees; a real server gets them as the local
	// addresses of its clients' connections (127.0.0.0/8 reaches it).
	Addrs []netip.Addr
}

// proxyTB is the test that owns the fault proxies of a sequence's real
// clients, or nil when the sequence injects no fault.
func proxyTB(t TB, seq Sequence) testing.TB {
	for _, op := range seq.Ops {
		if op.Kind == Fault {
			if tb, ok := t.(testing.TB); ok {
				return tb
			}
		}
	}
	return nil
}

func (s Sequence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clients=%d seed=%d\n", s.Clients, s.Seed)
	for i, op := range s.Ops {
		fmt.Fprintf(&b, "  #%d %v\n", i+1, op)
	}
	return b.String()
}

// TB is what the checks need of *testing.T and *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// transcripts runs seq on the simulator and on the real server at addr.
func transcripts(t TB, addr string, seq Sequence) (simLines, realLines []string) {
	t.Helper()
	root := newRoot()

	timeout := sessionTimeout
	if seq.SessionTimeout != 0 {
		timeout = seq.SessionTimeout
	}
	addrs := seq.Addrs
	if len(addrs) == 0 {
		addrs = make([]netip.Addr, seq.Clients)
	}
	sb, err := NewSimFrom(sim.Config{Seed: seq.Seed, CheckEveryStep: true, Server: sim.ServerConfig{SuperDigest: SuperDigest}}, addrs, timeout)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	defer sb.W.Close()
	simRun, err := Start(sb, root)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	for i, op := range seq.Ops {
		if err := simRun.Apply(i+1, op); err != nil {
			t.Fatalf("sim: %v\n%v", err, seq)
		}
	}

	rb, err := DialRealFrom(proxyTB(t, seq), addr, addrs, timeout)
	if err != nil {
		t.Fatalf("real: %v", err)
	}
	defer rb.Close()
	realRun, err := Start(rb, root)
	if err != nil {
		t.Fatalf("real: %v", err)
	}
	for i, op := range seq.Ops {
		if err := realRun.Apply(i+1, op); err != nil {
			t.Fatalf("real: %v\n%v", err, seq)
		}
	}
	return simRun.Lines, realRun.Lines
}

// firstDifference returns the first line where the transcripts differ, as
// a report, or "" when they agree.
func firstDifference(seq Sequence, simLines, realLines []string) string {
	n := max(len(simLines), len(realLines))
	for i := range n {
		var s, r string
		if i < len(simLines) {
			s = simLines[i]
		}
		if i < len(realLines) {
			r = realLines[i]
		}
		if s == r {
			continue
		}
		// Show the sequence up to the op the line belongs to.
		upTo := len(seq.Ops)
		for j := i; j >= 0 && j < len(realLines); j-- {
			if _, err := fmt.Sscanf(realLines[j], "#%d ", &upTo); err == nil {
				break
			}
		}
		shown := seq
		shown.Ops = seq.Ops[:min(upTo, len(seq.Ops))]
		return fmt.Sprintf("sim and real differ at line %d:\n real: %s\n  sim: %s\n\nsequence (up to that op):\n%v\nreal transcript:\n%s\n\nsim transcript:\n%s",
			i+1, r, s, shown, strings.Join(realLines[:min(i+1, len(realLines))], "\n"), strings.Join(simLines[:min(i+1, len(simLines))], "\n"))
	}
	return ""
}

// check runs seq on both backends and fails t at the first difference.
// normalize, if not nil, is applied to every line of both transcripts
// first: it hides the known differences.
func check(t TB, addr string, seq Sequence, normalize func(string) string) []string {
	t.Helper()
	take := func() (simLines, realLines []string) {
		simLines, realLines = transcripts(t, addr, seq)
		return normalized(simLines, normalize), normalized(realLines, normalize)
	}
	simLines, realLines := take()
	if d := firstDifference(seq, simLines, realLines); d != "" {
		simAgain, realAgain := retake(t, d, take)
		if !slices.Equal(simAgain, simLines) {
			t.Fatalf("the simulator's transcript of one sequence changed between two runs:\n%s\n\nthen:\n%s", strings.Join(simLines, "\n"), strings.Join(simAgain, "\n"))
		}
		if d := firstDifference(seq, simAgain, realAgain); d != "" {
			t.Fatalf("%s", d)
		}
		realLines = realAgain
	}
	return realLines
}

// normalized applies normalize, if not nil, to every line.
func normalized(lines []string, normalize func(string) string) []string {
	if normalize != nil {
		for i := range lines {
			lines[i] = normalize(lines[i])
		}
	}
	return lines
}

// retake takes the transcripts of a sequence whose first take differed
// (d) again: a difference counts only if it shows twice. The real server
// is shared by the sequences of a test, and a session an earlier sequence
// left behind (one whose close did not get through while its client
// reconnected, after an AUTHFAILED closed its connection, say) expires in
// the middle of a later sequence and takes a zxid, which moves every zxid
// after it: seen once in make test on a loaded machine, in
// TestDifferentialACLThroughWire, where rapid could not make it fail
// again. The ContainerManager's pass, every 60 s, moves them the same way
// when it deletes the containers earlier sequences emptied. The
// simulator's side must come out the same both times (each take has a
// simulator of its own, and through the wire a wire server of its own,
// newWire); the caller holds it to that.
func retake[T any](t TB, d string, take func() (T, []string)) (T, []string) {
	t.Helper()
	t.Logf("the transcripts differ; taking them again, as a real server's can be moved by an earlier sequence's session or its container pass:\n%s", d)
	return take()
}
