package sim

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidateAcceptsOneThreeOrFiveServers(t *testing.T) {
	for _, n := range []int{0, 1, 3, 5} {
		if err := (Config{Servers: n}).Validate(); err != nil {
			t.Errorf("servers %d: %v", n, err)
		}
	}
	for _, n := range []int{-1, 2, 4, 6, 7} {
		err := (Config{Servers: n}).Validate()
		if err == nil {
			t.Errorf("servers %d: accepted", n)
			continue
		}
		if n == 2 && err.Error() != "sim: servers 2: an ensemble has 1, 3 or 5 servers" {
			t.Errorf("servers 2: %q", err)
		}
	}
}

func TestNewPanicsOnAnInvalidConfigWithValidatesMessage(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "servers 2: an ensemble has 1, 3 or 5 servers") {
			t.Fatalf("recovered %v", r)
		}
	}()
	New(Config{Servers: 2})
}

func TestServerFaultStrings(t *testing.T) {
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: FaultLag, Server: 2, Duration: 2 * time.Second}, "lag s2 for=2s"},
		{Fault{Kind: FaultServerCrash, Server: 1, Duration: 5 * time.Second}, "crash-server s1 for=5s"},
		{Fault{Kind: FaultServerPartition, Server: 3, Duration: 10 * time.Second}, "partition-server s3 for=10s"},
		{Fault{Kind: FaultIsolateLeader, Duration: 10 * time.Second}, "isolate-leader for=10s"},
		{Fault{Kind: FaultKillLeader, Duration: 5 * time.Second}, "kill-leader for=5s"},
		{Fault{Kind: FaultLoseQuorum, Duration: 10 * time.Second}, "lose-quorum for=10s"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	for _, k := range ServerFaultKinds {
		for _, o := range FaultKinds {
			if k == o {
				t.Errorf("%s is in FaultKinds too: exploration would draw it for a standalone world", k)
			}
		}
	}
}

func TestAServerFaultOnAStandaloneWorldIsAnError(t *testing.T) {
	w := New(Config{})
	defer w.Close()
	err := w.Inject(Fault{Kind: FaultLag, Server: 2, Duration: 2 * time.Second})
	if err == nil || err.Error() != "sim: fault lag s2 for=2s: the world has 1 server" {
		t.Fatalf("got %v", err)
	}
	if w.Servers() != 1 || w.Leader() != 1 || w.Member(1) != w.Server() {
		t.Fatalf("standalone: servers %d leader %d", w.Servers(), w.Leader())
	}
}

func TestAServerFaultNamingNoServerIsAnError(t *testing.T) {
	err := checkServerFault(Fault{Kind: FaultServerCrash, Server: 4, Duration: time.Second}, 3)
	if err == nil || !strings.Contains(err.Error(), "no server s4 (the world has 3)") {
		t.Fatalf("got %v", err)
	}
	if err := checkServerFault(Fault{Kind: FaultKillLeader, Duration: time.Second}, 3); err != nil {
		t.Fatal(err)
	}
}
