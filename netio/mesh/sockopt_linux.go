//go:build linux

package mesh

import (
	"kylix/core/kx"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Socket options of the peer connections, set once the mesh is up (Connect).
//
// Liveness: keepalive probes begin after half of liveness_ms of silence and three unanswered
// ones a sixth apart close the connection, and TCP_USER_TIMEOUT aborts it when sent data stays
// unacknowledged for liveness_ms. So a peer whose host or link is gone is noticed within
// liveness_ms whether this side is idle or writing (the heartbeats of liveness.go cover a
// process that stops answering on a healthy host). A live peer that is slow to read does not
// trip them: its kernel keeps acknowledging, and answers window probes once its buffer is full.
//
// Buffers: Linux grows each socket's buffers up to net.ipv4.tcp_rmem/tcp_wmem's maximum as the
// connection needs (autotuning), and setting SO_RCVBUF or SO_SNDBUF switches that off for the
// socket, clamped to net.core.rmem_max/wmem_max. A fixed 128 KiB buffer halves 10 Gb/s
// throughput (mpich#2635). So a buffer is set only where autotuning could not reach
// sockBufTarget and the fixed size the kernel grants is larger than what autotuning reaches.

// sockBufTarget is the buffer a long link wants: 10 Gb/s for a 3 ms round trip.
const sockBufTarget = 4 << 20

// sockInfo is what tuneConn did to one connection, read back from the socket.
type sockInfo struct {
	rcvBuf, sndBuf         int  // SO_RCVBUF, SO_SNDBUF as the kernel reports them
	rcvFixed, sndFixed     bool // set by us; otherwise left to autotuning
	keepIdle, keepIntvl    int  // seconds
	keepCnt, userTimeoutMS int
}

// bufLimits are the kernel's buffer maxima: autotuning's and the cap on a fixed size.
type bufLimits struct{ rmemAuto, wmemAuto, rmemMax, wmemMax int }

// readBufLimits reads them from /proc; a value it cannot read counts as large (leave alone).
func readBufLimits() bufLimits {
	const big = 1 << 30
	third := func(path string) int { // the max of "min default max"
		f := strings.Fields(readProc(path))
		if len(f) == 3 {
			if v, err := strconv.Atoi(f[2]); err == nil {
				return v
			}
		}
		return big
	}
	one := func(path string) int {
		if v, err := strconv.Atoi(strings.TrimSpace(readProc(path))); err == nil {
			return v
		}
		return big
	}
	return bufLimits{third("/proc/sys/net/ipv4/tcp_rmem"), third("/proc/sys/net/ipv4/tcp_wmem"),
		one("/proc/sys/net/core/rmem_max"), one("/proc/sys/net/core/wmem_max")}
}

func readProc(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// fixedBuf is the SO_RCVBUF/SO_SNDBUF value to set, or 0 to leave the buffer to autotuning: the
// kernel grants twice the value, at most twice the cap.
func fixedBuf(auto, capMax int) int {
	if auto >= sockBufTarget || 2*min(sockBufTarget, capMax) <= auto {
		return 0
	}
	return sockBufTarget
}

// tuneConn sets the options on one TCP connection and reports what it got. Errors are returned
// only when the connection is not a TCP socket or the kernel refuses a documented option.
func tuneConn(c net.Conn, liveness time.Duration, lim bufLimits) (sockInfo, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return sockInfo{}, nil // not a TCP socket (tests' pipes): nothing to tune
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return sockInfo{}, err
	}
	if liveness <= 0 {
		liveness = kx.DefaultLiveness
	}
	secs := func(d time.Duration) int { return max(1, int((d+time.Second-1)/time.Second)) }
	var info sockInfo
	var serr error
	set := func(fd, level, opt, v int) {
		if serr == nil {
			serr = unix.SetsockoptInt(fd, level, opt, v)
		}
	}
	get := func(fd, level, opt int) int {
		v, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil && serr == nil {
			serr = err
		}
		return v
	}
	err = raw.Control(func(fdp uintptr) {
		fd := int(fdp)
		set(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
		set(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, secs(liveness/2))
		set(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs(liveness/6))
		set(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT, 3)
		set(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(liveness.Milliseconds()))
		if v := fixedBuf(lim.rmemAuto, lim.rmemMax); v > 0 {
			set(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, v)
			info.rcvFixed = true
		}
		if v := fixedBuf(lim.wmemAuto, lim.wmemMax); v > 0 {
			set(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, v)
			info.sndFixed = true
		}
		info.rcvBuf = get(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		info.sndBuf = get(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		info.keepIdle = get(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE)
		info.keepIntvl = get(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		info.keepCnt = get(fd, unix.IPPROTO_TCP, unix.TCP_KEEPCNT)
		info.userTimeoutMS = get(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	})
	if err == nil {
		err = serr
	}
	return info, err
}
