package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// terminalForeground tells whether fd is a terminal and, if so, whether the launcher's process
// group is the terminal's foreground group (so reading it does not stop the launcher).
func terminalForeground(fd int) (isTerminal, foreground bool) {
	pgrp, err := tcgetpgrp(fd) // proc_linux.go, proc_other.go
	if err != nil {
		return err != unix.ENOTTY && err != unix.EINVAL && err != unix.EBADF, false
	}
	return true, pgrp == syscall.Getpgrp()
}
