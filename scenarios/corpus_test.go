package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zklab/zklab/sim"
)

// An exploration with a corpus keeps the runs that reached something new;
// the next one runs them first, counts what they reached, and keeps
// nothing more when it explores the same runs again.
func TestCorpusResumes(t *testing.T) {
	dir := t.TempDir()
	o := ExploreOptions{Recipe: "fair-lock", Runs: 120, Seed: 4, Strategy: StrategyRandom, Corpus: dir}
	first, err := Explore(o)
	if err != nil || first.Failure != nil {
		t.Fatalf("first: %v %+v", err, first)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.scenario"))
	if first.CorpusKept == 0 || len(files) != first.CorpusKept {
		t.Fatalf("kept %d runs, %d files", first.CorpusKept, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "# first to reach: ") {
			t.Errorf("%s does not say what it reached first:\n%s", f, data)
		}
		// Run as exploration runs it (a replay also checks the
		// simulator's own history, which exploration does not).
		sc, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(sc, RunOptions{})
		if err != nil || r.Verdict.Failed() {
			t.Errorf("%s does not replay cleanly: %v %v", f, err, r.Verdict)
		}
	}
	again, err := Explore(o)
	if err != nil || again.Failure != nil {
		t.Fatalf("again: %v %+v", err, again)
	}
	if again.CorpusRuns != len(files) || again.CorpusKept != 0 {
		t.Errorf("again: %d corpus runs (want %d), %d kept (want 0)", again.CorpusRuns, len(files), again.CorpusKept)
	}
	if again.Coverage.Runs != first.Coverage.Runs+len(files) {
		t.Errorf("again covered %d runs, want %d", again.Coverage.Runs, first.Coverage.Runs+len(files))
	}
	// What the first reached, the second counts from its corpus alone:
	// nothing the first reached is missing from the corpus's coverage.
	corpusOnly, _, _, err := runCorpus(&ExploreOptions{Recipe: "fair-lock", Violations: DefaultViolations}, mustReadCorpus(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if missing := corpusOnly.novelties(first.Coverage); len(missing) != 0 {
		t.Errorf("the corpus misses what the exploration reached: %v", missing)
	}
	if never := corpusOnly.Never(sim.FaultKinds); len(never) == 0 {
		t.Log("the corpus covers everything")
	}
}

// A corpus run that fails now is reported at once, with its file.
func TestCorpusFailureReported(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/split-brain-unfenced.scenario")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fair-lock-x.scenario"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Explore(ExploreOptions{Recipe: "fair-lock", Store: StoreUnfenced, Runs: 10, Corpus: dir})
	if err != nil || res.Failure == nil || !strings.HasSuffix(res.File, "fair-lock-x.scenario") || res.Runs != 0 {
		t.Fatalf("explore: %v %+v", err, res)
	}
}

func mustReadCorpus(t *testing.T, dir string) []corpusEntry {
	t.Helper()
	en, err := readCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	return en
}
