package main

import (
	"syscall"
	"unsafe"
)

// terminalForeground tells whether fd is a terminal and, if so, whether the launcher's process
// group is the terminal's foreground group (so reading it does not stop the launcher).
func terminalForeground(fd int) (isTerminal, foreground bool) {
	var pgrp int32
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp)))
	if e != 0 {
		return e != syscall.ENOTTY && e != syscall.EINVAL && e != syscall.EBADF, false
	}
	return true, int(pgrp) == syscall.Getpgrp()
}
