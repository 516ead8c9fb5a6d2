//go:build linux

package netio

import "golang.org/x/sys/unix"

// sendRoom is what p's socket send buffer can still take (SO_SNDBUF less SIOCOUTQ, the bytes
// not yet acknowledged), 0 when it cannot be told.
func (p *peer) sendRoom() int {
	if p.sock.stream.rc == nil {
		return 0
	}
	room := 0
	p.sock.stream.rc.Control(func(fd uintptr) {
		buf, err1 := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		queued, err2 := unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		if err1 == nil && err2 == nil {
			room = buf - queued
		}
	})
	return room
}
