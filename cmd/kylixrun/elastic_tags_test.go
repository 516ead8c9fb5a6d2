package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	rvHelperOnce sync.Once
	rvHelper     string
	rvHelperErr  error
)

// buildRVHelper builds testdata/rvhelper, the launcher tests' rank that speaks to the
// rendezvous, once per test binary.
func buildRVHelper(t *testing.T) string {
	t.Helper()
	rvHelperOnce.Do(func() {
		rvHelper = filepath.Join(testDir, "rvhelper")
		if out, err := exec.Command("go", "build", "-o", rvHelper, "./testdata/rvhelper").CombinedOutput(); err != nil {
			rvHelperErr = fmt.Errorf("building the helper: %v\n%s", err, out)
		}
	})
	if rvHelperErr != nil {
		t.Fatal(rvHelperErr)
	}
	return rvHelper
}

// A resize that renumbers the ranks: each tag says the current rank, and still names the
// process ("[0 was 1]": started as rank 1, now rank 0).
func TestTagsFollowRenumbering(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	dir := t.TempDir()
	r := runLauncher(t, dir, nil, "-n", "2", "--elastic", "--tag-output", "--timeout", "20", helper, "renumber", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"[1 was 0] rank 0 is now rank 1\n", "[0 was 1] rank 1 is now rank 0\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// A relaunched rank (--restarts) and the joiner of a kylixrun --join never share a tag, and
// each joiner's tag says the rank a resize admitted it as.
func TestJoinerTagsUniqueAndFollow(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	dir := t.TempDir()
	jf := filepath.Join(dir, "job.json")
	first := startLauncher(t, dir, nil, nil, "-n", "2", "--elastic", "--restarts", "1", "--job-file", jf, "--tag-output",
		"--timeout", "20", helper, "rejoin", "2")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(jf); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no job file\n%s", first.stderrSoFar())
		}
	}
	joined := startLauncher(t, dir, nil, nil, "--join", jf, "-n", "1", "--tag-output", helper, "rejoin", "2")
	jr := joined.wait(t, 90*time.Second) // fail-safe: the admission comes within seconds
	r := first.wait(t, 90*time.Second)
	if r.code != 0 || jr.code != 0 {
		t.Fatalf("exit %d and %d (--join)\n%s\n%s", r.code, jr.code, r.stderr, jr.stderr)
	}
	m := regexp.MustCompile(`(?m)^\[(\d) was j0\] joined as rank (\d)$`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] != m[2] {
		t.Errorf("the relaunched joiner's tag does not say its rank:\n%s", r.stdout)
	}
	jm := regexp.MustCompile(`(?m)^\[(\d) was (j\d+\.0)\] joined as rank (\d)$`).FindStringSubmatch(jr.stdout)
	if jm == nil || jm[1] != jm[3] {
		t.Errorf("the --join launcher's joiner is not tagged j<pid>.0 with its rank:\n%s", jr.stdout)
	} else if strings.Contains(r.stdout, jm[2]+"]") || m != nil && m[1] == jm[1] {
		t.Errorf("the joiners share tag %s or rank %s:\n%s\n%s", jm[2], jm[1], r.stdout, jr.stdout)
	}
	if !strings.Contains(r.stdout, "[0] rank 0 admitted 2 joiners\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

// The joiner of a kylixrun --join follows the resizes as the first launcher's ranks do: once
// admitted its tag says its rank ("[1 was j4711.0]"), and a later resize that renumbers it
// changes the tag again ("[0 was j4711.0]"). The swap comes as soon as the joiner has written
// its first line, which may still be in its pipe when the tag changes: it keeps the tag it was
// written under.
func TestJoinLauncherTagsFollow(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	dir := t.TempDir()
	jf := filepath.Join(dir, "job.json")
	first := startLauncher(t, dir, nil, nil, "-n", "1", "--elastic", "--job-file", jf, "--tag-output",
		"--timeout", "20", helper, "joinswap", dir)
	waitJobFile(t, jf, first)
	joined := startLauncher(t, dir, nil, nil, "--join", jf, "-n", "1", "--tag-output", helper, "joinswap", dir)
	jr := joined.wait(t, 90*time.Second) // fail-safe: the admission comes within seconds
	r := first.wait(t, 90*time.Second)
	if r.code != 0 || jr.code != 0 {
		t.Fatalf("exit %d and %d (--join)\n%s\n%s", r.code, jr.code, r.stderr, jr.stderr)
	}
	if !strings.Contains(r.stdout, "[1 was 0] rank 0 is now rank 1\n") {
		t.Errorf("the first launcher's rank does not follow the swap:\n%s", r.stdout)
	}
	admitted := regexp.MustCompile(`(?m)^\[1 was (j\d+\.0)\] joined as rank 1$`).FindStringSubmatch(jr.stdout)
	swapped := regexp.MustCompile(`(?m)^\[0 was (j\d+\.0)\] rank 1 is now rank 0$`).FindStringSubmatch(jr.stdout)
	if admitted == nil || swapped == nil || admitted[1] != swapped[1] {
		t.Errorf("the --join launcher's joiner does not follow its rank:\n%s\nstderr:\n%s", jr.stdout, jr.stderr)
	}
}

// waitJobFile waits for the job file of the launcher l.
func waitJobFile(t *testing.T, jf string, l *launcher) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(jf); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no job file\n%s", l.stderrSoFar())
		}
	}
}
