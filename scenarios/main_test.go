package scenarios_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zklab/zklab/recipes/zkconn/zktest"
)

// envReadme runs the README's failing example in a child process.
const envReadme = "ZKLAB_README_EXAMPLE"

// TestMain leaves out TestBrokenLock, the README's example of a failing
// test, unless a child process is asked to run it.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(envReadme) == "" {
		skip := "^TestBrokenLock$"
		if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
			skip = f.Value.String() + "|" + skip
		}
		flag.Set("test.skip", skip)
	}
	os.Exit(zktest.Main(m))
}

// TestReadmeExample runs the README's example, TestBrokenLock, in a child
// process of this test binary and checks that it fails with a verdict
// and the path of a scenario file.
func TestReadmeExample(t *testing.T) {
	bin, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	// The child runs in a directory of its own: the scenario file it keeps
	// (testdata/zklab, next to the test) goes there.
	dir := t.TempDir()
	child := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"-test.run=^TestBrokenLock$", "-test.count=1"}, args...)...)
		cmd.Env = append(os.Environ(), envReadme+"=1")
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err == nil {
			t.Fatalf("the broken lock passed:\n%s", out.String())
		}
		return out.String()
	}
	out := child()
	for _, want := range []string{"verdict: FAIL", "zk-holders", "scenario file: testdata/zklab/broken-lock-",
		"replay: go test github.com/zklab/zklab/scenarios -run '^TestBrokenLock$' -count=1 -zklab.replay testdata/zklab/broken-lock-"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "testdata/zklab/broken-lock-*.scenario"))
	if len(files) != 1 {
		t.Fatalf("want the one scenario file kept in testdata/zklab, got %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recipe broken-lock\n", "lock mutex\n", "go-test github.com/zklab/zklab/scenarios TestBrokenLock\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the scenario file lacks %q:\n%s", want, data)
		}
	}
	// The replay command's flag replays the file with the test's own
	// constructor, and fails as the exploration did.
	rel, _ := filepath.Rel(dir, files[0])
	out = child("-zklab.replay", rel)
	for _, want := range []string{"broken-lock replayed from " + rel, "verdict: FAIL", "lock-linearizable   fail", "c2 acquired token="} {
		if !strings.Contains(out, want) {
			t.Errorf("the replay's output lacks %q:\n%s", want, out)
		}
	}
	// The README shows exactly this code.
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile(`(?s)// README begin\n(.*)\n// README end`).FindSubmatch(src)
	for _, name := range []string{"README.md", "../README.md"} {
		readme, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if snippet == nil || !bytes.Contains(readme, snippet[1]) {
			t.Errorf("%s does not show the code between the README markers of readme_example_test.go", name)
		}
	}
	// The example is a whole file, package clause and imports included,
	// short enough to read at a glance.
	if !bytes.HasPrefix(snippet[1], []byte("package ")) || !bytes.Contains(snippet[1], []byte("\nimport (")) {
		t.Errorf("the README example does not start with its package clause and imports")
	}
	if n := bytes.Count(snippet[1], []byte("\n")) + 1; n > 35 {
		t.Errorf("the README example is %d lines, want at most 35", n)
	}
}
