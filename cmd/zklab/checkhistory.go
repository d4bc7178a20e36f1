package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
)

func init() {
	register(command{
		name:    "check-history",
		summary: "check a history written by 'zklab serve --history' for linearizability",
		usage: `Usage: zklab check-history [--timeout D] [--html FILE] HISTORY

Reads the JSON lines 'zklab serve --history' wrote and checks the
single-znode operations in it (create, delete, exists, getData, setData,
and the same ops inside successful multis) against the znode model with
porcupine: every reply must be one a linearizable ZooKeeper could give.
Exit 0 if the history is linearizable, 1 if it is not (with --html, the
porcupine visualization is written), 2 for bad input or a check that ran
out of time. To see the whole run drawn (sessions, requests and their
replies, faults, watch events) with this verdict, use
'zklab run --history HISTORY --html OUT'.

Flags:
`,
		run: runCheckHistory,
	})
}

func runCheckHistory(args []string, stdout, stderr io.Writer) error {
	c := find("check-history")
	fs := newFlags(c)
	timeout := fs.Duration("timeout", time.Minute, "give up the check after this long")
	html := fs.String("html", "", "on a violation, write porcupine's visualization here")
	if err := parseFlags(fs, c, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one HISTORY file, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	records, err := readServedHistory(path)
	if err != nil {
		return err
	}
	v := checkServed(path, records, *timeout)
	switch v.result {
	case porcupine.Ok:
		fmt.Fprintln(stdout, v.line)
		return nil
	case porcupine.Unknown:
		return errors.New(v.line)
	}
	fmt.Fprintln(stdout, v.line)
	if *html != "" {
		out, err := os.Create(*html)
		if err != nil {
			return err
		}
		if err := porcupine.Visualize(model.Znode(), v.info, out); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "visualization: %s\n", *html)
	}
	return violationError{"the served history is not linearizable"}
}
