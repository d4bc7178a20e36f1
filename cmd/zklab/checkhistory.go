package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zklab/zklab/model"
	"github.com/zklab/zklab/sim/wire"
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
out of time.

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
	f, err := os.Open(path)
	if err != nil {
		return usagef("%v", err)
	}
	defer f.Close()
	records, err := wire.ReadHistory(path, f)
	if err != nil {
		return usagef("%v", err)
	}
	res, info, n := model.CheckServed(records, *timeout)
	switch res {
	case porcupine.Ok:
		fmt.Fprintf(stdout, "%s: %d records, %d znode operations: linearizable\n", path, len(records), n)
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("%s: the check ran out of time after %v (%d znode operations)", path, *timeout, n)
	}
	fmt.Fprintf(stdout, "%s: %d records, %d znode operations: NOT linearizable\n", path, len(records), n)
	if *html != "" {
		out, err := os.Create(*html)
		if err != nil {
			return err
		}
		if err := porcupine.Visualize(model.Znode(), info, out); err != nil {
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
