package examples

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// elastic_logreg (examples/c/elastic_logreg.c): seed 004's batch gradient descent with elastic
// membership, in its two modes, each checked iteration by iteration against the single-process
// reference (elastic_logreg --check) given the membership log the job wrote.

// bg is a command running in the background with its output collected.
type bg struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func startBG(t *testing.T, name string, args ...string) *bg {
	t.Helper()
	p := &bg{cmd: exec.Command(name, args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

func (p *bg) wait(t *testing.T, what string) string {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%s: %v\n%s", what, err, p.out.String())
		}
	case <-time.After(runLimit):
		t.Fatalf("%s: still running after %v\n%s", what, runLimit, p.out.String())
	}
	return p.out.String()
}

// waitFor polls until file exists and holds a line matching re.
func waitFor(t *testing.T, file string, re *regexp.Regexp) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && re.Match(b) {
			return
		}
	}
	t.Fatalf("%s: no line matching %s within 60 s", file, re)
}

// checkLog runs the reference over the log and returns the membership lines.
func checkLog(t *testing.T, bin, log string) []string {
	t.Helper()
	out, err := run(".", runLimit, nil, bin, "--check", log)
	t.Logf("elastic_logreg --check:\n%s", out)
	if err != nil || !strings.Contains(out, "check: ok: ") {
		t.Fatalf("the reference disagrees with the job: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(log)
	var members []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "M ") {
			members = append(members, l)
		}
	}
	return members
}

// Ramp-up: 2 ranks start; at iteration 5 the job waits for 4 (a kylixrun --join adds 2), at 10
// for 6 (a second kylixrun --join, started once the first two are in).
func TestElasticLogRegRampUp(t *testing.T) {
	b := setup(t)
	bin := buildExample(t, "elastic_logreg")
	dir := t.TempDir()
	jf, log := filepath.Join(dir, "job.json"), filepath.Join(dir, "membership.log")
	prog := []string{"--", bin, "--iters", "20", "--resize-every", "0", "--ramp", "5:4,10:6"}
	job := startBG(t, b.kylixrun, append([]string{"-n", "2", "--elastic", "--job-file", jf, "--timeout", "120",
		"--job-timeout", jobTimeout}, append(prog, "--log", log)...)...)
	waitFor(t, jf, regexp.MustCompile(`"join"`))
	join1 := startBG(t, b.kylixrun, append([]string{"--join", jf, "-n", "2", "--timeout", "120"}, prog...)...)
	waitFor(t, log, regexp.MustCompile(`(?m)^M 5 4 `))
	join2 := startBG(t, b.kylixrun, append([]string{"--join", jf, "-n", "2", "--timeout", "120"}, prog...)...)
	out := job.wait(t, "the job")
	join1.wait(t, "the first kylixrun --join")
	join2.wait(t, "the second kylixrun --join")
	t.Logf("the job:\n%s", out)
	want := []string{"M 0 2 0 1", "M 5 4 0 1 -1 -1", "M 10 6 0 1 2 3 -1 -1"}
	if got := checkLog(t, bin, log); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("membership log %q, want %q", got, want)
	}
	if !strings.Contains(out, "iteration 19: 6 ranks") {
		t.Errorf("rank 0 did not finish on 6 ranks")
	}
	if fileExists(jf) {
		t.Errorf("the job file outlived the job")
	}
}

// Failure-ignorance: rank 1 of 3 dies (SIGKILL) at iteration 5; the other two go on with
// their own data; kylixrun relaunches it as a joiner and at iteration 12 the job waits for it
// to rejoin.
func TestElasticLogRegFailureIgnorance(t *testing.T) {
	b := setup(t)
	bin := buildExample(t, "elastic_logreg")
	log := filepath.Join(t.TempDir(), "membership.log")
	out, err := run(".", runLimit, nil, b.kylixrun, "-n", "3", "--elastic", "--restarts", "1", "--timeout", "120",
		"--job-timeout", jobTimeout, "--", bin, "--iters", "20", "--resize-every", "0", "--die-at", "5:1",
		"--ramp", "12:3", "--log", log)
	t.Logf("the job:\n%s", out)
	if err != nil {
		t.Fatalf("kylixrun --elastic: %v", err)
	}
	// The relaunched rank usually joins at iteration 12; when it reaches the join port before
	// the survivors' resize after the death, that resize admits it at once.
	got := strings.Join(checkLog(t, bin, log), "|")
	if got != "M 0 3 0 1 2|M 5 2 0 2|M 12 3 0 1 -1" && got != "M 0 3 0 1 2|M 5 3 0 2 -1|M 12 3 0 1 2" {
		t.Errorf("membership log %q, want the death at 5 and the rejoin at 5 or 12", got)
	}
	for _, re := range []string{
		`kylixrun: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\); relaunched as joiner j0`,
		`kylixrun: a resize admitted 1 joiner\(s\) as rank\(s\) 2: the job has 3 ranks`,
		`kylixrun: --elastic job ended with status 0; 1 joiner\(s\) admitted; died: rank 1 .*rejoined and finished: joiner j0`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("kylixrun's lines lack %s", re)
		}
	}
}

// Rank 0 of 2 dies and is relaunched; rank 1 alone is half the comm without rank 0, so its
// resize fails (no quorum) and it exits. The relaunched joiner then waits for a resize that
// nobody will call: kylixrun stops it and fails the job with the first death's code.
func TestElasticNoMemberLeft(t *testing.T) {
	b := setup(t)
	bin := buildExample(t, "elastic_logreg")
	start := time.Now()
	out, err := run(".", runLimit, nil, b.kylixrun, "-n", "2", "--elastic", "--restarts", "1",
		"--job-timeout", jobTimeout, "--", bin, "--iters", "10", "--die-at", "3:0")
	t.Logf("the job (%v):\n%s", time.Since(start), out)
	// The first death is rank 0's SIGKILL (137) or, when the launcher reaps rank 1 first (it
	// fails within milliseconds), rank 1's status 1.
	if ee, ok := err.(*exec.ExitError); !ok || (ee.ExitCode() != 137 && ee.ExitCode() != 1) {
		t.Errorf("kylixrun: %v, want exit status 137 or 1", err)
	}
	for _, re := range []string{`no member of the job is left to admit the 1 joiner\(s\) waiting`,
		`--elastic job ended with status (137|1) \(no rank finished cleanly\)`, `never admitted: joiner j0`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("kylixrun's lines lack %s", re)
		}
	}
}
