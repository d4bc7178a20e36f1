package scenarios

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// StoreKind is the protected store a workload's critical sections update.
type StoreKind string

const (
	// StoreFenced refuses a read or write whose fencing token is older
	// than the newest it has seen.
	StoreFenced StoreKind = "fenced"
	// StoreUnfenced takes every read and write.
	StoreUnfenced StoreKind = "unfenced"
)

// Outcome is the result of one check.
type Outcome string

const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown" // the checker ran out of time: not a pass
	Skipped Outcome = "n/a"     // the check does not apply
	// Limit (limits.go) is the "run" check's outcome when the run reached
	// its step, virtual-time or wall-time limit.
)

// Expectation is an expected outcome, written in a scenario file as
// "expect CHECK OUTCOME" or, for a figure, "expect herd.FIGURE N".
type Expectation struct {
	Check   string
	Outcome Outcome // for a check
	Figure  int64   // for a herd figure (Check starts with "herd.")
}

func (e Expectation) String() string {
	if strings.HasPrefix(e.Check, "herd.") {
		return fmt.Sprintf("%s %d", e.Check, e.Figure)
	}
	return fmt.Sprintf("%s %s", e.Check, e.Outcome)
}

// Scenario is one run of a lock workload on the simulator: the recipe,
// the clients and what each does, the seed, the faults and the
// scheduling decisions. It is what a scenario file holds; Parse reads
// one and Format writes it back, byte for byte.
type Scenario struct {
	// Recipe is the lock recipe's name (recipes.Lookup), or the name a
	// user gave their own recipe (RunOptions.Recipe builds it).
	Recipe string
	// Leases is a semaphore's number of leases (recipes.Options.Leases).
	Leases int
	// Readers are the clients that take the read side of a read/write
	// lock; the others write.
	Readers []int
	// Clients is the number of clients, each with its own session and one
	// workload task.
	Clients int
	// Servers is the ensemble's size: 0 or 1 for one server, 3 or 5
	// (ensemble.go).
	Servers int
	// Cycles is how many times each client acquires, updates the store
	// and releases.
	Cycles int
	// Hold is the virtual time a holder waits between the store's read
	// and its write: the window in which overlapping holders corrupt an
	// unfenced store.
	Hold time.Duration
	// Think is the virtual time a client waits after each release.
	Think time.Duration
	// Store is the protected store: fenced or unfenced.
	Store StoreKind
	// SessionTimeout is the session timeout every client asks for.
	SessionTimeout time.Duration
	// Seed feeds the world's random source (GUIDs, and the random walk
	// once the schedule runs out if Fallback is random).
	Seed uint64
	// Faults are injected at their step or virtual time.
	Faults []sim.ScheduledFault
	// Schedule is the scheduling decisions: at each step with two or more
	// enabled steps, the index of the one taken (sim.Step order). Past its
	// end the first enabled step is taken.
	Schedule []int
	// Expect lists expected outcomes, checked by the scenario library's
	// test and by Replay's caller.
	Expect []Expectation
	// Access gives clients credentials and addresses, and the lock's
	// directory an ACL (access.go).
	Access Access

	// The lines a user's recipe needs to replay (scenario_replay.go).
	replayLines
	// The workload every client runs (workload.go).
	workloadLine

	layout []layoutItem
}

// layoutItem is one line of the file as read: a comment or blank line,
// kept verbatim, or a directive (the index-th of its key).
type layoutItem struct {
	raw   string
	key   string
	index int
	line  int // in the file, from 1
}

// The defaults of the optional directives.
const (
	defaultCycles         = 1
	defaultSessionTimeout = 10 * time.Second
)

func (s *Scenario) fillDefaults() {
	if s.Cycles == 0 {
		s.Cycles = defaultCycles
	}
	if s.Store == "" {
		s.Store = StoreFenced
	}
	if s.SessionTimeout == 0 {
		s.SessionTimeout = defaultSessionTimeout
	}
}

// Options are the recipe options the scenario asks for, for client
// number i.
func (s *Scenario) options(client int) recipes.Options {
	return recipes.Options{Leases: s.Leases, Read: slices.Contains(s.Readers, client)}
}

// scheduleTokensPerLine is how many entries a "schedule" line holds.
const scheduleTokensPerLine = 16

// singleKeys are the directives that appear at most once, in the order
// Format writes them when the layout does not say.
var singleKeys = append([]string{"recipe", "lock", "leases", "readers", "clients", "servers", "cycles", "hold", "think", "store", "session-timeout", "seed", "go-test", "workload"}, accessKeys...)

// render returns the canonical text of the directive key (index-th for
// repeated ones), and whether the scenario has a value for it.
func (s *Scenario) render(key string, index int) ([]string, bool) {
	one := func(v string, present bool) ([]string, bool) {
		if !present {
			return nil, false
		}
		return []string{key + " " + v}, true
	}
	switch key {
	case "recipe":
		return one(s.Recipe, s.Recipe != "")
	case "leases":
		return one(strconv.Itoa(s.Leases), s.Leases != 0)
	case "readers":
		var cs []string
		for _, c := range s.Readers {
			cs = append(cs, fmt.Sprintf("c%d", c))
		}
		return one(strings.Join(cs, " "), len(s.Readers) > 0)
	case "clients":
		return one(strconv.Itoa(s.Clients), s.Clients != 0)
	case "servers":
		return one(strconv.Itoa(s.Servers), s.Servers > 1)
	case "cycles":
		return one(strconv.Itoa(s.Cycles), s.Cycles != 0 && s.Cycles != defaultCycles)
	case "hold":
		return one(s.Hold.String(), s.Hold != 0)
	case "think":
		return one(s.Think.String(), s.Think != 0)
	case "store":
		return one(string(s.Store), s.Store != "" && s.Store != StoreFenced)
	case "session-timeout":
		return one(s.SessionTimeout.String(), s.SessionTimeout != 0 && s.SessionTimeout != defaultSessionTimeout)
	case "seed":
		return one(strconv.FormatUint(s.Seed, 10), s.Seed != 0)
	case "fault":
		if index >= len(s.Faults) {
			return nil, false
		}
		return []string{"fault " + formatFault(s.Faults[index])}, true
	case "expect":
		if index >= len(s.Expect) {
			return nil, false
		}
		return []string{"expect " + s.Expect[index].String()}, true
	case "schedule":
		return formatSchedule(s.Schedule), len(s.Schedule) > 0
	}
	if v, ok := s.renderAccess(key); ok {
		return v, ok
	}
	if v, ok := s.renderWorkload(key); ok {
		return v, ok
	}
	return s.renderReplay(key)
}

// renderForced is render for a directive the file has: a present
// directive with its default value is still written back.
func (s *Scenario) renderForced(key string, index int) []string {
	if lines, ok := s.render(key, index); ok {
		return lines
	}
	switch key {
	case "cycles":
		return []string{fmt.Sprintf("cycles %d", max(s.Cycles, defaultCycles))}
	case "store":
		return []string{"store " + string(cmpOr(s.Store, StoreFenced))}
	case "session-timeout":
		return []string{"session-timeout " + cmpOr(s.SessionTimeout, defaultSessionTimeout).String()}
	case "hold":
		return []string{"hold " + s.Hold.String()}
	case "think":
		return []string{"think " + s.Think.String()}
	case "seed":
		return []string{"seed 0"}
	case "servers":
		return []string{"servers " + strconv.Itoa(max(s.Servers, 1))}
	}
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func formatFault(f sim.ScheduledFault) string {
	var b strings.Builder
	if f.AtStep != 0 {
		fmt.Fprintf(&b, "step=%d", f.AtStep)
	} else {
		fmt.Fprintf(&b, "at=%v", f.AtTime)
	}
	b.WriteString(" " + string(f.Kind))
	if namesClient(f.Kind) {
		fmt.Fprintf(&b, " c%d", f.Client)
	}
	if namesServer(f.Kind) {
		fmt.Fprintf(&b, " s%d", f.Server)
	}
	if lasts(f.Kind) {
		fmt.Fprintf(&b, " for=%v", f.Duration)
	}
	return b.String()
}

func formatSchedule(choices []int) []string {
	var tokens []string
	for i := 0; i < len(choices); {
		j := i
		for j < len(choices) && choices[j] == choices[i] {
			j++
		}
		if n := j - i; n >= 3 {
			tokens = append(tokens, fmt.Sprintf("%d*%d", choices[i], n))
		} else {
			for range n {
				tokens = append(tokens, strconv.Itoa(choices[i]))
			}
		}
		i = j
	}
	var lines []string
	for len(tokens) > 0 {
		n := min(len(tokens), scheduleTokensPerLine)
		lines = append(lines, "schedule "+strings.Join(tokens[:n], " "))
		tokens = tokens[n:]
	}
	return lines
}

// Format renders the scenario as a scenario file. A scenario read by
// Parse and not changed since is written back byte for byte: comments
// and blank lines stay where they were, and directives keep their order.
func Format(s *Scenario) string {
	var b strings.Builder
	written := map[string]int{} // key -> directives written (repeated keys)
	for _, it := range s.layout {
		if it.key == "" {
			b.WriteString(it.raw + "\n")
			continue
		}
		var lines []string
		if it.key == "fault" || it.key == "expect" {
			lines, _ = s.render(it.key, it.index)
			if lines != nil {
				written[it.key] = max(written[it.key], it.index+1)
			}
		} else {
			lines = s.renderForced(it.key, 0)
			written[it.key] = 1
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	for _, key := range singleKeys {
		if written[key] > 0 {
			continue
		}
		if lines, ok := s.render(key, 0); ok {
			b.WriteString(lines[0] + "\n")
		}
	}
	for _, key := range []string{"fault", "expect"} {
		n := len(s.Faults)
		if key == "expect" {
			n = len(s.Expect)
		}
		for i := written[key]; i < n; i++ {
			lines, _ := s.render(key, i)
			b.WriteString(lines[0] + "\n")
		}
	}
	if written["schedule"] == 0 {
		for _, l := range formatSchedule(s.Schedule) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// A ParseError is a mistake in a scenario file, at a line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseFile reads and parses a scenario file.
// It refuses what is not a regular file (a FIFO would block, a device
// like /dev/zero never ends) and a file larger than MaxFileBytes.
func ParseFile(path string) (*Scenario, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fileKind(st.Mode()))
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a scenario file may have (%d)", path, st.Size(), MaxFileBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have grown since: read one byte past the limit to know.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: more than %d bytes, more than a scenario file may have", path, MaxFileBytes)
	}
	return Parse(path, string(data))
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Parse parses the text of a scenario file; name is the file's name for
// error messages. Every error is a *ParseError with its line (errors.As);
// all of them are reported, joined. Directives must be written as Format
// writes them (one space between words, canonical durations), so that
// Format(Parse(x)) == x; an error says how to write a line that is not.
func Parse(name, text string) (*Scenario, error) {
	s := &Scenario{}
	var errs []error
	fail := func(line int, format string, args ...any) {
		errs = append(errs, &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)})
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
		fail(strings.Count(text, "\n"), "the file must end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	seen := map[string]int{}
	scheduleDone := false
	crReported := false
	// tried is the directives the file has a line for, parsed or not: a
	// line in error is not also reported missing.
	tried := map[string]bool{}
	for i, raw := range lines {
		n := i + 1
		if len(raw) > MaxLineBytes {
			fail(n, "a line of %d bytes, more than a line may have (%d)", len(raw), MaxLineBytes)
			key, _, _ := strings.Cut(raw[:MaxNameBytes], " ")
			tried[key] = true
			continue
		}
		if r, ok := strings.CutSuffix(raw, "\r"); ok {
			// Report a Windows line ending once, not on every line.
			if !crReported {
				fail(n, "the line ends with a carriage return (Windows line endings): save the file with Unix line endings (\\n)")
				crReported = true
			}
			raw = r
		}
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			if trimmed != raw {
				fail(n, "comments and blank lines start in the first column, without trailing spaces")
			}
			s.layout = append(s.layout, layoutItem{raw: raw, line: n})
			continue
		}
		key, rest, _ := strings.Cut(trimmed, " ")
		if key == "schedule" {
			if scheduleDone {
				fail(n, "the schedule lines must be one block")
				continue
			}
			if seen["schedule"] == 0 {
				s.layout = append(s.layout, layoutItem{key: "schedule", line: n})
			}
			seen["schedule"]++
			if err := parseSchedule(rest, &s.Schedule); err != nil {
				fail(n, "schedule: %v", err)
			}
			if i+1 >= len(lines) || !isScheduleLine(lines[i+1]) {
				scheduleDone = true
			}
			continue
		}
		tried[key] = true
		index := seen[key]
		if index > 0 && key != "fault" && key != "expect" {
			fail(n, "%s given twice (first on line %d)", key, lineOf(s.layout, key, 0))
			continue
		}
		if err := s.parseDirective(key, rest); err != nil {
			fail(n, "%v", err)
			continue
		}
		seen[key]++
		s.layout = append(s.layout, layoutItem{key: key, index: index, line: n})
		var want []string
		if key == "fault" || key == "expect" {
			want, _ = s.render(key, index)
		} else {
			want = s.renderForced(key, 0)
		}
		if len(want) == 1 && want[0] != raw {
			fail(n, "write this line as %q", want[0])
		}
	}
	// The schedule block is canonical only as a whole: the first line
	// that differs from the canonical block is the one to rewrite.
	if seen["schedule"] > 0 && len(errs) == 0 {
		want := formatSchedule(s.Schedule)
		var got []string
		var at []int
		for i, raw := range lines {
			if isScheduleLine(strings.TrimSuffix(raw, "\r")) {
				got = append(got, strings.TrimSuffix(raw, "\r"))
				at = append(at, i+1)
			}
		}
		for i := range max(len(want), len(got)) {
			switch {
			case i >= len(got):
				fail(at[len(at)-1], "the schedule goes on: after this line write %q", want[i])
			case i >= len(want):
				fail(at[i], "the schedule ended on the line before: remove this line")
			case want[i] != got[i]:
				fail(at[i], "write this schedule line as %q", want[i])
			default:
				continue
			}
			break
		}
	}
	if s.Recipe == "" && !tried["recipe"] {
		fail(max(len(lines), 1), "no recipe line (recipe NAME)")
	}
	if s.Clients == 0 && !tried["clients"] {
		fail(max(len(lines), 1), "no clients line (clients N)")
	}
	if s.Clients > 0 && s.Clients*max(s.Cycles, defaultCycles) > MaxLockCycles {
		line := lineOf(s.layout, "cycles", 0)
		if line == 0 {
			line = lineOf(s.layout, "clients", 0)
		}
		fail(line, "%d clients × %d cycles is more lock cycles than a run may have (%d)", s.Clients, max(s.Cycles, defaultCycles), MaxLockCycles)
	}
	for i, f := range s.Faults {
		if namesClient(f.Kind) && f.Client > s.Clients && s.Clients > 0 {
			fail(lineOf(s.layout, "fault", i), "fault on c%d, but there are %d clients", f.Client, s.Clients)
		}
	}
	for _, r := range s.Readers {
		if r > s.Clients && s.Clients > 0 {
			fail(lineOf(s.layout, "readers", 0), "reader c%d, but there are %d clients", r, s.Clients)
		}
	}
	s.checkServerFaults(fail)
	s.checkAccess(fail, s.layout)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func isScheduleLine(raw string) bool { return raw == "schedule" || strings.HasPrefix(raw, "schedule ") }

// lineOf is the line of the index-th directive key, 0 if there is none.
func lineOf(layout []layoutItem, key string, index int) int {
	for _, it := range layout {
		if it.key == key && it.index == index {
			return it.line
		}
	}
	return 0
}

// Line returns the line (from 1) of the file where the directive key
// (the first of its kind) is, or 0 if the scenario was not read from a
// file or has no such line: for an error a caller finds past Parse, such
// as an unknown recipe.
func (s *Scenario) Line(key string) int { return lineOf(s.layout, key, 0) }

func (s *Scenario) parseDirective(key, rest string) error {
	switch key {
	case "recipe":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return fmt.Errorf("recipe: want one name, got %s", Cut(rest))
		}
		if len(rest) > MaxNameBytes {
			return fmt.Errorf("recipe: a name of %d bytes, longer than a recipe's name may be (%d): %s", len(rest), MaxNameBytes, Cut(rest))
		}
		s.Recipe = rest
	case "leases":
		return parseInt(rest, 1, MaxLeases, &s.Leases)
	case "readers":
		for _, f := range strings.Fields(rest) {
			var c int
			if err := parseClient(f, &c); err != nil {
				return fmt.Errorf("readers: %v", err)
			}
			s.Readers = append(s.Readers, c)
		}
		if len(s.Readers) == 0 {
			return errors.New("readers: want client names like c1 c3")
		}
	case "clients":
		return parseInt(rest, 1, MaxClients, &s.Clients)
	case "servers":
		return parseServers(rest, &s.Servers)
	case "cycles":
		return parseInt(rest, 1, MaxCycles, &s.Cycles)
	case "hold":
		return parseDuration(rest, &s.Hold)
	case "think":
		return parseDuration(rest, &s.Think)
	case "store":
		switch StoreKind(rest) {
		case StoreFenced, StoreUnfenced:
			s.Store = StoreKind(rest)
		default:
			return fmt.Errorf("store: want fenced or unfenced, got %s", Cut(rest))
		}
	case "session-timeout":
		if err := parseDuration(rest, &s.SessionTimeout); err != nil {
			return err
		}
		if s.SessionTimeout <= 0 {
			return errors.New("session-timeout must be positive")
		}
	case "seed":
		v, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return fmt.Errorf("seed: want an unsigned integer, got %s", Cut(rest))
		}
		s.Seed = v
	case "fault":
		if len(s.Faults) >= MaxFaults {
			return fmt.Errorf("fault: more faults than a scenario may have (%d)", MaxFaults)
		}
		f, err := parseFault(rest)
		if err != nil {
			return fmt.Errorf("fault: %v", err)
		}
		s.Faults = append(s.Faults, f)
	case "expect":
		if len(s.Expect) >= MaxExpects {
			return fmt.Errorf("expect: more expectations than a scenario may have (%d)", MaxExpects)
		}
		e, err := parseExpect(rest)
		if err != nil {
			return fmt.Errorf("expect: %v", err)
		}
		s.Expect = append(s.Expect, e)
	default:
		if ok, err := s.parseAccess(key, rest); ok {
			return err
		}
		if known, err := s.parseReplay(key, rest); known {
			return err
		}
		if known, err := s.parseWorkload(key, rest); known {
			return err
		}
		return fmt.Errorf("unknown directive %s (want one of %s, fault, expect, schedule)", Cut(key), strings.Join(singleKeys, ", "))
	}
	return nil
}

func parseInt(s string, lo, hi int, out *int) error {
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return fmt.Errorf("want an integer from %d to %d, got %s", lo, hi, Cut(s))
	}
	*out = v
	return nil
}

func parseDuration(s string, out *time.Duration) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration like 1.5s or 200ms, got %s", Cut(s))
	}
	if d > MaxDuration {
		return fmt.Errorf("%s is longer than a scenario's durations may be (%v)", Cut(s), MaxDuration)
	}
	*out = d
	return nil
}

func parseClient(s string, out *int) error {
	if !strings.HasPrefix(s, "c") {
		return fmt.Errorf("want a client like c1, got %s", Cut(s))
	}
	return parseInt(s[1:], 1, MaxClients, out)
}

func parseFault(rest string) (sim.ScheduledFault, error) {
	var f sim.ScheduledFault
	words := strings.Fields(rest)
	if len(words) < 2 {
		return f, errors.New("want: fault at=TIME|step=N KIND [cN|sN] [for=DURATION]")
	}
	when, val, _ := strings.Cut(words[0], "=")
	switch when {
	case "at":
		if err := parseDuration(val, &f.AtTime); err != nil {
			return f, err
		}
	case "step":
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil || v == 0 || v > MaxSteps {
			return f, fmt.Errorf("want step=N with N from 1 to %d, got %s", MaxSteps, Cut(words[0]))
		}
		f.AtStep = v
	default:
		return f, fmt.Errorf("want at=TIME or step=N first, got %s", Cut(words[0]))
	}
	f.Kind = sim.FaultKind(words[1])
	if !slices.Contains(allFaultKinds(), f.Kind) {
		var kinds []string
		for _, k := range allFaultKinds() {
			kinds = append(kinds, string(k))
		}
		return f, fmt.Errorf("unknown fault kind %s (want one of %s)", Cut(words[1]), strings.Join(kinds, ", "))
	}
	rest2 := words[2:]
	if namesClient(f.Kind) {
		if len(rest2) == 0 {
			return f, fmt.Errorf("%s needs a client, like c1", f.Kind)
		}
		if err := parseClient(rest2[0], &f.Client); err != nil {
			return f, err
		}
		rest2 = rest2[1:]
	}
	if namesServer(f.Kind) {
		if len(rest2) == 0 || !strings.HasPrefix(rest2[0], "s") {
			return f, fmt.Errorf("%s needs a server, like s1", f.Kind)
		}
		if err := parseServer(rest2[0], &f.Server); err != nil {
			return f, err
		}
		rest2 = rest2[1:]
	}
	if lasts(f.Kind) {
		if len(rest2) != 1 || !strings.HasPrefix(rest2[0], "for=") {
			return f, fmt.Errorf("%s needs for=DURATION", f.Kind)
		}
		if err := parseDuration(strings.TrimPrefix(rest2[0], "for="), &f.Duration); err != nil {
			return f, err
		}
		rest2 = nil
	}
	if len(rest2) > 0 {
		return f, fmt.Errorf("unexpected %s", Cut(strings.Join(rest2, " ")))
	}
	return f, nil
}

func parseExpect(rest string) (Expectation, error) {
	check, val, ok := strings.Cut(rest, " ")
	if !ok {
		return Expectation{}, errors.New("want: expect CHECK pass|fail|unknown|n/a|limit, or expect herd.FIGURE N")
	}
	if strings.HasPrefix(check, "herd.") {
		if !slices.Contains(herdFigureNames, strings.TrimPrefix(check, "herd.")) {
			return Expectation{}, fmt.Errorf("unknown herd figure %s (want one of %s)", Cut(check), strings.Join(herdFigureNames, ", "))
		}
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return Expectation{}, fmt.Errorf("want an integer, got %s", Cut(val))
		}
		return Expectation{Check: check, Figure: v}, nil
	}
	if !slices.Contains(CheckNames, check) {
		return Expectation{}, fmt.Errorf("unknown check %s (want one of %s)", Cut(check), strings.Join(CheckNames, ", "))
	}
	switch o := Outcome(val); o {
	case Pass, Fail, Unknown, Skipped:
		return Expectation{Check: check, Outcome: o}, nil
	case Limit:
		if check == CheckRun {
			return Expectation{Check: check, Outcome: o}, nil
		}
	}
	return Expectation{}, fmt.Errorf("want pass, fail, unknown or n/a (or limit, for run), got %s", Cut(val))
}

func parseSchedule(rest string, out *[]int) error {
	if rest == "" {
		return errors.New("want choices like 0 2 1*5, got nothing")
	}
	for _, tok := range strings.Fields(rest) {
		v, n := tok, "1"
		if a, b, ok := strings.Cut(tok, "*"); ok {
			v, n = a, b
		}
		choice, err := strconv.Atoi(v)
		if err != nil || choice < 0 || choice > MaxScheduleChoices {
			return fmt.Errorf("want a choice from 0 to %d, got %s", MaxScheduleChoices, Cut(tok))
		}
		count, err := strconv.Atoi(n)
		if err != nil || count < 1 {
			return fmt.Errorf("want a repeat count of 1 or more after *, got %s", Cut(tok))
		}
		if len(*out)+count > MaxScheduleChoices {
			return fmt.Errorf("more choices than a schedule may have (%d) at %s", MaxScheduleChoices, Cut(tok))
		}
		for range count {
			*out = append(*out, choice)
		}
	}
	return nil
}

// clone returns a deep copy.
func (s *Scenario) clone() *Scenario { return s.cloneInto(new(Scenario)) }

// cloneInto makes c, which nothing else points to, a deep copy of s, and
// returns it. The faults go in c's array of faults if it has one: the
// scenario of a run whose result is given back is taken again for the
// copy of a later run's (runBuffers.scenario).
func (s *Scenario) cloneInto(c *Scenario) *Scenario {
	faults := c.Faults[:0]
	*c = *s
	c.Readers = slices.Clone(s.Readers)
	if s.Faults == nil || faults == nil {
		c.Faults = slices.Clone(s.Faults)
	} else {
		c.Faults = append(faults, s.Faults...)
	}
	c.Schedule = slices.Clone(s.Schedule)
	c.Expect = slices.Clone(s.Expect)
	c.layout = slices.Clone(s.layout)
	c.Access = s.Access.clone()
	return c
}
