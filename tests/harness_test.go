package tests

// The harness: build libkylix.so and kylixrun (or take them from KYLIX_BUILD), compile the C test
// programs in c/ against include/kylix.h, and run them as multi-process jobs under kylixrun over
// loopback TCP. The C programs check themselves and print one line per result:
//
//	r<rank> PASS|FAIL|INFO <text>
//	r<rank> DIGEST <name> <hex>
//	r<rank> DONE fails=<n>
//
// The harness asserts exit codes and these lines; with -v and KYLIX_TEST_OUTPUT=1 it also shows
// the output of jobs that pass. Every job is bounded three times over: the
// programs' own watchdog (alarm), kylixrun --job-timeout, and a hard deadline here that stops the
// launcher's process group (which this test started).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	jobTimeoutS  = 120               // kylixrun --job-timeout
	hardDeadline = 150 * time.Second // our own bound on one kylixrun invocation
	maxParallel  = 2                 // jobs at once: the machine has 2 cores
)

var (
	envOnce  sync.Once
	buildDir string // holds libkylix.so and kylixrun
	envErr   error
	tmpDir   string // created by this test binary, removed by TestMain

	progMu sync.Mutex
	progs  = map[string]*progBuild{}

	jobSlots = make(chan struct{}, maxParallel)
)

type progBuild struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// repoRoot is the module root: the parent of this package's directory.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Dir(wd)
}

// runTool runs a build command with a deadline and returns its combined output.
func runTool(dir string, limit time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: timed out after %v", name, limit)
	}
	return string(out), err
}

// setup finds or builds libkylix.so and kylixrun, once per test binary.
func setup(t *testing.T) string {
	t.Helper()
	envOnce.Do(func() {
		if d := os.Getenv("KYLIX_BUILD"); d != "" {
			abs, err := filepath.Abs(d)
			if err != nil {
				envErr = err
				return
			}
			for _, f := range []string{"libkylix.so", "kylixrun"} {
				if _, err := os.Stat(filepath.Join(abs, f)); err != nil {
					envErr = fmt.Errorf("KYLIX_BUILD=%s: %v", d, err)
					return
				}
			}
			buildDir = abs
			return
		}
		d, err := os.MkdirTemp("", "kylix-tests-")
		if err != nil {
			envErr = err
			return
		}
		tmpDir, buildDir = d, d
		root := repoRoot()
		if out, err := runTool(root, 5*time.Minute, "go", "build", "-buildmode=c-shared",
			"-o", filepath.Join(d, "libkylix.so"), "./capi"); err != nil {
			envErr = fmt.Errorf("building libkylix.so: %v\n%s", err, out)
			return
		}
		if out, err := runTool(root, 5*time.Minute, "go", "build",
			"-o", filepath.Join(d, "kylixrun"), "./cmd/kylixrun"); err != nil {
			envErr = fmt.Errorf("building kylixrun: %v\n%s", err, out)
			return
		}
	})
	if envErr != nil {
		t.Fatalf("setup: %v", envErr)
	}
	return buildDir
}

// program compiles c/<name>.c once and returns the binary's path.
func program(t *testing.T, name string) string {
	t.Helper()
	dir := setup(t)
	progMu.Lock()
	pb := progs[name]
	if pb == nil {
		pb = &progBuild{}
		progs[name] = pb
	}
	progMu.Unlock()
	pb.once.Do(func() {
		root := repoRoot()
		src := filepath.Join(root, "tests", "c", name+".c")
		pb.path = filepath.Join(dir, "test-"+name)
		out, err := runTool(filepath.Join(root, "tests"), 2*time.Minute, "gcc", "-O2", "-Wall", "-Werror",
			"-I"+filepath.Join(root, "include"), "-o", pb.path, src,
			"-L"+dir, "-lkylix", "-Wl,-rpath,"+dir, "-lm")
		if err != nil {
			pb.err = fmt.Errorf("compiling %s: %v\n%s", src, err, out)
		}
	})
	if pb.err != nil {
		t.Fatal(pb.err)
	}
	return pb.path
}

// job is one kylixrun invocation.
type job struct {
	N         int
	Degrees   string  // "" leaves the default (auto)
	TimeoutS  float64 // kylixrun --timeout (per-wait timeout of the ranks); 0: not given
	KeepGoing bool
	Replicas  int    // kylixrun --replication; 0: not given
	Prog      string // name of a program in c/
	Args      []string
	Env       []string // extra KEY=value for kylixrun and the ranks (inherited)
	JobLimitS int      // kylixrun --job-timeout; 0: the default jobTimeoutS
}

func (j job) String() string {
	s := fmt.Sprintf("%s -n %d", j.Prog, j.N)
	if j.Degrees != "" {
		s += " --degrees " + j.Degrees
	}
	if j.Replicas > 0 {
		s += fmt.Sprintf(" --replication %d", j.Replicas)
	}
	s += " " + strings.Join(j.Args, " ")
	if len(j.Env) > 0 {
		s = strings.Join(j.Env, " ") + " " + s
	}
	return s
}

// result is what a job did.
type result struct {
	Cmd     string
	Code    int // exit code of kylixrun; -1 if it did not exit by itself
	Output  string
	Elapsed time.Duration
	Lines   map[int][]line // by rank, from the r<rank> lines
}

type line struct {
	Kind string // PASS FAIL INFO DIGEST DONE
	Text string
}

var lineRE = regexp.MustCompile(`\br(-?\d+) (PASS|FAIL|INFO|DIGEST|DONE) (.*)$`)

// run executes a job under kylixrun, at most maxParallel at a time, and parses its output.
func run(t *testing.T, j job) *result {
	t.Helper()
	dir := setup(t)
	prog := program(t, j.Prog)
	limit := jobTimeoutS
	if j.JobLimitS > 0 {
		limit = j.JobLimitS
	}
	args := []string{"-n", strconv.Itoa(j.N), "--tag-output", "--job-timeout", strconv.Itoa(limit)}
	if j.Degrees != "" {
		args = append(args, "--degrees", j.Degrees)
	}
	if j.TimeoutS > 0 {
		args = append(args, "--timeout", strconv.FormatFloat(j.TimeoutS, 'g', -1, 64))
	}
	if j.KeepGoing {
		args = append(args, "--keep-going")
	}
	if j.Replicas > 0 {
		args = append(args, "--replication", strconv.Itoa(j.Replicas))
	}
	args = append(args, "--", prog)
	args = append(args, j.Args...)

	jobSlots <- struct{}{}
	defer func() { <-jobSlots }()

	cmd := exec.Command(filepath.Join(dir, "kylixrun"), args...)
	cmd.Dir = t.TempDir()
	if len(j.Env) > 0 {
		cmd.Env = append(os.Environ(), j.Env...)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.Stdin = nil
	// Own process group: on our deadline we can stop the launcher and the ranks it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second // ranks that outlive kylixrun must not hold our pipe forever
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kylixrun: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := &result{Cmd: strings.TrimSpace(strings.Join(j.Env, " ") + " kylixrun " + strings.Join(args, " "))}
	var werr error
	select {
	case werr = <-done:
	case <-time.After(hardDeadline):
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case werr = <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			werr = <-done
		}
		t.Errorf("%s: still running after %v; stopped it (kylixrun --job-timeout %d did not)", j, hardDeadline, jobTimeoutS)
		r.Code = -1
	}
	r.Elapsed = time.Since(start)
	if r.Code != -1 {
		r.Code = cmd.ProcessState.ExitCode()
		if werr != nil && r.Code == 0 {
			r.Code = -2 // e.g. WaitDelay expired: output pipe held open by a leftover rank
			t.Errorf("%s: %v", j, werr)
		}
	}
	r.Output = out.String()
	r.Lines = map[int][]line{}
	sc := bufio.NewScanner(strings.NewReader(r.Output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := lineRE.FindStringSubmatch(sc.Text()); m != nil {
			rk, _ := strconv.Atoi(m[1])
			r.Lines[rk] = append(r.Lines[rk], line{m[2], m[3]})
		}
	}
	if testing.Verbose() {
		t.Logf("%s: exit %d in %.2fs", r.Cmd, r.Code, r.Elapsed.Seconds())
		if os.Getenv("KYLIX_TEST_OUTPUT") != "" { // show every job's output, not only failures'
			t.Log(r.dump())
		}
	}
	return r
}

// dump returns the output for a failure message, shortened in the middle if huge.
func (r *result) dump() string {
	o := r.Output
	if len(o) > 12000 {
		o = o[:6000] + "\n... [" + strconv.Itoa(len(o)-12000) + " bytes cut] ...\n" + o[len(o)-6000:]
	}
	return fmt.Sprintf("command: %s\nexit code: %d, %.2fs\n--- output ---\n%s--- end ---", r.Cmd, r.Code, r.Elapsed.Seconds(), o)
}

// find returns the texts of rank's lines of the given kind.
func (r *result) find(rank int, kind string) []string {
	var s []string
	for _, l := range r.Lines[rank] {
		if l.Kind == kind {
			s = append(s, l.Text)
		}
	}
	return s
}

// has reports whether rank printed a line of kind whose text contains sub.
func (r *result) has(rank int, kind, sub string) bool {
	for _, t := range r.find(rank, kind) {
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

// failures lists every FAIL line, of whatever rank printed it.
func (r *result) failures() []string {
	ranks := make([]int, 0, len(r.Lines))
	for rk := range r.Lines {
		ranks = append(ranks, rk)
	}
	slices.Sort(ranks)
	var s []string
	for _, rk := range ranks {
		for _, t := range r.find(rk, "FAIL") {
			s = append(s, fmt.Sprintf("r%d: %s", rk, t))
		}
	}
	return s
}

// expectClean asserts exit 0, no FAIL line, and at least one PASS line and "DONE fails=0" from
// every rank in ranks: a program that checked nothing is not clean.
func (r *result) expectClean(t *testing.T, ranks ...int) {
	t.Helper()
	var problems []string
	if r.Code != 0 {
		problems = append(problems, fmt.Sprintf("exit code %d, want 0", r.Code))
	}
	problems = append(problems, r.failures()...)
	for _, rk := range ranks {
		if !r.has(rk, "DONE", "fails=0") {
			problems = append(problems, fmt.Sprintf("rank %d did not print DONE fails=0", rk))
		}
		if len(r.find(rk, "PASS")) == 0 {
			problems = append(problems, fmt.Sprintf("rank %d printed no PASS line", rk))
		}
	}
	if len(problems) > 0 {
		t.Errorf("%s\n%s", strings.Join(problems, "\n"), r.dump())
	}
}

// degName names a degrees option in a subtest name.
func degName(d string) string {
	if d == "" {
		return "auto"
	}
	return d
}

func allRanks(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestEnvironment(t *testing.T) {
	dir := setup(t)
	t.Logf("build dir %s, GOMAXPROCS %d", dir, runtime.GOMAXPROCS(0))
	// The launcher and the header under test are of one version: a stale build dir fails here,
	// not as puzzling differences further on.
	h, err := os.ReadFile(filepath.Join(repoRoot(), "include", "kylix.h"))
	if err != nil {
		t.Fatal(err)
	}
	var v [3]string
	for i, k := range []string{"MAJOR", "MINOR", "PATCH"} {
		m := regexp.MustCompile(`#define KYLIX_VERSION_` + k + ` (\d+)`).FindSubmatch(h)
		if m == nil {
			t.Fatalf("include/kylix.h defines no KYLIX_VERSION_%s", k)
		}
		v[i] = string(m[1])
	}
	out, err := exec.Command(filepath.Join(dir, "kylixrun"), "--version").CombinedOutput()
	if want := strings.Join(v[:], "."); err != nil || !strings.Contains(string(out), want) {
		t.Errorf("kylixrun --version: %q (%v), want version %s from include/kylix.h", out, err, want)
	}
}
