package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zklab/zklab/sim"
)

func TestZooConfigReadsWhatClientsSee(t *testing.T) {
	// The config go-zookeeper's test harness writes (ServerConfig.Marshall),
	// with the keys kazoo's harness adds, and the client-facing settings.
	text := `# a comment
! another comment
admin.enableServer=false
dataDir=/tmp/zk/srv1
tickTime=500
initLimit=10
syncLimit=5
clientPort=21810
reconfigEnabled=true
4lw.commands.whitelist=*
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
clientPortAddress = 127.0.0.1
minSessionTimeout: 1000
maxSessionTimeout=-1
maxClientCnxns=0
`
	cfg, err := parseZooConfig("zoo.cfg", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := zooConfig{
		clientPort: 21810, clientPortSet: true, clientPortAddress: "127.0.0.1",
		tickTimeMs: 500, minSessionTimeoutMs: 1000, maxSessionTimeoutMs: -1,
		maxClientCnxns: 0, maxClientCnxnsSet: true, fourLetterWords: []string{"*"},
		dataDir: "/tmp/zk/srv1", reconfigEnabled: true,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	if got := cfg.listenAddress(); got != "127.0.0.1:21810" {
		t.Errorf("listen address %q", got)
	}
}

func TestZooConfigDefaults(t *testing.T) {
	cfg, err := parseZooConfig("zoo.cfg", strings.NewReader("dataDir=/var/lib/zookeeper\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.listenAddress(); got != ":2181" {
		t.Errorf("listen address %q, want every address on 2181 as ZooKeeper", got)
	}
	if cfg.fourLetterWords != nil {
		t.Errorf("whitelist %v, want unset", cfg.fourLetterWords)
	}
	cfg, err = parseZooConfig("zoo.cfg", strings.NewReader("4lw.commands.whitelist=srvr, ruok,\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.fourLetterWords, []string{"srvr", "ruok"}) {
		t.Errorf("whitelist %v", cfg.fourLetterWords)
	}
}

func TestZooConfigDebianSample(t *testing.T) {
	// Debian's own /etc/zookeeper/conf/zoo.cfg is accepted as it is.
	const sample = "/etc/zookeeper/conf/zoo.cfg"
	if _, err := os.Stat(sample); err != nil {
		t.Skip("Debian's zookeeper package is not installed")
	}
	cfg, err := readZooConfig(sample)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.clientPortSet {
		t.Errorf("clientPort not read from %s", sample)
	}
}

// snapCount and autopurge configure the journal's compaction; ZooKeeper
// raises a snapCount below 2 to 2 and a snapRetainCount below 3 to 3, and
// purgeInterval=0 turns its autopurge off.
func TestZooConfigJournalCompaction(t *testing.T) {
	for _, tc := range []struct {
		text              string
		snapCount, retain int
	}{
		{"", 0, 0},
		{"snapCount=1000\nautopurge.snapRetainCount=5\nautopurge.purgeInterval=1\n", 1000, 5},
		{"snapCount=1\nautopurge.snapRetainCount=1\n", 2, 3},
		{"autopurge.snapRetainCount=5\nautopurge.purgeInterval=0\n", 0, -1},
	} {
		cfg, err := parseZooConfig("zoo.cfg", strings.NewReader(tc.text))
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		s, err := newServeSettings(cfg, "127.0.0.1:0", false)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if s.snapCount != tc.snapCount || s.snapRetainCount != tc.retain {
			t.Errorf("%q: snapCount %d, retain %d; want %d and %d", tc.text, s.snapCount, s.snapRetainCount, tc.snapCount, tc.retain)
		}
	}
}

func TestZooConfigBadLinesNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // the error, after "zoo.cfg:"
	}{
		{"tickTime=2000\nbogusKey=1\n", "2: unknown key \"bogusKey\""},
		{"tickTime=2000\n\njust some words\n", "3: \"just some words\" is not key=value"},
		{"=5\n", "1: \"=5\" is not key=value"},
		{"clientPort=abc\n", "1: clientPort \"abc\" is not a whole number"},
		{"clientPort=70000\n", "1: clientPort 70000 is out of range [0, 65535]"},
		{"tickTime=0\n", "1: tickTime 0 is out of range"},
		{"maxClientCnxns=-3\n", "1: maxClientCnxns -3 is out of range"},
		{"minSessionTimeout=0\n", "1: minSessionTimeout must be positive"},
		{"tickTime=2000\ntickTime=3000\n", "2: tickTime set again (first on line 1)"},
		{"dataDir=/a/\\\n  b\n", "1: line continuations"},
		{"4lw.commands.whitelist=srvr,status\n", "1: 4lw.commands.whitelist: \"status\" is not a four-letter word"},
		{"clientPortAddress=\n", "1: clientPortAddress is empty"},
		{"DigestAuthenticationProvider.superDigest=super\n", "1: DigestAuthenticationProvider.superDigest: \"super\" is not user:base64hash"},
		{"DigestAuthenticationProvider.superDigest=:lK75jTNcA+U9vtVEw5vB51mj/w4=\n", "1: DigestAuthenticationProvider.superDigest: \":lK75jTNcA+U9vtVEw5vB51mj/w4=\" is not user:base64hash"},
		{"DigestAuthenticationProvider.superDigest=super:c2VjcmV0\n", "1: DigestAuthenticationProvider.superDigest: \"super:c2VjcmV0\": \"c2VjcmV0\" is not the base64 of a SHA-1"},
		{"server.1=127.0.0.1:2888:3888\n", "1: 1 server.N lines: zklab serve simulates an ensemble of 3 or 5 servers"},
		{"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\n", "2: 2 server.N lines: zklab serve simulates an ensemble of 3 or 5"},
		{"tickTime=500\nserver.1=127.0.0.1:2888\n", "2: server.1=127.0.0.1:2888 is not host:quorumPort:electionPort"},
		{"server.1=127.0.0.1:2888:x\n", "1: server.1 election port \"x\" is not a whole number"},
		{"server.1=127.0.0.1:2888:3888:observer\n", "1: server.1: role \"observer\": the simulated ensemble has participants only"},
		{"server.1=127.0.0.1:2888:3888;99999\n", "1: server.1 client port 99999 is out of range"},
		{"server.1=a:1:2\nserver.2=a:3:4\nserver.4=a:5:6\n", "3: server.4: with 3 server.N lines, the server ids must be 1..3"},
		{"server.0=127.0.0.1:2888:3888\n", "1: server.0: the server id must be 1..255"},
		{"server.1=a:1:2\nserver.1=a:3:4\n", "2: server.1 set again (first on line 1)"},
		{"maxSessionTimeout=4000\nminSessionTimeout=5000\n", "2: minSessionTimeout 5000 is above maxSessionTimeout 4000"},
		{"snapCount=0\n", "1: snapCount 0 is out of range"},
		{"autopurge.snapRetainCount=many\n", "1: autopurge.snapRetainCount \"many\" is not a whole number"},
		{"autopurge.purgeInterval=-1\n", "1: autopurge.purgeInterval -1 is out of range"},
	} {
		_, err := parseZooConfig("zoo.cfg", strings.NewReader(tc.text))
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.text, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "zoo.cfg:"+tc.want) {
			t.Errorf("%q:\n got %v\nwant zoo.cfg:%s...", tc.text, err, tc.want)
		}
	}
}

func TestZooConfigMissingFile(t *testing.T) {
	_, err := readZooConfig(filepath.Join(t.TempDir(), "nope.cfg"))
	if err == nil || !strings.Contains(err.Error(), "nope.cfg") {
		t.Fatalf("error %v does not name the file", err)
	}
}

// reconfigEnabled and standaloneEnabled reach the simulated ensemble's
// configuration, with the server.N lines, as QuorumPeerConfig reads them
// (Boolean.parseBoolean: "true" in any case, anything else false).
func TestZooConfigEnsembleConfig(t *testing.T) {
	text := "reconfigEnabled=TRUE\nstandaloneEnabled=false\n" +
		"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2889:3889:participant;2182\nserver.3=127.0.0.3:2890:3890;127.0.0.3:2183\n"
	cfg, err := parseZooConfig("zoo.cfg", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := sim.EnsembleConfig{ReconfigEnabled: true, StandaloneDisabled: true, Servers: []sim.EnsembleServer{
		{ID: 1, Host: "127.0.0.1", QuorumPort: 2888, ElectionPort: 3888},
		{ID: 2, Host: "127.0.0.2", QuorumPort: 2889, ElectionPort: 3889, ClientAddr: "0.0.0.0", ClientPort: 2182},
		{ID: 3, Host: "127.0.0.3", QuorumPort: 2890, ElectionPort: 3890, ClientAddr: "127.0.0.3", ClientPort: 2183},
	}}
	if got := cfg.ensembleConfig(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	cfg, err = parseZooConfig("zoo.cfg", strings.NewReader("reconfigEnabled=yes\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ensembleConfig(); got.ReconfigEnabled || got.StandaloneDisabled || got.Servers != nil {
		t.Fatalf("reconfigEnabled=yes: %+v, want reconfig off, standalone on, no servers", got)
	}
}
