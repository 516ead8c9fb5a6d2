package mesh

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Unread is how many received bytes wait in conn's socket for the reader (SIOCINQ), or 0 when
// that cannot be told.
func Unread(conn net.Conn) int {
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

// SendRoom is what the socket under rc can still take into its send buffer (SO_SNDBUF less
// SIOCOUTQ, the bytes not yet acknowledged), 0 when it cannot be told.
func SendRoom(rc syscall.RawConn) int {
	if rc == nil {
		return 0
	}
	room := 0
	rc.Control(func(fd uintptr) {
		buf, err1 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		queued, err2 := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err1 == nil && err2 == nil {
			room = buf - queued
		}
	})
	return room
}
