package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// fourLetterScene puts two sessions on a server with ephemerals and
// watches, the state the four-letter words below describe.
func fourLetterScene(t *testing.T, addr string) {
	t.Helper()
	c1, c2 := connect(t, addr), connect(t, addr)
	acl := zk.WorldACL(zk.PermAll)
	for _, step := range []func() error{
		func() error { _, err := c1.Create("/flw", []byte("x"), 0, acl); return err },
		func() error { _, err := c1.Create("/flw/e1", nil, zk.FlagEphemeral, acl); return err },
		func() error { _, err := c2.Create("/flw/e2", nil, zk.FlagEphemeral, acl); return err },
		func() error { _, _, _, err := c1.GetW("/flw"); return err },
		func() error { _, _, _, err := c2.ExistsW("/flw/e1"); return err },
		func() error { _, _, _, err := c2.ChildrenW("/flw"); return err },
		func() error { _, _, _, err := c2.ExistsW("/flw/none"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	javaDateRE = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d [A-Z]+ \d{4}`)
	addrRE     = regexp.MustCompile(`/(\d+\.){3}\d+:\d+`)
	hexRE      = regexp.MustCompile(`0x[0-9a-f]+`)
	numberRE   = regexp.MustCompile(`\d+(\.\d+)?`)
	versionRE  = regexp.MustCompile(`(?m)^Zookeeper version: .*$`)
)

// shape keeps a four-letter word's answer's form and drops its figures:
// dates, addresses, ids and numbers become placeholders.
func shape(s string) string {
	s = versionRE.ReplaceAllString(s, "Zookeeper version: V")
	s = javaDateRE.ReplaceAllString(s, "DATE")
	s = addrRE.ReplaceAllString(s, "/ADDR")
	s = hexRE.ReplaceAllString(s, "0xH")
	return numberRE.ReplaceAllString(s, "N")
}

func sortedLines(s string) []string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return lines
}

// The four-letter words answer in the form a real ZooKeeper 3.8 gives
// for the same state: the same lines, figures aside. Where ZooKeeper's
// order follows its hash maps (connections, sessions), lines are
// compared as sets.
func TestFourLetterWordsMatchRealZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ZooKeeper")
	}
	real := zktest.Start(t)
	served, _ := serveInProcess(t, "", "*")
	fourLetterScene(t, real.Addr)
	fourLetterScene(t, served)
	time.Sleep(50 * time.Millisecond) // let both settle: no request in flight

	for _, tc := range []struct {
		word  string
		asSet bool
	}{
		{"ruok", false}, {"isro", false}, {"srvr", false}, {"wchs", false},
		{"stat", true}, {"cons", true}, {"wchc", true}, {"wchp", true},
	} {
		want, got := shape(fourLetter(t, real.Addr, tc.word)), shape(fourLetter(t, served, tc.word))
		if tc.asSet {
			if !slices.Equal(sortedLines(got), sortedLines(want)) {
				t.Errorf("%s: lines differ from the real server's\n--- zklab\n%s\n--- ZooKeeper\n%s", tc.word, got, want)
			}
		} else if got != want {
			t.Errorf("%s: differs from the real server's\n--- zklab\n%s\n--- ZooKeeper\n%s", tc.word, got, want)
		}
	}

	// dump: the sessions and ephemerals sections match as sets; the
	// connections section lists the same connections (ZooKeeper's expiry
	// buckets are its NIO selector's and may hold empty sets).
	// Which expiry set a session falls in is ZooKeeper's wall clock: a
	// session's expiry is rounded up to the next tick
	// (ExpiryQueue.roundToNextInterval), so two sessions made a moment
	// apart may sit in one set or in two. Its expiry queues also keep
	// the sets a session or connection moved out of. The "expire at"
	// lines are dropped; the sessions they head are compared.
	expirySet := regexp.MustCompile(`(?m)^\d+ expire at .*\n`)
	realDump := shape(expirySet.ReplaceAllString(fourLetter(t, real.Addr, "dump"), ""))
	servedDump := shape(expirySet.ReplaceAllString(fourLetter(t, served, "dump"), ""))
	head := func(s string) string { return s[:strings.Index(s, "Connections dump:")] }
	if !slices.Equal(sortedLines(head(servedDump)), sortedLines(head(realDump))) {
		t.Errorf("dump: sessions and ephemerals differ\n--- zklab\n%s\n--- ZooKeeper\n%s", servedDump, realDump)
	}
	conns := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "\tip: ") {
				out = append(out, l)
			}
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(conns(servedDump), conns(realDump)) {
		t.Errorf("dump: connections differ\n--- zklab\n%s\n--- ZooKeeper\n%s", servedDump, realDump)
	}

	// conf: the same keys in the same order.
	keys := func(s string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.SplitN(l, "=", 2)[0])
		}
		return out
	}
	if got, want := keys(fourLetter(t, served, "conf")), keys(fourLetter(t, real.Addr, "conf")); !slices.Equal(got, want) {
		t.Errorf("conf keys %v, want %v", got, want)
	}
	// mntr: every key zklab reports, a real server reports too, in the
	// same order.
	realMntr := keys(strings.ReplaceAll(fourLetter(t, real.Addr, "mntr"), "\t", "="))
	servedMntr := keys(strings.ReplaceAll(fourLetter(t, served, "mntr"), "\t", "="))
	last := -1
	for _, k := range servedMntr {
		i := slices.Index(realMntr, k)
		if i < 0 || i < last {
			t.Errorf("mntr key %s: not in the real server's, or out of its order", k)
		}
		last = i
	}
	// envi starts as ZooKeeper's: kazoo's server_version reads it.
	if got := fourLetter(t, served, "envi"); !strings.HasPrefix(got, "Environment:\nzookeeper.version=3.8.0-") {
		t.Errorf("envi: %q", got)
	}
	// A word that is no word gets nothing, on both.
	if got, want := fourLetter(t, served, "abcd"), fourLetter(t, real.Addr, "abcd"); got != want {
		t.Errorf("abcd: %q, real server %q", got, want)
	}

	// go-zookeeper's helpers parse zklab's answers: srvr (its test
	// harness's readiness check), ruok and cons.
	stats, ok := zk.FLWSrvr([]string{served}, time.Second)
	if !ok {
		t.Fatalf("FLWSrvr cannot parse zklab's srvr: %v", stats[0].Error)
	}
	if stats[0].Mode != zk.ModeStandalone || stats[0].Version != "3.8.0-zklab" || stats[0].NodeCount != 8 {
		t.Errorf("FLWSrvr: %+v", *stats[0])
	}
	if oks := zk.FLWRuok([]string{served}, time.Second); !oks[0] {
		t.Error("FLWRuok: not ok")
	}
	clients, _ := zk.FLWCons([]string{served}, time.Second)
	if len(clients[0].Clients) != 2 {
		t.Errorf("FLWCons parsed %d clients, want the 2 sessions", len(clients[0].Clients))
	}
}
