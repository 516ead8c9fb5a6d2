package main

import (
	"flag"
	"fmt"
	"io"
	"kylix/cmd/internal/timeline"
	"os"
)

const timelineUsage = `usage: kylix timeline [-q] DIR

Merges the per-rank timeline files a job wrote with the option timeline=DIR (KYLIX_TIMELINE,
or kylixrun --timeline DIR) into DIR/timeline.json, one Chrome trace with a process per rank
for https://ui.perfetto.dev or chrome://tracing; draws DIR/timeline.svg (a lane per rank,
phases in colour, waits in red, the caller's kylix_mark spans beneath, a time axis); and prints
where the time went: each phase's share of the time inside calls, per layer the bytes moved
and the measured and predicted time, the caller's spans, and the rank the others waited for
most. The file of a rank that was killed is merged too (its events up to the last flush).

flags:
  -q    quiet: write the files, print only their paths (default: off)

example:
  kylixrun --timeline /tmp/tl -n 4 build/examples/pagerank build/graph.el
  kylix timeline /tmp/tl      # again later, e.g. after copying DIR from the cluster
`

func timelineCmd(args []string) error {
	fs := flag.NewFlagSet("timeline", flag.ContinueOnError)
	quiet := fs.Bool("q", false, "quiet: print only the paths written")
	fs.Usage = func() { fmt.Fprint(fs.Output(), timelineUsage) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("timeline: want one directory, got %d arguments", fs.NArg())
	}
	var w io.Writer = os.Stdout
	if *quiet {
		w = io.Discard
	}
	js, svg, err := timeline.Run(fs.Arg(0), w)
	if err != nil {
		return fmt.Errorf("timeline: %v", err)
	}
	fmt.Printf("trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\npicture: %s\n", js, svg)
	return nil
}
