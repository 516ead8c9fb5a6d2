//go:build !linux

package netio

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
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

func (l *shmLink) close()                                                {}
func (l *shmLink) endTCP(bool)                                           {}
func setSpin([]*shmLink, bool)                                           {}
func (p *peer) writeShm(*Header, [][]byte, time.Time) error              { return nil }
func (p *peer) writeShmRaw([]byte) error                                 { return nil }
func (p *peer) shmFits(int) bool                                         { return false }
func (p *peer) sayByeShm(time.Time)                                      {}
func (t *TCP) shmReadLoop(p *peer)                                       { t.wg.Done() }
func (t *TCP) ShmStats() ShmStats                                        { return ShmStats{} }
func (l *shmLink) byRef(uint64) bool                                     { return false }
func (p *peer) writeShmRef(*Header, [][]byte, time.Time) (uint64, error) { return 0, nil }
func (p *peer) awaitRefCopied(*Header, uint64) error                     { return nil }

// receiveRef: a reference frame can only come through a ring, which never exists here.
func (t *TCP) receiveRef(p *peer, h *Header, _ mailbox.Payload) error {
	p.down(kx.Errorf(kx.CodeNet, "rank %d sent a reference frame outside shared memory", kx.RankRef(p.rank)))
	return errDropped
}
