package main

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestShellQuote(t *testing.T) {
	words := []string{"plain", "", "two words", "it's", `"dq"`, "$HOME", "`id`", "a\\b", "new\nline",
		"*", "-n", "semi;colon", "ünïcode", "'", "''", "KYLIX_X=a b"}
	for _, w := range words {
		q := shellQuote(w)
		out, err := exec.Command("sh", "-c", `printf '%s' `+q).Output()
		if err != nil {
			t.Fatalf("sh for %q (%s): %v", w, q, err)
		}
		if string(out) != w {
			t.Errorf("shellQuote(%q) = %s; sh read back %q", w, q, out)
		}
	}
	if got := shellQuote("a/b-c.d:e,f=g"); got != "a/b-c.d:e,f=g" {
		t.Errorf("safe word quoted: %s", got)
	}
}

// The remote script runs here through sh exactly as a remote sshd would run it.
func TestRemoteScript(t *testing.T) {
	dir := t.TempDir() + "/it's here"
	if err := exec.Command("mkdir", dir).Run(); err != nil {
		t.Fatal(err)
	}
	script := remoteScript(dir, []string{"KYLIX_RANK=2", "KYLIX_X=a 'b' $c"},
		[]string{"sh", "-c", `printf '%s|%s|%s|%s|' "$(pwd)" "$KYLIX_RANK" "$KYLIX_X" "$KYLIX_SECRET"; printf '%s|' "$@"; exit 7`, "zero", "x y", "$z"})
	out, err := runHeld(t, script, "the-secret\n", false)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 7 {
		t.Fatalf("remote script: %v (want exit 7); output %q", err, out)
	}
	want := dir + "|2|a 'b' $c|the-secret|x y|$z|"
	if string(out) != want {
		t.Errorf("remote script printed\n%q\nwant\n%q", out, want)
	}

	// The end of stdin means the launcher is gone: the program is stopped.
	start := time.Now()
	_, err = runHeld(t, remoteScript(dir, nil, []string{"sleep", "30"}), "s\n", true)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+15 {
		t.Errorf("remote script after stdin closed: %v, want exit 143", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("remote script took %v to stop after stdin closed", d)
	}

	argv := sshArgv([]string{"ssh", "-p", "22"}, "node7", "/w", []string{"KYLIX_RANK=1"}, []string{"prog"})
	if !reflect.DeepEqual(argv[:6], []string{"ssh", "-p", "22", "-o", "BatchMode=yes", "node7"}) || len(argv) != 7 ||
		!strings.HasPrefix(argv[6], "sh -c '") {
		t.Errorf("sshArgv = %q", argv)
	}
}

// runHeld runs script with sh, writing first to its stdin and then keeping stdin open (as the
// launcher does for ssh), or closing it when closeStdin is set.
func runHeld(t *testing.T, script, first string, closeStdin bool) ([]byte, error) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin = pr
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if _, err := pw.WriteString(first); err != nil {
		t.Fatal(err)
	}
	if closeStdin {
		time.Sleep(200 * time.Millisecond) // let the program start
		pw.Close()
	}
	timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err = cmd.Wait()
	return []byte(out.String()), err
}
