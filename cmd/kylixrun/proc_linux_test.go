package main

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// waitNoReap reports how a rank ended and leaves it a zombie, so its process group ID stays
// taken until the launcher reaps it.
func TestWaitNoReap(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   exitStatus
	}{{"exit 3", exitStatus{code: 3}}, {"kill -TERM $$", exitStatus{sig: syscall.SIGTERM}}, {"true", exitStatus{}}} {
		cmd := exec.Command("sh", "-c", tc.script)
		cmd.SysProcAttr = sysProcAttr()
		if err := startCmd(cmd); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		got, ok := waitNoReap(pid)
		if !ok || got != tc.want {
			t.Errorf("%q: waitNoReap = %+v, %v; want %+v", tc.script, got, ok, tc.want)
		}
		if state, _, ok := procStat(strconv.Itoa(pid)); !ok || state != 'Z' {
			t.Errorf("%q: after waitNoReap the process is in state %q, want a zombie", tc.script, state)
		}
		cmd.Wait() // reap
	}
	if _, ok := waitNoReap(os.Getpid()); ok { // not our child
		t.Error("waitNoReap succeeded on a process that is not a child")
	}
}

// A pipe is not a terminal; a bad descriptor is not one either.
func TestTerminalForegroundNotTTY(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if tty, _ := terminalForeground(int(r.Fd())); tty {
		t.Error("a pipe is taken for a terminal")
	}
	if tty, _ := terminalForeground(-1); tty {
		t.Error("descriptor -1 is taken for a terminal")
	}
}

// pidAlive tells whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	state, _, ok := procStat(strconv.Itoa(pid))
	if !ok {
		return syscall.Kill(pid, 0) == nil
	}
	return state != 'Z' && state != 'X'
}
