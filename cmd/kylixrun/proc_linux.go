package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts each rank in its own process group, so that the launcher can signal a rank
// together with everything it started and so that a terminal's ^C reaches only the launcher,
// which forwards it. Pdeathsig is the backstop for a launcher killed with SIGKILL: the kernel
// then kills every rank's first process (its own children only die if they notice).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan spawnReq)
)

// startCmd starts cmd from one OS thread that lives as long as the launcher. Pdeathsig fires
// when the thread that forked the child exits, not the process; Go may retire the thread a
// goroutine happened to run on, which would kill a healthy rank.
func startCmd(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked and never returns: the thread stays
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnReq{cmd, done}
	return <-done
}

// si_code values of a SIGCHLD siginfo (x/sys names the call and its flags, not these).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// waitNoReap blocks until process pid has exited and returns its status while leaving it a
// zombie. As long as it is not reaped its PID, and so its process group ID, cannot be reused:
// the launcher can still signal leftovers of the group without hitting a stranger.
func waitNoReap(pid int) (exitStatus, bool) {
	return waitidStatus(pid, 0)
}

// exitedNow returns the status of child pid if it has exited, without waiting and without
// reaping it. ok is false while it runs (or when pid is not a child that can be waited for).
func exitedNow(pid int) (exitStatus, bool) {
	return waitidStatus(pid, unix.WNOHANG)
}

// waitidStatus is waitid(WEXITED|WNOWAIT|flags) on pid, read out.
func waitidStatus(pid int, flags int) (exitStatus, bool) {
	var info unix.Siginfo // zero: with WNOHANG and nothing to report, si_pid stays 0
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|flags, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return exitStatus{}, false
		}
		break
	}
	// x/sys leaves siginfo's union opaque. For SIGCHLD it starts with si_pid, si_uid, si_status
	// and is pointer-aligned, after si_signo, si_errno and si_code (MIPS swaps the last two,
	// which x/sys's Code field already accounts for).
	union := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		union = 16
	}
	field := func(off int) int32 {
		return *(*int32)(unsafe.Add(unsafe.Pointer(&info), off))
	}
	code, status := info.Code, field(union+8)
	if int(field(union)) != pid {
		return exitStatus{}, false
	}
	switch code {
	case cldExited:
		return exitStatus{code: int(status)}, true
	case cldKilled, cldDumped:
		return exitStatus{sig: syscall.Signal(status)}, true
	}
	return exitStatus{}, false
}

// tcgetpgrp is the foreground process group of terminal fd (TIOCGPGRP fills a 4-byte pid_t).
func tcgetpgrp(fd int) (int, error) {
	pgrp, err := unix.IoctlGetUint32(fd, unix.TIOCGPGRP)
	return int(int32(pgrp)), err
}

// groupAlive tells whether process group pgid has a member that is not a zombie.
func groupAlive(pgid int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if state, pgrp, ok := procStat(n); ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group from /proc/<pid>/stat.
func procStat(pid string) (state byte, pgrp int, ok bool) {
	state, _, pgrp, ok = procStatParent(pid)
	return state, pgrp, ok
}

// procStatParent reads the state, parent and process group from /proc/<pid>/stat.
func procStatParent(pid string) (state byte, ppid, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	// "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so cut at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	pp, err1 := strconv.Atoi(string(f[1]))
	pg, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], pp, pg, true
}

// groupListensOn tells whether a process of process group pgid listens on TCP port (in its own
// network namespace): how the launcher tells which of its joiners a resize admitted at an
// address.
func groupListensOn(pgid, port int) bool {
	names, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	want := fmt.Sprintf(":%04X", port)
	for _, e := range names {
		n := e.Name()
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if _, pgrp, ok := procStat(n); !ok || pgrp != pgid {
			continue
		}
		inodes := socketInodes(n)
		for _, table := range []string{"tcp", "tcp6"} {
			b, _ := os.ReadFile("/proc/" + n + "/net/" + table)
			for _, ln := range bytes.Split(b, []byte("\n")) {
				// sl local_address rem_address st ... inode: LISTEN is st 0A.
				f := bytes.Fields(ln)
				if len(f) > 9 && bytes.HasSuffix(f[1], []byte(want)) && string(f[3]) == "0A" && inodes[string(f[9])] {
					return true
				}
			}
		}
	}
	return false
}

// socketInodes are the inodes of the sockets process pid holds open.
func socketInodes(pid string) map[string]bool {
	fds, _ := os.ReadDir("/proc/" + pid + "/fd")
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink("/proc/" + pid + "/fd/" + fd.Name())
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	return inodes
}

// pipePending is how many bytes wait in pipe fd.
func pipePending(fd int) (int, bool) {
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD, as Linux names it
	return n, err == nil
}
