package wire

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/sim"
)

// ServerVersion is the version zklab reports in srvr, stat, mntr and
// envi. It is ZooKeeper 3.8.0's, marked as zklab's, with the build date
// in ZooKeeper 3.5's MM/dd/yyyy HH:mm form: ZooKeeper 3.6+ prints
// "2024-12-29 17:54 UTC" and Debian's 3.8 build a version of
// "3.8.0-${mvngit.commit.id}", and go-zookeeper v1.0.4's FLWSrvr (which its
// test harness polls until a server is up) accepts neither: its regexp
// wants `[A-Za-z0-9.-]+, built on \d\d/\d\d/\d\d\d\d \d\d:\d\d ZONE`.
// kazoo's server_version reads the leading digits of the envi line.
const ServerVersion = "3.8.0-zklab, built on 01/01/2026 00:00 UTC"

// FourLetterConf is what the four-letter word conf reports: the
// server's settings as its zoo.cfg gave them.
type FourLetterConf struct {
	ClientPort          int
	DataDir             string // accepted and unused: zklab keeps everything in memory
	TickTimeMs          int64
	MaxClientCnxns      int
	MinSessionTimeoutMs int64
	MaxSessionTimeoutMs int64
}

// FourLetterWords answers ZooKeeper's four-letter words for a Server, in
// ZooKeeper 3.8's output format (captured from Debian's ZooKeeper 3.8.0
// on a standalone server; fourletter_test.go holds the shapes):
//
//	ruok  imok
//	srvr  version, latencies, packet counts, connections, zxid, mode, node count
//	stat  srvr with the clients listed
//	mntr  the monitoring keys zklab can fill (zk_version ... zk_max_latency)
//	envi  the environment (zookeeper.version=..., host and OS)
//	conf  the server's settings
//	cons  every connection with its session and counters
//	dump  sessions by expiry time, ephemerals by session, connections
//	wchs, wchc, wchp  watches: summary, by session, by path
//	isro  rw
//	srst, crst  reset the server's and the connections' counters
//
// A word not in Whitelist is answered "<word> is not executed because it
// is not in the whitelist.", as ZooKeeper answers it; an unknown word
// gets nothing. Set it as Config.FourLetterWord (Answer), then fill Server.
type FourLetterWords struct {
	// Server is the server the words describe (a *Server, or a member of
	// an EnsembleServer); set it after New.
	Server FourLetterServer
	// Whitelist is 4lw.commands.whitelist: the words answered, "*" for
	// all. nil means srvr alone, ZooKeeper 3.5+'s default.
	Whitelist []string
	Conf      FourLetterConf
	// Epoch is the wall-clock time the simulated server's virtual time 0
	// stands for (sim.ServerConfig.EpochMs): session deadlines count from it.
	Epoch time.Time
	// Now is the clock; time.Now if nil.
	Now func() time.Time
}

// FourLetterServer is what the four-letter words read of a server: a
// standalone *Server, or one member of an EnsembleServer (Member).
type FourLetterServer interface {
	Stats() Stats
	Conns() []ConnInfo
	ResetStats()
	// Inspect runs fn with the simulated server whose state the words
	// show (a member's applied state), under the server's lock.
	Inspect(fn func(srv *sim.Server))
}

// notServing is what ZooKeeper 3.8 answers the words that need a running
// server while it has none (FourLetterCommands.ZK_NOT_SERVING): an
// ensemble member without a leader.
const notServing = "This ZooKeeper instance is not currently serving requests\n"

// fourLetterWords is every word FourLetterWords answers.
var fourLetterWords = []string{"conf", "cons", "crst", "dump", "envi", "isro", "mntr", "ruok", "srst", "srvr", "stat", "wchc", "wchp", "wchs"}

// Answer writes the answer to word; it is a Config.FourLetterWord.
func (f *FourLetterWords) Answer(word string, w io.Writer) {
	if !slices.Contains(fourLetterWords, word) {
		return // ZooKeeper closes the connection without a word
	}
	if !f.allowed(word) {
		fmt.Fprintf(w, "%s is not executed because it is not in the whitelist.\n", word)
		return
	}
	if word != "ruok" && word != "envi" && f.Server.Stats().Mode == "" {
		// Every command but ruok and envi checks that the server runs
		// first (FourLetterCommands' CommandThreads: "if (zkServer ==
		// null)"); isro answers "null" then.
		if word == "isro" {
			io.WriteString(w, "null")
		} else {
			io.WriteString(w, notServing)
		}
		return
	}
	switch word {
	case "ruok":
		io.WriteString(w, "imok")
	case "isro":
		io.WriteString(w, "rw")
	case "srvr":
		f.srvr(w, false)
	case "stat":
		f.srvr(w, true)
	case "mntr":
		f.mntr(w)
	case "envi":
		f.envi(w)
	case "conf":
		f.conf(w)
	case "cons":
		for _, c := range f.Server.Conns() {
			io.WriteString(w, consLine(c, true))
		}
		io.WriteString(w, "\n")
	case "dump":
		f.dump(w)
	case "wchs", "wchc", "wchp":
		f.watches(w, word)
	case "srst":
		f.Server.ResetStats()
		io.WriteString(w, "Server stats reset.\n")
	case "crst":
		f.Server.ResetStats()
		io.WriteString(w, "Connection stats reset.\n")
	}
}

func (f *FourLetterWords) allowed(word string) bool {
	if f.Whitelist == nil {
		return word == "srvr"
	}
	return slices.Contains(f.Whitelist, "*") || slices.Contains(f.Whitelist, word)
}

func (f *FourLetterWords) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// nodeCount is ZooKeeper's DataTree.getNodeCount: its node map holds the
// root twice, under "" and under "/" ("Rather than fight it, let root
// have an alias"), so a fresh server reports 5 nodes where the simulated
// server holds 4.
func nodeCount(st Stats) int { return st.NodeCount + 1 }

// srvr writes srvr, or stat with the clients listed
// (StatCommand.commandRun).
func (f *FourLetterWords) srvr(w io.Writer, withClients bool) {
	st := f.Server.Stats()
	fmt.Fprintf(w, "Zookeeper version: %s\n", ServerVersion)
	if withClients {
		io.WriteString(w, "Clients:\n")
		for _, c := range f.Server.Conns() {
			io.WriteString(w, consLine(c, false))
		}
		io.WriteString(w, "\n")
	}
	fmt.Fprintf(w, "Latency min/avg/max: %d/%s/%d\n", st.MinLatencyMs, javaDouble(st.AvgLatencyMs), st.MaxLatencyMs)
	fmt.Fprintf(w, "Received: %d\n", st.Received)
	fmt.Fprintf(w, "Sent: %d\n", st.Sent)
	fmt.Fprintf(w, "Connections: %d\n", st.Connections)
	fmt.Fprintf(w, "Outstanding: %d\n", st.Outstanding)
	fmt.Fprintf(w, "Zxid: 0x%x\n", uint64(st.Zxid))
	fmt.Fprintf(w, "Mode: %s\n", st.Mode)
	fmt.Fprintf(w, "Node count: %d\n", nodeCount(st))
}

// javaDouble formats a whole number of milliseconds as Java prints a
// double (0.0, 12.0).
func javaDouble(ms int64) string { return strconv.FormatInt(ms, 10) + ".0" }

// mntr writes the monitoring keys zklab has figures for, in the order
// ZooKeeper 3.8 lists them; the hundreds of JVM, disk, quorum and
// request-processor metrics a real server adds are left out.
func (f *FourLetterWords) mntr(w io.Writer) {
	st := f.Server.Stats()
	kv := func(k string, v any) { fmt.Fprintf(w, "zk_%s\t%v\n", k, v) }
	kv("version", ServerVersion)
	kv("server_state", st.Mode)
	kv("ephemerals_count", st.Ephemerals)
	kv("num_alive_connections", st.Connections)
	kv("avg_latency", javaDouble(st.AvgLatencyMs))
	kv("outstanding_requests", st.Outstanding)
	kv("znode_count", nodeCount(st))
	kv("global_sessions", st.Sessions)
	kv("packets_sent", st.Sent)
	kv("packets_received", st.Received)
	kv("watch_count", st.Watches)
	kv("min_latency", st.MinLatencyMs)
	kv("approximate_data_size", st.ApproximateDataSize)
	kv("local_sessions", 0)
	kv("uptime", f.now().Sub(st.Started).Milliseconds())
	kv("max_latency", st.MaxLatencyMs)
}

// envi writes the environment (EnvCommand): ZooKeeper's keys where zklab
// has a value, the Java ones replaced by Go's.
func (f *FourLetterWords) envi(w io.Writer) {
	io.WriteString(w, "Environment:\n")
	kv := func(k, v string) { fmt.Fprintf(w, "%s=%s\n", k, v) }
	kv("zookeeper.version", ServerVersion)
	host, _ := os.Hostname()
	kv("host.name", host)
	kv("go.version", runtime.Version())
	kv("os.name", javaOSName(runtime.GOOS))
	kv("os.arch", runtime.GOARCH)
	if u, ok := os.LookupEnv("USER"); ok {
		kv("user.name", u)
	}
	if h, err := os.UserHomeDir(); err == nil {
		kv("user.home", h)
	}
	if d, err := os.Getwd(); err == nil {
		kv("user.dir", d)
	}
}

// javaOSName is Java's os.name for a GOOS.
func javaOSName(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	}
	return goos
}

// conf writes the settings (ConfCommand, ZooKeeperServer.dumpConf) in a
// standalone server's order.
func (f *FourLetterWords) conf(w io.Writer) {
	c := f.Conf
	dataDir := c.DataDir
	if dataDir != "" {
		dataDir += "/version-2" // FileTxnSnapLog's layout, as ZooKeeper reports it
	}
	fmt.Fprintf(w, "clientPort=%d\n", c.ClientPort)
	io.WriteString(w, "secureClientPort=-1\n")
	fmt.Fprintf(w, "dataDir=%s\ndataDirSize=0\n", dataDir)
	fmt.Fprintf(w, "dataLogDir=%s\ndataLogSize=0\n", dataDir)
	fmt.Fprintf(w, "tickTime=%d\n", c.TickTimeMs)
	fmt.Fprintf(w, "maxClientCnxns=%d\n", c.MaxClientCnxns)
	fmt.Fprintf(w, "minSessionTimeout=%d\n", c.MinSessionTimeoutMs)
	fmt.Fprintf(w, "maxSessionTimeout=%d\n", c.MaxSessionTimeoutMs)
	io.WriteString(w, "clientPortListenBacklog=-1\n")
	io.WriteString(w, "serverId=0\n")
}

// lastOpNames are the four-letter names a connection's last operation
// goes by in cons (FinalRequestProcessor's lastOp; ServerCnxn's "NA"
// before any).
var lastOpNames = map[sim.OpCode]string{
	-11: "CLOS", -10: "SESS", 1: "CREA", 2: "DELE", 3: "EXIS", 4: "GETD", 5: "SETD", 6: "GETA", 7: "SETA",
	8: "GETC", 9: "SYNC", 11: "PING", 12: "GETC", 13: "CHEC", 14: "MULT", 15: "CREA", 16: "RECO",
	17: "CHKW", 18: "REMW", 19: "CREA", 20: "DELE", 21: "CREA", 22: "MLTR", 101: "SETW", 103: "GETE",
	104: "GETACN", 105: "STW2", 106: "ADDW", 107: "HOMI",
}

func lastOpName(c ConnInfo) string {
	if c.LastOp == 0 {
		if c.Session != 0 {
			return "SESS" // the handshake was its last request
		}
		return "NA"
	}
	if name, ok := lastOpNames[c.LastOp]; ok {
		return name
	}
	return "NA"
}

// consLine is one connection as cons (full) and stat (brief) list it
// (ServerCnxn.dumpConnectionInfo). The bracket holds the selector's
// interest set: 1 (read) for a connection being served, 0 for one with no
// session yet, like the four-letter word's own.
func consLine(c ConnInfo, full bool) string {
	interest := 1
	if c.Session == 0 {
		interest = 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, " /%s[%d](queued=%d,recved=%d,sent=%d", c.Remote, interest, c.Queued, c.Received, c.Sent)
	if full && c.Session != 0 {
		fmt.Fprintf(&b, ",sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			uint64(c.Session), lastOpName(c), c.Opened.UnixMilli(), c.TimeoutMs, uint32(c.LastCxid), uint64(c.LastZxid),
			unixMilli(c.LastReply), c.LastLatencyMs, c.MinLatencyMs, c.AvgLatencyMs, c.MaxLatencyMs)
	}
	b.WriteString(")\n")
	return b.String()
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// javaDate is java.util.Date.toString's form.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

// sessionlessCnxnTimeout is zookeeper.nio.sessionlessCnxnTimeout: how long
// a connection without a session may stay (NIOServerCnxnFactory).
const sessionlessCnxnTimeout = 10 * time.Second

// dump writes the session tracker's sessions grouped by expiry time, the
// ephemerals of each session, and the connections grouped by expiry time
// (DumpCommand: SessionTrackerImpl.dumpSessions, DataTree.dumpEphemerals,
// NIOServerCnxnFactory.dumpConnections).
func (f *FourLetterWords) dump(w io.Writer) {
	var sessions []sim.SessionInfo
	f.Server.Inspect(func(srv *sim.Server) { sessions = srv.SessionInfos() })
	conns := f.Server.Conns()
	at := func(ms int64) time.Time { return f.Epoch.Add(time.Duration(ms) * time.Millisecond) }

	io.WriteString(w, "SessionTracker dump:\n")
	byExpiry := map[int64][]int64{}
	var deadlines []int64
	for _, s := range sessions {
		if _, ok := byExpiry[s.ExpiresMs]; !ok {
			deadlines = append(deadlines, s.ExpiresMs)
		}
		byExpiry[s.ExpiresMs] = append(byExpiry[s.ExpiresMs], s.ID)
	}
	slices.Sort(deadlines)
	fmt.Fprintf(w, "Session Sets (%d)/(%d):\n", len(deadlines), len(sessions))
	for _, d := range deadlines {
		fmt.Fprintf(w, "%d expire at %s:\n", len(byExpiry[d]), at(d).Format(javaDate))
		for _, id := range byExpiry[d] {
			fmt.Fprintf(w, "\t0x%x\n", uint64(id))
		}
	}

	io.WriteString(w, "ephemeral nodes dump:\n")
	var withEphemerals []sim.SessionInfo
	for _, s := range sessions {
		if len(s.Ephemerals) > 0 {
			withEphemerals = append(withEphemerals, s)
		}
	}
	fmt.Fprintf(w, "Sessions with Ephemerals (%d):\n", len(withEphemerals))
	for _, s := range withEphemerals {
		fmt.Fprintf(w, "0x%x:\n", uint64(s.ID))
		for _, p := range s.Ephemerals {
			fmt.Fprintf(w, "\t%s\n", p)
		}
	}

	// NIOServerCnxnFactory keeps connections in an ExpiryQueue: each
	// expires its timeout (its session's, or sessionlessCnxnTimeout
	// before it has one) after it was last heard from, rounded up to the
	// queue's interval, sessionlessCnxnTimeout.
	io.WriteString(w, "Connections dump:\n")
	type group struct {
		at    time.Time
		lines []string
	}
	var groups []*group
	for _, c := range conns {
		timeout := sessionlessCnxnTimeout
		if c.Session != 0 {
			timeout = time.Duration(c.TimeoutMs) * time.Millisecond
		}
		last := c.Opened
		if c.LastReply.After(last) {
			last = c.LastReply
		}
		t := last.Add(timeout).Truncate(sessionlessCnxnTimeout).Add(sessionlessCnxnTimeout)
		line := fmt.Sprintf("\tip: /%s sessionId: 0x%x\n", c.Remote, uint64(c.Session))
		i := slices.IndexFunc(groups, func(g *group) bool { return g.at.Equal(t) })
		if i < 0 {
			groups = append(groups, &group{at: t})
			i = len(groups) - 1
		}
		groups[i].lines = append(groups[i].lines, line)
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return a.at.Compare(b.at) })
	fmt.Fprintf(w, "Connections Sets (%d)/(%d):\n", len(groups), len(conns))
	for _, g := range groups {
		fmt.Fprintf(w, "%d expire at %s:\n", len(g.lines), g.at.Format(javaDate))
		for _, l := range g.lines {
			io.WriteString(w, l)
		}
	}
}

// watches writes wchs (WatchCommand: counts), wchc (by session) or wchp
// (by path), sessions and paths in order (ZooKeeper's follow its hash
// maps).
func (f *FourLetterWords) watches(w io.Writer, word string) {
	// ZooKeeper reports its data watches only (DataTree.getWatchesSummary,
	// getWatches and getWatchesByPath ask dataWatches alone): a child
	// watch of getChildren does not show, as on a real server.
	var list []sim.Watch
	f.Server.Inspect(func(srv *sim.Server) {
		for _, wt := range srv.Watches() {
			if !wt.Child {
				list = append(list, wt)
			}
		}
	})
	sessionOf := map[sim.ConnID]int64{}
	for _, c := range f.Server.Conns() {
		sessionOf[c.ID] = c.Session
	}
	switch word {
	case "wchs":
		paths, conns := map[string]bool{}, map[sim.ConnID]bool{}
		for _, wt := range list {
			paths[wt.Path], conns[wt.Conn] = true, true
		}
		fmt.Fprintf(w, "%d connections watching %d paths\nTotal watches:%d\n", len(conns), len(paths), len(list))
	case "wchc":
		bySession := map[int64][]string{}
		var order []int64
		for _, wt := range list {
			id := sessionOf[wt.Conn]
			if _, ok := bySession[id]; !ok {
				order = append(order, id)
			}
			if !slices.Contains(bySession[id], wt.Path) {
				bySession[id] = append(bySession[id], wt.Path)
			}
		}
		slices.Sort(order)
		for _, id := range order {
			fmt.Fprintf(w, "0x%x\n", uint64(id))
			for _, p := range bySession[id] {
				fmt.Fprintf(w, "\t%s\n", p)
			}
		}
		io.WriteString(w, "\n")
	case "wchp":
		var lastPath string
		var seen []int64
		for i, wt := range list {
			if i == 0 || wt.Path != lastPath {
				fmt.Fprintf(w, "%s\n", wt.Path)
				lastPath, seen = wt.Path, seen[:0]
			}
			id := sessionOf[wt.Conn]
			if !slices.Contains(seen, id) {
				seen = append(seen, id)
				fmt.Fprintf(w, "\t0x%x\n", uint64(id))
			}
		}
		io.WriteString(w, "\n")
	}
}
