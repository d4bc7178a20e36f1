package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

func init() {
	register(command{
		name:    "serve",
		summary: "serve the simulated ZooKeeper over TCP, for any client",
		usage: `Usage: zklab serve [--zoo-cfg FILE] [flags]

Serves an in-memory ZooKeeper 3.8 standalone server (or an ensemble: see
Ensembles below), the simulator's, on TCP and wall-clock time, for clients in any language (Java, Curator,
kazoo, go-zookeeper, the C client). It reads a zoo.cfg like ZooKeeper's
(clientPort, clientPortAddress, tickTime, minSessionTimeout,
maxSessionTimeout, maxClientCnxns, 4lw.commands.whitelist, dataDir,
forceSync; other storage, quorum and admin keys are accepted and ignored);
flags override it. It prints the address it listens on, and stops on
SIGINT or SIGTERM.

Without a dataDir nothing is stored: every start is a fresh, empty server.
With one (zoo.cfg dataDir or --data-dir), the server is durable as
ZooKeeper is: it logs every input to DATADIR/zklab-log.N before it
answers, fsynced when a transaction was applied (forceSync=no or
--fsync=false skips the fsync; a kill -9 loses nothing either way), and a
restart on the same dataDir replays the log: nodes, ACLs, sequence
counters, zxids and sessions come back, every session with a fresh
timeout, and clients reconnect to their sessions. A torn last record (a
kill mid-write) is cut with a warning. As ZooKeeper does, after snapCount
inputs (zoo.cfg snapCount or --snap-count, default 100000) it writes a
snapshot, DATADIR/zklab-snapshot.N, and starts a new log,
DATADIR/zklab-log.N; a start loads the newest snapshot and replays the
log after it. Older files are pruned at each snapshot, keeping
autopurge.snapRetainCount snapshots (default and minimum 3);
autopurge.purgeInterval=0 keeps them all.

The four-letter words ruok, srvr, stat, mntr, envi, conf, cons, dump,
wchs, wchc, wchp, isro, srst and crst answer in ZooKeeper's format (only
srvr unless the whitelist allows more, as ZooKeeper 3.5+).

Access control is ZooKeeper's: the world, auth, digest and ip schemes, the
auth packet (addauth), whoAmI, getACL and setACL, checked by the one
simulated server for every client; the ip scheme sees each connection's
TCP peer address. --super-digest (or the zoo.cfg line
DigestAuthenticationProvider.superDigest=..., which ZooKeeper reads as the
system property zookeeper.DigestAuthenticationProvider.superDigest) names
a super user, who passes every check after 'addauth digest user:password'.
Its value is user:base64(SHA-1(user:password)), as ZooKeeper's
DigestAuthenticationProvider prints it:
  printf 'super:secret' | openssl sha1 -binary | base64   # then super:<that>

Ensembles: --servers 3 (or 5) serves a simulated ensemble from this
process, member sN on the listen port plus N-1 (with port 0, ports of
the kernel's choosing), each printed. A zoo.cfg with server.N lines
(host:quorumPort:electionPort[:participant][;[addr:]clientPort]; the
ids 1..N, 3 or 5 of them) and DATADIR/myid makes this process member
myid of the ensemble whose members' dataDirs share DATADIR's parent, as a
test harness starts one zkServer.sh per server: the first member started
starts a detached host process (serve --host-ensemble DIR, logging to
DIR/zklab-ensemble.log) that holds the ensemble; each member process
listens on its clientPort and forwards its clients to the host. Killing
a member process crash-stops that member (its clients' connections close
with it); starting it again rejoins it, with what it had logged. The
host ends 10 s after its last member. ZooKeeper's ensemble semantics are
the simulator's (sim.Ensemble): writes through the leader, committed on a
quorum, reads from the member's own state, sync, sessions moving between
members, a member without a leader refusing clients, elections (470 ms
after a quorum can elect, the fastest measured on a real 3.8 ensemble;
the highest logged zxid leads, the higher id among equals). srvr, stat
and mntr report Mode leader or follower, and a member without a leader
answers "This ZooKeeper instance is not currently serving requests".
Dynamic reconfiguration: with reconfigEnabled=true in the zoo.cfg, reconfig
(incremental and newMembers) changes the voting members as ZooKeeper 3.8
does: the super user only (/zookeeper/config is world-readable only),
BADVERSION, BADARGUMENTS, NEWCONFIGNOQUORUM, /zookeeper/config holding
the server.N lines and version; a removed member goes on serving as a
non-voter, a removed leader hands over to the designated one. Without
it, reconfig answers RECONFIGDISABLED. Not supported with an ensemble:
observers (a participant role only), servers that join from outside
(a joiner the ensemble lacks is a voter that never connects),
--data-dir/--history/--oracle (the ensemble is in the host's memory
only: members all down for longer than the host's 10 s start empty),
and --control with server.N lines (there a member is crashed by killing
its process; use --servers N). Reproducibility: the ensemble is the same
pure state machine as 'zklab run --servers 3' and draws no random
numbers; the driver takes the members' internal steps (messages,
applying commits) at once, in a fixed order, so followers lag only when
told to (--control's LAG). What is not reproducible is what the wall
clock and the processes decide: the order in which clients' requests
arrive, when sessions expire, when a member process dies or registers,
and so which member leads after a failover.

--control HOST:PORT serves a control API over HTTP, in the URL scheme of
ZooKeeper's test controller: /command/VERB[/PARAMETER] with the verbs
PING, CLOSECONNECTION, EXPIRESESSION, REJECTCONNECTIONS, ADDDELAY,
FAILREQUESTS, NORESPONSE and RESET, and zklab's LOSEREPLY/SESSION[/OP],
DROPREQUEST/SESSION[/OP], PARTITION/SESSION/MS, RESTART[/MS] and SESSIONS;
answers are JSON. With --servers N it takes the ensemble's faults, named
as scenario files name them (lag, crash-server, ...; the dash may be
left out), each the simulator's own: LAG/sN[/MS], CRASHSERVER/sN[/MS],
RESTARTSERVER/sN, PARTITIONSERVER/sN[/MS], ISOLATELEADER[/MS],
KILLLEADER[/MS], LOSEQUORUM[/MS], RESTART[/MS] (every member), HEAL (or
RESET: every server fault ends), SERVERS (or /servers: each member's
mode, last zxid, connections and faults), and EXPIRESESSION (the
leader's), CLOSECONNECTION and SESSIONS; without MS a fault lasts until
HEAL. The one server's other verbs are refused there.

--oracle HOST:PORT cross-checks: every request is also sent, in the same
order, to a fresh real ZooKeeper that nothing else uses, and each
difference in replies and watch events is reported on stderr (zxids and
session ids compared as pairs, times not at all). With a dataDir, the
pairing of sessions is kept there (DATADIR/zklab-oracle-sessions): a
restart on it, against the same oracle or the oracle restarted on its own
dataDir, resumes the sessions of both.

--history FILE writes what the server served as JSON lines (requests,
replies, watch events, sessions); 'zklab check-history FILE' checks it
for linearizability against the znode model.

Flags:
`,
		run: runServe,
	})
}

// ZooKeeper's default for maxClientCnxns, when neither zoo.cfg nor a
// flag sets it (ServerCnxnFactory: 60 per client IP).
const defaultMaxClientCnxns = 60

func runServe(args []string, stdout, stderr io.Writer) error {
	c := find("serve")
	fs := newFlags(c)
	zooCfg := fs.String("zoo-cfg", "", "read this zoo.cfg")
	listen := fs.String("listen", "", "listen on HOST:PORT (default clientPortAddress:clientPort, or :2181)")
	tickTime := fs.Int64("tick-time", 0, "tickTime in ms (default 2000)")
	minSession := fs.Int64("min-session-timeout", 0, "minSessionTimeout in ms (default 2 ticks)")
	maxSession := fs.Int64("max-session-timeout", 0, "maxSessionTimeout in ms (default 20 ticks)")
	maxCnxns := fs.Int("max-client-cnxns", -1, "maxClientCnxns per client IP, 0 for no limit (default 60)")
	words := fs.String("4lw", "", "4lw.commands.whitelist: comma-separated words, or * (default srvr)")
	extended := fs.Bool("extended-types", false, "zookeeper.extendedTypesEnabled: allow TTL nodes")
	superDigest := fs.String("super-digest", "", "zookeeper.DigestAuthenticationProvider.superDigest: user:base64(SHA-1(user:password))")
	historyPath := fs.String("history", "", "write what the server served to this file, as JSON lines")
	dataDir := fs.String("data-dir", "", "dataDir: keep a journal there and recover from it on start (default in memory)")
	fsync := fs.Bool("fsync", true, "forceSync: fsync the journal before a transaction's reply")
	snapCount := fs.Int("snap-count", 0, "snapCount: inputs logged before the journal writes a snapshot and starts a new log (default 100000)")
	oracleAddr := fs.String("oracle", "", "cross-check: send every request also to the real ZooKeeper at HOST:PORT and report each difference")
	controlAddr := fs.String("control", "", "serve the control API (faults, sessions) over HTTP on HOST:PORT")
	servers := fs.Int("servers", 0, "serve a simulated ensemble of 3 or 5 servers, on consecutive client ports from --listen's")
	hostDir := fs.String("host-ensemble", "", "internal: hold the simulated ensemble of the member processes whose dataDirs are in DIR (a member process starts it)")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	var cfg zooConfig
	if *zooCfg != "" {
		var err error
		if cfg, err = readZooConfig(*zooCfg); err != nil {
			return usagef("%v", err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["tick-time"] {
		if *tickTime <= 0 {
			return usagef("--tick-time %d: must be positive", *tickTime)
		}
		cfg.tickTimeMs = *tickTime
	}
	if set["min-session-timeout"] {
		cfg.minSessionTimeoutMs = *minSession
	}
	if set["max-session-timeout"] {
		cfg.maxSessionTimeoutMs = *maxSession
	}
	if set["max-client-cnxns"] {
		if *maxCnxns < 0 {
			return usagef("--max-client-cnxns %d: must be 0 (no limit) or more", *maxCnxns)
		}
		cfg.maxClientCnxns, cfg.maxClientCnxnsSet = *maxCnxns, true
	}
	if set["4lw"] {
		list, err := parseFourLetterWords(*words)
		if err != nil {
			return usagef("--4lw: %v", err)
		}
		cfg.fourLetterWords = list
	}
	if set["super-digest"] {
		if err := checkSuperDigest(*superDigest); err != nil {
			return usagef("--super-digest: %v", err)
		}
		cfg.superDigest = *superDigest
	}
	if set["data-dir"] {
		cfg.dataDir = *dataDir
	}
	if set["fsync"] {
		cfg.forceSync = map[bool]string{true: "yes", false: "no"}[*fsync]
	}
	if set["snap-count"] {
		if *snapCount < 1 {
			return usagef("--snap-count %d: must be at least 1", *snapCount)
		}
		cfg.snapCount = max(*snapCount, 2) // as zoo.cfg's snapCount
	}
	s, err := newServeSettings(cfg, *listen, *extended)
	if err != nil {
		return err
	}
	if set["servers"] || len(cfg.servers) > 0 || set["host-ensemble"] {
		switch {
		case set["servers"] && !slices.Contains(ensembleSizes, *servers):
			return usagef("--servers %d: the simulated ensembles have 3 or 5 servers", *servers)
		case set["servers"] && len(cfg.servers) > 0:
			return usagef("--servers: the zoo.cfg %s lists its servers (line %d)", *zooCfg, cfg.servers[0].line)
		case set["host-ensemble"] && len(cfg.servers) == 0:
			return usagef("--host-ensemble: needs a zoo.cfg with server.N lines")
		}
		// The ensemble lives in memory: nothing below has an ensemble
		// counterpart yet, and a flag silently not honoured would mislead.
		for _, name := range []string{"history", "oracle", "data-dir", "fsync", "snap-count"} {
			if set[name] {
				return usagef("--%s: not supported with a simulated ensemble", name)
			}
		}
		if set["control"] && !set["servers"] {
			// A member's process forwards its clients to a detached host
			// that holds the ensemble; killing and starting the member
			// processes is how a harness crashes and restarts a member
			// there, and a control API in the host would crash members
			// whose processes still run.
			return usagef("--control: with a zoo.cfg's server.N lines each member is a process of its own, crashed by killing it; serve the ensemble from one process (--servers 3 or 5) to inject its faults through --control")
		}
		if set["servers"] && cfg.dataDir != "" {
			return usagef("%s: dataDir: zklab serve --servers keeps its ensemble in memory only (a zoo.cfg with server.N lines runs one member per process)", *zooCfg)
		}
		return serveEnsembleMode(cfg, s, *servers, *hostDir, *controlAddr, args, stdout, stderr)
	}
	s.warnings = stderr
	s.oracle, s.oracleReport = *oracleAddr, stderr

	var history *os.File
	if *historyPath != "" {
		if history, err = os.Create(*historyPath); err != nil {
			return usagef("--history: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := startServe(s, history)
	if err != nil {
		if history != nil {
			history.Close()
		}
		return err
	}
	controlURL := ""
	if *controlAddr != "" {
		hs, addr, err := startControl(*controlAddr, srv.srv)
		if err != nil {
			srv.close()
			return usagef("%v", err)
		}
		defer hs.Close()
		controlURL = "http://" + addr + "/command/"
	}
	fmt.Fprintf(stdout, "zklab serve: listening on %s\n", srv.addr)
	if controlURL != "" {
		fmt.Fprintf(stdout, "zklab serve: control API on %s\n", controlURL)
	}
	select {
	case <-ctx.Done():
	case err := <-srv.done:
		srv.done <- err // the listener failed: close reports it
	}
	if err := srv.close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "zklab serve: stopped\n")
	return nil
}

// serveSettings is what a served server runs with, zoo.cfg and flags
// merged and defaults applied.
type serveSettings struct {
	listen         string
	sim            sim.ServerConfig
	maxClientCnxns int
	whitelist      []string
	conf           wire.FourLetterConf
	// dataDir, if not "", holds the journal that makes the server
	// durable; syncJournal fsyncs it (forceSync).
	dataDir     string
	syncJournal bool
	// snapCount and snapRetainCount are wire.JournalOptions' (zoo.cfg
	// snapCount, autopurge.snapRetainCount and autopurge.purgeInterval).
	snapCount       int
	snapRetainCount int
	// warnings gets what recovery has to say (a cut torn record).
	warnings io.Writer
	// oracle is the real ZooKeeper to cross-check against (oracle.go),
	// "" for none; its differences go to oracleReport.
	oracle       string
	oracleReport io.Writer
	// ensemble is a simulated ensemble's configuration beyond sim's
	// (server.N lines, reconfigEnabled).
	ensemble sim.EnsembleConfig
}

func newServeSettings(cfg zooConfig, listen string, extendedTypes bool) (serveSettings, error) {
	tick := cfg.tickTimeMs
	if tick == 0 {
		tick = 2000
	}
	// -1, as ZooKeeper takes it, and unset both mean the default.
	minMs, maxMs := cfg.minSessionTimeoutMs, cfg.maxSessionTimeoutMs
	if minMs <= 0 {
		minMs = 2 * tick
	}
	if maxMs <= 0 {
		maxMs = 20 * tick
	}
	if minMs > maxMs {
		return serveSettings{}, usagef("minSessionTimeout %d ms is above maxSessionTimeout %d ms", minMs, maxMs)
	}
	maxCnxns := defaultMaxClientCnxns
	if cfg.maxClientCnxnsSet {
		maxCnxns = cfg.maxClientCnxns
	}
	if listen == "" {
		listen = cfg.listenAddress()
	}
	retain := cfg.snapRetainCount
	if cfg.purgeIntervalSet && cfg.purgeInterval == 0 {
		retain = -1 // autopurge off: every snapshot and log stays
	}
	_, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return serveSettings{}, usagef("--listen %q: %v", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return serveSettings{}, usagef("--listen %q: port %q is not 0..65535", listen, portText)
	}
	return serveSettings{
		listen: listen,
		sim: sim.ServerConfig{
			TickTimeMs: tick, MinSessionTimeoutMs: minMs, MaxSessionTimeoutMs: maxMs,
			ExtendedTypes: extendedTypes, SuperDigest: cfg.superDigest,
		},
		maxClientCnxns:  maxCnxns,
		whitelist:       cfg.fourLetterWords,
		dataDir:         cfg.dataDir,
		syncJournal:     cfg.forceSync != "no",
		snapCount:       cfg.snapCount,
		snapRetainCount: retain,
		ensemble:        cfg.ensembleConfig(),
		conf: wire.FourLetterConf{
			ClientPort: port, DataDir: cfg.dataDir, TickTimeMs: tick, MaxClientCnxns: maxCnxns,
			MinSessionTimeoutMs: minMs, MaxSessionTimeoutMs: maxMs,
		},
	}, nil
}

// served is a running `zklab serve`.
type served struct {
	addr    string
	ln      net.Listener
	srv     *wire.Server
	history *wire.HistoryWriter
	file    *os.File
	journal *wire.Journal // nil without a dataDir
	done    chan error
	check   *crossCheck
}

// openJournal recovers the server kept in s.dataDir, or starts one there.
// A journal that cannot be read is bad input (exit 2), named.
func openJournal(s serveSettings, now time.Time) (*wire.Recovered, error) {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return nil, usagef("dataDir: %v", err)
	}
	warn := func(msg string) {
		if s.warnings != nil {
			fmt.Fprintf(s.warnings, "zklab serve: warning: %s\n", msg)
		}
	}
	rec, err := wire.OpenJournal(s.dataDir, s.sim, wire.JournalOptions{
		Sync: s.syncJournal, WallClockMs: now.UnixMilli(), Warn: warn,
		SnapCount: s.snapCount, SnapRetainCount: s.snapRetainCount,
	})
	if err != nil {
		return nil, usagef("dataDir: %v", err)
	}
	return rec, nil
}

// startServe listens and serves in the background. history, if not nil,
// receives the served history and is closed by close.
func startServe(s serveSettings, history *os.File) (*served, error) {
	now := time.Now()
	// Virtual time 0 is now, so that ctime and mtime are wall-clock times
	// (a recovered server keeps its journal's epoch).
	s.sim.EpochMs = now.UnixMilli()
	var rec *wire.Recovered
	if s.dataDir != "" {
		var err error
		if rec, err = openJournal(s, now); err != nil {
			return nil, err
		}
	}
	// The checker after the journal: it keeps its pairing of sessions in
	// the dataDir the journal made.
	var check *crossCheck
	if s.oracle != "" {
		var err error
		if check, err = dialOracle(s.oracle, s.dataDir); err != nil {
			if rec != nil {
				rec.Journal.Close()
			}
			return nil, usagef("%v", err)
		}
		check.report = s.oracleReport
	}
	ln, err := net.Listen("tcp", s.listen)
	if err != nil {
		if rec != nil {
			rec.Journal.Close()
		}
		if check != nil {
			check.close()
		}
		return nil, fmt.Errorf("listen on %s: %v", s.listen, err)
	}
	flw := &wire.FourLetterWords{Whitelist: s.whitelist, Conf: s.conf, Epoch: now}
	if s.conf.ClientPort == 0 {
		flw.Conf.ClientPort = ln.Addr().(*net.TCPAddr).Port
	}
	cfg := wire.Config{MaxClientCnxns: s.maxClientCnxns, FourLetterWord: flw.Answer}
	out := &served{addr: ln.Addr().String(), ln: ln, file: history, done: make(chan error, 1), check: check}
	if history != nil {
		out.history = wire.NewHistoryWriter(history, now)
		cfg.Observer = out.history
	}
	if check != nil {
		if cfg.Observer != nil {
			cfg.Observer = teeObserver{cfg.Observer, check}
		} else {
			cfg.Observer = check
		}
	}
	if rec != nil {
		cfg.Journal = rec.Journal
		out.journal = rec.Journal
		out.srv = wire.New(rec.Server, cfg)
	} else {
		out.srv = wire.New(sim.NewServer(s.sim), cfg)
	}
	flw.Server = out.srv
	go func() { out.done <- out.srv.Serve(ln) }()
	return out, nil
}

// close stops the server and flushes its history.
func (s *served) close() error {
	s.srv.Close()
	err := <-s.done
	if errors.Is(err, wire.ErrServerClosed) {
		err = nil
	}
	if s.journal != nil {
		if jerr := s.journal.Close(); jerr != nil {
			err = errors.Join(err, jerr)
		}
	}
	if s.check != nil && s.check.report != nil {
		fmt.Fprintf(s.check.report, "zklab serve: cross-check: %v\n", s.check.Summary())
	}
	if s.check != nil {
		if cerr := s.check.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("dataDir: %v", cerr))
		}
	}
	if s.history != nil {
		if herr := errors.Join(s.history.Close(), s.file.Close()); herr != nil {
			err = errors.Join(err, fmt.Errorf("--history %s: %v", s.file.Name(), herr))
		}
	}
	return err
}
