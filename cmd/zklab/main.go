// Command zklab replays ZooKeeper fault scenarios, explores lock recipes
// for violations, and shows the herd effect and split-brain, on a
// deterministic simulator (or a real ZooKeeper with --zk).
//
// Exit codes: 0 pass, 1 a violation (or, for a scenario file with expect
// lines, an expectation not met), 2 bad usage or bad input, 3 a run that
// reached its step or time limit (the contract is in run.go, judge).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/zklab/zklab/scenarios"
)

// A command is one subcommand of zklab.
type command struct {
	name    string
	summary string
	usage   string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands []command

func register(c command) { commands = append(commands, c) }

// usageError is bad usage or bad input: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// violationError reports that a check found a violation: exit code 1. The
// command has already printed the verdict.
type violationError struct{ msg string }

func (e violationError) Error() string { return e.msg }

// limitError reports that a run reached its step or time limit before
// its workload ended: exit code 3, neither a pass nor a violation.
type limitError struct{ msg string }

func (e limitError) Error() string { return e.msg }

// exitLimit is the exit code of a run that reached its limit.
const exitLimit = 3

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	sort.Slice(commands, func(i, j int) bool { return commands[i].name < commands[j].name })
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c := find(args[1]); c != nil {
				fmt.Fprint(stdout, c.usage)
				return 0
			}
		}
		if len(args) == 0 {
			// No command is bad usage: the usage goes where errors go.
			printUsage(stderr)
			return 2
		}
		printUsage(stdout)
		return 0
	}
	c := find(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "zklab: unknown command %s (run 'zklab --help' for the list)\n", scenarios.Cut(args[0]))
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	var u usageError
	var v violationError
	var l limitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		printError(stderr, c.name, u.msg)
		return 2
	case errors.As(err, &v):
		printError(stderr, c.name, v.msg)
		return 1
	case errors.As(err, &l):
		printError(stderr, c.name, l.msg)
		return exitLimit
	default:
		printError(stderr, c.name, err.Error())
		return 2
	}
}

// printError prints an error one line per mistake, each naming the
// command: a scenario file with three mistakes gives three lines, each
// FILE:LINE: what is wrong.
func printError(stderr io.Writer, cmd, msg string) {
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintf(stderr, "zklab %s: %s\n", cmd, cutLine(line))
	}
}

// errorLineMax bounds an error line: whatever value a library or the
// flag package quotes in full, a megabyte of it is not echoed.
const errorLineMax = 1000

func cutLine(line string) string {
	if len(line) <= errorLineMax {
		return line
	}
	return fmt.Sprintf("%s... (%d bytes)", line[:errorLineMax], len(line))
}

func find(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `zklab: a deterministic ZooKeeper simulator and testbed for lock recipes

Usage: zklab COMMAND [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'zklab COMMAND --help' for a command's flags.
Exit codes: 0 pass; 1 a violation, or an expectation of the file not met;
2 bad usage or input; 3 a run reached its step or time limit.
`)
}

// newFlags returns a flag set that reports errors instead of exiting, and
// prints the command's usage for --help.
func newFlags(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet("zklab "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors and
// printing the usage on --help.
func parseFlags(fs *flag.FlagSet, c *command, args []string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, c.usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return flag.ErrHelp
		}
		return usagef("%v", err)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitFlagList splits a comma-separated flag value, refusing an empty
// item ("a,,b", ",") rather than reading it as fewer items or none.
func splitFlagList(name, s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, usagef("--%s: %s has an empty item (write items separated by single commas)", name, scenarios.Cut(s))
		}
		out = append(out, f)
	}
	return out, nil
}

// checkIntFlag refuses an integer flag outside lo..hi, naming the flag,
// the value and the range.
func checkIntFlag(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("--%s: %d is not from %d to %d", name, v, lo, hi)
	}
	return nil
}

// checkDurationFlag refuses a duration flag outside (0, hi].
func checkDurationFlag(name string, d, hi time.Duration) error {
	if d <= 0 || d > hi {
		return usagef("--%s: %v is not a duration above 0 and at most %v", name, d, hi)
	}
	return nil
}
