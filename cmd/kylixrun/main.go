// Command kylixrun starts the ranks of a Kylix job on this machine or over ssh, serves the
// rendezvous they meet at, and supervises them. Run "kylixrun --help" for usage.
package main

import (
	"errors"
	"kylix/core/kx"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	stdout, stderr := outputWriters()
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
	j := &job{cfg: cfg, stdout: stdout, stderr: stderr}
	j.warnUnknownEnv()
	if err := startTimeline(j); err != nil { // timeline.go
		j.logf("--timeline: %v", err)
		return 2
	}
	if cfg.join != "" {
		return j.runJoin()
	}
	return endTimeline(j, j.run())
}

// outputWriters are the launcher's stdout and stderr. When both are one file (2>&1), they
// share its line state, so the launcher's lines on stderr never land after a rank's unfinished
// line on stdout.
func outputWriters() (stdout, stderr *lineWriter) {
	at := &lineEnd{}
	out, oerr := os.Stdout.Stat()
	errf, eerr := os.Stderr.Stat()
	stdout = newLineWriter(os.Stdout, at)
	if oerr == nil && eerr == nil && os.SameFile(out, errf) {
		return stdout, newLineWriter(os.Stderr, at)
	}
	return stdout, newLineWriter(os.Stderr, nil)
}

// warnUnknownEnv reports each KYLIX_ variable of the launcher's environment that is no Kylix
// setting, once for the job: the ranks it starts leave that to it (kx.ReportsUnknownEnv).
func (j *job) warnUnknownEnv() {
	for _, w := range kx.UnknownEnv(os.Environ()) {
		j.logf("%s", w)
	}
}
