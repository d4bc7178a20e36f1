package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

func init() {
	register(command{
		name:    "herd",
		summary: "count the herd effect: watch notifications per release, herd recipe beside no-herd recipe",
		usage: `Usage: zklab herd [--recipe NAME[,NAME...]] [--clients LIST] [--json] [--html OUT]

Queues N clients on one lock (one holding, N-1 waiting) and releases it
once every waiter is blocked again, until all have held it; counts the watch
notifications, getChildren calls and bytes of children lists returned.
On the simulator the figures are exact: N(N-1)/2 notifications for a
recipe whose waiters watch the children, N-1 for one whose waiters watch
their predecessor.

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
	fs := newFlags(c, stdout)
	recipeList := fs.String("recipe", "herd-lock,fair-lock", "recipes to compare, comma-separated")
	clientList := fs.String("clients", "10,50,100", "client counts, comma-separated")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout")
	htmlOut := fs.String("html", "", "write a self-contained HTML plot to this file")
	seed := fs.Uint64("seed", 1, "simulation seed")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	var names []string
	for _, n := range splitList(*recipeList) {
		if _, err := lookupRecipe(n); err != nil {
			return err
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return usagef("--recipe names no recipe")
	}
	var counts []int
	for _, s := range splitList(*clientList) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 || n > 1000 {
			return usagef("--clients: %q is not a client count from 2 to 1000", s)
		}
		counts = append(counts, n)
	}
	if len(counts) == 0 {
		return usagef("--clients names no client count")
	}
	var results []herdResult
	for _, n := range counts {
		for _, name := range names {
			start := time.Now()
			r, err := herdOnSim(name, n, *seed)
			if err != nil {
				return err
			}
			r.WallSeconds = time.Since(start).Seconds()
			results = append(results, r)
		}
	}
	if *htmlOut != "" {
		if err := writeHerdHTML(*htmlOut, results); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"backend": "simulator", "seed": *seed, "results": results})
	}
	printHerdTable(stdout, results)
	return nil
}

// herdOnSim runs the herd workload on the simulator.
func herdOnSim(name string, n int, seed uint64) (herdResult, error) {
	r, _ := recipes.Lookup(name)
	w := sim.New(sim.Config{Seed: seed})
	defer w.Close()
	stats := &herdStats{}
	granted := 0
	var base herdStats
	var failure error
	const dir = "/locks/herd"
	for i := range n {
		c, err := w.NewClient(sim.ClientConfig{SessionTimeout: 10 * time.Second})
		if err != nil {
			return herdResult{}, err
		}
		conn := probeConn{Conn: c, stats: stats}
		lock := r.New(conn, dir, recipes.Options{})
		w.Go(c, fmt.Sprint("client", i+1), func(ctx context.Context) {
			// Queue in client order.
			c.Sleep(ctx, time.Duration(i)*time.Millisecond)
			lease, err := lock.Acquire(ctx)
			if err != nil {
				failure = fmt.Errorf("client %d: acquire: %w", i+1, err)
				return
			}
			granted++
			// Release only once every client still waiting waits again.
			// The first sleep matters: a waiter may have an event pending,
			// and a sleep ends only when every other task is blocked.
			const pollsMax = 100_000
			for k := 0; ; k++ {
				c.Sleep(ctx, 10*time.Millisecond)
				if stats.waiting >= n-granted {
					break
				}
				if k == pollsMax {
					failure = fmt.Errorf("%d of %d waiters blocked after %d polls", stats.waiting, n-granted, k)
					break
				}
			}
			if granted == 1 {
				base = *stats
			}
			if err := lease.Release(ctx); err != nil {
				failure = fmt.Errorf("client %d: release: %w", i+1, err)
			}
		})
	}
	if err := w.Run(); err != nil {
		return herdResult{}, fmt.Errorf("herd run of %s with %d clients: %w", name, n, err)
	}
	if failure != nil {
		return herdResult{}, failure
	}
	res := herdResult{
		Recipe: name, Clients: n, Releases: n - 1,
		Notifications: stats.notifications - base.notifications,
		GetChildren:   stats.getChildren - base.getChildren,
		BytesReturned: stats.bytes - base.bytes,
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
