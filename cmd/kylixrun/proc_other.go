//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts each rank in its own process group (see proc_linux.go). There is no
// parent-death signal here: a launcher killed with SIGKILL leaves its ranks running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func startCmd(cmd *exec.Cmd) error { return cmd.Start() }

// waitNoReap is not available: the caller reaps first and cleans the group afterwards.
func waitNoReap(pid int) (exitStatus, bool) { return exitStatus{}, false }

func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
