package main

import (
	"flag"
	"fmt"
	"io"
	"kylix/cmd/internal/timeline"
)

func init() {
	register(&command{
		Name:    "timeline",
		Args:    "[flags] DIR",
		NArgs:   1,
		Purpose: "merge the ranks' timeline files of DIR into one trace and a picture, and say where the time went",
		Details: `Merges the per-rank files a job wrote with the option timeline=DIR (KYLIX_TIMELINE, or
kylixrun --timeline DIR) into DIR/timeline.json, one Chrome trace with a process per rank for
https://ui.perfetto.dev or chrome://tracing; draws DIR/timeline.svg (a lane per rank, phases in
colour, waits in red, the caller's kylix_mark spans beneath, a time axis); and prints where the
time went: each phase's share of the time inside calls, per layer the bytes moved and the
measured and predicted time, the caller's spans, and the rank the others waited for most. The
file of a rank that was killed is merged too (its events up to the last flush).
`,
		Example: `kylixrun --timeline build/tl -n 4 build/examples/pagerank build/graph.el
kylix timeline build/tl      # again later, e.g. after copying DIR from the cluster`,
		Setup: func(fs *flag.FlagSet) func(io.Writer, []string) error {
			quiet := fs.Bool("q", false, "quiet: write the files and print only their paths")
			return func(w io.Writer, args []string) error {
				summary := w
				if *quiet {
					summary = io.Discard
				}
				js, svg, err := timeline.Run(args[0], summary)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\npicture: %s\n", js, svg)
				return nil
			}
		},
	})
}
