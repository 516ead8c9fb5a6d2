package main

import (
	"bytes"
	"flag"
	"kylix/cmd/internal/timeline"
	"os"
	"path/filepath"
	"strings"
)

// --timeline DIR: every rank (joiners and relaunched ranks too) gets KYLIX_TIMELINE, the
// absolute DIR, through the environment the ranks inherit; at the end of the job the launcher
// merges the ranks' files, draws the picture and prints where they are (what `kylix timeline
// DIR` does). Ranks on other hosts write their files there: merge only sees this machine's
// (copy them over, then run `kylix timeline DIR`).

// timelineDir is --timeline's value, "" when not given.
var timelineDir string

// timelineFlag registers --timeline on fs.
func timelineFlag(fs *flag.FlagSet) { fs.StringVar(&timelineDir, "timeline", "", "") }

// startTimeline sets KYLIX_TIMELINE for the ranks. A new job (not --join) first removes the
// files a previous job left in DIR, which the merge would otherwise mix in.
func startTimeline(j *job) error {
	if timelineDir == "" {
		return nil
	}
	dir, err := filepath.Abs(timelineDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if j.cfg.join == "" {
		old, _ := filepath.Glob(filepath.Join(dir, "rank-*.json"))
		for _, p := range append(old, filepath.Join(dir, "timeline.json"), filepath.Join(dir, "timeline.svg")) {
			os.Remove(p)
		}
	}
	timelineDir = dir
	return os.Setenv("KYLIX_TIMELINE", dir)
}

// endTimeline merges the ranks' files once the job is over (the launcher of a --join does
// not: the job's own launcher does) and returns the job's exit code unchanged.
func endTimeline(j *job, code int) int {
	if timelineDir == "" || j.cfg.join != "" {
		return code
	}
	var sum bytes.Buffer
	js, svg, err := timeline.Run(timelineDir, &sum)
	if err != nil {
		j.logf("timeline: %v", err)
		return code
	}
	for _, line := range strings.Split(strings.TrimRight(sum.String(), "\n"), "\n") {
		j.logf("timeline: %s", line)
	}
	j.logf("timeline: trace %s (open in https://ui.perfetto.dev or chrome://tracing), picture %s", js, svg)
	return code
}
