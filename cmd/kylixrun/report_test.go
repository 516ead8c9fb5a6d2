package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Rank 2 tells the launcher that rank 1 failed it and exits 1; while the launcher waits for
// rank 1's own account, rank 1 dies of SIGKILL without giving one. The launcher names the
// SIGKILL, does not wait out its wait for an account that cannot come, and counts the ranks it
// stops as they are: 1 (rank 0), not 2. (Rank 1 reacts to rank 2's exit in milliseconds; the
// launcher's wait for an account is a second.)
func TestReportCountsLiveRanksAndNamesSIGKILL(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	dir := t.TempDir()
	r := runLauncher(t, dir, nil, "-n", "3", "--timeout", "20", helper, "blame", dir)
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (rank 2's)\n%s", r.code, r.stderr)
	}
	for _, re := range []string{
		`(?m)Z kylixrun: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\)`,
		`(?m)Z kylixrun: rank 1 \(pid \d+\) caused the failure, as rank 2 reported: rvhelper: rank 1 is lost`,
		`(?m)Z kylixrun: rank 2 \(pid \d+\) exited with status 1; stopping the 1 other rank$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("stderr lacks %s:\n%s", re, r.stderr)
		}
	}
}

// A second signal during the grace kills the ranks outright, and the launcher says SIGKILL.
func TestSecondSignalSaysSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `trap '' TERM; echo $$ > "$OUT/pid.$KYLIX_RANK"; sleep 287; true`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "sh", "-c", prog)
	pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"))
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The second signal comes once the first was forwarded (the launcher said so).
	for end := time.Now().Add(30 * time.Second); !strings.Contains(l.stderrSoFar(), "forwarding it"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the launcher did not forward SIGTERM")
		}
	}
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := l.wait(t, 30*time.Second)
	if r.code != 128+15 {
		t.Errorf("exit %d, want 143\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)Z kylixrun: got SIGTERM again; sending SIGKILL to the 2 remaining ranks$`).MatchString(r.stderr) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	assertGone(t, pids)
}
