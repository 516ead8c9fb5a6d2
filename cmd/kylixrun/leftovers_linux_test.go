package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// asSubreaper makes this test process the reaper of the orphans of its descendants for the
// rest of the test: a rank the launcher left unreaped then stays a zombie child of the test,
// where it can be seen (PID 1 would reap it at its leisure), and is reaped here at the end.
// Tests that use it do not run in parallel, so the orphans are theirs.
func asSubreaper(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// expectNothingLeft checks, right when the launcher has returned, that each of pids is gone or
// at most a zombie that the launcher did not leave to us (ranks: reaped, so gone; a rank's
// background children: dead). What is left is reported, then killed and reaped by PID.
func expectNothingLeft(t *testing.T, what string, pids []int) {
	t.Helper()
	me := os.Getpid()
	for _, pid := range pids {
		state, ppid, _, ok := procStatParent(strconv.Itoa(pid))
		switch {
		case !ok:
		case state != 'Z' && state != 'X':
			t.Errorf("%s %d still runs (state %c) after kylixrun returned", what, pid, state)
		case ppid == me && what == "rank":
			t.Errorf("rank %d is an unreaped zombie (<defunct>) after kylixrun returned", pid)
		}
		if ok && ppid == me {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

// A rank's background child ("sleep 287 &", then the rank exits 0) is stopped, and every rank
// reaped, before kylixrun returns, with and without --tag-output.
func TestNothingLeftBehind(t *testing.T) {
	asSubreaper(t)
	for _, tagged := range []bool{false, true} {
		dir := t.TempDir()
		args := withTags(tagged, "-n", "4")
		prog := `sleep 287 & echo $! > "$OUT/bg.$KYLIX_RANK"; echo $$ > "$OUT/pid.$KYLIX_RANK"`
		l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, append(args, "sh", "-c", prog)...)
		r := l.wait(t, 60*time.Second) // fail-safe: the job takes well under a second
		if r.code != 0 {
			t.Errorf("--tag-output %v: exit %d\n%s", tagged, r.code, r.stderr)
		}
		var ranks, bgs []string
		for i := 0; i < 4; i++ {
			ranks = append(ranks, filepath.Join(dir, "pid."+strconv.Itoa(i)))
			bgs = append(bgs, filepath.Join(dir, "bg."+strconv.Itoa(i)))
		}
		expectNothingLeft(t, "background child", readPIDs(t, bgs...))
		expectNothingLeft(t, "rank", readPIDs(t, ranks...))
	}
}

// A leftover that ignores SIGTERM is killed after the grace, and the launcher says SIGKILL and
// names the rank whose group it was; the launcher waits for it.
func TestLeftoverIgnoringSIGTERMIsKilled(t *testing.T) {
	asSubreaper(t)
	dir := t.TempDir()
	// Rank 0 exits once its leftover runs sleep: it ignores SIGTERM only from there (the subshell
	// sets the trap, then execs), and a SIGTERM before that would simply end it.
	prog := `if [ "$KYLIX_RANK" = 0 ]; then (trap '' TERM; exec sleep 287) & echo $! > "$OUT/bg"
		while [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done; fi; echo $$ > "$OUT/pid.$KYLIX_RANK"`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "2", "sh", "-c", prog)
	r := l.wait(t, 60*time.Second) // fail-safe: the grace and a little
	if r.code != 0 {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)Z kylixrun: rank 0 \(pid \d+\) left processes running in its group .*; sending SIGKILL$`).MatchString(r.stderr) {
		t.Errorf("no line naming the SIGKILL of rank 0's leftovers:\n%s", r.stderr)
	}
	expectNothingLeft(t, "background child", readPIDs(t, filepath.Join(dir, "bg")))
	expectNothingLeft(t, "rank", readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1")))
}

// When a rank fails, the others are stopped: with --tag-output or not, nothing of theirs is
// left when kylixrun returns, and they are reaped.
func TestStoppedRanksLeaveNothing(t *testing.T) {
	asSubreaper(t)
	for _, tagged := range []bool{false, true} {
		dir := t.TempDir()
		args := withTags(tagged, "-n", "3")
		prog := `cd "$OUT"; if [ "$KYLIX_RANK" = 2 ]; then while [ ! -s bg.0 ] || [ ! -s bg.1 ]; do sleep 0.02; done; echo $$ > pid.2; exit 3; fi
			echo $$ > pid.$KYLIX_RANK; sleep 287 & echo $! > bg.$KYLIX_RANK; wait`
		l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, append(args, "sh", "-c", prog)...)
		r := l.wait(t, 60*time.Second)
		if r.code != 3 {
			t.Errorf("--tag-output %v: exit %d, want 3\n%s", tagged, r.code, r.stderr)
		}
		expectNothingLeft(t, "background child", readPIDs(t, filepath.Join(dir, "bg.0"), filepath.Join(dir, "bg.1")))
		expectNothingLeft(t, "rank", readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"), filepath.Join(dir, "pid.2")))
		if strings.Contains(r.stderr, "sending SIGKILL") {
			t.Errorf("ranks that end on SIGTERM were sent SIGKILL:\n%s", r.stderr)
		}
	}
}

// withTags is args, with --tag-output when tagged.
func withTags(tagged bool, args ...string) []string {
	if tagged {
		return append(args, "--tag-output")
	}
	return args
}

// A signal while the launcher waits for a rank's leftover to end does not wait out the grace:
// the leftover gets SIGKILL at once, said so. (On a machine so loaded that the grace is over
// before the signal comes, the launcher's own SIGKILL after the grace is said instead.)
func TestSignalWhileStoppingLeftovers(t *testing.T) {
	asSubreaper(t)
	dir := t.TempDir()
	// The rank exits once its leftover runs sleep (see TestLeftoverIgnoringSIGTERMIsKilled).
	prog := `(trap '' TERM; exec sleep 287) & echo $! > "$OUT/bg"
		while [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done; echo $$ > "$OUT/pid"`
	l := startLauncher(t, dir, []string{"OUT=" + dir}, nil, "-n", "1", "sh", "-c", prog)
	rank := readPIDs(t, filepath.Join(dir, "pid"))[0]
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if state, _, _, ok := procStatParent(strconv.Itoa(rank)); !ok || state == 'Z' {
			break
		}
		if time.Now().After(end) {
			t.Fatal("rank 0 did not exit")
		}
	}
	// The leftover ignores SIGTERM only once it runs sleep (it sets the trap, then execs): the
	// rank waited for that before it exited, and the launcher's SIGTERM to its group comes after.
	bg := readPIDs(t, filepath.Join(dir, "bg"))[0]
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", bg)); err == nil && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the leftover never ran sleep")
		}
	}
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := l.wait(t, 60*time.Second)
	if r.code != 0 {
		t.Errorf("exit %d, want 0 (the job had ended)\n%s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`kylixrun: (got SIGTERM; sending SIGKILL to what rank 0 \(pid \d+\) left in its group|rank 0 \(pid \d+\) left processes running in its group 2s after SIGTERM; sending SIGKILL)`).MatchString(r.stderr) {
		t.Errorf("no line naming the SIGKILL:\n%s", r.stderr)
	}
	expectNothingLeft(t, "background child", readPIDs(t, filepath.Join(dir, "bg")))
}
