//go:build unix && !linux

package main

import (
	"encoding/binary"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts each rank in its own process group (see proc_linux.go). There is no
// parent-death signal here: a launcher killed with SIGKILL leaves its ranks running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

// waitNoReap is not available: the caller reaps first and cleans the group afterwards.
func waitNoReap(pid int) (exitStatus, bool) { return exitStatus{}, false }

// exitedNow cannot look without reaping here: a rank counts as running until it is reaped.
func exitedNow(pid int) (exitStatus, bool) { return exitStatus{}, false }

// tcgetpgrp is the foreground process group of terminal fd. TIOCGPGRP fills a 4-byte pid_t,
// which x/sys offers only through an int here: its first four bytes hold it.
func tcgetpgrp(fd int) (int, error) {
	v, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	b := (*[8]byte)(unsafe.Pointer(&v))
	return int(int32(binary.NativeEndian.Uint32(b[:4]))), err
}

func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// groupListensOn cannot tell here: the tags of joiners keep their names.
func groupListensOn(pgid, port int) bool { return false }

// pipePending cannot tell here: a tag changes from the bytes the launcher has read.
func pipePending(fd int) (int, bool) { return 0, false }
