package main

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

func init() {
	register(command{
		name:    "run",
		summary: "replay a scenario file: its timeline and the verdict of every check",
		usage: `Usage: zklab run FILE|DIR|NAME [--seed N] [--html OUT] [--json] [--trace] [--junit OUT]
                 [--zk HOST:PORT[,...]] [--servers N]
       zklab run --history HISTORY --html OUT

Replays a scenario (a file, or a scenario of the library by name: see
'zklab scenarios') on the simulator, byte for byte as it was recorded, and
prints the workload's timeline and the verdict of every check. --html
writes a self-contained report: a swimlane timeline beside porcupine's
view of the histories. --trace prints the simulator's full trace. Given
a directory, it runs every *.scenario file in it, one line each. --junit
writes a JUnit XML report of what ran, for CI systems. --servers N runs
it on an ensemble of N servers (1, 3 or 5) instead of the file's
"servers" line (one server when it has none).

With --zk the same workload and faults run on a real ZooKeeper instead,
each client through a local fault proxy. The server and the network
decide the order, so the schedule is not replayed and two runs differ;
each fault strikes where its client was when it struck on the simulator
(during the same call, sleep or wait of the client's), however long the
calls take on the server. A server restart cannot be injected there. The
trace is then what the clients sent, received and saw.

The verdict line says which rule decided:
  a file with expect lines is a regression test: exit 0 when every
    expectation holds, 1 when one does not;
  a file without: exit 0 when every check that counts as a violation
    passed (split-brain is reported, not counted), 1 when one failed;
  exit 3 when the run reached its step or time limit first ("limit
    reached": neither a pass nor a violation, unless the file says
    "expect run limit");
  exit 2 when the file cannot be read or parsed (FILE:LINE), or the
    server named by --zk cannot be reached.
For a directory the exit code is the worst of its files' (2, 1, 3, 0).

With --history HISTORY --html OUT it runs nothing: it draws a history
'zklab serve --history' wrote (a real client's run on the simulated
server) in the same report, one lane a session: each request to its
reply (a write that got none marked ambiguous), connections opened and
closed, watch events, the control API's faults and the server's
expiries, with 'zklab check-history''s verdict (exit 0 linearizable, 1
not, 2 bad input: FILE:LINE).

`,
		run: runRun,
	})
	register(command{
		name:    "scenarios",
		summary: "list the library's scenarios with one-line descriptions",
		usage:   "Usage: zklab scenarios\n\nLists the scenarios that ship with zklab; run one with 'zklab run NAME'.\n",
		run:     runScenarios,
	})
}

// loadScenario reads a scenario file, or a library scenario by name. A
// recipe the registry does not know is an error at its line.
func loadScenario(arg string) (*scenarios.Scenario, string, error) {
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, "/.") {
		sc, e, lerr := scenarios.LookupLibrary(arg)
		if lerr == nil {
			return sc, e.File, nil
		}
		return nil, "", usagef("%s: no such file, and no scenario of that name in the library (see 'zklab scenarios')", scenarios.Cut(arg))
	}
	sc, err := scenarios.ParseFile(arg)
	if err != nil {
		return nil, "", usageError{err.Error()}
	}
	if _, ok := recipes.Lookup(sc.Recipe); !ok {
		if scenarios.ReplayCommand(sc, arg) != "" { // a user's recipe replays in go test
			return nil, "", usagef("%s:%d: %s", arg, sc.Line("recipe"), scenarios.UserRecipe(sc, arg))
		}
		return nil, "", usagef("%s:%d: unknown recipe %s (known: %s)", arg, sc.Line("recipe"), scenarios.Cut(sc.Recipe), strings.Join(recipes.Names(), ", "))
	}
	return sc, arg, nil
}

// runFlags are the flags of 'zklab run'.
type runFlags struct {
	seed    uint64
	htmlOut string
	asJSON  bool
	trace   bool
	zk      string
	junit   string
	servers int // 0: the file's
	history string
}

func runRun(args []string, stdout, stderr io.Writer) error {
	c := find("run")
	fs := newFlags(c)
	var f runFlags
	fs.Uint64Var(&f.seed, "seed", 0, "replay with this seed instead of the file's")
	fs.StringVar(&f.htmlOut, "html", "", "write a self-contained HTML report to this file")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object on stdout")
	fs.BoolVar(&f.trace, "trace", false, "print the simulator's full trace")
	fs.StringVar(&f.zk, "zk", "", "run on a real ZooKeeper at HOST:PORT[,HOST:PORT...] instead of the simulator")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report of the run (or of every scenario of DIR) to this file")
	fs.IntVar(&f.servers, "servers", 0, "run on an ensemble of this many servers (1, 3 or 5) instead of the file's")
	fs.StringVar(&f.history, "history", "", "draw a history written by 'zklab serve --history' (with --html OUT) instead of running a scenario")
	args, err := interleaved(fs, c, args, stdout)
	if err != nil {
		return err
	}
	if f.history != "" {
		if len(args) != 0 {
			return usagef("--history draws a served history: no scenario with it, got %q", args)
		}
		return runHistoryReport(f.history, f.htmlOut, stdout)
	}
	if serversSet(fs) {
		if err := scenarios.ValidServers(f.servers); err != nil {
			return usagef("--servers: %v", err)
		}
	}
	if len(args) != 1 {
		return usagef("want one scenario file, directory or name, got %d arguments", len(args))
	}
	if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
		return runDir(args[0], f, stdout, stderr)
	}
	o := runOne(args[0], f, stdout, stderr)
	if f.junit != "" {
		if err := writeJUnit(f.junit, []runOutcome{o}); err != nil {
			return err
		}
	}
	return o.err
}

// The exit-code contract of 'zklab run', one rule a run:
//
//   - A file with expect lines is a regression test: PASS (exit 0) when
//     every expectation holds, FAIL (exit 1) when one does not. On a real
//     server only the expectations that apply there count (Applies).
//   - A file without (or with none that apply): PASS (exit 0) when every
//     check that counts as a violation (scenarios.DefaultViolations)
//     passed, FAIL (exit 1) when one failed. split-brain is reported, not
//     counted: a correct recipe shows it under long pauses.
//   - A run that reached its step, virtual-time or wall-time limit is
//     LIMIT (exit 3): neither a pass nor a violation, unless the file
//     expects it ("expect run limit").
//   - A file that cannot be read or parsed, or a server that cannot be
//     reached, is bad input (exit 2).
const (
	statusPass  = "PASS"
	statusFail  = "FAIL"
	statusLimit = "LIMIT"
	statusError = "ERROR"
)

// runOutcome is one scenario's result under the contract.
type runOutcome struct {
	file   string
	status string
	// rule says which rule decided and why, for the verdict line.
	rule string
	// verdict is the checks' table, for a JUnit failure's text.
	verdict string
	// err is what the command returns: nil for PASS.
	err error
}

// judge applies the exit-code contract to a verdict.
func judge(sc *scenarios.Scenario, v *scenarios.Verdict) (status, rule string, unmet []string) {
	applicable := 0
	expectsLimit := false
	for _, e := range sc.Expect {
		if v.Applies(e) {
			applicable++
		}
		if e.Check == scenarios.CheckRun && e.Outcome == scenarios.Limit {
			expectsLimit = true
		}
	}
	unmet = v.Expectations(sc.Expect)
	if v.LimitReached() && !expectsLimit {
		return statusLimit, fmt.Sprintf("the run reached its %s before the workload ended: neither a pass nor a violation", whichLimit(v)), unmet
	}
	if applicable > 0 {
		if len(unmet) == 0 {
			all := fmt.Sprintf("all %d expectations", applicable)
			if applicable == 1 {
				all = "its one expectation"
			}
			return statusPass, fmt.Sprintf("the file's expect lines decide: %s met", all), unmet
		}
		return statusFail, fmt.Sprintf("the file's expect lines decide: %d of %s not met", len(unmet), scenarios.Plural(applicable, "expectation")), unmet
	}
	no := "no expect lines"
	if len(sc.Expect) > 0 {
		no = "no expect line that applies on a real server"
	}
	if viol := v.Violations(nil); len(viol) > 0 {
		var names []string
		for _, c := range viol {
			names = append(names, c.Name)
		}
		return statusFail, fmt.Sprintf("%s, so the checks decide: %s failed", no, strings.Join(names, ", ")), unmet
	}
	rule = no + ", so the checks decide: none that counts as a violation failed"
	if v.Check(scenarios.CheckSplitBrain).Outcome == scenarios.Fail {
		rule += " (split-brain is reported, not counted)"
	}
	return statusPass, rule, unmet
}

// whichLimit names the limit a run reached.
func whichLimit(v *scenarios.Verdict) string {
	switch {
	case strings.Contains(v.Check(scenarios.CheckRun).Detail, scenarios.ErrWallTime.Error()):
		return fmt.Sprintf("wall-time limit, %v,", scenarios.MaxWallTime)
	case v.Steps >= scenarios.MaxSteps:
		return fmt.Sprintf("step limit, %d steps,", scenarios.MaxSteps)
	}
	return fmt.Sprintf("virtual-time limit, %v,", scenarios.MaxVirtualTime)
}

// verdictText is the verdict's table with its first line saying the
// contract's status and the rule that decided it.
func verdictText(v *scenarios.Verdict, status, rule string) string {
	text := v.String()
	first, rest, _ := strings.Cut(text, "\n")
	// The first line is "verdict: STATUS  TITLE; ...".
	if _, title, ok := strings.Cut(first, "  "); ok {
		first = fmt.Sprintf("verdict: %s (%s)  %s", status, rule, title)
	}
	return first + "\n" + rest
}

// runOne runs one scenario and prints what 'zklab run FILE' prints.
func runOne(arg string, f runFlags, stdout, stderr io.Writer) runOutcome {
	fail := func(file string, err error) runOutcome {
		return runOutcome{file: file, status: statusError, rule: err.Error(), err: err}
	}
	sc, file, err := loadScenario(arg)
	if err != nil {
		return fail(arg, err)
	}
	if f.seed != 0 {
		sc.Seed = f.seed
	}
	if f.servers != 0 {
		sc.Servers = f.servers
	}
	var res *scenarios.Result
	if f.zk != "" {
		servers, err := zkList(f.zk)
		if err != nil {
			return fail(file, err)
		}
		res, err = scenarios.Run(sc, scenarios.RunOptions{ZK: servers, Trace: f.trace, Report: f.htmlOut != "",
			ZKLog: func(line string) { progressLine(stderr, line) }})
		if err != nil {
			return fail(file, usagef("%s: %v", file, err))
		}
	} else {
		res, err = scenarios.Replay(sc, scenarios.RunOptions{Trace: f.trace, Report: f.htmlOut != ""})
		if err != nil {
			return fail(file, usagef("%s: %v", file, err))
		}
	}
	status, rule, unmet := judge(sc, res.Verdict)
	o := runOutcome{file: file, status: status, rule: rule, verdict: verdictText(res.Verdict, status, rule)}
	switch status {
	case statusFail:
		if len(unmet) > 0 {
			o.err = violationError{fmt.Sprintf("%s: %s", file, oneLineText(unmet[0]))}
		} else {
			v := res.Verdict.Violations(nil)[0]
			o.err = violationError{fmt.Sprintf("%s: %s failed: %s", file, v.Name, oneLineText(v.Detail))}
		}
	case statusLimit:
		o.err = limitError{fmt.Sprintf("%s: limit reached: %s", file, oneLineText(res.Verdict.Check(scenarios.CheckRun).Detail))}
	}
	if f.htmlOut != "" {
		if err := writeRunReport(f.htmlOut, file, res); err != nil {
			return fail(file, err)
		}
	}
	if f.asJSON {
		if err := printRunJSON(stdout, file, res, unmet, status, rule); err != nil {
			return fail(file, err)
		}
		return o
	}
	if res.Verdict.Real {
		fmt.Fprintf(stdout, "scenario %s: %s, %s, on ZooKeeper at %s (the server's schedule, not the file's)\n\n", file, sc.Recipe, scenarios.Plural(sc.Clients, "client"), f.zk)
	} else {
		fmt.Fprintf(stdout, "scenario %s: %s, %s\n\n", file, sc.Recipe, scenarios.Plural(sc.Clients, "client"))
	}
	if f.trace {
		fmt.Fprintf(stdout, "trace:\n%s\n", res.Trace)
	}
	if res.Verdict.Real {
		fmt.Fprintf(stdout, "timeline (event, client, what):\n%s\n", res.History())
		fmt.Fprintf(stdout, "on the server:\n  %s\n\n", strings.Join(res.Notes, "\n  "))
	} else {
		fmt.Fprintf(stdout, "timeline (step, client, event):\n%s\n", res.History())
	}
	fmt.Fprint(stdout, o.verdict)
	applicable := 0
	for _, e := range sc.Expect {
		if res.Verdict.Applies(e) {
			applicable++
		}
	}
	of := "of the file"
	if applicable < len(sc.Expect) {
		of = fmt.Sprintf("of the file that apply on a real server (%d do not)", len(sc.Expect)-applicable)
	}
	if applicable > 0 {
		if len(unmet) == 0 {
			all := fmt.Sprintf("all %d expectations", applicable)
			if applicable == 1 {
				all = "the one expectation"
			}
			fmt.Fprintf(stdout, "\n%s %s met\n", all, of)
		} else {
			fmt.Fprintf(stdout, "\n%d of %s %s not met:\n  %s\n", len(unmet), scenarios.Plural(applicable, "expectation"), of, strings.Join(unmet, "\n  "))
		}
	}
	return o
}

// runDir runs every scenario file (*.scenario) of a directory, in name
// order, and prints one line for each and a summary. The exit code is
// the worst: 2 if a file could not be run, else 1 if one failed, else 3
// if one reached its limit, else 0.
func runDir(dir string, f runFlags, stdout, stderr io.Writer) error {
	if f.htmlOut != "" || f.asJSON || f.trace {
		return usagef("%s: --html, --json and --trace are for one scenario, not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return usagef("%v", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".scenario") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return usagef("%s: no scenario files (*.scenario) in the directory", dir)
	}
	var outcomes []runOutcome
	count := map[string]int{}
	for _, file := range files {
		o := runOne(file, f, io.Discard, stderr)
		outcomes = append(outcomes, o)
		count[o.status]++
		if o.status == statusError {
			fmt.Fprintf(stderr, "zklab run: %v\n", o.err)
			fmt.Fprintf(stdout, "%-5s  %s\n", o.status, file)
			continue
		}
		fmt.Fprintf(stdout, "%-5s  %s  (%s)\n", o.status, file, o.rule)
	}
	fmt.Fprintf(stdout, "\n%s of %s: %d passed, %d failed, %d reached a limit, %d could not be run\n",
		scenarios.Plural(len(files), "scenario"), dir, count[statusPass], count[statusFail], count[statusLimit], count[statusError])
	if f.junit != "" {
		if err := writeJUnit(f.junit, outcomes); err != nil {
			return err
		}
	}
	switch {
	case count[statusError] > 0:
		return usagef("%s: %d of %s could not be run", dir, count[statusError], scenarios.Plural(len(files), "scenario"))
	case count[statusFail] > 0:
		return violationError{fmt.Sprintf("%s: %d of %s failed", dir, count[statusFail], scenarios.Plural(len(files), "scenario"))}
	case count[statusLimit] > 0:
		return limitError{fmt.Sprintf("%s: %d of %s reached a limit", dir, count[statusLimit], scenarios.Plural(len(files), "scenario"))}
	}
	return nil
}

// writeJUnit writes the outcomes as a JUnit XML report, the format CI
// systems read: a failure for FAIL, an error for a file that could not be
// run, skipped for LIMIT. It has no times, so that it is the same on
// every run.
func writeJUnit(path string, outcomes []runOutcome) error {
	type message struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *message `xml:"failure"`
		Error     *message `xml:"error"`
		Skipped   *message `xml:"skipped"`
	}
	type testsuite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	suite := testsuite{Name: "zklab run", Tests: len(outcomes)}
	for _, o := range outcomes {
		tc := testcase{Name: o.file, Classname: "zklab.run"}
		switch o.status {
		case statusFail:
			suite.Failures++
			tc.Failure = &message{Message: o.err.Error(), Type: "violation", Text: o.verdict}
		case statusLimit:
			suite.Skipped++
			tc.Skipped = &message{Message: o.err.Error(), Text: o.verdict}
		case statusError:
			suite.Errors++
			tc.Error = &message{Message: o.err.Error(), Type: "bad input"}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	out, err := xml.MarshalIndent(struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []testsuite
	}{Suites: []testsuite{suite}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(out, '\n')...), 0o644); err != nil {
		return usagef("--junit: %v", err)
	}
	return nil
}

// interleaved parses flags that may come before or after the positional
// arguments, as Go tools allow.
func interleaved(fs *flag.FlagSet, c *command, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, c, args, stdout); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func printRunJSON(w io.Writer, file string, res *scenarios.Result, unmet []string, status, rule string) error {
	type check struct {
		Name    string `json:"name"`
		Outcome string `json:"outcome"`
		Detail  string `json:"detail,omitempty"`
	}
	var checks []check
	for _, c := range res.Verdict.Checks {
		checks = append(checks, check{c.Name, string(c.Outcome), c.Detail})
	}
	h := res.Verdict.Herd
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	out := map[string]any{
		"scenario":         file,
		"recipe":           res.Scenario.Recipe,
		"clients":          res.Scenario.Clients,
		"failed":           res.Verdict.Failed(),
		"verdict":          status,
		"rule":             rule,
		"limit_reached":    res.Verdict.LimitReached(),
		"checks":           checks,
		"steps":            res.Steps,
		"virtual_ms":       res.Time.Milliseconds(),
		"herd":             map[string]any{"notifications": h.Notifications, "releases": h.Releases, "children_calls": h.ChildrenCalls, "bytes_returned": h.BytesReturned},
		"expectations_met": len(unmet) == 0,
		"unmet":            unmet,
	}
	if res.Verdict.Real {
		// A real server's run has events, not steps, and wall time.
		delete(out, "steps")
		delete(out, "virtual_ms")
		out["backend"] = "zookeeper"
		out["events"] = res.Steps
		out["wall_ms"] = res.Time.Milliseconds()
		out["notes"] = res.Notes
	}
	return enc.Encode(out)
}

func runScenarios(args []string, stdout, stderr io.Writer) error {
	c := find("scenarios")
	fs := newFlags(c)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %s", scenarios.Cut(fs.Arg(0)))
	}
	for _, e := range scenarios.Library() {
		fmt.Fprintf(stdout, "%-26s %s\n", e.Name, e.Summary)
	}
	return nil
}

// serversSet reports whether --servers was given.
func serversSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "servers" })
	return set
}
