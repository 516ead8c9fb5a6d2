package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type testState struct {
	out    []string
	paused bool
}

type pkgState struct {
	counts
	out   []string // package-level output: go test's closing lines, panics, build errors
	tests map[string]*testState
	start time.Time
}

// goReport turns test2json events into go test's usual non-verbose output plus counts.
type goReport struct {
	w       io.Writer
	pkgs    map[string]*pkgState
	total   counts
	last    time.Time // when we last printed: the heartbeat fills silences
	now     func() time.Time
	anyFail bool
}

func runGo(args []string, in io.Reader, out io.Writer) int {
	fs := flag.NewFlagSet("testsum go", flag.ExitOnError)
	name := fs.String("name", "go", "the `word` before the run's counts")
	countsFile := fs.String("counts", "", "write `FILE` with the run's counts for testsum total")
	every := fs.Duration("every", 30*time.Second, "after this long without a line, say what still runs")
	fs.Parse(args)

	r := &goReport{w: out, pkgs: map[string]*pkgState{}, now: time.Now}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	r.follow(scanLines(in), tick.C, *every)
	r.printf("%s: %s\n", *name, r.total)
	if *countsFile != "" {
		if err := os.WriteFile(*countsFile, []byte(*name+" "+r.total.fields()+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			return 1
		}
	}
	if r.anyFail || r.total.failed > 0 {
		return 1
	}
	return 0
}

// scanLines sends in's lines and closes the channel at its end.
func scanLines(in io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

// follow reports every line until the channel closes; at each tick after `every` without a
// printed line, it says what still runs.
func (r *goReport) follow(lines <-chan string, tick <-chan time.Time, every time.Duration) {
	r.last = r.now()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			r.line(l)
		case <-tick:
			if r.now().Sub(r.last) >= every {
				r.heartbeat()
			}
		}
	}
}

func (r *goReport) printf(format string, a ...any) {
	fmt.Fprintf(r.w, format, a...)
	r.last = r.now()
}

func (r *goReport) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{tests: map[string]*testState{}, start: r.now()}
		r.pkgs[name] = p
	}
	return p
}

func (r *goReport) line(l string) {
	var e event
	if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &e) != nil {
		r.printf("%s\n", l) // not test2json's: go vet's or the toolchain's own words
		return
	}
	switch e.Action {
	case "build-output":
		r.printf("%s", e.Output)
		return
	case "build-fail":
		r.anyFail = true
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.out = append(p.out, e.Output)
		case "pass", "fail", "skip":
			r.endPackage(e.Package, p, e.Action)
		}
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &testState{}
		p.tests[e.Test] = t
	}
	switch e.Action {
	case "output":
		t.out = append(t.out, e.Output)
	case "pause":
		t.paused = true
	case "cont":
		t.paused = false
	case "pass":
		p.passed++
		delete(p.tests, e.Test)
	case "skip":
		p.skipped++
		r.printf("%s", framed(t.out)) // the reason: a skipped test may hide a missing tool
		delete(p.tests, e.Test)
	case "fail":
		p.failed++
		r.printf("%s", framed(t.out))
		delete(p.tests, e.Test)
	}
}

// endPackage prints the package's counts and then go test's own closing lines (`ok  pkg 1.2s`,
// `FAIL pkg 1.2s`, `?  pkg [no test files]`) as go test prints them, so readers of go test's
// output still find them.
func (r *goReport) endPackage(name string, p *pkgState, action string) {
	if action == "fail" {
		r.anyFail = true
		// A test that never ended (a panic, the -timeout) is the one to read.
		for _, n := range sortedKeys(p.tests) {
			r.printf("%s", framed(p.tests[n].out))
		}
	}
	if n := p.passed + p.failed + p.skipped; n > 0 {
		r.printf("%s: %s\n", name, p.counts)
	}
	var keep []string
	for _, o := range p.out {
		if o != "PASS\n" { // go test -v's line, not printed without -v
			keep = append(keep, o)
		}
	}
	r.printf("%s", strings.Join(keep, ""))
	r.total.add(p.counts)
	delete(r.pkgs, name)
}

// heartbeat says, for each package still running, its counts so far and which tests run.
func (r *goReport) heartbeat() {
	for _, name := range sortedKeys(r.pkgs) {
		p := r.pkgs[name]
		var running []string
		for _, n := range sortedKeys(p.tests) {
			if !p.tests[n].paused && !strings.Contains(n, "/") {
				running = append(running, n)
			}
		}
		const show = 3
		what := strings.Join(running[:min(show, len(running))], ", ")
		if len(running) > show {
			what += fmt.Sprintf(" and %d more", len(running)-show)
		}
		if what == "" {
			what = "building or between tests"
		}
		r.printf("    ... %s: %s so far, %.0f s; running %s\n", name, p.counts,
			r.now().Sub(p.start).Seconds(), what)
	}
	r.last = r.now()
}

// framed drops test2json's framing lines (=== RUN, PAUSE, CONT, NAME), which go test without
// -v does not print, and keeps everything else a test wrote.
func framed(out []string) string {
	var b strings.Builder
	for _, o := range out {
		if !strings.HasPrefix(strings.TrimLeft(o, " "), "=== ") {
			b.WriteString(o)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
