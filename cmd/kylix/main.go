// Command kylix is the companion tool: `kylix plan` prints the degrees Proposition 4.1 picks
// for a data set and cluster, `kylix bench` measures config and reduce throughput of a real job
// (run it under kylixrun).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `usage:
  kylix plan  --features N --density D --ranks M [--alpha A] [--min-packet BYTES] [--bytes-per-value B]
              [--degrees SPEC] [--svg FILE] [--simulate [--seed S] [--max-keys K]]   (kylix plan -h)
  kylix bench --features N --density D [--width W] [--iters K] [--alpha A]   (under kylixrun)
  kylix bench --dense [--sizes 1,1024,...] [--iters K]                         (under kylixrun)
  kylix bench --links [--links-json FILE]                                      (under kylixrun)
  kylix timeline DIR                                                           (kylix timeline -h)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "plan":
		err = planCmd(os.Args[2:])
	case "bench":
		err = benchCmd(os.Args[2:])
	case "timeline":
		err = timelineCmd(os.Args[2:]) // timeline.go
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "kylix: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) { // -h: the flag set has printed the usage; not an error
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kylix:", err)
		os.Exit(1)
	}
}
