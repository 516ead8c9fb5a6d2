package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The process tests below run sh as the program: they check what the launcher does (who is
// started with which environment, the exit codes and messages), not the library's resize,
// which the end-to-end tests in tests/ and the examples exercise.

// waitFiles is a sh snippet that waits (up to 20 s) until the glob pattern in $OUT matches n files.
func waitFiles(pattern string, n int) string {
	return `i=0; while [ "$(ls "$OUT" | grep -c '` + pattern + `')" -lt ` + itoa(n) + ` ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; `
}

func itoa(n int) string { return strconv.Itoa(n) }

func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

func TestElasticDeathGoesOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; env > env.$KYLIX_RANK; [ "$KYLIX_RANK" = 1 ] && exit 3; sleep 2`
	r := runLauncher(t, dir, []string{"OUT=" + dir}, "-n", "3", "--elastic", "sh", "-c", prog)
	if r.code != 0 {
		t.Errorf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	for _, re := range []string{
		`kylixrun: rank 1 \(pid \d+\) exited with status 3; --elastic: the job goes on with the 2 other ranks\n`,
		`kylixrun: --elastic job ended with status 0; died: rank 1 \(pid \d+\) exited with status 3\n`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("stderr lacks %s:\n%s", re, r.stderr)
		}
	}
	if v := envFile(t, filepath.Join(dir, "env.0")); v["KYLIX_ELASTIC"] != "1" || v["KYLIX_SIZE"] != "3" {
		t.Errorf("rank 0 of an elastic job: KYLIX_ELASTIC=%q KYLIX_SIZE=%q", v["KYLIX_ELASTIC"], v["KYLIX_SIZE"])
	}
}

// A rank killed with SIGKILL is relaunched as a joiner with the job file's address and secret,
// and no rank, size or rendezvous; the job file is 0600 while the job runs and gone after.
func TestElasticRestartRejoins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jf := filepath.Join(dir, "job.json")
	prog := `cd "$OUT"; if [ -n "$KYLIX_JOIN" ]; then env > joiner.env; exit 0; fi
		if [ "$KYLIX_RANK" = 1 ]; then stat -c %a job.json > mode; cp job.json seen.json; kill -KILL $$; fi
		` + waitFiles("^joiner.env$", 1)
	r := runLauncher(t, dir, []string{"OUT=" + dir}, "-n", "2", "--elastic", "--restarts", "1", "--job-file", jf, "sh", "-c", prog)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mode")); strings.TrimSpace(string(b)) != "600" {
		t.Errorf("job file mode %q while the job ran, want 600", b)
	}
	if _, err := os.Stat(jf); !os.IsNotExist(err) {
		t.Errorf("job file not removed at the end: %v", err)
	}
	var seen jobFile
	b, _ := os.ReadFile(filepath.Join(dir, "seen.json"))
	if err := json.Unmarshal(b, &seen); err != nil {
		t.Fatalf("job file %q: %v", b, err)
	}
	v := envFile(t, filepath.Join(dir, "joiner.env"))
	if v["KYLIX_JOIN"] != seen.Join || v["KYLIX_SECRET"] != seen.Secret || v["KYLIX_ELASTIC"] != "1" {
		t.Errorf("joiner env: KYLIX_JOIN=%q KYLIX_SECRET=%q KYLIX_ELASTIC=%q; job file %s", v["KYLIX_JOIN"], v["KYLIX_SECRET"], v["KYLIX_ELASTIC"], b)
	}
	for _, k := range []string{"KYLIX_RANK", "KYLIX_SIZE", "KYLIX_RENDEZVOUS"} {
		if _, ok := v[k]; ok {
			t.Errorf("joiner got %s=%s", k, v[k])
		}
	}
	for _, re := range []string{
		`rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\); relaunched as joiner j0 \(pid \d+, relaunch of rank 1\) to join at the next resize \(0 restarts left\)`,
		`--elastic job ended with status 0; died: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\); relaunched: joiner j0 \(pid \d+, relaunch of rank 1\); rejoined and finished: joiner j0`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("stderr lacks %s:\n%s", re, r.stderr)
		}
	}
}

// --restarts counts relaunches over the whole job: relaunched joiners that die use it up too.
func TestElasticRestartsLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; if [ -n "$KYLIX_JOIN" ]; then touch j.$$; exit 5; fi; [ "$KYLIX_RANK" = 1 ] && exit 5
		` + waitFiles("^j\\.", 2) + `sleep 2`
	r := runLauncher(t, dir, []string{"OUT=" + dir}, "-n", "2", "--elastic", "--restarts", "2", "--tag-output", "sh", "-c", prog)
	if r.code != 0 {
		t.Errorf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "j.*")); len(m) != 2 {
		t.Errorf("%d joiners started, want 2", len(m))
	}
	for _, want := range []string{"relaunched as joiner j0 (pid", "(1 restarts left)",
		"joiner j0 (pid", "relaunched as joiner j1 (pid", "(0 restarts left)",
		"joiner j1 (pid", "relaunch of rank 1) exited with status 5; --elastic: the job goes on with the 1 other rank"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// Once a rank has finished cleanly, a rank that fails fails the job; with no clean finish the
// first death's code is the job's.
func TestElasticExitCodes(t *testing.T) {
	t.Parallel()
	r := runLauncher(t, t.TempDir(), nil, "-n", "2", "--elastic", "sh", "-c", `[ "$KYLIX_RANK" = 0 ] && exit 0; sleep 0.5; exit 4`)
	if r.code != 4 || !strings.Contains(r.stderr, "exited with status 4 at the job's end: the job fails") {
		t.Errorf("failure at the end: exit %d, want 4\n%s", r.code, r.stderr)
	}
	r = runLauncher(t, t.TempDir(), nil, "-n", "2", "--elastic", "sh", "-c", `[ "$KYLIX_RANK" = 0 ] && exit 6; sleep 1; exit 7`)
	if r.code != 6 || !strings.Contains(r.stderr, "--elastic job ended with status 6 (no rank finished cleanly); died: rank 0") {
		t.Errorf("every rank died: exit %d, want 6\n%s", r.code, r.stderr)
	}
}

// A relaunched joiner still waiting to be admitted when the job ends is stopped, and does not
// fail the job.
func TestElasticStrandedJoiner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; if [ -n "$KYLIX_JOIN" ]; then echo $$ > joiner.pid; sleep 60; exit 9; fi
		[ "$KYLIX_RANK" = 1 ] && exit 3; ` + waitFiles("^joiner.pid$", 1)
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "--elastic", "--restarts", "1", "sh", "-c", prog)
	pids := readPIDs(t, filepath.Join(dir, "joiner.pid"))
	r := l.wait(t, joinerEndWait+20*time.Second)
	if r.code != 0 {
		t.Errorf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "not admitted before the job's end; stopping it") ||
		!strings.Contains(r.stderr, "never admitted: joiner j0 (pid") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	assertGone(t, pids)
}

// kylixrun --join F -n K from another shell starts K joiners of the running job F describes.
func TestJoinCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jf := filepath.Join(dir, "job.json")
	env := []string{"OUT=" + dir}
	job := startLauncher(t, dir, env, nil, "-n", "1", "--elastic", "--job-file", jf, "sh", "-c", `cd "$OUT"; `+waitFiles("^joined\\.", 2))
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(jf); err != nil; _, err = os.Stat(jf) {
		if time.Now().After(deadline) {
			t.Fatal("no job file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	want, err := readJobFile(jf)
	if err != nil {
		t.Fatal(err)
	}
	r := runLauncher(t, dir, env, "--join", jf, "-n", "2", "--tag-output", "--", "sh", "-c", `env > "$OUT/joined.$$"; echo hello`)
	// Its joiners are named after this launcher's PID: no other launcher of the job has them.
	if tags := regexp.MustCompile(`(?m)^\[j(\d+)\.([01])\] hello$`).FindAllStringSubmatch(r.stdout, -1); r.code != 0 ||
		len(tags) != 2 || tags[0][1] != tags[1][1] || tags[0][2] == tags[1][2] {
		t.Errorf("--join: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "joined.*"))
	for _, f := range m {
		if v := envFile(t, f); v["KYLIX_JOIN"] != want.Join || v["KYLIX_SECRET"] != want.Secret || v["KYLIX_RANK"] != "" {
			t.Errorf("%s: KYLIX_JOIN=%q KYLIX_SECRET=%q KYLIX_RANK=%q", f, v["KYLIX_JOIN"], v["KYLIX_SECRET"], v["KYLIX_RANK"])
		}
	}
	if r := job.wait(t, 20*time.Second); r.code != 0 {
		t.Errorf("the job: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(jf); !os.IsNotExist(err) {
		t.Errorf("job file left: %v", err)
	}

	// The job is gone: its file is, too.
	r = runLauncher(t, dir, env, "--join", jf, "-n", "1", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "is the job running with --elastic --job-file") {
		t.Errorf("--join without a job: exit %d, stderr %q", r.code, r.stderr)
	}
	// A joiner that fails does not stop the others; the first failure's code is the exit code.
	if err := os.WriteFile(jf, []byte(`{"join":"127.0.0.1:1","secret":"s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runLauncher(t, dir, env, "--join", jf, "-n", "2", "sh", "-c", `cd "$OUT"; if [ "$KYLIX_JOIN" ] && mkdir first 2>/dev/null; then exit 5; fi; sleep 0.5; touch survived`)
	if r.code != 5 || !strings.Contains(r.stderr, "exited with status 5; the other joiners go on") {
		t.Errorf("a failing joiner: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "survived")); err != nil {
		t.Errorf("the other joiner was stopped: %v", err)
	}
}
