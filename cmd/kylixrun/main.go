// Command kylixrun starts the ranks of a Kylix job on this machine or over ssh, serves the
// rendezvous they meet at, and supervises them. Run "kylixrun --help" for usage.
package main

import (
	"errors"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	stderr := &lineWriter{w: os.Stderr}
	cfg, err := parseArgs(args)
	if errors.Is(err, errHelp) {
		_, _ = os.Stdout.WriteString(usageText)
		return 0
	}
	if errors.Is(err, errVersion) {
		_, _ = os.Stdout.WriteString("kylixrun " + version + "\n")
		return 0
	}
	if err != nil {
		printUsageError(stderr, err)
		return 2
	}
	j := &job{cfg: cfg, stdout: &lineWriter{w: os.Stdout}, stderr: stderr}
	if err := startTimeline(j); err != nil { // timeline.go
		j.logf("--timeline: %v", err)
		return 2
	}
	if cfg.join != "" {
		return j.runJoin()
	}
	return endTimeline(j, j.run())
}
