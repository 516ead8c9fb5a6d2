package mesh

import (
	"kylix/core/kx"
	"net"
	"time"
)

// TuneSockets sets keepalive, TCP_USER_TIMEOUT and buffer sizes on every peer connection
// (sockopt_linux.go). A refusal is a network error naming the peer, and every connection is
// closed: a connection that cannot be made to notice a dead peer would break the liveness_ms
// promise.
func TuneSockets(conns []net.Conn, rank int, liveness time.Duration) error {
	lim := readBufLimits()
	for r, c := range conns {
		if c == nil {
			continue
		}
		if _, err := tuneConn(c, liveness, lim); err != nil {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
			return kx.Errorf(kx.CodeNet, "rank %d cannot set the socket options of its connection to rank %d: %v",
				kx.RankRef(rank), kx.RankRef(r), err)
		}
	}
	return nil
}
