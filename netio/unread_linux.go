package netio

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unread is how many received bytes wait in conn's socket for the reader (SIOCINQ), or 0 when
// that cannot be told.
func unread(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
