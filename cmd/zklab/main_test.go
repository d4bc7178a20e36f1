package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// zklab runs the CLI in this process and returns its exit code and output.
func zklab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/zklab -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if the change is right):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Every command's output is a golden file, and its exit code is checked.
func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"help.txt", []string{"--help"}, 0},
		{"recipes.txt", []string{"recipes"}, 0},
		{"herd.txt", []string{"herd", "--clients", "10,20"}, 0},
		{"herd-json.txt", []string{"herd", "--clients", "5", "--recipe", "herd-rw-lock,rw-lock", "--json"}, 0},
		{"tour.txt", []string{"tour"}, 0},
		{"scenarios.txt", []string{"scenarios"}, 0},
		{"run-fair-lock-10.txt", []string{"run", "fair-lock-10"}, 0},
		{"run-split-brain-unfenced.txt", []string{"run", "split-brain-unfenced"}, 1},
		{"run-json.txt", []string{"run", "--json", "lost-reply-unprotected"}, 1},
		{"splitbrain.txt", []string{"splitbrain"}, 1},
		{"splitbrain-fencing.txt", []string{"splitbrain", "--fencing"}, 0},
		{"explore-fair-lock.txt", []string{"explore", "--recipe", "fair-lock", "--runs", "40", "--seed", "3"}, 0},
		{"explore-shard.txt", []string{"explore", "--recipe", "rw-lock", "--runs", "20", "--shard", "2/4", "--strategy", "pct"}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := zklab(t, tc.args...)
			if code != tc.code {
				t.Fatalf("zklab %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, errOut)
			}
			if tc.golden == "herd-json.txt" {
				out = scrubWallClock(out)
			}
			golden(t, tc.golden, out)
		})
	}
}

// scrubWallClock blanks the fields named for wall-clock time, the only
// part of an output that may differ between runs of one seed.
func scrubWallClock(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.Contains(line, `"wall_seconds"`) {
			i := strings.Index(line, ":")
			line = line[:i+1] + " X" + strings.TrimRight(line[i+1:], "0123456789.e-+ \n,") + trailing(line)
		}
		b.WriteString(line)
	}
	return b.String()
}

func trailing(line string) string {
	if strings.HasSuffix(strings.TrimRight(line, "\n"), ",") {
		return ",\n"
	}
	return "\n"
}

// Bad usage and bad input exit 2 with one line on stderr naming what is
// wrong.
func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, ""},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"herd", "--recipe", "nope"}, `unknown recipe "nope"`},
		{[]string{"herd", "--clients", "1"}, `--clients: "1" is not a client count`},
		{[]string{"herd", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"herd", "--zk", "nohost"}, `--zk: "nohost" is not HOST:PORT`},
		{[]string{"recipes", "extra"}, `unexpected argument "extra"`},
		{[]string{"tour", "--x"}, "flag provided but not defined: -x"},
		{[]string{"run"}, "want one scenario file or name, got 0 arguments"},
		{[]string{"run", "no-such-scenario"}, "no such file, and no scenario of that name"},
		{[]string{"run", "testdata/bad.scenario"}, "testdata/bad.scenario:3:"},
		{[]string{"run", "testdata/user-recipe.scenario"}, `recipe "broken-lock" is a user's own, not one of zklab's: replay it with its constructor, in go test: go test example.com/mylock -run '^TestBrokenLock$' -count=1 -zklab.replay /`},
		{[]string{"explore"}, "--recipe is required"},
		{[]string{"explore", "--recipe", "fair-lock", "--faults", "meteor"}, `unknown fault kind "meteor"`},
		{[]string{"explore", "--recipe", "fair-lock", "--shard", "5/4"}, `--shard: "5/4" is not K/N`},
		{[]string{"explore", "--recipe", "fair-lock", "--strategy", "dfs"}, `--strategy: "dfs"`},
		{[]string{"splitbrain", "now"}, `unexpected argument "now"`},
		{[]string{"explore", "--recipe", "fair-lock", "--leases", "3"}, "--leases is for the semaphore recipe"},
	} {
		code, _, errOut := zklab(t, tc.args...)
		if code != 2 {
			t.Errorf("zklab %s: exit %d, want 2", strings.Join(tc.args, " "), code)
		}
		if tc.want != "" && (!strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1) {
			t.Errorf("zklab %s: stderr %q, want one line containing %q", strings.Join(tc.args, " "), errOut, tc.want)
		}
	}
}

// --help on every command prints its usage and exits 0.
func TestHelpEverywhere(t *testing.T) {
	for _, c := range commands {
		code, out, _ := zklab(t, c.name, "--help")
		if code != 0 || !strings.HasPrefix(out, "Usage: zklab "+c.name) {
			t.Errorf("zklab %s --help: exit %d, output %q", c.name, code, out)
		}
	}
}

// The same command with the same seed prints the same output, byte for
// byte.
func TestDeterministicOutput(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"herd", "--clients", "10", "--seed", "7"},
		{"explore", "--recipe", "persistent-lock", "--runs", "200", "--out", out},
	} {
		_, a, _ := zklab(t, args...)
		_, b, _ := zklab(t, args...)
		if a != b {
			t.Errorf("zklab %s printed different output on two runs", strings.Join(args, " "))
		}
	}
}

// A failure found by explore replays from its file with `zklab run` to the
// same violation, and the file prints back as it was written.
func TestExploreRunRoundTrip(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := zklab(t, "explore", "--recipe", "unprotected-lock", "--runs", "500", "--out", dir)
	if code != 1 {
		t.Fatalf("explore of a flawed recipe: exit %d, want 1; stderr %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.scenario"))
	if len(files) != 1 || !strings.Contains(out, "zklab run "+files[0]) {
		t.Fatalf("explore wrote %v and printed:\n%s", files, out)
	}
	text, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Parse(files[0], string(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := scenarios.Format(sc); got != string(text) {
		t.Errorf("the file does not print back as written:\n%s\n---\n%s", got, text)
	}
	code, runOut, _ := zklab(t, "run", files[0])
	if code != 1 || !strings.Contains(runOut, "liveness            fail") || !strings.Contains(runOut, "expectations of the file met") {
		t.Errorf("zklab run of the file: exit %d, output:\n%s", code, runOut)
	}
	_, again, _ := zklab(t, "run", files[0])
	if again != runOut {
		t.Error("two replays of one file printed different output")
	}
}

// On a real ZooKeeper: herd's figures of fair-lock are exact there too, and
// splitbrain corrupts the store without fencing and not with it.
func TestOnRealZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	t.Run("herd", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := zklab(t, "herd", "--zk", srv.Addr, "--recipe", "fair-lock", "--clients", "10", "--json")
		if code != 0 || !strings.Contains(out, `"notifications": 9,`) {
			t.Errorf("herd --zk: exit %d\n%s%s", code, out, errOut)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"splitbrain", []string{"splitbrain", "--zk", srv.Addr}, 1, "c2's update is lost"},
		{"splitbrain-fencing", []string{"splitbrain", "--zk", srv.Addr, "--fencing"}, 0, "and was refused"},
		// A fault given by step strikes where it struck on the simulator:
		// before c2's first call.
		{"run-library", []string{"run", "lost-reply-fair", "--zk", srv.Addr}, 0, "fault step=1 drop-reply c2: injected at"},
		{"run-json", []string{"run", "lost-reply-fair", "--zk", srv.Addr, "--json"}, 0, `"backend": "zookeeper"`},
		{"run-violation", []string{"run", "testdata/zk-split-brain.scenario", "--zk", srv.Addr, "--trace"}, 1, "all 6 expectations of the file met"},
		{"run-restart", []string{"run", "testdata/restart.scenario", "--zk", srv.Addr}, 2, ""},
		{"explore", []string{"explore", "--zk", srv.Addr, "--recipe", "fair-lock", "--runs", "2", "--clients", "2", "--cycles", "1", "--faults", "drop-reply,expire", "--json"}, 0, `"backend": "zookeeper"`},
		{"explore-restart", []string{"explore", "--zk", srv.Addr, "--recipe", "fair-lock", "--faults", "restart"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := zklab(t, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("zklab %s: exit %d, want %d and %q\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, out, errOut)
			}
			if code == 2 && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("zklab %s: want one clear line on stderr, got:\n%s", strings.Join(tc.args, " "), errOut)
			}
		})
	}
	// The report of a run on a real server draws what the clients sent,
	// received and saw: two lanes, holds, the pause and c1's expiry.
	t.Run("run-html", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(t.TempDir(), "report.html")
		code, _, errOut := zklab(t, "run", "testdata/zk-split-brain.scenario", "--zk", srv.Addr, "--html", out)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, errOut)
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`data-client="c1"`, `data-client="c2"`, `class="hold"`, `class="request"`, `class="fault"`, `class="expired"`, "porcupine: the lock&#39;s history"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("the report has no %s", want)
			}
		}
	})
	t.Run("run-unreachable", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := zklab(t, "run", "lost-reply-fair", "--zk", "127.0.0.1:1")
		if code != 2 || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Errorf("run --zk on a closed port: exit %d, want 2 and a line naming it; stderr:\n%s", code, errOut)
		}
	})
}
