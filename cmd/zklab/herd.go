package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

// herdCountsMax is the most client counts one 'zklab herd' compares.
const herdCountsMax = 10

func init() {
	register(command{
		name:    "herd",
		summary: "count the herd effect: watch notifications per release, herd recipe beside no-herd recipe",
		usage: `Usage: zklab herd [--recipe NAME[,NAME...]] [--clients LIST] [--json] [--html OUT] [--zk HOST:PORT]

Queues N clients on one lock (one holding, N-1 waiting) and releases it
once every waiter is blocked again, until all have held it; counts the watch
notifications, getChildren calls and bytes of children lists returned.
On the simulator the figures are exact: N(N-1)/2 notifications for a
recipe whose waiters watch the children, N-1 for one whose waiters watch
their predecessor.

--clients takes up to 10 counts, each from 2 to 200: the herd recipe's
cost grows as N³ (N²/2 notifications, each answered by a getChildren of
up to N names), and 200 clients take seconds. On a terminal a progress
line goes to stderr.

`,
		run: runHerd,
	})
}

// herdResult is the figures of one recipe at one client count.
type herdResult struct {
	Recipe        string  `json:"recipe"`
	Clients       int     `json:"clients"`
	Releases      int     `json:"releases"`
	Notifications int     `json:"notifications"`
	PerRelease    float64 `json:"notifications_per_release"`
	GetChildren   int     `json:"get_children"`
	BytesReturned int     `json:"bytes_returned"`
	WallSeconds   float64 `json:"wall_seconds"`
}

func runHerd(args []string, stdout, stderr io.Writer) error {
	c := find("herd")
	fs := newFlags(c)
	recipeList := fs.String("recipe", "herd-lock,fair-lock", "recipes to compare, comma-separated")
	clientList := fs.String("clients", "10,50,100", "client counts, comma-separated")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout")
	htmlOut := fs.String("html", "", "write a self-contained HTML plot to this file")
	seed := fs.Uint64("seed", 1, "simulation seed")
	zkServers := fs.String("zk", "", "run on a real ZooKeeper at HOST:PORT[,HOST:PORT...] instead of the simulator")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %s", scenarios.Cut(fs.Arg(0)))
	}
	var names []string
	recipeItems, err := splitFlagList("recipe", *recipeList)
	if err != nil {
		return err
	}
	for _, n := range recipeItems {
		if _, err := lookupRecipe(n); err != nil {
			return err
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return usagef("--recipe names no recipe")
	}
	var counts []int
	countItems, err := splitFlagList("clients", *clientList)
	if err != nil {
		return err
	}
	if len(countItems) > herdCountsMax {
		return usagef("--clients: %d client counts, more than one run compares (%d)", len(countItems), herdCountsMax)
	}
	for _, s := range countItems {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 || n > scenarios.MaxHerdClients {
			return usagef("--clients: %s is not a client count from 2 to %d", scenarios.Cut(s), scenarios.MaxHerdClients)
		}
		counts = append(counts, n)
	}
	var results []herdResult
	where := "simulator"
	progress := isTerminal(stderr)
	for _, n := range counts {
		for _, name := range names {
			if progress {
				// The herd recipe's cost grows as N³: say what runs.
				fmt.Fprintf(stderr, "\r\033[K%s with %s (%d of %d)...", name, scenarios.Plural(n, "client"), len(results)+1, len(counts)*len(names))
			}
			start := time.Now()
			b, err := newBackend(*zkServers, *seed)
			if err != nil {
				return err
			}
			where = b.Name()
			r, err := herdRun(b, name, n)
			b.Close()
			if err != nil {
				return err
			}
			r.WallSeconds = time.Since(start).Seconds()
			results = append(results, r)
		}
	}
	if progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if *htmlOut != "" {
		if err := writeHerdHTML(*htmlOut, results); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"backend": where, "seed": *seed, "results": results})
	}
	if *zkServers != "" {
		fmt.Fprintf(stdout, "on %s (figures vary from run to run: a waiter may not have set its watch again before the next release)\n\n", where)
	}
	printHerdTable(stdout, results)
	return nil
}

// herdOnSim runs the herd workload on the simulator.
func herdOnSim(name string, n int, seed uint64) (herdResult, error) {
	b, _ := newBackend("", seed)
	defer b.Close()
	return herdRun(b, name, n)
}

// herdRun queues n clients on one lock (one holding, n-1 waiting); each
// holder releases only once every client still waiting is blocked in Wait
// again; it counts from the first release until all have held the lock.
// This is the workload of the recipes' herd test.
func herdRun(b backend, name string, n int) (herdResult, error) {
	r, _ := recipes.Lookup(name)
	stats := &herdStats{}
	var granted atomic.Int64
	var base herdCounts
	var mu sync.Mutex
	var failure error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	dir := b.Root() + "/locks/herd"
	for i := range n {
		c, err := b.NewClient(10 * time.Second)
		if err != nil {
			return herdResult{}, fmt.Errorf("client %d: %w", i+1, err)
		}
		conn := probeConn{Conn: c, stats: stats}
		lock := r.New(conn, dir, recipes.Options{})
		b.Go(c, fmt.Sprint("client", i+1), func(ctx context.Context) {
			// Queue in client order.
			c.Sleep(ctx, time.Duration(i)*10*time.Millisecond)
			lease, err := lock.Acquire(ctx)
			if err != nil {
				fail(fmt.Errorf("client %d: acquire: %w", i+1, err))
				return
			}
			held := granted.Add(1)
			// Release only once every client still waiting waits again.
			// The first sleep matters: a waiter may have an event pending,
			// and on the simulator a sleep ends only when every other task
			// is blocked.
			const pollsMax = 10_000
			for k := 0; ; k++ {
				c.Sleep(ctx, 10*time.Millisecond)
				if stats.waiting.Load() >= int64(n)-held {
					break
				}
				if k == pollsMax {
					fail(fmt.Errorf("%d of %d waiters blocked after %d polls", stats.waiting.Load(), int64(n)-held, k))
					break
				}
			}
			if held == 1 {
				base = stats.snapshot()
			}
			if err := lease.Release(ctx); err != nil {
				fail(fmt.Errorf("client %d: release: %w", i+1, err))
			}
		})
	}
	if err := b.Run(); err != nil {
		return herdResult{}, fmt.Errorf("herd run of %s with %d clients: %w", name, n, err)
	}
	if failure != nil {
		return herdResult{}, failure
	}
	end := stats.snapshot()
	res := herdResult{
		Recipe: name, Clients: n, Releases: n - 1,
		Notifications: int(end.notifications - base.notifications),
		GetChildren:   int(end.getChildren - base.getChildren),
		BytesReturned: int(end.bytes - base.bytes),
	}
	res.PerRelease = float64(res.Notifications) / float64(res.Releases)
	return res, nil
}

func printHerdTable(w io.Writer, results []herdResult) {
	fmt.Fprintf(w, "%-16s %7s %8s %13s %11s %11s %12s\n", "recipe", "clients", "releases", "notifications", "per release", "getChildren", "bytes")
	maxNotes := 1
	for _, r := range results {
		fmt.Fprintf(w, "%-16s %7d %8d %13d %11.1f %11d %12d\n", r.Recipe, r.Clients, r.Releases, r.Notifications, r.PerRelease, r.GetChildren, r.BytesReturned)
		maxNotes = max(maxNotes, r.Notifications)
	}
	fmt.Fprintln(w, "\nwatch notifications until every client has held the lock:")
	const width = 50
	for _, r := range results {
		bar := r.Notifications * width / maxNotes
		if bar == 0 && r.Notifications > 0 {
			bar = 1
		}
		fmt.Fprintf(w, "  %-16s n=%-4d %s %d\n", r.Recipe, r.Clients, strings.Repeat("█", bar), r.Notifications)
	}
}
