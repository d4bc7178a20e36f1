package difftest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
	"pgregory.net/rapid"
)

// The differential tests through the wire: the same sequences run by real
// go-zookeeper clients (*zk.Conn, through zkconn) against a wire.Server
// over the simulated server, over TCP loopback and in process over
// net.Pipe, compared field by field with a real ZooKeeper's transcript.

// wireServer is a wire.Server over a fresh simulated server, listening
// on loopback.
type wireServer struct {
	*wire.Server
	addr string
}

// newWire starts a wireServer; the caller closes it.
//
// Each take of a sequence through the wire has a server of its own, and
// each transport (TCP, net.Pipe) too, though the real server is shared
// (zktest.Shared). On a server that sequences share, what earlier ones
// left behind takes zxids in the middle of a later one, on the wall
// clock, and moves every zxid after it: the ContainerManager's pass,
// every 60 s from the server's start (sim.ServerConfig's
// ContainerCheckIntervalMs, ZooKeeper's znode.container.checkIntervalMs),
// deletes the containers TestDifferentialThroughWire's sequences emptied,
// a transaction each, and a session whose close did not get through
// expires, a closeSession. When the wire server was shared, that failed
// checkWireLines on "the wire server's transcript of one sequence changed
// between two runs": in make test under -race, TestFaultsThroughWire's
// partition-expire read the czxid of /e2 as B+7 in one take and B+5 (the
// real server's) in the other, and TestDifferentialACLThroughWire a
// getACL's as B+10 and B+8; with -run ThroughWire under -race and three
// busy loops, partition-expire failed so at once, and a log of the
// server showed the two extra transactions: its pass at 60 s deleted two
// containers during the partition. A server of its own has no earlier
// sequences, and a take ends long before its first pass, so its
// transcript depends on the sequence and its clients only; the real
// server's moves are what retake is for.
func newWire() (wireServer, error) {
	// The same super user as the real server's (SuperJVMFlag).
	srv := wire.New(sim.NewServer(sim.ServerConfig{EpochMs: time.Now().UnixMilli(), SuperDigest: SuperDigest}), wire.Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return wireServer{}, err
	}
	go srv.Serve(l)
	return wireServer{srv, l.Addr().String()}, nil
}

// pipeDialer connects a client to srv over net.Pipe; the server sees the
// client at from (the zero Addr: net.Pipe's address, which the wire.Server
// takes as sim.DefaultClientAddr).
func pipeDialer(srv *wire.Server, from netip.Addr) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		client, server := net.Pipe()
		if from.IsValid() {
			server = peerConn{server, net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 40000))}
		}
		if err := srv.ServeConn(server); err != nil {
			client.Close()
			return nil, err
		}
		return client, nil
	}
}

// peerConn is a net.Conn whose peer is at remote: a pipe that looks to
// the server like a TCP connection from a client's address.
type peerConn struct {
	net.Conn
	remote net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.remote }

// addrsOf is the clients' local addresses of seq (the zero Addr: the
// system's choice).
func addrsOf(seq Sequence) []netip.Addr {
	if len(seq.Addrs) > 0 {
		return seq.Addrs
	}
	return make([]netip.Addr, seq.Clients)
}

// wireBackend is a RealBackend against a wire.Server: the proxies inject
// the faults as on a real server, but a partition waits for the session's
// expiry by asking the simulated server, which has no "dump".
type wireBackend struct {
	*RealBackend
	srv *wire.Server
}

func (b *wireBackend) Inject(i int, fault string) error {
	if fault != FaultPartitionExpire {
		return b.RealBackend.Inject(i, fault)
	}
	if i >= len(b.Proxies) {
		return fmt.Errorf("difftest: client %d has no proxy", i+1)
	}
	sid := b.Conns[i].Session().ID
	p := b.Proxies[i]
	p.Blackhole(expireBlackholeMax)
	defer p.Heal()
	for deadline := time.Now().Add(expireBlackholeMax); ; time.Sleep(expirePollInterval) {
		var live bool
		b.srv.Inspect(func(s *sim.Server) { live = slices.Contains(s.Sessions(), sid) })
		if !live {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: session %#x not expired after %v", sid, expireBlackholeMax)
		}
	}
}

// runOn runs seq on b from a root of its own and returns the transcript.
func runOn(t TB, name string, b Backend, seq Sequence, root string) []string {
	t.Helper()
	run, err := Start(b, root)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i, op := range seq.Ops {
		if err := run.Apply(i+1, op); err != nil {
			t.Fatalf("%s: %v\n%v", name, err, seq)
		}
	}
	return run.Lines
}

func timeoutOf(seq Sequence) time.Duration {
	if seq.SessionTimeout != 0 {
		return seq.SessionTimeout
	}
	return sessionTimeout
}

// wireTranscripts runs seq on the real server at realAddr, and through
// the wire over TCP (with fault proxies when the sequence injects faults)
// and, if the sequence injects none, over net.Pipe, each on a wire server
// of its own (newWire).
func wireTranscripts(t TB, realAddr string, seq Sequence) (realLines []string, through map[string][]string) {
	t.Helper()
	timeout := timeoutOf(seq)
	addrs := addrsOf(seq)
	rb, err := DialRealFrom(proxyTB(t, seq), realAddr, addrs, timeout)
	if err != nil {
		t.Fatalf("real: %v", err)
	}
	defer rb.Close()
	realLines = runOn(t, "real", rb, seq, newRoot())

	through = make(map[string][]string)
	srv, err := newWire()
	if err != nil {
		t.Fatalf("wire over TCP: %v", err)
	}
	defer srv.Close() // after the clients' closes, deferred below
	tb, err := DialRealFrom(proxyTB(t, seq), srv.addr, addrs, timeout)
	if err != nil {
		t.Fatalf("wire over TCP: %v", err)
	}
	defer tb.Close()
	through["wire over TCP"] = runOn(t, "wire over TCP", &wireBackend{tb, srv.Server}, seq, newRoot())

	if proxyTB(t, seq) == nil {
		pipeSrv, err := newWire()
		if err != nil {
			t.Fatalf("wire over net.Pipe: %v", err)
		}
		defer pipeSrv.Close()
		pb := &RealBackend{Addr: pipeSrv.addr}
		defer pb.Close()
		for _, from := range addrs {
			c, err := pb.dialTapped("127.0.0.1:2181", timeout, pipeDialer(pipeSrv.Server, from))
			if err != nil {
				t.Fatalf("wire over net.Pipe: %v", err)
			}
			if err := waitConnected(c); err != nil {
				t.Fatalf("wire over net.Pipe: %v", err)
			}
		}
		through["wire over net.Pipe"] = runOn(t, "wire over net.Pipe", pb, seq, newRoot())
	}
	return realLines, through
}

// waitConnected waits until c has a session; the backend's Do waits for
// go-zookeeper to finish starting the connection (awaitStarted).
func waitConnected(c *zkconn.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), sessionWaitMax)
	defer cancel()
	return c.WaitConnected(ctx)
}

// checkWire fails t at the first difference between the real server's
// transcript and any through the wire.
func checkWire(t TB, realAddr string, seq Sequence, normalize func(string) string) {
	t.Helper()
	checkWireLines(t, realAddr, seq, normalize)
}

// checkWireLines is checkWire, and returns the real server's transcript.
func checkWireLines(t TB, realAddr string, seq Sequence, normalize func(string) string) ([]string, map[string][]string) {
	t.Helper()
	take := func() (map[string][]string, []string) {
		realLines, through := wireTranscripts(t, realAddr, seq)
		return through, realLines
	}
	through, realLines := take()
	if d := wireDifference(seq, realLines, through, normalize); d != "" {
		throughAgain, realAgain := retake(t, d, take)
		for name, lines := range through {
			if !slices.Equal(normalized(slices.Clone(throughAgain[name]), normalize), normalized(slices.Clone(lines), normalize)) {
				t.Fatalf("%s: the wire server's transcript of one sequence changed between two runs:\n%s\n\nthen:\n%s", name, strings.Join(lines, "\n"), strings.Join(throughAgain[name], "\n"))
			}
		}
		if d := wireDifference(seq, realAgain, throughAgain, normalize); d != "" {
			t.Fatalf("%s", d)
		}
		realLines, through = realAgain, throughAgain
	}
	return realLines, through
}

// wireDifference is the first difference between the real server's
// transcript and any through the wire, "" when they agree.
func wireDifference(seq Sequence, realLines []string, through map[string][]string, normalize func(string) string) string {
	for _, name := range slices.Sorted(maps.Keys(through)) {
		lines := normalized(slices.Clone(through[name]), normalize)
		want := normalized(slices.Clone(realLines), normalize)
		if d := firstDifference(seq, lines, want); d != "" {
			return fmt.Sprintf("%s (\"sim\" below):\n%s", name, d)
		}
	}
	return ""
}

// TestDifferentialThroughWire runs random sequences through real
// go-zookeeper clients against the wire.Server and against a real
// ZooKeeper, and compares every result.
func TestDifferentialThroughWire(t *testing.T) {
	real := zktest.Shared(t)
	rapid.Check(t, func(rt *rapid.T) {
		checkWire(rt, real.Addr, sequenceGen().Draw(rt, "sequence"), hideKnownDifferences)
	})
}

// TestRegressionsThroughWire runs the fixed differences through the wire.
func TestRegressionsThroughWire(t *testing.T) {
	real := zktest.Shared(t)
	for _, k := range regressions {
		t.Run(k.name, func(t *testing.T) { checkWire(t, real.Addr, k.seq, nil) })
	}
}

// TestFaultsThroughWire compares what clients see after each fault of
// TestFaults, the wire.Server against a real ZooKeeper, both behind the
// same fault proxies.
//
// It runs under the race detector too: go-zookeeper v1.0.4's own lastZxid
// race on a reconnect (conn.go:614 and :849) is waited out
// (awaitStarted), and the wire server's transcript that once changed
// between two takes under -race was moved by a shared server's container
// pass, which a server of each take's own (newWire) does not have. The
// clients and both servers are still on the wall clock: a client starved
// past its session timeout (4 s in partition-expire and expire, where
// go-zookeeper pings every third of it, conn.go:345) would lose its
// session on either server; no run has shown that.
func TestFaultsThroughWire(t *testing.T) {
	real := zktest.Shared(t)
	for _, tc := range faultCases() {
		t.Run(tc.name, func(t *testing.T) {
			checkWire(t, real.Addr, tc.seq, nil)
		})
	}
}

// TestOversizedDataThroughWire: creates and sets at the jute.maxbuffer
// limits, the wire.Server's frame limit against a real ZooKeeper's.
func TestOversizedDataThroughWire(t *testing.T) {
	checkWire(t, zktest.Shared(t).Addr, oversizedSeq(), nil)
}

// TestACLCasesThroughWire runs each measured access-control rule of
// TestACLCases through the wire: go-zookeeper clients dialled from
// 127.0.0.1, .2 and .3 (the ip scheme sees the TCP peer), over TCP and
// over net.Pipe, against the real server's transcript.
func TestACLCasesThroughWire(t *testing.T) {
	real := zktest.Shared(t)
	for _, tc := range aclCases {
		t.Run(tc.name, func(t *testing.T) {
			seq := tc.seq
			if !superConfigured && strings.Contains(seq.String(), string(CredSuper)) {
				t.Skip("the real server has no super user: it was not started by this package")
			}
			if proxyTB(t, seq) == nil {
				seq.Addrs = clientAddrs(seq.Clients)
			}
			checkWire(t, real.Addr, seq, nil)
		})
	}
}

// TestDifferentialACLThroughWire runs TestDifferentialACL's random
// access-control sequences through the wire against the real server.
func TestDifferentialACLThroughWire(t *testing.T) {
	real := zktest.Shared(t)
	var stats aclCoverage
	rapid.Check(t, func(rt *rapid.T) {
		seq := aclSequenceGen().Draw(rt, "sequence")
		realLines, _ := checkWireLines(rt, real.Addr, seq, hideKnownDifferences)
		stats.add(realLines)
	})
	t.Logf("coverage: %v", stats)
}
