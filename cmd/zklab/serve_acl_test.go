package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// The access control of `zklab serve`, run as a process and driven by
// go-zookeeper clients from distinct loopback addresses. The rules
// themselves are measured against a real ZooKeeper by sim/difftest
// (TestACLCasesThroughWire) and sim/wire's judge probes; these tests
// check that the served process enforces them for every client: the
// super digest from the flag or zoo.cfg, the TCP peer's address for the
// ip scheme, AUTHFAILED closing only the connection.

// superPassword is the super user's password in these tests.
const superPassword = "secret"

// connectFrom connects a go-zookeeper client to addr from the local
// address from, so that the server sees that peer.
func connectFrom(t *testing.T, addr string, from netip.Addr) *zk.Conn {
	t.Helper()
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))}
		return d.Dial(network, address)
	}
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithDialer(dialer))
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
			t.Fatalf("no session from %v to %s in 20 s", from, addr)
		}
	}
}

func loopback(last byte) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, last}) }

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// A tenant's node with a digest ACL keeps out every other client, whatever
// it tries, until it authenticates as the tenant or as super; ip ACLs see
// the TCP peer; bad ACLs and an unknown scheme get ZooKeeper's errors.
func TestServeEnforcesACLs(t *testing.T) {
	super := sim.DigestID("super:" + superPassword)
	_, addr, _ := startServeProcess(t, "--listen", "127.0.0.1:0", "--super-digest", super)
	alice := connectFrom(t, addr, loopback(1))
	bob := connectFrom(t, addr, loopback(2))
	carol := connectFrom(t, addr, loopback(3))

	if err := alice.AddAuth("digest", []byte("alice:pw")); err != nil {
		t.Fatalf("alice's addauth: %v", err)
	}
	if _, err := alice.Create("/tenant", []byte("mine"), 0, zk.DigestACL(zk.PermAll, "alice", "pw")); err != nil {
		t.Fatalf("create /tenant: %v", err)
	}
	if _, err := alice.Create("/tenant/lock", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /tenant/lock: %v", err)
	}
	acl, _, err := alice.GetACL("/tenant")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID != sim.DigestID("alice:pw") {
		t.Errorf("alice's getACL /tenant: %v %v, want alice's digest", acl, err)
	}

	// bob, without alice's credentials, gets NOAUTH for every operation
	// the ACL governs.
	_, _, err = bob.Get("/tenant")
	wantErr(t, "bob's get /tenant", err, zk.ErrNoAuth)
	_, _, err = bob.Children("/tenant")
	wantErr(t, "bob's children /tenant", err, zk.ErrNoAuth)
	_, err = bob.Create("/tenant/x", nil, 0, zk.WorldACL(zk.PermAll))
	wantErr(t, "bob's create /tenant/x", err, zk.ErrNoAuth)
	_, err = bob.Set("/tenant", []byte("theirs"), -1)
	wantErr(t, "bob's set /tenant", err, zk.ErrNoAuth)
	wantErr(t, "bob's delete /tenant/lock", bob.Delete("/tenant/lock", -1), zk.ErrNoAuth)
	_, err = bob.SetACL("/tenant", zk.WorldACL(zk.PermAll), -1)
	wantErr(t, "bob's setACL /tenant", err, zk.ErrNoAuth)
	if err := bob.AddAuth("digest", []byte("alice:wrong")); err != nil {
		t.Fatalf("bob's addauth with a wrong password: %v (a digest is accepted as it is)", err)
	}
	_, _, err = bob.Get("/tenant")
	wantErr(t, "bob's get /tenant with a wrong password", err, zk.ErrNoAuth)

	// An unknown scheme: AUTHFAILED and the connection closed; the session
	// survives, and go-zookeeper reconnects to it.
	session := bob.SessionID()
	wantErr(t, "bob's addauth foo", bob.AddAuth("foo", []byte("bar")), zk.ErrAuthFailed)
	// A request sent before go-zookeeper sees the close fails with
	// ErrConnectionClosed, and one queued while it reconnects with
	// ErrNoServer, as against a real server: retry until it has
	// reconnected.
	_, _, err = bob.Exists("/tenant")
	for deadline := time.Now().Add(10 * time.Second); (errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		_, _, err = bob.Exists("/tenant")
	}
	if err != nil || bob.SessionID() != session {
		t.Errorf("bob after AUTHFAILED: exists %v, session %#x, want the session %#x back", err, bob.SessionID(), session)
	}

	// super passes every check, and can hand the node over.
	if err := bob.AddAuth("digest", []byte("super:"+superPassword)); err != nil {
		t.Fatalf("bob's addauth as super: %v", err)
	}
	if data, _, err := bob.Get("/tenant"); err != nil || string(data) != "mine" {
		t.Errorf("super's get /tenant: %q %v", data, err)
	}
	if _, err := bob.SetACL("/tenant", zk.DigestACL(zk.PermAll, "carol", "pw"), 0); err != nil {
		t.Errorf("super's setACL /tenant: %v", err)
	}
	_, _, err = alice.Get("/tenant")
	wantErr(t, "alice's get /tenant once it is carol's", err, zk.ErrNoAuth)
	_, err = bob.SetACL("/tenant", zk.WorldACL(zk.PermAll), 0)
	wantErr(t, "super's setACL with a stale aversion", err, zk.ErrBadVersion)

	// The ip scheme sees each connection's TCP peer.
	if _, err := alice.Create("/ip", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.3"}}); err != nil {
		t.Fatalf("create /ip: %v", err)
	}
	if _, err := carol.Set("/ip", []byte("from .3"), -1); err != nil {
		t.Errorf("carol's set /ip from 127.0.0.3: %v", err)
	}
	_, err = alice.Set("/ip", []byte("from .1"), -1)
	wantErr(t, "alice's set /ip from 127.0.0.1", err, zk.ErrNoAuth)
	if _, err := alice.Create("/net", nil, 0, []zk.ACL{{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.0/30"}}); err != nil {
		t.Fatalf("create /net: %v", err)
	}
	for _, c := range []*zk.Conn{alice, carol} {
		if _, _, err := c.Get("/net"); err != nil {
			t.Errorf("get /net from 127.0.0.0/30: %v", err)
		}
	}

	// Bad ACLs: INVALIDACL, the connection stays.
	for _, acl := range [][]zk.ACL{
		{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}},
		{{Perms: zk.PermAll, Scheme: "ip", ID: "300.1.1.1"}},
		{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.0/33"}},
		{{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}},
		{{Perms: zk.PermAll, Scheme: "world", ID: "someone"}},
	} {
		_, err := carol.Create("/bad", nil, 0, acl)
		wantErr(t, fmt.Sprintf("create with %v", acl), err, zk.ErrInvalidACL)
	}
	_, err = carol.Create("/bad", nil, 0, zk.AuthACL(zk.PermAll))
	wantErr(t, "create with an auth ACL and no credentials", err, zk.ErrInvalidACL)
}

// whoAmI (3.7+, which go-zookeeper does not send) through the served
// process: the connection's ids, the digest first and then the TCP peer.
func TestServeWhoAmI(t *testing.T) {
	_, addr, _ := startServeProcess(t, "--listen", "127.0.0.1:0")
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(loopback(3), 0))}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	out = wire.AppendConnectRequest(out, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000}, HasReadOnly: true})
	out = wire.AppendRequest(out, sim.Request{Xid: wire.XidAuth, Op: sim.OpAuth, AuthScheme: "digest", AuthData: []byte("carol:pw")})
	out = wire.AppendRequest(out, sim.Request{Xid: 1, Op: sim.OpWhoAmI})
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	readFrame := func() []byte {
		t.Helper()
		var prefix [4]byte
		if _, err := io.ReadFull(nc, prefix[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(prefix[:]))
		if _, err := io.ReadFull(nc, body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	if _, _, err := wire.DecodeConnectResponse(readFrame()); err != nil {
		t.Fatal(err)
	}
	if r, err := wire.DecodeReply(sim.OpAuth, readFrame()); err != nil || r.Err != sim.CodeOK {
		t.Fatalf("auth: %v %v", r.Err, err)
	}
	r, err := wire.DecodeReply(sim.OpWhoAmI, readFrame())
	want := []sim.ClientInfo{{AuthScheme: "digest", User: "carol"}, {AuthScheme: "ip", User: "127.0.0.3"}}
	if err != nil || r.Err != sim.CodeOK || !slices.Equal(r.Clients, want) {
		t.Errorf("whoAmI: %v %v %v, want %v", r.Clients, r.Err, err, want)
	}
}

// The super digest from a zoo.cfg line, as ZooKeeper reads it (an unknown
// key becomes the system property "zookeeper." + key).
func TestServeSuperDigestFromZooCfg(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	text := "tickTime=2000\nclientPortAddress=127.0.0.1\nclientPort=0\nDigestAuthenticationProvider.superDigest=" + sim.DigestID("super:"+superPassword) + "\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, _ := startServeProcess(t, "--zoo-cfg", cfg)
	owner := connectFrom(t, addr, loopback(1))
	if _, err := owner.Create("/sealed", []byte("x"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	c := connectFrom(t, addr, loopback(2))
	_, _, err := c.Get("/sealed")
	wantErr(t, "get /sealed before addauth", err, zk.ErrNoAuth)
	if err := c.AddAuth("digest", []byte("super:"+superPassword)); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Get("/sealed"); err != nil || string(data) != "x" {
		t.Errorf("super's get /sealed: %q %v", data, err)
	}
}

// kazoo's view of access control (testdata/yardstick/kazoo/acl.py) is the
// same line for line against a real ZooKeeper and against zklab serve:
// digest credentials, NOAUTH for every operation, getACL and setACL with
// aversions, malformed ACLs, and AUTHFAILED for an unknown scheme.
func TestYardstickKazooACL(t *testing.T) {
	requireTools(t, zktest.ZkServerScript, "/usr/bin/python3", "/usr/lib/python3/dist-packages/kazoo/security.py")
	transcript := func(name, addr string) string {
		t.Helper()
		cmd := exec.Command("/usr/bin/python3", "testdata/yardstick/kazoo/acl.py", addr)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || !strings.HasSuffix(out.String(), "\nok\n") {
			t.Fatalf("acl.py on %s: %v\n%s\n%s", name, err, out.String(), errOut.String())
		}
		return out.String()
	}
	real := transcript("ZooKeeper", zktest.Start(t).Addr)
	served, _ := serveInProcess(t, "")
	got := transcript("zklab serve", served)
	if got != real {
		t.Errorf("kazoo sees zklab serve differently\n--- ZooKeeper:\n%s--- zklab serve:\n%s", real, got)
	} else {
		t.Logf("both:\n%s", got)
	}
}
