package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// launcherBin is the kylixrun built once for the integration tests, with buildFlags, in
// testDir.
var (
	launcherBin string
	buildFlags  []string
	testDir     string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kylixrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir, launcherBin = dir, filepath.Join(dir, "kylixrun")
	args := append([]string{"build", "-o", launcherBin}, buildFlags...)
	build := exec.Command("go", append(args, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kylixrun:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// KYLIXRUN_TEST_BIN runs the tests against another build (an older commit's, to see a new
	// test fail there).
	if other := os.Getenv("KYLIXRUN_TEST_BIN"); other != "" {
		launcherBin = other
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// launcher is one kylixrun started by a test.
type launcher struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	start          time.Time
	done           chan struct{}
}

// startLauncher runs kylixrun with args; env entries are added to the test's environment.
func startLauncher(t *testing.T, dir string, env []string, stdin io.Reader, args ...string) *launcher {
	t.Helper()
	l := newLauncher(dir, env, stdin, launcherBin, args...)
	l.begin(t)
	return l
}

// newLauncher prepares argv (kylixrun, or a command that runs it) without starting it.
func newLauncher(dir string, env []string, stdin io.Reader, argv0 string, args ...string) *launcher {
	l := &launcher{cmd: exec.Command(argv0, args...), done: make(chan struct{})}
	l.cmd.Dir = dir
	l.cmd.Env = append(os.Environ(), env...)
	l.cmd.Stdin = stdin
	l.cmd.Stdout, l.cmd.Stderr = &l.stdout, &l.stderr
	// A process the launcher left behind holds the output pipes: the test goes on without them.
	l.cmd.WaitDelay = 10 * time.Second
	return l
}

// begin starts a launcher made by newLauncher; the test's cleanup kills it if still running.
func (l *launcher) begin(t *testing.T) {
	t.Helper()
	l.start = time.Now()
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := l.cmd.Process.Pid
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			// Still running: SIGKILL it by PID; its ranks follow by the parent-death signal.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// wait waits at most limit for the launcher to exit.
func (l *launcher) wait(t *testing.T, limit time.Duration) result {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- l.cmd.Wait() }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(limit):
		_ = l.cmd.Process.Kill()
		<-errc
		close(l.done)
		t.Fatalf("kylixrun %q still running after %v\nstdout:\n%s\nstderr:\n%s", l.cmd.Args[1:], limit, &l.stdout, &l.stderr)
	}
	close(l.done)
	r := result{elapsed: time.Since(l.start), stdout: l.stdout.String(), stderr: l.stderr.String()}
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("kylixrun %q exited, but something it started still held its output 10s later", l.cmd.Args[1:])
		r.code = l.cmd.ProcessState.ExitCode()
		if ws := l.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
		return r
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// lockedBuffer is a bytes.Buffer that a test may read while the launcher writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stderrSoFar is what the launcher wrote to its stderr until now.
func (l *launcher) stderrSoFar() string { return l.stderr.String() }

func runLauncher(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return startLauncher(t, dir, env, nil, args...).wait(t, 60*time.Second) // fail-safe
}

// readPIDs waits until each file holds a PID written by a rank.
func readPIDs(t *testing.T, files ...string) []int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	pids := make([]int, len(files))
	for i, f := range files {
		for {
			b, err := os.ReadFile(f)
			if err == nil && strings.HasSuffix(string(b), "\n") {
				if pids[i], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
					t.Fatalf("%s: %q", f, b)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no PID in %s", f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pids
}

// assertGone checks that nothing is left of the process groups (each rank's first PID).
func assertGone(t *testing.T, pgids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // fail-safe: they go within a second
	for _, pg := range pgids {
		for groupAlive(pg) || pidAlive(pg) {
			if time.Now().After(deadline) {
				t.Errorf("process group %d is still alive", pg)
				_ = syscall.Kill(-pg, syscall.SIGKILL) // ours: started under this test
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestEnvPerRank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"KYLIXRUN_TEST_INHERIT=yes", "KYLIX_PEERS=h:1,h:2,h:3,h:4", "KYLIX_LOG=debug", "OUT=" + dir}
	secrets := map[string]bool{}
	for job := 0; job < 2; job++ {
		r := runLauncher(t, dir, env, "-n", "4", "--replication", "2", "--degrees", "2", "--timeout", "2.5",
			"sh", "-c", `env > "$OUT/env.$KYLIX_RANK.`+strconv.Itoa(job)+`"`)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		var rendezvous, secret string
		for i := 0; i < 4; i++ {
			vars := envFile(t, filepath.Join(dir, fmt.Sprintf("env.%d.%d", i, job)))
			for k, want := range map[string]string{"KYLIX_RANK": strconv.Itoa(i), "KYLIX_SIZE": "4",
				"KYLIX_DEGREES": "2", "KYLIX_REPLICATION": "2", "KYLIX_TIMEOUT_MS": "2500",
				"KYLIX_LOG": "debug", "KYLIXRUN_TEST_INHERIT": "yes"} {
				if vars[k] != want {
					t.Errorf("rank %d: %s=%q, want %q", i, k, vars[k], want)
				}
			}
			if _, ok := vars["KYLIX_PEERS"]; ok {
				t.Errorf("rank %d inherited KYLIX_PEERS", i)
			}
			if !regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`).MatchString(vars["KYLIX_RENDEZVOUS"]) {
				t.Errorf("rank %d: KYLIX_RENDEZVOUS=%q", i, vars["KYLIX_RENDEZVOUS"])
			}
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(vars["KYLIX_SECRET"]) {
				t.Errorf("rank %d: KYLIX_SECRET=%q is not 32 bytes of hex", i, vars["KYLIX_SECRET"])
			}
			if i == 0 {
				rendezvous, secret = vars["KYLIX_RENDEZVOUS"], vars["KYLIX_SECRET"]
			} else if vars["KYLIX_RENDEZVOUS"] != rendezvous || vars["KYLIX_SECRET"] != secret {
				t.Errorf("rank %d has another rendezvous or secret than rank 0", i)
			}
		}
		secrets[secret] = true
	}
	if len(secrets) != 2 {
		t.Error("two jobs got the same secret")
	}
}

func TestTagOutput(t *testing.T) {
	t.Parallel()
	const lines = 3000
	prog := fmt.Sprintf(`BEGIN { r = ENVIRON["KYLIX_RANK"]
		for (i = 0; i < %d; i++) { print "out " r " " i; print "err " r " " i > "/dev/stderr" }
		printf "partial %%s", r; printf "epartial %%s", r > "/dev/stderr" }`, lines)
	r := runLauncher(t, t.TempDir(), nil, "-n", "3", "--tag-output", "awk", prog)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, s := range []struct{ name, text, kind, partial string }{
		{"stdout", r.stdout, "out", "partial"}, {"stderr", r.stderr, "err", "epartial"}} {
		re := regexp.MustCompile(`^\[(\d)\] ` + s.kind + ` (\d) (\d+)$`)
		partial := regexp.MustCompile(`^\[(\d)\] ` + s.partial + ` (\d)$`)
		next := map[string]int{}
		partials := map[string]bool{}
		if !strings.HasSuffix(s.text, "\n") {
			t.Errorf("%s does not end with a newline", s.name)
		}
		for _, line := range strings.Split(strings.TrimSuffix(s.text, "\n"), "\n") {
			if m := partial.FindStringSubmatch(line); m != nil && m[1] == m[2] {
				partials[m[1]] = true
				continue
			}
			m := re.FindStringSubmatch(line)
			if m == nil || m[1] != m[2] {
				t.Fatalf("%s: bad line %q", s.name, line)
			}
			if n, _ := strconv.Atoi(m[3]); n != next[m[1]] {
				t.Fatalf("%s: rank %s line %d came where %d was due", s.name, m[1], n, next[m[1]])
			}
			next[m[1]]++
		}
		for _, rk := range []string{"0", "1", "2"} {
			if next[rk] != lines || !partials[rk] {
				t.Errorf("%s: rank %s: %d lines, partial line seen: %v", s.name, rk, next[rk], partials[rk])
			}
		}
	}
}

func TestPassThroughOutput(t *testing.T) {
	t.Parallel()
	r := runLauncher(t, t.TempDir(), nil, "-n", "2", "sh", "-c", `printf 'r%s' "$KYLIX_RANK"; printf 'e%s' "$KYLIX_RANK" >&2`)
	if r.code != 0 || len(r.stdout) != 4 || !strings.Contains(r.stdout, "r0") || !strings.Contains(r.stdout, "r1") ||
		!strings.Contains(r.stderr, "e0") || !strings.Contains(r.stderr, "e1") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A rank that fails stops the others: they sleep, get SIGTERM (they say so) and are gone.
func TestFailingRankStopsOthers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The sleeping ranks run sleep as a child, so the whole process group has to go. Each
	// starts its sleep before it says it is ready and then waits in the shell's wait, which a
	// trapped signal interrupts at once: a foreground sleep started just after the group's
	// SIGTERM landed (the rank had said it was ready a moment before) would hold the trap back
	// until the grace's SIGKILL (CI, under load: "rank 2 was not stopped by SIGTERM").
	prog := `cd "$OUT"; if [ "$KYLIX_RANK" = 1 ]; then
		while [ ! -s pid.0 ] || [ ! -s pid.2 ]; do sleep 0.05; done; exit 3; fi
		trap 'touch term.$KYLIX_RANK; exit 143' TERM
		sleep 287 & echo $$ > pid.$KYLIX_RANK; wait; touch survived.$KYLIX_RANK`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "3", "sh", "-c", prog)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.2"))
	r := l.wait(t, 60*time.Second) // fail-safe: the job ends within a second
	if r.code != 3 {
		t.Errorf("exit %d, want 3\n%s", r.code, r.stderr)
	}
	// The launcher's own lines carry the library's timestamp (core.Logf): UTC, milliseconds.
	if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z kylixrun: rank 1 \(pid \d+\) exited with status 3; stopping the 2 other ranks$`).MatchString(r.stderr) {
		t.Errorf("stderr does not name the failed rank:\n%s", r.stderr)
	}
	assertGone(t, pids)
	if m, _ := filepath.Glob(filepath.Join(dir, "survived.*")); len(m) > 0 {
		t.Errorf("ranks ran on: %v", m)
	}
	for _, rk := range []string{"0", "2"} {
		if _, err := os.Stat(filepath.Join(dir, "term."+rk)); err != nil {
			t.Errorf("rank %s was not stopped by SIGTERM: %v", rk, err)
		}
	}
}

// Ranks that ignore SIGTERM are killed after the grace.
func TestGraceThenSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; if [ "$KYLIX_RANK" = 1 ]; then while [ ! -s pid.0 ]; do sleep 0.05; done; exit 4; fi
		trap '' TERM; echo $$ > pid.0; sleep 287; true`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "sh", "-c", prog)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"))
	r := l.wait(t, 60*time.Second) // fail-safe: the grace and a little
	if r.code != 4 {
		t.Errorf("exit %d, want 4\n%s", r.code, r.stderr)
	}
	if r.elapsed < grace {
		t.Errorf("took %v; the ranks had the %v grace", r.elapsed, grace)
	}
	if !regexp.MustCompile(`(?m)Z kylixrun: 1 rank still running 2s after SIGTERM; sending SIGKILL$`).MatchString(r.stderr) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	assertGone(t, pids)
}

func TestKeepGoing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; case "$KYLIX_RANK" in 0) exit 3;; 2) exit 5;; esac; sleep 1; touch done.$KYLIX_RANK`
	r := runLauncher(t, dir, []string{"OUT=" + dir}, "-n", "4", "--keep-going", "sh", "-c", prog)
	if r.code != 3 && r.code != 5 {
		t.Errorf("exit %d, want the first failure's code (3 or 5)\n%s", r.code, r.stderr)
	}
	for _, rk := range []string{"1", "3"} {
		if _, err := os.Stat(filepath.Join(dir, "done."+rk)); err != nil {
			t.Errorf("rank %s was not left to finish: %v", rk, err)
		}
	}
	if !strings.Contains(r.stderr, "rank 0 (pid") || !strings.Contains(r.stderr, "rank 2 (pid") ||
		!strings.Contains(r.stderr, "--keep-going") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestSignalDeath(t *testing.T) {
	t.Parallel()
	r := runLauncher(t, t.TempDir(), nil, "-n", "2", "sh", "-c", `[ "$KYLIX_RANK" = 1 ] && kill -KILL $$; sleep 30`)
	if r.code != 128+9 {
		t.Errorf("exit %d, want 137\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "rank 1 (pid") || !strings.Contains(r.stderr, "killed by signal 9") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// SIGTERM to the launcher reaches every rank's group; nothing is left.
func TestSIGTERMToLauncher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `echo $$ > "$OUT/pid.$KYLIX_RANK"; sleep 30; true`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "3", "sh", "-c", prog)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"), filepath.Join(dir, "pid.2"))
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := l.wait(t, 20*time.Second)
	if r.code != 128+15 {
		t.Errorf("exit %d, want 143\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "forwarding it to 3 ranks") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	assertGone(t, pids)
}

// A launcher killed outright takes its ranks with it (parent-death signal).
func TestSIGKILLToLauncher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "sh", "-c", `echo $$ > "$OUT/pid.$KYLIX_RANK"; exec sleep 30`)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"))
	if err := l.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := l.wait(t, 10*time.Second); r.code != 128+9 {
		t.Errorf("exit %d", r.code)
	}
	assertGone(t, pids)
}

func TestJobTimeout(t *testing.T) {
	t.Parallel()
	// The ranks would sleep far past runLauncher's fail-safe: only the job timeout ends them.
	r := runLauncher(t, t.TempDir(), nil, "-n", "2", "--job-timeout", "0.5", "sleep", "287")
	if r.code != 124 || !strings.Contains(r.stderr, "--job-timeout of 500ms reached; stopping 2 ranks") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestUsageAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runLauncher(t, dir, nil, "--help")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: kylixrun -n N") {
		t.Errorf("--help: exit %d, stdout %q", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--nope", "-n", "1", "true"}, {"true"}, {"-n", "2"}, {"-n", "3", "--degrees", "2", "true"}} {
		r := runLauncher(t, dir, nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "kylixrun: ") || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r = runLauncher(t, dir, nil, "-n", "2", "kylixrun-no-such-program")
	if r.code != 127 || !strings.Contains(r.stderr, "kylixrun-no-such-program") {
		t.Errorf("missing program: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runLauncher(t, dir, nil, "-n", "2", "--", "sh", "-c", `exit 0`)
	if r.code != 0 || r.stderr != "" {
		t.Errorf("all ranks ok: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Rank 0 reads the launcher's stdin; the others read /dev/null.
func TestStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := startLauncher(t, dir, []string{"OUT=" + dir}, strings.NewReader("hello\n"), "-n", "2", "sh", "-c", `cat > "$OUT/in.$KYLIX_RANK"`)
	if r := l.wait(t, 20*time.Second); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rk, want := range []string{"hello\n", ""} {
		if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("in.%d", rk))); err != nil || string(b) != want {
			t.Errorf("rank %d read %q, %v; want %q", rk, b, err, want)
		}
	}
}

// The ssh path, with an ssh that runs the remote command here: quoting, working directory,
// the secret kept off command lines, and a failing remote rank.
func TestSSHPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work dir's")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{work, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeSSH := `#!/bin/sh
printf '%s\n' "$@" > "` + dir + `/ssh-args.$$"
while [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2;; -*) shift;; *) break;; esac; done
shift
exec sh -c "$*"
`
	if err := os.WriteFile(filepath.Join(bin, "fakessh"), []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := `out=$1; echo $$ > "$out/pid.$KYLIX_RANK"; printf '%s|%s|%s|%s|%s\n' "$(pwd)" "$KYLIX_SIZE" "$KYLIX_RENDEZVOUS" "$KYLIX_SECRET" "$2" > "$out/r.$KYLIX_RANK"
		if [ "$KYLIX_RANK" = 2 ]; then while [ ! -s "$out/r.0" ] || [ ! -s "$out/r.1" ]; do sleep 0.05; done; exit 6; fi
		sleep 30; true`
	l := startLauncher(t, work, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}, nil,
		"--hosts", "localhost:1,node-a:2", "--ssh", "fakessh -p 22", "--rendezvous-host", "10.1.2.3",
		"sh", "-c", prog, "zero", dir, `arg 'with' "quotes" $x`)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"))
	r := l.wait(t, 20*time.Second)
	assertGone(t, pids)
	if r.code != 6 || !strings.Contains(r.stderr, "rank 2 (on node-a) exited with status 6") {
		t.Errorf("exit %d, want 6\n%s", r.code, r.stderr)
	}
	var secret, rv string
	for rk := 0; rk < 3; rk++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("r.%d", rk)))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(strings.TrimSuffix(string(b), "\n"), "|")
		if len(f) != 5 || f[0] != work || f[1] != "3" || f[4] != `arg 'with' "quotes" $x` || len(f[3]) != 64 {
			t.Errorf("rank %d saw %q", rk, f)
			continue
		}
		if rk == 0 {
			secret, rv = f[3], f[2]
		} else if f[3] != secret || f[2] != rv {
			t.Errorf("rank %d: secret or rendezvous differ from rank 0's", rk)
		}
	}
	if !regexp.MustCompile(`^10\.1\.2\.3:\d+$`).MatchString(rv) {
		t.Errorf("remote jobs advertise rendezvous %q", rv)
	}
	argFiles, _ := filepath.Glob(filepath.Join(dir, "ssh-args.*"))
	if len(argFiles) != 2 {
		t.Errorf("ssh ran %d times, want 2", len(argFiles))
	}
	for _, f := range argFiles {
		b, _ := os.ReadFile(f)
		if secret != "" && strings.Contains(string(b), secret) {
			t.Errorf("the secret is on ssh's command line: %s", b)
		}
		if !strings.Contains(string(b), "BatchMode=yes\nnode-a\n") {
			t.Errorf("ssh args:\n%s", b)
		}
	}
}

// What a rank leaves running in its process group when it exits is stopped too, and does not
// hold the launcher (its tagged output pipe included).
func TestLeftoversStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `sleep 287 & echo $! > "$OUT/bg.$KYLIX_RANK"; echo started`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "--tag-output", "sh", "-c", prog)
	r := l.wait(t, 60*time.Second) // fail-safe: a held pipe would hold the launcher 287 s
	if r.code != 0 {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "[0] started\n") || !strings.Contains(r.stdout, "[1] started\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, pid := range readPIDs(t, filepath.Join(dir, "bg.0"), filepath.Join(dir, "bg.1")) {
		// The launcher waited for its group to end; the fail-safe allows for a loaded machine.
		for end := time.Now().Add(30 * time.Second); pidAlive(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if pidAlive(pid) {
			t.Errorf("background process %d of a finished rank still runs", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Real ranks meet at the launcher's rendezvous (netio.Connect from the environment) and pass
// a message around the ring; a rank with a wrong secret is refused and fails the job at once.
func TestRendezvousWithNetio(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	r := runLauncher(t, t.TempDir(), nil, "-n", "3", "--tag-output", "--timeout", "20", helper)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for rk := 0; rk < 3; rk++ {
		if want := fmt.Sprintf("[%d] rank %d of 3: ring ok\n", rk, rk); !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	// Rank 2 proves the wrong secret; the others would wait for it up to --timeout, far past
	// runLauncher's fail-safe: rank 2's failure stops them, which are still waiting.
	wrapper := `if [ "$KYLIX_RANK" = 2 ]; then exec "$0" bad-secret; fi; exec "$0"`
	r = runLauncher(t, t.TempDir(), nil, "-n", "3", "--timeout", "300", "sh", "-c", wrapper, helper)
	if r.code != 1 {
		t.Errorf("a rank with a bad secret: exit %d, want 1\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`kylixrun: rank 2 \(pid \d+\) exited with status 1; stopping the 2 other ranks`).MatchString(r.stderr) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
