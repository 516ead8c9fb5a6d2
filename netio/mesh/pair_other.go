//go:build !linux

package mesh

import (
	"kylix/core/kx"
	"net"
	"time"
)

// Without Linux (memfd, futex, pidfd) every pair talks over TCP: no rank offers shared memory.
func ShmOffered(kx.Options) bool { return false }

func negotiateShm(net.Conn, bool, int, int, uint64, time.Time, func(string, ...any)) (Pair, error) {
	return Pair{}, nil
}
