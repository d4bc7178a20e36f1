// Command zklab replays ZooKeeper fault scenarios, explores lock recipes
// for violations, and shows the herd effect and split-brain, on a
// deterministic simulator (or a real ZooKeeper with --zk).
//
// Exit codes: 0 when every check passed, 1 when a check found a
// violation, 2 for bad usage or bad input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c := find(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "zklab: unknown command %q (run 'zklab --help' for the list)\n", args[0])
		return 2
	}
	err := c.run(args[1:], stdout, stderr)
	var u usageError
	var v violationError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "zklab %s: %s\n", c.name, u.msg)
		return 2
	case errors.As(err, &v):
		fmt.Fprintf(stderr, "zklab %s: %s\n", c.name, v.msg)
		return 1
	default:
		fmt.Fprintf(stderr, "zklab %s: %v\n", c.name, err)
		return 2
	}
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
Exit codes: 0 every check passed, 1 a check found a violation, 2 bad usage or input.
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
