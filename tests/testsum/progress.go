package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// `testsum progress` follows the progress file of one suite that `make test` runs with its
// output in a log (the Python, Java and userpaths suites), so the run is never silent for
// long without saying which test runs. The suite's scripts (tests/progress/progress.sh) and
// pytest (tests/progress/pytest_progress.py) append lines "KIND UNIX-SECONDS TEXT":
//
//	say    TEXT                     printed at once: a download announced, its size and time
//	step   TEXT                     what the suite does now, when not a test
//	total  N                        tests collected
//	start  NAME                     a test starts
//	done   OUTCOME SECONDS NAME     a test ended: passed, failed or skipped
//	end                             the suite ended: stop following
//
// Each finished test that failed or took at least -slow is printed as it ends; after -every
// without a line of its own, one line says the tests done so far and what runs now.
type progress struct {
	w        io.Writer
	name     string
	start    time.Time
	last     time.Time // when this follower last printed
	total    int
	c        counts
	now      string // the current test or step
	nowSince time.Time
	slow     time.Duration
	ended    bool
	clock    func() time.Time
	tests    bool // a test started or ended: the status counts tests
}

func runProgress(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("testsum progress", flag.ExitOnError)
	name := fs.String("name", "suite", "the suite's `name`, before each line")
	file := fs.String("file", "", "the progress `FILE` the suite appends to")
	every := fs.Duration("every", 30*time.Second, "after this long without a line, say what runs")
	slow := fs.Duration("slow", 5*time.Second, "print each finished test that took at least this long")
	fs.Parse(args)
	if *file == "" {
		fmt.Fprintln(os.Stderr, "testsum progress: -file is required")
		return 2
	}
	p := &progress{w: out, name: *name, slow: *slow, clock: time.Now}
	p.start, p.last = p.clock(), p.clock()
	var off int64
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !p.ended {
		off = p.readFrom(*file, off)
		if p.ended {
			break
		}
		if p.clock().Sub(p.last) >= *every {
			p.status()
		}
		<-tick.C
	}
	return 0
}

// readFrom feeds the file's lines from byte off on and returns the new offset.
func (p *progress) readFrom(file string, off int64) int64 {
	f, err := os.Open(file)
	if err != nil {
		return off
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off
	}
	r := bufio.NewReader(f)
	for {
		s, err := r.ReadString('\n')
		off += int64(len(s))
		if err != nil { // an unfinished line waits for its end
			off -= int64(len(s))
			return off
		}
		p.line(strings.TrimSuffix(s, "\n"))
	}
}

func (p *progress) printf(format string, a ...any) {
	fmt.Fprintf(p.w, format, a...)
	p.last = p.clock()
}

// line handles one line of the protocol above.
func (p *progress) line(l string) {
	kind, rest, _ := strings.Cut(l, " ")
	secs, text, _ := strings.Cut(rest, " ")
	at := p.clock()
	if f, err := strconv.ParseFloat(secs, 64); err == nil {
		at = time.Unix(0, int64(f*1e9))
	}
	switch kind {
	case "say":
		p.printf("    %s: %s\n", p.name, text)
	case "step":
		p.now, p.nowSince = text, at
	case "total":
		p.total, _ = strconv.Atoi(text)
	case "start":
		p.now, p.nowSince, p.tests = text, at, true
	case "done":
		f := strings.SplitN(text, " ", 3)
		if len(f) < 3 {
			return
		}
		d, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "failed":
			p.c.failed++
		case "skipped":
			p.c.skipped++
		default:
			p.c.passed++
		}
		p.tests = true
		if p.now == f[2] {
			p.now = ""
		}
		if f[0] == "failed" || time.Duration(d*float64(time.Second)) >= p.slow {
			p.printf("    %s: %s %s (%.1f s)%s\n", p.name, f[0], f[2], d, p.of())
		}
	case "end":
		p.ended = true
	}
}

// of is " [12 of 151 done]", or "" before any test.
func (p *progress) of() string {
	n := p.c.passed + p.c.failed + p.c.skipped
	switch {
	case p.total > 0:
		return fmt.Sprintf(" [%d of %d done]", n, p.total)
	case n > 0:
		return fmt.Sprintf(" [%d done]", n)
	}
	return ""
}

// status says how far the suite is and what runs now.
func (p *progress) status() {
	now := p.clock()
	s := fmt.Sprintf("    ... %s: %.0f s in", p.name, now.Sub(p.start).Seconds())
	if p.tests {
		n := p.c.passed + p.c.failed + p.c.skipped
		if p.total > 0 {
			s += fmt.Sprintf(", %d of %d tests done (%s)", n, p.total, p.c)
		} else {
			s += fmt.Sprintf(", %d done (%s)", n, p.c)
		}
	}
	switch {
	case p.now != "":
		s += fmt.Sprintf("; now %s (%.0f s)", p.now, now.Sub(p.nowSince).Seconds())
	case p.tests:
		s += "; between tests"
	}
	p.printf("%s\n", s)
}
