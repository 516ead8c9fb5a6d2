package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A launcher started with SIGINT and SIGTERM ignored (as "kylixrun ... &" from a script starts
// it) still takes them: it forwards them to the ranks, which end, and exits 128+signal.
func TestSignalsWhenStartedIgnored(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sigName(sig), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			prog := `echo $$ > "$OUT/pid.$KYLIX_RANK"; sleep 287; true`
			// sh sets both ignored, then becomes kylixrun (same PID), which inherits that.
			l := newLauncher(dir, []string{"OUT=" + dir}, nil, "sh", "-c", `trap '' INT TERM; exec "$0" "$@"`,
				launcherBin, "-n", "2", "sh", "-c", prog)
			l.begin(t)
			pids := readPIDs(t, filepath.Join(dir, "pid.0"), filepath.Join(dir, "pid.1"))
			if err := l.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := l.wait(t, 30*time.Second) // fail-safe: the ranks end at once
			if r.code != 128+int(sig) {
				t.Errorf("exit %d, want %d\n%s", r.code, 128+int(sig), r.stderr)
			}
			assertGone(t, pids)
		})
	}
}
