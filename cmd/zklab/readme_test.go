package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExample is one "$ zklab ..." block of the README: the command and
// the lines shown of its output ("..." marks lines left out; a line
// ending in "(...)" is shown cut short).
type readmeExample struct {
	line int
	args []string
	want []string
}

func readmeExamples(t *testing.T, readme string) []readmeExample {
	var out []readmeExample
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "    $ zklab ")
		if !ok {
			continue
		}
		ex := readmeExample{line: i + 1, args: strings.Fields(cmd)}
		for i++; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || lines[i] == ""); i++ {
			if l := strings.TrimPrefix(lines[i], "    "); strings.Trim(l, " .") != "" {
				ex.want = append(ex.want, l)
			}
		}
		i--
		out = append(out, ex)
	}
	if len(out) == 0 {
		t.Fatal("no examples found in the README")
	}
	return out
}

// Every example of the README on the simulator is the program's real
// output: each line it shows is in the output, in order. Those on a real
// server differ from run to run (sessions, times) and are left out, as is
// `zklab serve` (it runs until stopped), and so is the 1000-schedule
// exploration unless ZKLAB_README_LONG is set.
func TestReadmeExamplesAreRealOutput(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The examples run from the repository's root; "findings" is theirs
	// to write, so they run in a directory of their own that sees the
	// repository's cmd/.
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "cmd"), filepath.Join(dir, "cmd")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, ex := range readmeExamples(t, string(readme)) {
		cmd := strings.Join(ex.args, " ")
		if strings.Contains(cmd, "--zk") {
			continue
		}
		if ex.args[0] == "serve" {
			continue // a server runs until it is stopped: serve's own tests hold its output
		}
		if strings.Contains(cmd, "--runs 1000") && os.Getenv("ZKLAB_README_LONG") == "" {
			continue
		}
		_, out, errOut := zklab(t, ex.args...)
		got := strings.Split(out+errOut, "\n")
		at := 0
		for _, want := range ex.want {
			prefix, cut := strings.CutSuffix(want, " (...)")
			found := false
			for ; at < len(got); at++ {
				if got[at] == want || (cut && strings.HasPrefix(got[at], prefix+" (")) {
					found, at = true, at+1
					break
				}
			}
			if !found {
				t.Errorf("README.md:%d: zklab %s: the line %q is not in the output (in order):\n%s%s", ex.line, cmd, want, out, errOut)
				break
			}
		}
	}
}

// The README's CLI section says how to install zklab, documents every
// flag of explore, and counts in good English.
func TestReadmeCLISection(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go install ./cmd/zklab", "--shrink-time", "--junit", "zklab run FILE\\|DIR\\|NAME", "**Exit codes**", "### Limits"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("the README lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`\b1 (clients|cycles|faults|leases|writes|schedules|operations|expectations|lost updates)\b`).Find(readme); m != nil {
		t.Errorf("the README says %q", m)
	}
}
