//go:build !linux

package netio

import (
	"kylix/core/kx"
	"net"
	"time"
)

// Without Linux (memfd, futex, pidfd) every pair talks over TCP: no rank offers shared memory,
// so no link is ever made and the methods below are never reached.
type shmLink struct{}

func shmOffered(kx.Options) bool { return false }

func negotiateShm(net.Conn, bool, int, int, uint64, time.Time, func(string, ...any)) (shmPair, error) {
	return shmPair{}, nil
}

func (l *shmLink) close()                                   {}
func (l *shmLink) endTCP(bool)                              {}
func setSpin([]*shmLink, bool)                              {}
func (p *peer) writeShm(*Header, [][]byte, time.Time) error { return nil }
func (p *peer) writeShmRaw([]byte) error                    { return nil }
func (p *peer) shmFits(int) bool                            { return false }
func (p *peer) sayByeShm(time.Time)                         {}
func (t *TCP) shmReadLoop(p *peer)                          { t.wg.Done() }
func (t *TCP) ShmStats() ShmStats                           { return ShmStats{} }
