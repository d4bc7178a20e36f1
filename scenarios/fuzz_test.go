package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// The fuzz targets run their seed corpus (the f.Add calls and
// testdata/fuzz/NAME) with every 'go test'; 'make test' also fuzzes each
// for a few seconds. A longer search, as the README says:
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 10m ./scenarios
//	go test -run '^$' -fuzz '^FuzzRun$' -fuzztime 10m ./scenarios
//
// A failure is written under testdata/fuzz/NAME and replays with go test.

// FuzzParse holds the parser to its promise: any text either parses and
// prints back byte for byte, or is refused with errors that each name a
// line of the file, on one line. Nothing panics.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.scenario")
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	for _, text := range []string{
		"",
		"recipe fair-lock\nclients 1\nschedule\n",
		"recipe fair-lock\r\nclients 2\r\n",
		"recipe fair-lock\nclients 2\nhold 2562047h47m16.854775807s\n",
		"recipe fair-lock\nclients 2\nschedule 0*3 1\nschedule 2\n",
		ensembleText,
		"recipe fair-lock\nclients 2\nservers 5\nfault step=1 lag s5 for=0s\nfault at=0s lose-quorum for=24h0m0s\n",
		"recipe fair-lock\nclients 2\nservers 2\nfault at=1s kill-leader for=1s\n",
		"recipe rw-lock\nreaders c1 c2\nclients 2\ncycles 3\nthink 1.5s\nstore unfenced\nsession-timeout 4s\nseed 18446744073709551615\nfault step=3 drop-request c1\nfault at=0s restart for=1ms\nexpect run limit\nexpect herd.notifications -9223372036854775808\n",
	} {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sc, err := Parse("f.scenario", text)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.scenario:") {
					t.Fatalf("an error line that names no line of the file: %q", line)
				}
			}
			return
		}
		if got := Format(sc); got != text {
			t.Fatalf("Format(Parse(text)) differs:\n--- text\n%q\n--- printed\n%q", text, got)
		}
		if err := sc.clone().checkLimitsFilled(); err != nil {
			t.Fatalf("a parsed scenario past the limits: %v\n%s", err, text)
		}
	})
}

// checkLimitsFilled is checkLimits after the defaults Run fills in.
func (s *Scenario) checkLimitsFilled() error {
	s.fillDefaults()
	return s.checkLimits()
}

// fuzzRunSteps bounds a fuzzed run: extreme values reach it often, and end
// as "limit", which is what they must do.
const fuzzRunSteps = 20_000

// FuzzRun builds valid scenarios with extreme values from the fuzzer's
// numbers (durations up to MaxDuration, up to MaxClients clients, faults
// of every kind at the edges) and holds every run to three promises: it
// does not panic, it replays the same, byte for byte, and its file prints
// back and parses to the same scenario.
func FuzzRun(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint16(1), int64(0), int64(0), int64(time.Millisecond), int64(10*time.Second), uint8(3), uint8(0), int64(10*time.Second), uint64(0))
	f.Add(uint64(7), uint8(2), uint16(3), int64(MaxDuration), int64(MaxDuration), int64(MaxDuration), int64(MaxDuration), uint8(4), uint8(1), int64(MaxDuration), uint64(5))
	f.Add(uint64(0), uint8(64), uint16(156), int64(-1), int64(1<<63-1), int64(0), int64(1<<63-1), uint8(7), uint8(2), int64(1), uint64(1<<63))
	f.Add(uint64(3), uint8(5), uint16(2), int64(100*time.Millisecond), int64(0), int64(50*time.Millisecond), int64(30*time.Second), uint8(4), uint8(3), int64(4*time.Second), uint64(2))
	f.Fuzz(func(t *testing.T, seed uint64, clients uint8, cycles uint16, holdNs, thinkNs, faultAtNs, faultForNs int64, kind, recipe uint8, timeoutNs int64, faultStep uint64) {
		names := recipes.Names()
		sc := &Scenario{
			Recipe:         names[int(recipe)%len(names)],
			Clients:        1 + int(clients)%MaxClients,
			Hold:           duration(holdNs),
			Think:          duration(thinkNs),
			SessionTimeout: max(duration(timeoutNs), time.Millisecond),
			Seed:           seed,
		}
		sc.Cycles = 1 + int(cycles)%(MaxLockCycles/sc.Clients)
		fk := sim.FaultKinds[int(kind)%len(sim.FaultKinds)]
		fault := sim.ScheduledFault{Fault: sim.Fault{Kind: fk, Client: 1 + int(seed%uint64(sc.Clients))}}
		if faultStep != 0 {
			fault.AtStep = 1 + faultStep%MaxSteps
		} else {
			fault.AtTime = duration(faultAtNs)
		}
		switch fk {
		case sim.FaultDisconnect, sim.FaultPartition, sim.FaultPause, sim.FaultRestart:
			fault.Duration = duration(faultForNs)
		}
		if fk == sim.FaultRestart {
			fault.Client = 0
		}
		sc.Faults = []sim.ScheduledFault{fault}
		text := Format(sc)
		parsed, err := Parse("gen.scenario", text)
		if err != nil {
			t.Fatalf("a generated scenario does not parse: %v\n%s", err, text)
		}
		if again := Format(parsed); again != text {
			t.Fatalf("print, parse, print differs:\n%s\n---\n%s", text, again)
		}
		o := RunOptions{MaxSteps: fuzzRunSteps, CheckTimeout: time.Second}
		a, err := Replay(parsed, o)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		b, err := Replay(parsed, o)
		if err != nil {
			t.Fatal(err)
		}
		// A porcupine check that ran out of time may differ; the rest
		// of the run may not.
		if a.Trace != b.Trace || a.Steps != b.Steps || a.Time != b.Time || a.History() != b.History() {
			t.Fatalf("two replays differ:\n%s", text)
		}
		if v := a.Verdict.Check(CheckRun); v.Outcome == Fail {
			t.Fatalf("the run itself failed: %s\n%s", v.Detail, text)
		}
	})
}

// duration maps any int64 onto 0..MaxDuration, keeping the edges: a
// negative value counts from the top, so -1 is MaxDuration.
func duration(ns int64) time.Duration {
	const span = int64(MaxDuration) + 1
	v := ns % span
	if v < 0 {
		v += span
	}
	return time.Duration(v)
}
