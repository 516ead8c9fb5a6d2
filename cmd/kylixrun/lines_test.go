package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Without --tag-output, with the ranks' output and the launcher's in one file (2>&1), the
// launcher's lines start on a line of their own: not after a rank's partial line ("..., r")
// that the rank completes later, nor after a last line without a newline. The ranks' bytes
// come out as they wrote them.
func TestLauncherLinesStartALine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := `cd "$OUT"; if [ "$KYLIX_RANK" = 0 ]; then while [ ! -f half ]; do sleep 0.02; done; printf 'last words' >&2; exit 3; fi
		trap 'printf "educe 23.998 ms\n"; exit 0' TERM
		printf 'iter 287: spmv 1.037 ms, r'; touch half; sleep 287 & wait`
	l := newLauncher(dir, []string{"OUT=" + dir}, nil, launcherBin, "-n", "2", "sh", "-c", prog)
	l.cmd.Stderr = &l.stdout // one file, as with 2>&1
	l.begin(t)
	r := l.wait(t, 60*time.Second)
	if r.code != 3 {
		t.Errorf("exit %d, want 3\n%s", r.code, r.stdout)
	}
	out := r.stdout
	if n, m := strings.Count(out, "kylixrun:"), len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT[0-9:.]+Z kylixrun: `).FindAllString(out, -1)); n == 0 || n != m {
		t.Errorf("%d of the launcher's %d lines start a line:\n%q", m, n, out)
	}
	if !strings.Contains(out, "iter 287: spmv 1.037 ms, reduce 23.998 ms\n") {
		t.Errorf("rank 1's line was cut in two:\n%q", out)
	}
	if !strings.Contains(out, "last words") || strings.Contains(out, "last words\n\n") {
		t.Errorf("rank 0's last partial line is not as written:\n%q", out)
	}
}

// The same for kylixrun --join: its own line (a joiner failed) starts a line of its own, after
// a joiner's last line without a newline, and does not cut another joiner's unfinished line.
func TestJoinLauncherLinesStartALine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jf := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jf, []byte(`{"join":"127.0.0.1:1","secret":"s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := `cd "$OUT"; if mkdir first 2>/dev/null; then while [ ! -f half ]; do sleep 0.02; done; printf 'last words' >&2; exit 3; fi
		printf 'iter 287: spmv 1.037 ms, r'; touch half
		while ! grep -q 'exited with status 3' out 2>/dev/null; do sleep 0.02; done; printf 'educe 23.998 ms\n'`
	l := newLauncher(dir, []string{"OUT=" + dir}, nil, launcherBin, "--join", jf, "-n", "2", "sh", "-c", prog)
	// One file, as with 2>&1, which the joiners read to see the launcher's line.
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	l.cmd.Stdout, l.cmd.Stderr = out, out
	l.begin(t)
	if r := l.wait(t, 60*time.Second); r.code != 3 {
		t.Errorf("exit %d, want 3", r.code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if n, m := strings.Count(s, "kylixrun:"), len(regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT[0-9:.]+Z kylixrun: `).FindAllString(s, -1)); n == 0 || n != m {
		t.Errorf("%d of the launcher's %d lines start a line:\n%q", m, n, s)
	}
	if !strings.Contains(s, "iter 287: spmv 1.037 ms, reduce 23.998 ms\n") {
		t.Errorf("a joiner's line was cut in two:\n%q", s)
	}
	if !strings.Contains(s, "last words") || strings.Contains(s, "last words\n\n") {
		t.Errorf("the failed joiner's last partial line is not as written:\n%q", s)
	}
}
