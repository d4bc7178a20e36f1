package scenarios

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A corpus is a directory of scenario files an exploration keeps (its
// Corpus option): the runs that reached something no run before them had
// (a fault kind striking a phase, an event; see Coverage). The next
// exploration with the same corpus runs them first, counts what they
// reached, and so starts from there: its coverage report covers the
// corpus too, and its fault-directed schedules aim at what neither the
// corpus nor the runs so far struck. A nightly job that keeps the
// directory builds on the last night's.
//
// A corpus file is an ordinary scenario file, named after a hash of its
// contents; `zklab run FILE` replays it.

// corpusEntry is a corpus file read back.
type corpusEntry struct {
	file string
	sc   *Scenario
}

// readCorpus reads the scenario files of dir, in name order; a missing
// directory is an empty corpus.
func readCorpus(dir string) ([]corpusEntry, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.scenario"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []corpusEntry
	for _, name := range names {
		sc, err := ParseFile(name)
		if err != nil {
			return nil, fmt.Errorf("explore: corpus: %w", err)
		}
		out = append(out, corpusEntry{file: name, sc: sc})
	}
	return out, nil
}

// runCorpus runs the corpus of o: it returns what the runs covered, and
// the first that fails a check, if one does.
func runCorpus(o *ExploreOptions, entries []corpusEntry) (*Coverage, *Result, string, error) {
	cov := newCoverage()
	for _, en := range entries {
		if en.sc.Recipe != o.Recipe {
			continue // another recipe's corpus shares the directory
		}
		r, err := Run(en.sc, RunOptions{Recipe: o.New, Lock: o.Lock, CheckTimeout: o.CheckTimeout, Coverage: true, Znodes: o.Znodes, Workload: o.Program, Model: o.Model})
		if err != nil {
			return nil, nil, "", fmt.Errorf("explore: corpus %s: %w", en.file, err)
		}
		cov.Add(r.Coverage)
		if len(r.Verdict.Violations(o.Violations)) > 0 {
			return cov, r, en.file, nil
		}
	}
	return cov, nil, "", nil
}

// writeCorpus adds a run that reached something new to the corpus, with
// what it reached first in its header.
func writeCorpus(dir string, o *ExploreOptions, g int, sc *Scenario, novel []string) error {
	sc = sc.clone()
	sc.layout = nil
	sc.Expect = nil
	body := Format(sc)
	h := fnv.New64a()
	h.Write([]byte(body))
	name := filepath.Join(dir, fmt.Sprintf("%s-%016x.scenario", o.Recipe, h.Sum64()))
	var head strings.Builder
	fmt.Fprintf(&head, "# zklab corpus: schedule %d of an exploration of %s (strategy %s, seed %d)\n", g, o.Recipe, strategyOf(o.Strategy, g), o.Seed)
	fmt.Fprintf(&head, "# first to reach: %s\n#\n", strings.Join(novel, "; "))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(head.String()+body), 0o644)
}

// novelties lists what o reaches that c has not: "kind while phase" and
// events.
func (c *Coverage) novelties(o *Coverage) []string {
	var out []string
	for _, k := range sortedKinds(o) {
		for _, p := range o.phasesOf() {
			if o.Faults[k][p] > 0 && c.Faults[k][p] == 0 {
				out = append(out, fmt.Sprintf("%s while %s", k, p))
			}
		}
	}
	for _, e := range Events {
		if o.Events[e] > 0 && c.Events[e] == 0 {
			out = append(out, e)
		}
	}
	return out
}
