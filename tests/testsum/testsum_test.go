package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A throwaway module whose tests pass, fail, skip and nest, beside a package that does not
// build: go test itself is the reference for what happened.
var module = map[string]string{
	"go.mod": "module m\n\ngo 1.22\n",
	"a/a_test.go": `package a

import "testing"

func TestPass(t *testing.T) {}
func TestFail(t *testing.T) { t.Log("boom-marker"); t.Fail() }
func TestSkip(t *testing.T) { t.Skip("no widget here") }
func TestSub(t *testing.T) {
	t.Run("x", func(t *testing.T) {})
	t.Run("y", func(t *testing.T) { t.Log("quiet-marker") })
}
`,
	"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { nope() }\n",
}

func TestGoReportOfARealRun(t *testing.T) {
	dir := t.TempDir()
	for name, text := range module {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	js, _ := cmd.Output() // go test fails here by design
	if ctx.Err() != nil {
		t.Fatal("go test timed out")
	}

	var out bytes.Buffer
	counts := filepath.Join(dir, "go.counts")
	rc := runGo([]string{"-counts", counts}, bytes.NewReader(js), &out)
	got := out.String()
	if rc != 1 {
		t.Errorf("exit %d for a run with failures, want 1", rc)
	}
	for _, want := range []string{
		"boom-marker", "--- FAIL: TestFail", // the failing test's output, whole
		"no widget here",                     // a skip's reason
		"m/a: 4 passed, 1 failed, 1 skipped", // TestPass, TestSub, TestSub/x, TestSub/y pass
		"FAIL\tm/a\t",                        // go test's own closing line
		"undefined: nope", "FAIL\tm/b [build failed]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the report:\n%s", want, got)
		}
	}
	for _, bad := range []string{"=== RUN", "quiet-marker", "PASS\n"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q should not be in the report (go test without -v hides it):\n%s", bad, got)
		}
	}
	if !strings.HasSuffix(got, "go: 4 passed, 1 failed, 1 skipped\n") {
		t.Errorf("want the run's counts last:\n%s", got)
	}
	if b, err := os.ReadFile(counts); err != nil || string(b) != "go 4 1 1\n" {
		t.Errorf("counts file: %q, %v", b, err)
	}
}

// After a silence of `every`, the next tick says which package still runs, its counts so far
// and its running (not paused) tests.
func TestGoReportHeartbeat(t *testing.T) {
	clock := time.Unix(1000, 0)
	var out bytes.Buffer
	r := &goReport{w: &out, pkgs: map[string]*pkgState{}, now: func() time.Time { return clock }}
	lines, tick := make(chan string), make(chan time.Time)
	done := make(chan struct{})
	go func() { r.follow(lines, tick, 30*time.Second); close(done) }()

	for _, l := range []string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestLong"}`,
		`{"Action":"run","Package":"p","Test":"TestWaiting"}`,
		`{"Action":"pause","Package":"p","Test":"TestWaiting"}`,
		`{"Action":"run","Package":"p","Test":"TestDone"}`,
		`{"Action":"pass","Package":"p","Test":"TestDone","Elapsed":1}`,
	} {
		lines <- l
	}
	clock = clock.Add(29 * time.Second)
	tick <- clock
	if out.Len() != 0 {
		t.Errorf("spoke before the silence was long enough: %q", out.String())
	}
	clock = clock.Add(2 * time.Second)
	tick <- clock
	close(lines)
	<-done
	want := "    ... p: 1 passed, 0 failed, 0 skipped so far, 31 s; running TestLong\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

func TestTotal(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goc := write("go.counts", "go 10 0 2\n")
	py := write("python.xml", `<?xml version="1.0" encoding="utf-8"?><testsuites>`+
		`<testsuite name="pytest" errors="1" failures="0" skipped="3" tests="20" time="1.0"></testsuite></testsuites>`)
	write("TEST-a.xml", `<testsuite name="a" tests="5" failures="1" errors="0" skipped="1"></testsuite>`)
	write("TEST-b.xml", `<testsuite name="b" tests="7" failures="0" errors="0" skipped="0"></testsuite>`)

	var out bytes.Buffer
	rc := runTotal([]string{goc, "python=" + py, "java=" + filepath.Join(dir, "TEST-*.xml")}, &out)
	want := "go: 10 passed, 0 failed, 2 skipped\n" +
		"python: 16 passed, 1 failed, 3 skipped\n" +
		"java: 10 passed, 1 failed, 1 skipped\n" +
		"36 passed, 2 failed, 6 skipped\n"
	if out.String() != want || rc != 1 {
		t.Errorf("got rc %d and\n%s\nwant rc 1 and\n%s", rc, out.String(), want)
	}

	out.Reset()
	rc = runTotal([]string{goc, "userpaths=" + filepath.Join(dir, "missing.xml")}, &out)
	if rc != 1 || !strings.HasSuffix(out.String(), "10 passed, 1 failed, 2 skipped\n") {
		t.Errorf("a suite without a report must count as failed: rc %d\n%s", rc, out.String())
	}
}
