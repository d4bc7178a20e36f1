package main

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/zklab/zklab/sim"
)

// zooConfig is what `zklab serve` takes from a zoo.cfg: the settings of a
// standalone ZooKeeper server that matter to its clients. A zero field
// was not set.
type zooConfig struct {
	clientPort          int    // clientPort
	clientPortSet       bool   // clientPort appeared
	clientPortAddress   string // clientPortAddress; "" binds every address, as ZooKeeper does
	tickTimeMs          int64  // tickTime
	minSessionTimeoutMs int64  // minSessionTimeout; -1 or absent: 2 ticks
	maxSessionTimeoutMs int64  // maxSessionTimeout; -1 or absent: 20 ticks
	maxClientCnxns      int    // maxClientCnxns per client address; 0 is no limit
	maxClientCnxnsSet   bool
	dataDir             string // dataDir: where serve keeps its journal; "" is in memory only
	forceSync           string // forceSync: "yes" or "no" (zookeeper.forceSync); "" is yes
	// snapCount is the journal's inputs per log before a snapshot
	// (zookeeper.snapCount); 0 is wire.DefaultSnapCount.
	snapCount int
	// snapRetainCount is autopurge.snapRetainCount; 0 is 3. purgeInterval
	// is autopurge.purgeInterval in hours: 0, when set, keeps every file
	// (ZooKeeper's default); zklab, unlike ZooKeeper, prunes when it is
	// absent, at every snapshot rather than on a timer.
	snapRetainCount  int
	purgeInterval    int
	purgeIntervalSet bool
	// fourLetterWords is 4lw.commands.whitelist split at commas; "*" is
	// every word. nil: the key was absent (ZooKeeper 3.5+ then allows
	// only srvr).
	fourLetterWords []string
	// superDigest is DigestAuthenticationProvider.superDigest,
	// "user:base64(SHA-1(user:password))": ZooKeeper's QuorumPeerConfig
	// sets a zoo.cfg key it does not know as the system property
	// "zookeeper." + key, so this line configures the super user as
	// -Dzookeeper.DigestAuthenticationProvider.superDigest does.
	superDigest string
	// servers are the server.N lines, in the order of their lines: an
	// ensemble's members (zklab serve simulates one, serve_ensemble.go).
	servers []zooServer
	// reconfigEnabled is reconfigEnabled (default false): a simulated
	// ensemble then takes reconfig; standaloneDisabled is
	// standaloneEnabled=false, which lets a reconfig leave one voter.
	reconfigEnabled    bool
	standaloneDisabled bool
}

// zooServer is one server.N line of a zoo.cfg:
// server.N=host:quorumPort:electionPort[:participant][;[clientAddress:]clientPort]
// (QuorumPeer.QuorumServer).
type zooServer struct {
	id                    int
	host                  string
	quorumPort, electPort int
	clientPort            int // 0 when the line has none
	clientAddress         string
	line                  int // where it was read
}

// String is the line's value as zoo.cfg writes it.
func (z zooServer) String() string {
	s := fmt.Sprintf("server.%d=%s:%d:%d", z.id, z.host, z.quorumPort, z.electPort)
	if z.clientPort != 0 {
		s += ";" + net.JoinHostPort(z.clientAddress, strconv.Itoa(z.clientPort))
	}
	return s
}

// ensembleSizes are the ensembles sim.NewEnsemble makes.
var ensembleSizes = []int{3, 5}

// superDigestKey is the zoo.cfg key of the super user's digest.
const superDigestKey = "DigestAuthenticationProvider.superDigest"

// ignoredZooKeys are the zoo.cfg keys `zklab serve` accepts and ignores
// (dataDir, forceSync, snapCount and autopurge.* configure serve's journal, see openJournal):
// ZooKeeper settings that test harnesses and Debian's sample config write
// but that change nothing a client of an in-memory standalone server can
// see (storage, the admin server, quorum timing, metrics). Any other key
// is an error, so that a setting zklab would silently not honour is never
// taken for one it does.
var ignoredZooKeys = []string{
	"admin.commandURL",
	"admin.enableServer",
	"admin.serverAddress",
	"admin.serverPort",
	"dataLogDir",
	"globalOutstandingLimit",
	"initLimit",
	"localSessionsEnabled",
	"localSessionsUpgradingEnabled",
	"metricsProvider.className",
	"metricsProvider.exportJvmInfo",
	"metricsProvider.httpPort",
	"preAllocSize",
	"serverCnxnFactory",
	"syncEnabled",
	"syncLimit",
}

// zooConfigError is a bad zoo.cfg line, named FILE:LINE.
type zooConfigError struct {
	file string
	line int
	msg  string
}

func (e *zooConfigError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

// readZooConfig parses the zoo.cfg at path.
func readZooConfig(path string) (zooConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return zooConfig{}, err
	}
	defer f.Close()
	return parseZooConfig(path, f)
}

// parseZooConfig parses a zoo.cfg: lines of key=value, as ZooKeeper's
// QuorumPeerConfig reads them through java.util.Properties (keys and
// values trimmed, '#' and '!' start a comment line). It accepts the
// subset of the Properties syntax that zoo.cfg files use in practice:
// "key=value" or "key: value", one per line. A line continuation, a line
// with no separator, an unknown key, a repeated key or a bad value is an
// error naming file:line.
func parseZooConfig(file string, r io.Reader) (zooConfig, error) {
	var cfg zooConfig
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		bad := func(format string, args ...any) error {
			return &zooConfigError{file: file, line: line, msg: fmt.Sprintf(format, args...)}
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		if strings.HasSuffix(text, `\`) {
			return cfg, bad("line continuations (a trailing backslash) are not supported")
		}
		sep := strings.IndexAny(text, "=:")
		if sep <= 0 {
			return cfg, bad("%q is not key=value", text)
		}
		key := strings.TrimSpace(text[:sep])
		value := strings.TrimSpace(text[sep+1:])
		if prev, ok := seen[key]; ok {
			return cfg, bad("%s set again (first on line %d)", key, prev)
		}
		seen[key] = line
		if isIndexedKey(key, "server.") {
			z, err := parseZooServer(key, value)
			if err != nil {
				return cfg, bad("%v", err)
			}
			z.line = line
			cfg.servers = append(cfg.servers, z)
			continue
		}
		if err := cfg.set(key, value); err != nil {
			return cfg, bad("%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		return cfg, &zooConfigError{file: file, line: line + 1, msg: err.Error()}
	}
	if n := len(cfg.servers); n > 0 && !slices.Contains(ensembleSizes, n) {
		// One server.N line is a standalone server to ZooKeeper (with
		// standaloneEnabled); the simulator's ensembles have 3 or 5.
		return cfg, &zooConfigError{file: file, line: cfg.servers[n-1].line,
			msg: fmt.Sprintf("%d server.N lines: zklab serve simulates an ensemble of 3 or 5 servers (or, without server.N lines, one standalone server)", n)}
	}
	for _, z := range cfg.servers {
		if z.id > len(cfg.servers) {
			// The simulated ensemble's members are s1..sN.
			return cfg, &zooConfigError{file: file, line: z.line,
				msg: fmt.Sprintf("server.%d: with %d server.N lines, the server ids must be 1..%d", z.id, len(cfg.servers), len(cfg.servers))}
		}
	}
	if cfg.minSessionTimeoutMs > 0 && cfg.maxSessionTimeoutMs > 0 && cfg.minSessionTimeoutMs > cfg.maxSessionTimeoutMs {
		return cfg, &zooConfigError{file: file, line: seen["minSessionTimeout"],
			msg: fmt.Sprintf("minSessionTimeout %d is above maxSessionTimeout %d", cfg.minSessionTimeoutMs, cfg.maxSessionTimeoutMs)}
	}
	return cfg, nil
}

// set applies one key=value.
func (cfg *zooConfig) set(key, value string) error {
	switch key {
	case "clientPort":
		n, err := parseInt(key, value, 0, 65535)
		cfg.clientPort, cfg.clientPortSet = int(n), true
		return err
	case "clientPortAddress":
		if value == "" {
			return fmt.Errorf("clientPortAddress is empty")
		}
		if strings.ContainsAny(value, " /") {
			return fmt.Errorf("clientPortAddress %q is not a host name or IP address", value)
		}
		cfg.clientPortAddress = value
		return nil
	case "tickTime":
		n, err := parseInt(key, value, 1, 1<<31-1)
		cfg.tickTimeMs = n
		return err
	case "minSessionTimeout", "maxSessionTimeout":
		n, err := parseInt(key, value, -1, 1<<31-1)
		if n == 0 {
			return fmt.Errorf("%s must be positive, or -1 for the default", key)
		}
		if key == "minSessionTimeout" {
			cfg.minSessionTimeoutMs = n
		} else {
			cfg.maxSessionTimeoutMs = n
		}
		return err
	case "maxClientCnxns":
		n, err := parseInt(key, value, 0, 1<<31-1)
		cfg.maxClientCnxns, cfg.maxClientCnxnsSet = int(n), true
		return err
	case "dataDir":
		cfg.dataDir = value
		return nil
	case "forceSync":
		if value != "yes" && value != "no" {
			return fmt.Errorf("forceSync %q: must be yes or no", value)
		}
		cfg.forceSync = value
		return nil
	case "snapCount":
		// SyncRequestProcessor raises a snapCount below 2 to 2.
		n, err := parseInt(key, value, 1, 1<<31-1)
		cfg.snapCount = max(int(n), 2)
		return err
	case "autopurge.snapRetainCount":
		// PurgeTxnLog raises a count below 3 to 3.
		n, err := parseInt(key, value, 0, 1<<31-1)
		cfg.snapRetainCount = max(int(n), 3)
		return err
	case "autopurge.purgeInterval":
		n, err := parseInt(key, value, 0, 1<<31-1)
		cfg.purgeInterval, cfg.purgeIntervalSet = int(n), true
		return err
	case "4lw.commands.whitelist":
		words, err := parseFourLetterWords(value)
		cfg.fourLetterWords = words
		return err
	case "reconfigEnabled", "standaloneEnabled":
		// QuorumPeerConfig reads both with Boolean.parseBoolean: "true"
		// in any case is true, anything else false.
		on := strings.EqualFold(value, "true")
		if key == "reconfigEnabled" {
			cfg.reconfigEnabled = on
		} else {
			cfg.standaloneDisabled = !on
		}
		return nil
	case superDigestKey:
		if err := checkSuperDigest(value); err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		cfg.superDigest = value
		return nil
	}
	if slices.Contains(ignoredZooKeys, key) || isIndexedKey(key, "authProvider.") {
		return nil
	}
	return fmt.Errorf("unknown key %q (zklab serve reads clientPort, clientPortAddress, tickTime, minSessionTimeout, maxSessionTimeout, maxClientCnxns, 4lw.commands.whitelist, dataDir, forceSync, snapCount, autopurge.snapRetainCount, autopurge.purgeInterval, reconfigEnabled, standaloneEnabled, %s, and ignores %s, authProvider.N)",
		key, superDigestKey, strings.Join(ignoredZooKeys, ", "))
}

// parseZooServer reads server.N=host:quorumPort:electionPort[:role][;[clientAddress:]clientPort],
// as QuorumPeer.QuorumServer does; the role must be participant (the
// simulated ensemble has no observers).
func parseZooServer(key, value string) (zooServer, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(key, "server."))
	if err != nil || id < 1 || id > 255 {
		return zooServer{}, fmt.Errorf("%s: the server id must be 1..255 (myid)", key)
	}
	z := zooServer{id: id}
	addr, client, hasClient := strings.Cut(value, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return zooServer{}, fmt.Errorf("%s=%s is not host:quorumPort:electionPort[:participant][;[clientAddress:]clientPort]", key, value)
	}
	z.host = parts[0]
	for i, p := range []*int{&z.quorumPort, &z.electPort} {
		n, err := parseInt(key+[]string{" quorum port", " election port"}[i], parts[i+1], 1, 65535)
		if err != nil {
			return zooServer{}, err
		}
		*p = int(n)
	}
	if len(parts) == 4 && parts[3] != "participant" {
		return zooServer{}, fmt.Errorf("%s: role %q: the simulated ensemble has participants only (no observers)", key, parts[3])
	}
	if hasClient {
		host, port := "", client
		if i := strings.LastIndex(client, ":"); i >= 0 {
			host, port = client[:i], client[i+1:]
		}
		n, err := parseInt(key+" client port", port, 1, 65535)
		if err != nil {
			return zooServer{}, err
		}
		z.clientAddress, z.clientPort = host, int(n)
	}
	return z, nil
}

// isIndexedKey reports whether key is prefix followed by a number, as in
// server.1 or authProvider.1.
func isIndexedKey(key, prefix string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.ParseUint(rest, 10, 32)
	return err == nil
}

func parseInt(key, value string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number", key, value)
	}
	if n < min || n > max {
		return 0, fmt.Errorf("%s %d is out of range [%d, %d]", key, n, min, max)
	}
	return n, nil
}

// parseFourLetterWords reads a 4lw.commands.whitelist: words separated
// by commas, or "*" for all (ZooKeeper's FourLetterCommands).
func parseFourLetterWords(value string) ([]string, error) {
	var words []string
	for _, w := range strings.Split(value, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		if w != "*" && len(w) != 4 {
			return nil, fmt.Errorf("4lw.commands.whitelist: %q is not a four-letter word", w)
		}
		words = append(words, w)
	}
	if words == nil {
		words = []string{}
	}
	return words, nil
}

// listenAddress is the address clientPortAddress:clientPort.
func (cfg zooConfig) listenAddress() string {
	port := 2181
	if cfg.clientPortSet {
		port = cfg.clientPort
	}
	return net.JoinHostPort(cfg.clientPortAddress, strconv.Itoa(port))
}

// checkSuperDigest checks a super digest, "user:hash" with hash the base64
// of a SHA-1 (28 characters), as DigestAuthenticationProvider.generateDigest
// writes it. ZooKeeper takes any string and compares it with the digest of
// each auth packet, so a value of another shape (a password in clear, say)
// would silently never match: zklab refuses it.
func checkSuperDigest(value string) error {
	user, hash, ok := strings.Cut(value, ":")
	if !ok || user == "" {
		return fmt.Errorf("%q is not user:base64hash", value)
	}
	if sum, err := base64.StdEncoding.DecodeString(hash); err != nil || len(sum) != sha1.Size {
		return fmt.Errorf("%q: %q is not the base64 of a SHA-1 of %q (28 characters; `zklab serve --help` shows how to make one)", value, hash, user+":password")
	}
	return nil
}

// ensembleConfig is the simulated ensemble's configuration the zoo.cfg
// gives: its server.N lines (nil without them: zklab serve --servers
// gives the simulator's defaults), reconfigEnabled and standaloneEnabled.
func (cfg zooConfig) ensembleConfig() sim.EnsembleConfig {
	ec := sim.EnsembleConfig{ReconfigEnabled: cfg.reconfigEnabled, StandaloneDisabled: cfg.standaloneDisabled}
	for _, z := range cfg.servers {
		ec.Servers = append(ec.Servers, sim.EnsembleServer{ID: z.id, Host: z.host, QuorumPort: z.quorumPort, ElectionPort: z.electPort,
			ClientAddr: clientAddrOf(z), ClientPort: z.clientPort})
	}
	return ec
}

// clientAddrOf is a server line's client address as QuorumServer keeps
// it: 0.0.0.0 when the line gives a client port alone.
func clientAddrOf(z zooServer) string {
	if z.clientPort != 0 && z.clientAddress == "" {
		return "0.0.0.0"
	}
	return z.clientAddress
}
