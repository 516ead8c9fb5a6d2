//go:build !linux

package netio

import (
	"kylix/core/kx"
	"kylix/netio/lanes"
	"kylix/netio/mailbox"
	"kylix/netio/shm"
	"time"
)

// Without Linux (memfd, futex, pidfd) every pair talks over TCP: no rank offers shared memory,
// so no ring link is ever made and the methods below are never reached.
type ringLink struct {
	linkRead
	p *peer
}

func newRingLink(p *peer, _ *shm.Segment) *ringLink { return &ringLink{p: p} }

func (l *ringLink) rd() *linkRead                                            { return &l.linkRead }
func (l *ringLink) next([]byte) (mailbox.Payload, int, error)                { return nil, 0, errDropped }
func (l *ringLink) buffered() bool                                           { return false }
func (l *ringLink) pending() bool                                            { return false }
func (l *ringLink) awaitFrame() error                                        { return errDropped }
func (l *ringLink) hidden() bool                                             { return false }
func (l *ringLink) share() bool                                              { return false }
func (l *ringLink) setDirect(bool)                                           {}
func (l *ringLink) write(Header, [][]byte, time.Time) error                  { return errDropped }
func (l *ringLink) writeRaw([]byte) error                                    { return errDropped }
func (l *ringLink) fits(int) bool                                            { return false }
func (l *ringLink) sendOrLeave(Header, [][]byte, int, <-chan struct{}) error { return errDropped }
func (l *ringLink) closeWrite()                                              {}
func (l *ringLink) sayBye(time.Time)                                         {}
func (l *ringLink) close()                                                   {}
func (l *ringLink) kind() string                                             { return "shared-memory ring" }
func (l *ringLink) ended(err error) string                                   { return err.Error() }
func (l *ringLink) endTCP(bool)                                              {}
func (l *ringLink) byRef(uint64) bool                                        { return false }
func setSpin([]*ringLink, bool)                                              {}
func (t *TCP) ShmStats() ShmStats                                            { return ShmStats{} }
func (p *peer) writeShmRef(*Header, [][]byte, time.Time) (uint64, error)     { return 0, nil }
func (p *peer) awaitRefCopied(*Header, uint64) error                         { return nil }

// receiveRef: a reference frame can only come through a ring, which never exists here.
func (t *TCP) receiveRef(p *peer, h *Header, _ mailbox.Payload) error {
	p.down(kx.Errorf(kx.CodeNet, "rank %d sent a reference frame outside shared memory", kx.RankRef(p.rank)))
	return errDropped
}

// makeLanes: no rings, so lanes that reach no rank (netio/lanes).
func (t *TCP) makeLanes() *lanes.Set {
	return lanes.New(lanes.Config{Size: t.size}, func() []*shm.Segment { return nil })
}
