//go:build !linux

package mesh

import (
	"kylix/core/kx"
	"net"
	"time"
)

// Outside Linux the standard library's keepalive settings stand in; buffers stay the
// system's (autotuning where it has it). TCP_USER_TIMEOUT has no portable equivalent.

type sockInfo struct{}

type bufLimits struct{}

func readBufLimits() bufLimits { return bufLimits{} }

func tuneConn(c net.Conn, liveness time.Duration, _ bufLimits) (sockInfo, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return sockInfo{}, nil
	}
	if liveness <= 0 {
		liveness = kx.DefaultLiveness
	}
	return sockInfo{}, tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: liveness / 2,
		Interval: liveness / 6, Count: 3})
}
