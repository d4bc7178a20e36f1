package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibrary replays every scenario of testdata: each parses, prints
// back byte for byte, replays to the same trace twice, and has the
// outcomes its expect lines say.
func TestLibrary(t *testing.T) {
	files, err := filepath.Glob("testdata/*.scenario")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".scenario"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := Parse(file, string(data))
			if err != nil {
				t.Fatal(err)
			}
			if got := Format(sc); got != string(data) {
				t.Errorf("Format(Parse(file)) differs:\n%s", got)
			}
			first, err := Replay(sc, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			second, err := Replay(sc, RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first.Trace != second.Trace {
				t.Errorf("two replays gave different traces")
			}
			if os.Getenv("ZKLAB_SHOW") != "" {
				t.Logf("%s", first.Verdict)
			}
			if len(sc.Expect) == 0 {
				t.Errorf("no expect lines")
			}
			for _, bad := range first.Verdict.Expectations(sc.Expect) {
				t.Errorf("%s", bad)
			}
		})
	}
}
