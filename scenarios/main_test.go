package scenarios_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenLock$", "-test.count=1")
	cmd.Env = append(os.Environ(), envReadme+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		t.Fatalf("the broken lock passed:\n%s", out.String())
	}
	for _, want := range []string{"verdict: FAIL", "zk-holders", "scenario file: ", "broken-lock-"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
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
