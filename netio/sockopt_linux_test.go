//go:build linux

package netio

import (
	"kylix/core/kx"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Connect sets the options on every peer connection, from the liveness_ms option; loopback
// peers are on this host.
func TestConnectTunesSockets(t *testing.T) {
	ts := mustJob(t, 3, 10*time.Second) // liveness unset: the 5 s default
	defer closeAll(ts)
	for r, tr := range ts {
		for q, p := range tr.peers {
			if p == nil {
				continue
			}
			raw, err := p.conn.(*net.TCPConn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var ut, ka int
			raw.Control(func(fd uintptr) {
				ut, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
				ka, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			})
			if ut != int(kx.DefaultLiveness.Milliseconds()) || ka != 1 {
				t.Errorf("rank %d to %d: TCP_USER_TIMEOUT %d ms, SO_KEEPALIVE %d", r, q, ut, ka)
			}
			if !tr.SameHost(q) {
				t.Errorf("rank %d: the loopback connection to %d is not taken for this host", r, q)
			}
		}
	}
}
