package scenarios

import (
	"flag"
	"testing"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// quietTB is a TB that keeps what Test says.
type quietTB struct {
	logs, fatals []string
}

func (tb *quietTB) Helper()                      {}
func (tb *quietTB) Name() string                 { return "TestQuiet" }
func (tb *quietTB) Logf(f string, args ...any)   { tb.logs = append(tb.logs, f) }
func (tb *quietTB) Fatalf(f string, args ...any) { tb.fatals = append(tb.fatals, f) }

// TestShortRunsTheBudget: under go test -short rapid runs a fifth of the
// checks it is asked for, which rounded a budget's last runs to none and
// made Explore ask again forever. Under -short, a passing recipe with a
// Runs budget returns after exactly that many runs, and Test returns what
// it found.
func TestShortRunsTheBudget(t *testing.T) {
	f := flag.Lookup("test.short")
	old := f.Value.String()
	if err := f.Value.Set("true"); err != nil {
		t.Fatal(err)
	}
	defer f.Value.Set(old)
	if !testing.Short() {
		t.Fatal("testing.Short() is false after setting -test.short")
	}
	fair, _ := recipes.Lookup("fair-lock")
	tb := &quietTB{}
	res := Test(tb, "fair-lock", FromRecipe(fair.New), Options{Runs: 7, Clients: 2, Cycles: 1, Faults: []sim.FaultKind{}, Dir: t.TempDir()})
	if len(tb.fatals) > 0 {
		t.Fatalf("Test failed: %v", tb.fatals)
	}
	if res == nil || res.Runs != 7 || res.Failure != nil || res.File != "" {
		t.Errorf("Test returned %+v, want 7 runs and no failure", res)
	}
}

// TestReplayLines: the lines a user's recipe needs to replay parse,
// print back byte for byte, and are refused with their line when wrong.
func TestReplayLines(t *testing.T) {
	text := "recipe my-lock\nlock rwlock\nreaders c2\nclients 2\ngo-test example.com/mylock TestMyLock/sub_case\n"
	sc, err := Parse("f.scenario", text)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Lock != "rwlock" || sc.GoTest != "example.com/mylock TestMyLock/sub_case" {
		t.Errorf("parsed lock %q, go-test %q", sc.Lock, sc.GoTest)
	}
	if got := Format(sc); got != text {
		t.Errorf("Format(Parse(text)) = %q", got)
	}
	want := "go test example.com/mylock -run '^TestMyLock$/^sub_case$' -count=1 -zklab.replay testdata/zklab/f.scenario"
	if got := ReplayCommand(sc, "testdata/zklab/f.scenario"); got != want {
		t.Errorf("ReplayCommand = %q, want %q", got, want)
	}
	for _, tc := range []struct{ text, want string }{
		{"recipe x\nclients 1\nlock spinlock\n", `f.scenario:3: lock: want one of mutex, rwlock, semaphore, got "spinlock"`},
		{"recipe x\nclients 1\ngo-test example.com/x\n", `f.scenario:3: go-test: want PACKAGE TestName, got "example.com/x"`},
	} {
		if _, err := Parse("f.scenario", tc.text); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %s", tc.text, err, tc.want)
		}
	}
}
