package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/scenarios"
)

func init() {
	register(command{
		name:    "run",
		summary: "replay a scenario file: its timeline and the verdict of every check",
		usage: `Usage: zklab run FILE|NAME [--seed N] [--html OUT] [--json] [--trace] [--zk HOST:PORT[,...]]

Replays a scenario (a file, or a scenario of the library by name: see
'zklab scenarios') on the simulator, byte for byte as it was recorded, and
prints the workload's timeline and the verdict of every check. --html
writes a self-contained report: a swimlane timeline beside porcupine's
view of the histories. --trace prints the simulator's full trace.

With --zk the same workload and faults run on a real ZooKeeper instead,
each client through a local fault proxy. The server and the network
decide the order, so the schedule is not replayed and two runs differ;
each fault strikes where its client was when it struck on the simulator
(during the same call, sleep or wait of the client's), however long the
calls take on the server. A server restart cannot be injected there. The
trace is then what the clients sent, received and saw.

Exit 0 when every check passed, 1 when a check found a violation, 2 when
the file cannot be read or parsed (with FILE:LINE), or the server named
by --zk cannot be reached.

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

// loadScenario reads a scenario file, or a library scenario by name.
func loadScenario(arg string) (*scenarios.Scenario, string, error) {
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, "/.") {
		sc, e, lerr := scenarios.LookupLibrary(arg)
		if lerr == nil {
			return sc, e.File, nil
		}
		return nil, "", usagef("%s: no such file, and no scenario of that name in the library (see 'zklab scenarios')", arg)
	}
	sc, err := scenarios.ParseFile(arg)
	if err != nil {
		var pe *scenarios.ParseError
		if errors.As(err, &pe) {
			return nil, "", usageError{pe.Error()}
		}
		return nil, "", usagef("%v", err)
	}
	return sc, arg, nil
}

func runRun(args []string, stdout, stderr io.Writer) error {
	c := find("run")
	fs := newFlags(c)
	seed := fs.Uint64("seed", 0, "replay with this seed instead of the file's")
	htmlOut := fs.String("html", "", "write a self-contained HTML report to this file")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout")
	trace := fs.Bool("trace", false, "print the simulator's full trace")
	zkServers := fs.String("zk", "", "run on a real ZooKeeper at HOST:PORT[,HOST:PORT...] instead of the simulator")
	args, err := interleaved(fs, c, args, stdout)
	if err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef("want one scenario file or name, got %d arguments", len(args))
	}
	sc, file, err := loadScenario(args[0])
	if err != nil {
		return err
	}
	if _, ok := recipes.Lookup(sc.Recipe); !ok {
		return usagef("%s: %s", file, scenarios.UserRecipe(sc, file)) // a user's recipe replays in go test
	}
	if *seed != 0 {
		sc.Seed = *seed
	}
	var res *scenarios.Result
	if *zkServers != "" {
		servers, err := zkList(*zkServers)
		if err != nil {
			return err
		}
		res, err = scenarios.Run(sc, scenarios.RunOptions{ZK: servers, Trace: *trace, Report: *htmlOut != "",
			ZKLog: func(line string) { progressLine(stderr, line) }})
		if err != nil {
			return usagef("%s: %v", file, err)
		}
	} else {
		res, err = scenarios.Replay(sc, scenarios.RunOptions{Trace: *trace, Report: *htmlOut != ""})
		if err != nil {
			return usagef("%s: %v", file, err)
		}
	}
	unmet := res.Verdict.Expectations(sc.Expect)
	if *htmlOut != "" {
		if err := writeRunReport(*htmlOut, file, res); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := printRunJSON(stdout, file, res, unmet); err != nil {
			return err
		}
	} else {
		if res.Verdict.Real {
			fmt.Fprintf(stdout, "scenario %s: %s, %d clients, on ZooKeeper at %s (the server's schedule, not the file's)\n\n", file, sc.Recipe, sc.Clients, *zkServers)
		} else {
			fmt.Fprintf(stdout, "scenario %s: %s, %d clients\n\n", file, sc.Recipe, sc.Clients)
		}
		if *trace {
			fmt.Fprintf(stdout, "trace:\n%s\n", res.Trace)
		}
		if res.Verdict.Real {
			fmt.Fprintf(stdout, "timeline (event, client, what):\n%s\n", res.History())
			fmt.Fprintf(stdout, "on the server:\n  %s\n\n", strings.Join(res.Notes, "\n  "))
		} else {
			fmt.Fprintf(stdout, "timeline (step, client, event):\n%s\n", res.History())
		}
		fmt.Fprint(stdout, res.Verdict.String())
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
				fmt.Fprintf(stdout, "\nall %d expectations %s met\n", applicable, of)
			} else {
				fmt.Fprintf(stdout, "\n%d of %d expectations %s not met:\n  %s\n", len(unmet), applicable, of, strings.Join(unmet, "\n  "))
			}
		}
	}
	if v := res.Verdict.Violations(nil); len(v) > 0 {
		return violationError{fmt.Sprintf("%s: %s failed: %s", file, v[0].Name, v[0].Detail)}
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

func printRunJSON(w io.Writer, file string, res *scenarios.Result, unmet []string) error {
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

func writeRunReport(path, file string, res *scenarios.Result) error {
	rep := res.Report
	r := report{Title: "zklab run " + file, Verdict: res.Verdict.String(), Clients: rep.Clients, Trace: rep.Events}
	for _, h := range rep.Holds {
		label := ""
		if h.Shared {
			label = fmt.Sprintf("holds the read lock (token %d), steps %d-%d", h.Token, h.From, h.To)
		}
		r.Holds = append(r.Holds, holdInterval{Client: h.Client, From: h.From, To: h.To, Token: h.Token, Label: label})
	}
	for _, v := range rep.Views {
		r.Views = append(r.Views, porcupineView{Title: "porcupine: " + v.Title, HTML: v.HTML})
	}
	var b bytes.Buffer
	if err := writeReport(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return usagef("--html: %v", err)
	}
	return nil
}

func runScenarios(args []string, stdout, stderr io.Writer) error {
	c := find("scenarios")
	fs := newFlags(c)
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	for _, e := range scenarios.Library() {
		fmt.Fprintf(stdout, "%-26s %s\n", e.Name, e.Summary)
	}
	return nil
}
