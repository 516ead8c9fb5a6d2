package tests

import (
	"bytes"
	"kylix/internal/freeport"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const misspelled = "KYLIX_DEGRES is not a Kylix setting and is ignored (did you mean KYLIX_DEGREES?)"

// A misspelled KYLIX_ variable is not ignored in silence: it is reported with the nearest known
// variable, as a misspelled options key is refused, and once per job: under kylixrun by
// kylixrun (not by each rank).
func TestMisspelledEnvironmentVariable(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 4, Prog: "bcast_barrier", Env: []string{"KYLIX_DEGRES=2x2"}})
	r.expectClean(t, allRanks(4)...)
	if n := strings.Count(r.Output, misspelled); n != 1 {
		t.Errorf("want the warning once in the job, got it %d times\n%s", n, r.dump())
	}
	if !strings.Contains(r.Output, "kylixrun: environment variable "+misspelled) {
		t.Errorf("want the warning from kylixrun\n%s", r.dump())
	}
}

// Without kylixrun (ranks started as another launcher would, rank 0 serving the rendezvous),
// rank 0 reports it, and only rank 0.
func TestMisspelledVariableWithoutKylixrun(t *testing.T) {
	t.Parallel()
	prog := program(t, "launch_check")
	rv := freeport.Loopback(t, 1)[0]
	const n = 3
	var outs [n]bytes.Buffer
	var cmds [n]*exec.Cmd
	for rk := 0; rk < n; rk++ {
		cmd := exec.Command(prog, "2000")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KYLIX_") || strings.HasPrefix(kv, "KYLIX_BUILD") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "KYLIX_RANK="+strconv.Itoa(rk), "KYLIX_SIZE="+strconv.Itoa(n), "KYLIX_RENDEZVOUS="+rv,
			"KYLIX_SECRET=typo-test", "KYLIX_TIMEOUT_MS=20000", "KYLIX_DEGRES=2x2")
		cmd.Stdout, cmd.Stderr = &outs[rk], &outs[rk]
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[rk] = cmd
	}
	for rk, cmd := range cmds {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("rank %d: %v\n%s", rk, err, outs[rk].String())
			}
		case <-time.After(launcherDeadline): // fail-safe: the job takes about a second
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("rank %d still running after %v; killed it", rk, launcherDeadline)
		}
	}
	for rk := range outs {
		want := 0
		if rk == 0 {
			want = 1
		}
		if got := strings.Count(outs[rk].String(), misspelled); got != want {
			t.Errorf("rank %d reported the misspelled variable %d times, want %d\n%s", rk, got, want, outs[rk].String())
		}
	}
	if !strings.Contains(outs[0].String(), "[kylix rank 0] environment variable "+misspelled) {
		t.Errorf("rank 0's warning:\n%s", outs[0].String())
	}
}
