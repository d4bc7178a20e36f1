package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/scenarios"
	"github.com/zklab/zklab/sim"
)

func init() {
	register(command{
		name:    "explore",
		summary: "explore fault schedules of a recipe; shrink a violation into a scenario file",
		usage: `Usage: zklab explore --recipe NAME [--clients N] [--cycles N] [--faults LIST]
                     [--runs N | --time D] [--seed S] [--strategy S] [--depth D]
                     [--store fenced|unfenced] [--leases N] [--out DIR] [--shard K/N]
                     [--json] [--shrink-time D] [--session-timeout D] [--hold D] [--parallel N]
                     [--workload NAME] [--corpus DIR] [--zk HOST:PORT[,...]] [--servers LIST]

Runs the recipe's workload (acquire, read and write a protected store,
release) under drawn fault schedules and scheduling decisions, and checks
every run. On a violation it shrinks the run, writes it as a scenario file
in --out and prints the command that replays it. The same seed explores
the same schedules. --shard K/N explores the K-th of N disjoint parts of
the seed space, for a batch of machines; --parallel N runs N schedules
at once on this one (default: every core), and for a given seed and
--runs the schedules, the violation and the shrunk file do not depend on
N. With --time (alone or with --runs) the seed fixes another sequence,
drawn in chunks of 50, and the schedules run are its first ones, as many
as the time allows: how many differs from run to run
and with N, but a violation reported is always the first failing
schedule of the sequence (every schedule before it ran), so when two
explorations both reach it they report the same one and shrink it to the
same file (unless --shrink-time cuts a shrink short). On a terminal a
progress line on stderr shows the budget left, then the shrinking.

Strategies: random walks the schedule and draws each fault's step or
time; pct gives the clients' threads priorities with a few change points;
directed aims each fault at a phase of a client's (creating its node,
listing, waiting, holding, releasing, reconnecting...), those the
exploration has struck least so far most often (on an ensemble, half of
its schedules are a stale session instead: the follower a client is
connected to lags while the client pauses past its session); mix (the
default) takes the three in turn. The coverage report after the runs counts each fault
kind by the phase it struck and the events lock recipes care about, and
flags what was never reached.

--corpus DIR keeps the runs that reached something new (a fault kind
in a phase, an event) as scenario files in DIR, and the next exploration
with that DIR runs them first and starts from what they covered: its
report counts them, its directed schedules aim at what they missed, and
a kept run that fails now is reported at once. A nightly job that keeps
DIR builds on the last night's.

Fault kinds: drop-request, drop-reply, disconnect, partition, pause,
crash, expire, restart (default: all; "none" for none); on an ensemble
also lag, crash-server, partition-server, isolate-leader, kill-leader,
lose-quorum.

--servers LIST runs every schedule on an ensemble: --servers 3 on 3
servers, --servers 1,3 draws the size for each schedule (shrinking
towards the first). Each size is 1, 3 or 5; the default, 1, is the
standalone server, explored exactly as without the flag. With a size
above 1 the default fault kinds include the ensemble's, drawn only for
schedules of more than one server.

With --zk the runs go to a real ZooKeeper, each client through a local
fault proxy: every fault kind but restart (zklab does not run the
server), each striking where it strikes on the simulator, as with 'zklab
run --zk'; the server and the network decide the order,
so --strategy and --depth do not apply and a run is not replayed byte for
byte. A violation is shrunk by dropping faults and cycles while it still
shows within 3 runs, and the file is run again with 'zklab run --zk'.

`,
		run: runExplore,
	})
}

func runExplore(args []string, stdout, stderr io.Writer) error {
	c := find("explore")
	fs := newFlags(c)
	recipe := fs.String("recipe", "", "the recipe to explore (see 'zklab recipes')")
	clients := fs.Int("clients", 5, "the most clients a run draws")
	cycles := fs.Int("cycles", 3, "the most lock cycles per client a run draws")
	faultList := fs.String("faults", "all", "fault kinds a run may draw, comma-separated, or all, or none")
	runs := fs.Int("runs", 0, "stop after this many schedules (default 100 when --time is not set)")
	budget := fs.Duration("time", 0, "stop after this much wall time")
	seed := fs.Uint64("seed", 1, "exploration seed")
	strategy := fs.String("strategy", scenarios.StrategyMix, "exploration strategy: random, pct, directed (faults aimed at the phases least struck so far) or mix (the three in turn)")
	depth := fs.Int("depth", 3, "PCT bug depth")
	store := fs.String("store", "fenced", "the protected store: fenced or unfenced")
	leases := fs.Int("leases", 0, "the semaphore's number of leases (semaphore only; default 1)")
	out := fs.String("out", ".", "directory for the scenario file of a violation")
	shard := fs.String("shard", "1/1", "explore part K of N of the seed space")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout")
	shrinkTime := fs.Duration("shrink-time", shrinkTimeDefault, "the most wall time shrinking a failure may take; a shrink cut short may differ between machines")
	workload := fs.String("workload", "", "the clients' program: "+strings.Join(scenarios.WorkloadNames(), ", ")+" (default cycles)")
	hold := fs.Duration("hold", 50*time.Millisecond, "the longest a holder holds between the store's read and write; each run draws from 0 to it")
	sessionTimeout := fs.Duration("session-timeout", 10*time.Second, "the session timeout every client asks for (a real server grants 4s to 40s by default)")
	corpus := fs.String("corpus", "", "keep the runs that reach something new in this directory, and start from them")
	parallel := fs.Int("parallel", 0, "schedules run at once (default: GOMAXPROCS)")
	zkServers := fs.String("zk", "", "explore on a real ZooKeeper at HOST:PORT[,HOST:PORT...] instead of the simulator")
	serverList := fs.String("servers", "1", "ensemble sizes a schedule runs on, comma-separated: 1, 3 or 5 each")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	sizes, err := parseServerSizes(*serverList)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %s", scenarios.Cut(fs.Arg(0)))
	}
	if *recipe == "" {
		return usagef("--recipe is required (see 'zklab recipes')")
	}
	if _, err := lookupRecipe(*recipe); err != nil {
		return err
	}
	if !slices.Contains(scenarios.Strategies, *strategy) {
		return usagef("--strategy: %s is not one of %s", scenarios.Cut(*strategy), strings.Join(scenarios.Strategies, ", "))
	}
	if *store != "fenced" && *store != "unfenced" {
		return usagef("--store: %s is neither fenced nor unfenced", scenarios.Cut(*store))
	}
	if *parallel < 0 {
		return usagef("--parallel: %d is negative", *parallel)
	}
	if err := checkExploreFlags(fs, *clients, *cycles, *runs, *budget, *depth, *leases, *sessionTimeout, *shrinkTime); err != nil {
		return err
	}
	if err := checkDurationFlag("hold", *hold, scenarios.MaxDuration); err != nil {
		return err
	}
	if *workload != "" && !slices.Contains(scenarios.WorkloadNames(), *workload) {
		return usagef("--workload: %s is not one of %s", scenarios.Cut(*workload), strings.Join(scenarios.WorkloadNames(), ", "))
	}
	if *leases > 0 && *recipe != "semaphore" {
		return usagef("--leases is for the semaphore recipe, not %s", *recipe)
	}
	kinds, err := parseFaultKinds(*faultList)
	if err != nil {
		return err
	}
	if err := checkServerKinds(kinds, sizes, *zkServers != ""); err != nil {
		return err
	}
	k, n, err := parseShard(*shard)
	if err != nil {
		return err
	}
	var servers []string
	if *zkServers != "" {
		if servers, err = zkList(*zkServers); err != nil {
			return err
		}
		if slices.Contains(kinds, sim.FaultRestart) {
			return usagef("--faults: %s cannot be injected on a real server (zklab does not run it)", sim.FaultRestart)
		}
	}
	o := scenarios.ExploreOptions{
		ZK:     servers,
		Recipe: *recipe, Clients: *clients, Cycles: *cycles, Faults: kinds,
		Runs: *runs, Time: *budget, Strategy: *strategy, Depth: *depth,
		Store: scenarios.StoreKind(*store), Dir: *out, ShrinkTime: *shrinkTime, Leases: *leases,
		SessionTimeout: *sessionTimeout, Parallel: *parallel, Corpus: *corpus, Hold: *hold, Workload: *workload,
		Servers: sizes,
		// Shard k of n explores seeds n*seed+k-1: the shards of one seed
		// never repeat each other's schedules.
		Seed: *seed*uint64(n) + uint64(k-1),
	}
	if isTerminal(stderr) {
		var last time.Duration
		o.Progress = func(p scenarios.ExploreProgress) {
			if p.Elapsed-last < 200*time.Millisecond && servers == nil {
				return
			}
			last = p.Elapsed
			fmt.Fprintf(stderr, "\r\033[K%s", exploreProgressLine(p))
		}
	}
	res, err := scenarios.Explore(o)
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		// The command's name is already the line's prefix.
		return usagef("%s", strings.TrimPrefix(err.Error(), "explore: "))
	}
	if *asJSON {
		return printExploreJSON(stdout, o, res)
	}
	faults := "faults " + joinKinds(scenarios.ExploredFaultKinds(sizes))
	if servers != nil {
		return printExploreZK(stdout, o, *seed, k, n, kinds, res)
	}
	switch {
	case kinds != nil && len(kinds) == 0:
		faults = "no faults"
	case len(kinds) > 0:
		faults = "faults " + joinKinds(kinds)
	}
	if sizes != nil {
		faults += ", " + serverSizesText(sizes)
	}
	fmt.Fprintf(stdout, "explored %s of %s (%s strategy, %s, seed %d, shard %d/%d): %d simulator steps\n",
		scenarios.Plural(res.Runs, "schedule"), *recipe, *strategy, faults, *seed, k, n, res.Steps)
	if *corpus != "" {
		fmt.Fprintf(stdout, "corpus %s: %d runs replayed first, %d new runs kept\n", *corpus, res.CorpusRuns, res.CorpusKept)
	}
	if res.Failure == nil {
		// What "no violation" covered; a violation speaks for itself
		// (--json has the coverage either way).
		if res.Coverage != nil {
			fmt.Fprint(stdout, res.Coverage.Text(coveredKinds(kinds, sizes)))
		}
		fmt.Fprintln(stdout, "no violation")
		return nil
	}
	if res.Runs == 0 && res.CorpusRuns > 0 {
		fmt.Fprintf(stdout, "a run the corpus kept fails now:\n\n%s\n", res.Failure.Verdict.String())
	} else {
		fmt.Fprintf(stdout, "violation found at schedule %d, shrunk to %s and %s:\n\n%s\n",
			res.Runs, scenarios.Plural(len(res.Failure.Scenario.Faults), "fault"), scenarios.Plural(len(res.Failure.Scenario.Schedule), "scheduling decision"), res.Failure.Verdict.String())
	}
	fmt.Fprintf(stdout, "scenario file: %s\nreplay it with:\n  zklab run %s\n", res.File, res.File)
	v := res.Failure.Verdict.Violations(nil)
	return violationError{fmt.Sprintf("%s: %s", v[0].Name, oneLineText(v[0].Detail))}
}

func printExploreJSON(w io.Writer, o scenarios.ExploreOptions, res *scenarios.ExploreResult) error {
	obj := map[string]any{
		"recipe": o.Recipe, "strategy": o.Strategy, "seed": o.Seed, "runs": res.Runs, "steps": res.Steps,
		"violations":           0,
		"elapsed_wall_seconds": res.Elapsed.Seconds(),
	}
	if o.Servers != nil {
		obj["servers"] = o.Servers
	}
	if o.ZK != nil {
		delete(obj, "strategy")
		delete(obj, "steps")
		obj["backend"] = "zookeeper"
		obj["events"] = res.Steps
	}
	if o.Corpus != "" {
		obj["corpus"] = map[string]any{"dir": o.Corpus, "replayed": res.CorpusRuns, "kept": res.CorpusKept}
	}
	if res.Coverage != nil {
		obj["coverage"] = map[string]any{
			"runs": res.Coverage.Runs, "faults": res.Coverage.Faults, "events": res.Coverage.Events,
			"never_reached": res.Coverage.Never(coveredKinds(o.Faults, o.Servers)),
		}
	}
	if res.Failure != nil {
		obj["violations"] = 1
		obj["file"] = res.File
		obj["command"] = res.Command
		obj["to_failure_wall_seconds"] = res.ToFailure.Seconds()
		var failed []string
		for _, c := range res.Failure.Verdict.Violations(nil) {
			failed = append(failed, c.Name)
		}
		obj["failed_checks"] = failed
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(obj); err != nil {
		return err
	}
	if res.Failure != nil {
		return violationError{"violation found: " + res.File}
	}
	return nil
}

// checkExploreFlags refuses a flag past its limit, naming that flag
// alone. --runs, --time and --leases are checked only when given: their
// zero default means "not set".
func checkExploreFlags(fs *flag.FlagSet, clients, cycles, runs int, budget time.Duration, depth, leases int, sessionTimeout, shrinkTime time.Duration) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := checkIntFlag("clients", clients, 1, scenarios.MaxClients); err != nil {
		return err
	}
	if err := checkIntFlag("cycles", cycles, 1, scenarios.MaxCycles); err != nil {
		return err
	}
	if clients*cycles > scenarios.MaxLockCycles {
		return usagef("--clients %d × --cycles %d is more lock cycles than a run may have (%d)", clients, cycles, scenarios.MaxLockCycles)
	}
	if set["runs"] {
		if err := checkIntFlag("runs", runs, 1, scenarios.MaxExploreRuns); err != nil {
			return err
		}
	}
	if set["time"] {
		if err := checkDurationFlag("time", budget, 1000*time.Hour); err != nil {
			return err
		}
	}
	if err := checkIntFlag("depth", depth, 1, 100); err != nil {
		return err
	}
	if set["leases"] {
		if err := checkIntFlag("leases", leases, 1, scenarios.MaxLeases); err != nil {
			return err
		}
	}
	if err := checkDurationFlag("session-timeout", sessionTimeout, scenarios.MaxDuration); err != nil {
		return err
	}
	return checkDurationFlag("shrink-time", shrinkTime, scenarios.MaxDuration)
}

// shrinkTimeDefault bounds shrinking generously: a shrink that ends by
// itself gives the same file on every machine, one cut short may not.
const shrinkTimeDefault = 2 * time.Minute

func parseFaultKinds(list string) ([]sim.FaultKind, error) {
	switch list {
	case "all", "":
		return nil, nil
	case "none":
		return []sim.FaultKind{}, nil
	}
	var kinds []sim.FaultKind
	items, err := splitFlagList("faults", list)
	if err != nil {
		return nil, err
	}
	for _, f := range items {
		k := sim.FaultKind(f)
		if !slices.Contains(sim.FaultKinds, k) && !slices.Contains(sim.ServerFaultKinds, k) {
			return nil, usagef("--faults: unknown fault kind %s (known: %s; on an ensemble %s)", scenarios.Cut(f), joinKinds(sim.FaultKinds), joinKinds(sim.ServerFaultKinds))
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

func joinKinds(kinds []sim.FaultKind) string {
	var s []string
	for _, k := range kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}

func parseShard(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 1 || k > n {
		return 0, 0, usagef("--shard: %s is not K/N with 1 <= K <= N", scenarios.Cut(s))
	}
	return k, n, nil
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// isTerminal reports whether w is a terminal, where a progress line may
// redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printExploreZK prints an exploration on a real server.
func printExploreZK(w io.Writer, o scenarios.ExploreOptions, seed uint64, k, n int, kinds []sim.FaultKind, res *scenarios.ExploreResult) error {
	faults := "faults " + joinKinds(o.Faults)
	if kinds != nil && len(kinds) == 0 {
		faults = "no faults"
	} else if kinds == nil {
		faults = "every fault kind but restart"
	}
	fmt.Fprintf(w, "explored %d runs of %s on ZooKeeper at %s (%s, seed %d, shard %d/%d), %v\n",
		res.Runs, o.Recipe, strings.Join(o.ZK, ","), faults, seed, k, n, res.Elapsed.Round(time.Second))
	if res.Failure == nil {
		fmt.Fprintln(w, "no violation")
		return nil
	}
	fmt.Fprintf(w, "violation found at run %d, shrunk to %s:\n\n%s\n", res.Runs+1, scenarios.Plural(len(res.Failure.Scenario.Faults), "fault"), res.Failure.Verdict.String())
	fmt.Fprintf(w, "timeline (event, client, what):\n%s\n", res.Failure.History())
	fmt.Fprintf(w, "scenario file: %s\nrun it again on the server with:\n  %s\nor on the simulator with:\n  zklab run %s\n", res.File, res.Command, res.File)
	v := res.Failure.Verdict.Violations(nil)
	return violationError{fmt.Sprintf("%s: %s", v[0].Name, oneLineText(v[0].Detail))}
}

// exploreProgressLine is the progress line of an exploration: the schedules
// run, the rate, the budget left, and while shrinking the runs tried.
func exploreProgressLine(p scenarios.ExploreProgress) string {
	elapsed := p.Elapsed.Round(time.Second)
	if p.Stage == scenarios.StageShrinking {
		return fmt.Sprintf("violation at schedule %d; shrinking: %d runs tried, %v elapsed, at most %v left", p.Runs, p.ShrinkRuns, elapsed, p.ShrinkLeft.Round(time.Second))
	}
	var left []string
	if p.Budget > 0 {
		left = append(left, fmt.Sprintf("%d schedules", max(0, p.Budget-p.Runs)))
	}
	if p.TimeBudget > 0 {
		left = append(left, max(0, p.TimeBudget-p.Elapsed).Round(time.Second).String())
	}
	return fmt.Sprintf("%d schedules, %.0f schedules/s on %d workers, 0 violations, %v elapsed, %s left",
		p.Runs, float64(p.Runs)/p.Elapsed.Seconds(), p.Workers, elapsed, strings.Join(left, " or "))
}

// coveredKinds are the fault kinds an exploration drew from: all of them
// for nil.
func coveredKinds(kinds []sim.FaultKind, servers []int) []sim.FaultKind {
	if kinds == nil {
		return scenarios.ExploredFaultKinds(servers)
	}
	return kinds
}

// parseServerSizes parses --servers: nil for the standalone server
// alone, so that the exploration draws exactly what it always drew.
func parseServerSizes(list string) ([]int, error) {
	items, err := splitFlagList("servers", list)
	if err != nil {
		return nil, err
	}
	var sizes []int
	for _, item := range items {
		n, err := strconv.Atoi(item)
		if err != nil {
			return nil, usagef("--servers: want sizes like 3 or 1,3, got %s", scenarios.Cut(item))
		}
		if err := scenarios.ValidServers(n); err != nil {
			return nil, usagef("--servers: %v", err)
		}
		if slices.Contains(sizes, n) {
			return nil, usagef("--servers: %d given twice", n)
		}
		sizes = append(sizes, n)
	}
	if len(sizes) == 1 && sizes[0] == 1 {
		return nil, nil
	}
	return sizes, nil
}

// serverSizesText says what an exploration ran on: "3 servers", or "1 or
// 3 servers" when it drew the size.
func serverSizesText(sizes []int) string {
	var s []string
	for _, n := range sizes {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, " or ") + " servers"
}

// checkServerKinds refuses the ensemble's fault kinds where no schedule
// has an ensemble, and on a real server.
func checkServerKinds(kinds []sim.FaultKind, sizes []int, real bool) error {
	for _, k := range kinds {
		if !slices.Contains(sim.ServerFaultKinds, k) {
			continue
		}
		if real {
			return usagef("--faults: %s cannot be injected on a real ensemble (zklab does not run its servers)", k)
		}
		if sizes == nil {
			return usagef("--faults: %s strikes an ensemble: add --servers 3", k)
		}
	}
	if real && sizes != nil {
		return usagef("--servers is for the simulator: with --zk the ensemble is the one named")
	}
	return nil
}
