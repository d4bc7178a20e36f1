package main

import (
	"strings"
	"testing"
)

// The ensemble's flags and files: bad sizes, and faults on servers that
// do not exist, exit 2 with one line naming what is wrong (FILE:LINE for
// a file).
func TestEnsembleBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--servers", "2", "fair-lock-10"}, "--servers: want 1, 3 or 5 servers, got 2"},
		{[]string{"run", "--servers", "0", "fair-lock-10"}, "--servers: want 1, 3 or 5 servers, got 0"},
		{[]string{"run", "testdata/bad-ensemble.scenario"}, "testdata/bad-ensemble.scenario:4: fault on s4, but there are 3 servers"},
		{[]string{"run", "testdata/bad-ensemble-standalone.scenario"}, "testdata/bad-ensemble-standalone.scenario:3: fault kill-leader strikes an ensemble, but the scenario runs one server"},
		{[]string{"explore", "--recipe", "fair-lock", "--servers", "2"}, "--servers: want 1, 3 or 5 servers, got 2"},
		{[]string{"explore", "--recipe", "fair-lock", "--servers", "0"}, "--servers: want 1, 3 or 5 servers, got 0"},
		{[]string{"explore", "--recipe", "fair-lock", "--servers", "three"}, `--servers: want sizes like 3 or 1,3, got "three"`},
		{[]string{"explore", "--recipe", "fair-lock", "--servers", "3,3"}, "--servers: 3 given twice"},
		{[]string{"explore", "--recipe", "fair-lock", "--faults", "lag"}, "--faults: lag strikes an ensemble: add --servers 3"},
		{[]string{"explore", "--recipe", "fair-lock", "--faults", "melt"}, "on an ensemble lag,crash-server,partition-server,isolate-leader,kill-leader,lose-quorum"},
		{[]string{"explore", "--recipe", "fair-lock", "--servers", "3", "--faults", "kill-leader", "--zk", "127.0.0.1:2181"}, "--faults: kill-leader cannot be injected on a real ensemble"},
	} {
		code, _, errOut := zklab(t, tc.args...)
		if code != 2 {
			t.Errorf("zklab %s: exit %d, want 2 (stderr %q)", strings.Join(tc.args, " "), code, errOut)
		}
		if !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("zklab %s: stderr %q, want one line containing %q", strings.Join(tc.args, " "), errOut, tc.want)
		}
	}
}

// The stale-read story of a 3-server ensemble, and its twin with sync:
// new goldens beside TestCommands's.
func TestStaleSplitBrainStory(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"splitbrain-stale.txt", []string{"splitbrain", "--stale"}, 1},
		{"splitbrain-stale-sync.txt", []string{"splitbrain", "--stale", "--sync"}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := zklab(t, tc.args...)
			if code != tc.code {
				t.Fatalf("zklab %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, errOut)
			}
			golden(t, tc.golden, out)
		})
	}
	for _, args := range [][]string{{"splitbrain", "--sync"}, {"splitbrain", "--stale", "--fencing"}} {
		if code, _, errOut := zklab(t, args...); code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("zklab %s: exit %d, stderr %q; want 2 and one line", strings.Join(args, " "), code, errOut)
		}
	}
}
