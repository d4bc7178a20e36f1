package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	t.Parallel() // simulation only: it runs beside the others once the real servers' tests are done
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
		// Library scenarios are regression tests: their expectations,
		// violations included, hold.
		{"run-split-brain-unfenced.txt", []string{"run", "split-brain-unfenced"}, 0},
		{"run-json.txt", []string{"run", "--json", "lost-reply-unprotected"}, 0},
		{"run-partition.txt", []string{"run", "testdata/contract/g-partition.scenario"}, 0},
		{"splitbrain.txt", []string{"splitbrain"}, 1},
		{"splitbrain-fencing.txt", []string{"splitbrain", "--fencing"}, 0},
		{"splitbrain-election.txt", []string{"splitbrain", "--election"}, 1},
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
		{[]string{"run"}, "want one scenario file, directory or name, got 0 arguments"},
		{[]string{"run", "no-such-scenario"}, "no such file, and no scenario of that name"},
		{[]string{"run", "testdata/bad.scenario"}, "testdata/bad.scenario:3:"},
		{[]string{"run", "testdata/user-recipe.scenario"}, `recipe "broken-lock" is a user's own, not one of zklab's: replay it with its constructor, in go test: go test example.com/mylock -run '^TestBrokenLock$' -count=1 -zklab.replay /`},
		{[]string{"explore"}, "--recipe is required"},
		{[]string{"explore", "--recipe", "fair-lock", "--faults", "meteor"}, `unknown fault kind "meteor"`},
		{[]string{"explore", "--recipe", "fair-lock", "--shard", "5/4"}, `--shard: "5/4" is not K/N`},
		{[]string{"explore", "--recipe", "fair-lock", "--strategy", "dfs"}, `--strategy: "dfs"`},
		{[]string{"splitbrain", "now"}, `unexpected argument "now"`},
		{[]string{"splitbrain", "--election", "--fencing"}, "--election tells both resources' stories"},
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
	t.Parallel() // simulation only: it runs beside the others once the real servers' tests are done
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
	t.Parallel() // simulation only: it runs beside the others once the real servers' tests are done
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
	// The file expects the violation it shows: it is a regression test
	// that passes while the bug is there.
	code, runOut, _ := zklab(t, "run", files[0])
	if code != 0 || !strings.Contains(runOut, "liveness            fail") || !strings.Contains(runOut, "of the file met") {
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
		{"run-violation", []string{"run", "testdata/zk-split-brain.scenario", "--zk", srv.Addr, "--trace"}, 0, "all 6 expectations of the file met"},
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
		if code != 0 {
			t.Fatalf("exit %d, want 0 (the file's expectations hold)\n%s", code, errOut)
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`data-client="c1"`, `data-client="c2"`, `class="hold"`, `class="request"`, `class="fault-band"`, `class="sees-expired"`, `class="store-lost"`, "porcupine: the lock&#39;s history"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("the report has no %s", want)
			}
		}
		screenshot(t, out, "run-zk-split-brain", 1500, 1000)
	})
	t.Run("run-unreachable", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := zklab(t, "run", "lost-reply-fair", "--zk", "127.0.0.1:1")
		if code != 2 || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Errorf("run --zk on a closed port: exit %d, want 2 and a line naming it; stderr:\n%s", code, errOut)
		}
	})
}

// The exit-code contract of 'zklab run' (run.go, judge): a file with
// expect lines is a regression test, a file without is judged by the
// checks that count as violations, and a run that reaches its limit is
// neither. Each file of testdata/contract says in a comment what it must
// give; the verdict line names the rule that decided.
func TestExitCodeContract(t *testing.T) {
	t.Parallel() // simulation only: it runs beside the others once the real servers' tests are done
	for _, tc := range []struct {
		file    string
		code    int
		verdict string
	}{
		{"a-pass.scenario", 0, "verdict: PASS (no expect lines, so the checks decide: none that counts as a violation failed)"},
		{"b-violation.scenario", 1, "verdict: FAIL (no expect lines, so the checks decide: liveness failed)"},
		{"c-expected-violation.scenario", 0, "verdict: PASS (the file's expect lines decide: all 2 expectations met)"},
		{"d-expectation-not-met.scenario", 1, "verdict: FAIL (the file's expect lines decide: 1 of 1 expectation not met)"},
		{"e-limit.scenario", 3, "verdict: LIMIT (the run reached its step limit, 1000000 steps, before the workload ended: neither a pass nor a violation)"},
		{"f-limit-expected.scenario", 0, "verdict: PASS (the file's expect lines decide: its one expectation met)"},
		{"g-partition.scenario", 0, "verdict: PASS (no expect lines"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			code, out, errOut := zklab(t, "run", filepath.Join("testdata", "contract", tc.file))
			if code != tc.code || !strings.Contains(out, "\n"+tc.verdict) {
				t.Errorf("exit %d, want %d and the line %q; output:\n%s%s", code, tc.code, tc.verdict, out, errOut)
			}
			if lines := strings.Count(errOut, "\n"); (code == 0) != (lines == 0) || lines > 1 {
				t.Errorf("exit %d with stderr %q: want one line for a nonzero exit, none for 0", code, errOut)
			}
		})
	}
	// A library scenario whose expectations hold passes, split-brain and
	// all, and its verdict line says the expectations decided.
	code, out, _ := zklab(t, "run", "split-brain-fenced")
	if code != 0 || !strings.Contains(out, "verdict: PASS (the file's expect lines decide: all 7 expectations met)") {
		t.Errorf("run split-brain-fenced: exit %d\n%s", code, out)
	}
}

// 'zklab run DIR' runs every scenario of the directory, one line each,
// and exits with the worst code; --junit writes the JUnit report.
func TestRunDirectory(t *testing.T) {
	t.Parallel() // simulation only: it runs beside the others once the real servers' tests are done
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut := zklab(t, "run", "testdata/contract", "--junit", junit)
	if code != 1 || errOut != "zklab run: testdata/contract: 2 of 7 scenarios failed\n" {
		t.Errorf("exit %d, want 1; stderr %q", code, errOut)
	}
	golden(t, "run-dir.txt", out)
	report, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "run-dir-junit.xml", string(report))

	// One file's JUnit report, and a directory with a file that cannot
	// be run: exit 2, one line for the file and one for the directory.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "good.scenario"), "recipe fair-lock\nclients 1\n")
	writeFile(t, filepath.Join(dir, "bad.scenario"), "recipe fair-lock\nclients none\n")
	code, _, errOut = zklab(t, "run", dir)
	if code != 2 || !strings.Contains(errOut, "bad.scenario:2: want an integer from 1 to 64") || strings.Count(errOut, "\n") != 2 {
		t.Errorf("directory with a bad file: exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = zklab(t, "run", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "no scenario files") {
		t.Errorf("empty directory: exit %d, stderr %q", code, errOut)
	}
	one := filepath.Join(t.TempDir(), "one.xml")
	if code, _, _ := zklab(t, "run", "testdata/contract/d-expectation-not-met.scenario", "--junit", one); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if b, _ := os.ReadFile(one); !strings.Contains(string(b), `tests="1" failures="1"`) {
		t.Errorf("one file's JUnit report:\n%s", b)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Bad input never crashes or hangs: every case of issue 16 exits 2 with
// one line on stderr naming the input, the bad value (cut short) and,
// for a file, FILE:LINE.
func TestBadInputOfIssue16(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, text)
		return p
	}
	fifo := filepath.Join(dir, "fifo.scenario")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := file("big.scenario", "recipe fair-lock\nclients 1\n"+strings.Repeat("#\n", scenarios.MaxFileBytes/2))
	longName := strings.Repeat("n", 1<<20)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", file("bare.scenario", "recipe fair-lock\nclients 1\nschedule\n")}, "bare.scenario:3: schedule: want choices like 0 2 1*5, got nothing"},
		{[]string{"run", file("recipe.scenario", "clients 1\nrecipe no-such-lock\n")}, `recipe.scenario:2: unknown recipe "no-such-lock" (known: `},
		{[]string{"run", file("mb.scenario", "recipe "+longName+"\nclients 1\n")}, "mb.scenario:1: a line of 1048583 bytes, more than a line may have (4096)"},
		{[]string{"run", file("name.scenario", "recipe "+longName[:100]+"\nclients 1\n")}, `name.scenario:1: recipe: a name of 100 bytes, longer than a recipe's name may be (64): "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"... (100 bytes)`},
		{[]string{"run", file("crlf.scenario", "recipe fair-lock\r\nclients 1\r\n")}, "crlf.scenario:1: the line ends with a carriage return (Windows line endings)"},
		{[]string{"run", file("hold.scenario", "recipe fair-lock\nclients 1\nhold 2562047h47m16.854775807s\n")}, `hold.scenario:3: "2562047h47m16.854775807s" is longer than a scenario's durations may be (24h0m0s)`},
		{[]string{"run", file("pause.scenario", "recipe fair-lock\nclients 1\nfault at=1ms pause c1 for=2562047h47m15.854775807s\n")}, `pause.scenario:3: fault: "2562047h47m15.854775807s" is longer than`},
		{[]string{"run", file("cycles.scenario", "recipe fair-lock\nclients 64\ncycles 1000000\n")}, "cycles.scenario:3: want an integer from 1 to 10000"},
		{[]string{"run", "/dev/zero"}, "/dev/zero: not a regular file (a device)"},
		{[]string{"run", fifo}, "fifo.scenario: not a regular file (a named pipe)"},
		{[]string{"run", big}, "big.scenario: 4194331 bytes, more than a scenario file may have (4194304)"},
		{[]string{"run", strings.Repeat("x", 1000)}, `"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"... (1000 bytes): no such file`},
		{[]string{"explore", "--recipe", "fair-lock", "--clients", "0"}, "zklab explore: --clients: 0 is not from 1 to 64\n"},
		{[]string{"explore", "--recipe", "fair-lock", "--clients", "100000"}, "zklab explore: --clients: 100000 is not from 1 to 64\n"},
		{[]string{"explore", "--recipe", "fair-lock", "--faults", ","}, `--faults: "," has an empty item`},
		{[]string{"explore", "--recipe", "fair-lock", "--shrink-time", "-1s"}, "--shrink-time: -1s is not a duration above 0"},
		{[]string{"explore", "--recipe", "fair-lock", "--runs", "0"}, "--runs: 0 is not from 1 to 10000000"},
		{[]string{"explore", "--recipe", "fair-lock", "--cycles", "10000", "--clients", "2"}, "--clients 2 × --cycles 10000 is more lock cycles than a run may have (10000)"},
		{[]string{"explore", "--recipe", "fair-lock", "--session-timeout", "9000h"}, "--session-timeout: 9000h0m0s is not a duration above 0 and at most 24h0m0s"},
		{[]string{"herd", "--clients", "10,,20"}, `--clients: "10,,20" has an empty item`},
		{[]string{"herd", "--clients", "1000"}, `--clients: "1000" is not a client count from 2 to 200`},
		{[]string{"herd", "--recipe", "fair-lock,"}, `--recipe: "fair-lock," has an empty item`},
	} {
		code, out, errOut := zklab(t, tc.args...)
		name := strings.Join(tc.args, " ")
		if len(name) > 100 {
			name = name[:100] + "..."
		}
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("zklab %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", name, code, cutForLog(out), cutForLog(errOut), tc.want)
		}
	}
	// zklab alone is bad usage: the usage goes to stderr, exit 2.
	code, out, errOut := zklab(t)
	if code != 2 || out != "" || !strings.HasPrefix(errOut, "zklab: a deterministic ZooKeeper simulator") {
		t.Errorf("zklab alone: exit %d, stdout %q, stderr %q", code, out, cutForLog(errOut))
	}
}

func cutForLog(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// A megabyte of a bad value is never echoed: not by zklab's own errors,
// nor by the flag package's, which quote a value whole.
func TestErrorsCutValuesShort(t *testing.T) {
	mb := strings.Repeat("v", 1<<20)
	for _, args := range [][]string{
		{mb},
		{"herd", "--recipe", mb},
		{"herd", "--clients", mb},
		{"explore", "--recipe", "fair-lock", "--clients", mb},
		{"explore", "--recipe", "fair-lock", "--strategy", mb},
		{"explore", "--recipe", mb},
		{"run", mb},
		{"run", "--zk", mb, "fair-lock-10"},
		{"recipes", mb},
	} {
		code, _, errOut := zklab(t, args...)
		if code != 2 || len(errOut) > 1200 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("zklab %s...: exit %d, %d bytes on stderr in %d lines; want exit 2 and one short line", args[0], code, len(errOut), strings.Count(errOut, "\n"))
		}
	}
}
