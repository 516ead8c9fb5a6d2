package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Rank 2 tells the launcher that rank 1 failed it and exits 1; rank 1 then dies of SIGKILL
// without giving an account. When the launcher takes rank 2's exit first, it waits for rank 1's
// account: rank 1's death ends that wait, and is named. On a loaded machine the launcher may
// see rank 1's death first: then that is the failure it reports. Either way it names the
// SIGKILL and counts the ranks it stops as they are: after rank 2's exit, 1 (rank 0), never 2.
func TestReportCountsLiveRanksAndNamesSIGKILL(t *testing.T) {
	t.Parallel()
	helper := buildRVHelper(t)
	dir := t.TempDir()
	r := runLauncher(t, dir, nil, "-n", "3", "--timeout", "20", helper, "blame", dir)
	if r.code != 1 && r.code != 128+9 {
		t.Errorf("exit %d, want 1 (rank 2's) or 137 (rank 1's)\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)Z kylixrun: rank 1 \(pid \d+\) was killed by signal 9 \(SIGKILL\)`).MatchString(r.stderr) {
		t.Errorf("stderr does not name rank 1's SIGKILL:\n%s", r.stderr)
	}
	stop := regexp.MustCompile(`(?m)Z kylixrun: rank ([12]) \(pid \d+\) [^\n]*; stopping the (\d) other ranks?$`).FindStringSubmatch(r.stderr)
	switch {
	case stop == nil:
		t.Errorf("no line stopping the other ranks:\n%s", r.stderr)
	case stop[1] == "2" && stop[2] != "1":
		t.Errorf("stopping %s other ranks, but only rank 0 was running:\n%s", stop[2], r.stderr)
	case stop[1] == "1" && stop[2] != "1" && stop[2] != "2":
		// Rank 1's death came first: rank 2 may still be on its way out (it exits as rank 1
		// is killed), so 2 is a true count then, and more than 2 never is.
		t.Errorf("stopping %s other ranks of 3, one of them dead:\n%s", stop[2], r.stderr)
	case stop[1] == "2" && !regexp.MustCompile(`(?m)Z kylixrun: rank 1 \(pid \d+\) caused the failure, as rank 2 reported: rvhelper: rank 1 is lost$`).MatchString(r.stderr):
		t.Errorf("rank 2's account of rank 1 is not given:\n%s", r.stderr)
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
