package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
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

	// The end of stdin means the launcher is gone: the program is stopped (SIGTERM, exit 143),
	// long before it would end by itself or runHeld's fail-safe would kill it.
	_, err = runHeld(t, remoteScript(dir, nil, []string{"sleep", "287"}), "s\n", true)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+15 {
		t.Errorf("remote script after stdin closed: %v, want exit 143", err)
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
	cmd.WaitDelay = 10 * time.Second // what a killed script left must not hold its output
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
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() }) // fail-safe
	defer timer.Stop()
	err = cmd.Wait()
	return []byte(out.String()), err
}

// The rendezvous address remote ranks get is the local address routing to the first remote
// host, also when that host is given as ssh's user@host.
func TestAdvertisedUserAtHost(t *testing.T) {
	var ip string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				ip = n.IP.String()
				break
			}
		}
	}
	if ip == "" {
		t.Skip("no non-loopback IPv4 address on this machine to route to")
	}
	for _, host := range []string{ip, "someone@" + ip} {
		got, err := advertised("[::]:4321", "", host)
		if err != nil || got != net.JoinHostPort(ip, "4321") {
			t.Errorf("advertised for remote host %q = %q, %v; want %s:4321", host, got, err, ip)
		}
	}
	if got, _ := advertised("[::]:4321", "rv.example", "someone@"+ip); got != "rv.example:4321" {
		t.Errorf("with --rendezvous-host: %q", got)
	}
}

func TestMarkerFilter(t *testing.T) {
	long := strings.Repeat("x", 200<<10) + "\n"
	in := "a\n" + remoteUpMarker + "\nb\n" + long + remoteUpMarker + "\npartial"
	seen := 0
	out, err := io.ReadAll(newMarkerFilter(strings.NewReader(in), remoteUpMarker, func() { seen++ }))
	want := "a\nb\n" + long + remoteUpMarker + "\npartial"
	if err != nil || string(out) != want || seen != 1 {
		t.Errorf("filtered %d bytes (want %d), err %v, marker seen %d times (want 1)", len(out), len(want), err, seen)
	}
	// The remote script writes the marker to stderr before anything else. (Its stdin stays open,
	// as ssh's does while the launcher lives.)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command("sh", "-c", remoteScript("/", nil, []string{"sh", "-c", "echo err >&2"}))
	cmd.Stdin = pr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if _, err := pw.WriteString("secret\n"); err != nil {
		t.Fatal(err)
	}
	err = cmd.Run()
	pr.Close()
	if err != nil || stderr.String() != remoteUpMarker+"\nerr\n" {
		t.Errorf("remote script: %v, stderr %q", err, stderr.String())
	}
}

// Many ranks on one host: at most sshStartupsPerHost ssh sessions log in at once (sshd's
// default MaxStartups drops connections beyond 10), and the marker never shows in the output.
func TestSSHStartupThrottle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A slow login: the session counts as logging in until the remote command prints the marker
	// (the fake runs the command here, so that is when it starts).
	fakeSSH := `#!/bin/sh
mkdir "` + dir + `/login.$$"
ls -d "` + dir + `"/login.* | wc -l >> "` + dir + `/concurrent"
sleep 0.3
while [ $# -gt 0 ]; do case "$1" in -o|-p) shift 2;; -*) shift;; *) break;; esac; done
shift
rmdir "` + dir + `/login.$$"
exec sh -c "$*"
`
	if err := os.WriteFile(filepath.Join(bin, "fakessh"), []byte(fakeSSH), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 20
	r := runLauncher(t, dir, []string{"PATH=" + bin + ":" + os.Getenv("PATH")},
		"--hosts", "node-a:"+strconv.Itoa(n), "--ssh", "fakessh", "--rendezvous-host", "10.1.2.3",
		"sh", "-c", `echo "out $KYLIX_RANK"; echo "err $KYLIX_RANK" >&2`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for rk := 0; rk < n; rk++ {
		if !strings.Contains(r.stdout, fmt.Sprintf("out %d\n", rk)) || !strings.Contains(r.stderr, fmt.Sprintf("err %d\n", rk)) {
			t.Errorf("rank %d's output is missing:\nstdout:\n%s\nstderr:\n%s", rk, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout+r.stderr, remoteUpMarker) {
		t.Errorf("the startup marker shows in the output:\n%s", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "concurrent"))
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, f := range strings.Fields(string(b)) {
		if k, _ := strconv.Atoi(f); k > most {
			most = k
		}
	}
	if most > sshStartupsPerHost || most < 2 {
		t.Errorf("up to %d ssh sessions logged in at once; want 2..%d", most, sshStartupsPerHost)
	}
}
