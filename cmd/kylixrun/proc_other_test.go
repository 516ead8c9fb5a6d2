//go:build unix && !linux

package main

import "syscall"

// pidAlive tells whether pid exists.
func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
