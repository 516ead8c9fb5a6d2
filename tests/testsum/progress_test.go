package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The follower relays downloads at once, prints slow and failed tests as they end, and when
// asked for a status names the test that runs now and for how long.
func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	t0 := time.Unix(1000, 0)
	clock := t0
	p := &progress{w: &out, name: "python", slow: 5 * time.Second, clock: func() time.Time { return clock }}
	p.start, p.last = t0, t0
	for _, l := range []string{
		"step 1000 installing numpy with pip",
		"say 1000 installing numpy with pip (about 60 MB the first time)",
		"say 1030 pip took 30 s; 58 MB downloaded",
		"total 1030 3",
		"start 1030 tests/test_a.py::test_quick",
		"done 1030 passed 0.2 tests/test_a.py::test_quick",
		"start 1031 tests/test_a.py::test_slow",
		"done 1031 passed 7.5 tests/test_a.py::test_slow",
		"start 1039 tests/test_b.py::test_broken",
		"done 1039 failed 0.1 tests/test_b.py::test_broken",
		"start 1040 tests/test_b.py::test_long",
	} {
		p.line(l)
	}
	clock = t0.Add(52 * time.Second)
	p.status()
	want := []string{
		"    python: installing numpy with pip (about 60 MB the first time)",
		"    python: pip took 30 s; 58 MB downloaded",
		"    python: passed tests/test_a.py::test_slow (7.5 s) [2 of 3 done]",
		"    python: failed tests/test_b.py::test_broken (0.1 s) [3 of 3 done]",
		"    ... python: 52 s in, 3 of 3 tests done (2 passed, 1 failed, 0 skipped); now tests/test_b.py::test_long (12 s)",
	}
	if got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(out.String(), "test_quick") {
		t.Error("a quick passing test was printed")
	}
}

// End to end: a file written while the follower runs, an unfinished last line left for later,
// and "end" stops it.
func TestProgressFollowsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "progress")
	if err := os.WriteFile(f, []byte("say 1 starting\nstart 2 t1\ndone 3 failed 0.5 t"), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		fh, _ := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
		fh.WriteString("1\nend 4\n")
		fh.Close()
	}()
	var out bytes.Buffer
	done := make(chan int)
	go func() { done <- runProgress([]string{"-name", "s", "-file", f, "-every", "1h"}, &out) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second): // fail-safe, far above the 2 s it takes
		t.Fatal("the follower did not stop at the end line")
	}
	want := "    s: starting\n    s: failed t1 (0.5 s) [1 done]\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// tests/progress/progress.sh's fetching, as the suites call it: the download announced first,
// then its time and how much the cache grew, relayed by the follower; a failed command says so
// and keeps its status.
func TestFetchingSaysSizeAndTime(t *testing.T) {
	dir := t.TempDir()
	prog, cache := filepath.Join(dir, "progress"), filepath.Join(dir, "cache")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `. ../progress/progress.sh
fetching "pip install -r r.txt" "installing r with pip (about 2 MB)" "$1" sh -c 'head -c 2097152 /dev/zero >"$1/blob"' - "$1"
fetching "mvn package" "Maven downloads JNA" "$1" false || echo "status $?"
echo "end 0" >>"$TESTSUM_PROGRESS"`
	cmd := exec.Command("sh", "-c", script, "-", cache)
	cmd.Env = append(os.Environ(), "TESTSUM_PROGRESS="+prog)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "status 1") {
		t.Fatalf("%v: %s", err, out)
	}
	var relayed bytes.Buffer
	runProgress([]string{"-name", "py", "-file", prog, "-every", "1h"}, &relayed)
	for _, want := range []string{
		"    py: installing r with pip (about 2 MB)\n",
		"    py: pip install -r r.txt: done in ",
		" s, 2 MB downloaded (into " + cache + ")\n",
		"    py: Maven downloads JNA\n",
		"    py: mvn package: failed after ",
		" (exit status 1), 0 MB downloaded",
	} {
		if !strings.Contains(relayed.String(), want) {
			t.Errorf("relayed output lacks %q:\n%s", want, relayed.String())
		}
	}
}
