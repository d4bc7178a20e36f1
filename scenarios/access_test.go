package scenarios

import (
	"strings"
	"testing"
)

// The access lines read back as written, and each client gets what they
// give.
func TestAccessLinesRoundTrip(t *testing.T) {
	text := "recipe fair-lock\nclients 3\ncredentials c1=digest:alice:pw c3=ip:x c1=digest:bob:pw\naddresses c2=10.0.0.7 c3=::1\nlock-acl auth::cdrwa world:anyone:r ip:10.0.0.0/8:cd\n"
	sc, err := Parse("t.scenario", text)
	if err != nil {
		t.Fatal(err)
	}
	if got := Format(sc); got != text {
		t.Errorf("Format(Parse(x)):\n%s\nwant:\n%s", got, text)
	}
	if len(sc.Access.Credentials) != 3 || sc.Access.Credentials[2].Auth != "bob:pw" || sc.Access.lockOwner() != 1 {
		t.Errorf("credentials: %+v", sc.Access.Credentials)
	}
	if a := sc.Access.clientAddr(2); a.String() != "10.0.0.7" || sc.Access.clientAddr(1).IsValid() {
		t.Errorf("addresses: %+v", sc.Access.Addresses)
	}
	if e := sc.Access.LockACL[2]; e.Scheme != "ip" || e.ID != "10.0.0.0/8" || e.Perms != 4|8 {
		t.Errorf("lock-acl: %+v", sc.Access.LockACL)
	}
}

// Bad access lines get an error naming the file, the line and the fix.
func TestAccessLinesBadInput(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"credentials c1", `t.scenario:3: credentials: want cN=VALUE, got "c1"`},
		{"credentials c1=alice", `t.scenario:3: credentials: want cN=SCHEME:AUTH like c1=digest:alice:pw, got "c1=alice"`},
		{"credentials c9=digest:a:b", `t.scenario:3: credentials for c9, but there are 2 clients`},
		{"credentials x1=digest:a:b", `t.scenario:3: credentials: want a client like c1, got "x1"`},
		{"addresses c2=10.0.0.300", `t.scenario:3: addresses: "10.0.0.300" is not an IP address`},
		{"addresses c2=10.0.0.1 c2=10.0.0.2", `t.scenario:3: addresses: c2 given twice`},
		{"addresses c3=10.0.0.1", `t.scenario:3: address for c3, but there are 2 clients`},
		{"lock-acl world:anyone:q", `t.scenario:3: lock-acl: "world:anyone:q": permission 'q' is none of c, d, r, w, a`},
		{"lock-acl world:anyone:rc", `t.scenario:3: lock-acl: write "world:anyone:rc" as "world:anyone:cr" (permissions once each, in the order cdrwa)`},
		{"lock-acl digest", `t.scenario:3: lock-acl: want SCHEME:ID:PERMS like world:anyone:r or digest:alice:pw:cdrwa, got "digest"`},
		{"lock-acl", `t.scenario:3: lock-acl: want SCHEME:ID:PERMS entries like world:anyone:r`},
	} {
		_, err := Parse("t.scenario", "recipe fair-lock\nclients 2\n"+tc.line+"\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v\nwant %s", tc.line, err, tc.want)
		}
	}
}

// An ACL the server refuses, or credentials it refuses, fail the run's
// check with the server's answer: as on a real server, whether an ACL is
// valid is the server's to say.
func TestAccessRefusedByTheServer(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"lock-acl ip:::1:cdrwa", "zk: invalid ACL specified"},
		{"lock-acl auth::cdrwa", "zk: invalid ACL specified"}, // no credentials
		{"credentials c1=foo:bar", "zk: client authentication failed"},
	} {
		sc, err := Parse("t.scenario", "recipe fair-lock\nclients 2\n"+tc.line+"\n")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(sc, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		run := res.Verdict.Checks[0]
		if run.Name != CheckRun || run.Outcome != Fail || !strings.Contains(run.Detail, tc.want) {
			t.Errorf("%q: run check %+v, want a failure saying %q", tc.line, run, tc.want)
		}
	}
}

// On a real server every client comes through a local proxy: addresses
// are refused before anything runs.
func TestAccessAddressesRefusedOnZK(t *testing.T) {
	sc, err := Parse("t.scenario", "recipe fair-lock\nclients 2\naddresses c2=10.0.0.7\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc, RunOptions{ZK: []string{"127.0.0.1:1"}}); err == nil || !strings.Contains(err.Error(), "addresses run on the simulator only") {
		t.Fatalf("addresses on a real server: %v", err)
	}
}
