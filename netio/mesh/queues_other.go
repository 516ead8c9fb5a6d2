//go:build !linux

package mesh

import (
	"net"
	"syscall"
)

// Unread cannot be told without SIOCINQ: liveness then judges by what the reader has read.
func Unread(net.Conn) int { return 0 }

// SendRoom is not told outside Linux: large messages go out on goroutines of their own.
func SendRoom(syscall.RawConn) int { return 0 }
