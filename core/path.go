package core

import (
	"kylix/core/kx"
	"kylix/core/members"
)

// path is the comm's data path (wire.go) as its algorithms see it (coll.Path): each message
// goes through the recorder and the view, and the algorithms in core's sub-packages see
// neither. It is one pointer, so making the interface value allocates nothing.
type path struct{ c *Comm }

func (p path) Send(to int, tag kx.Tag, bufs ...[]byte) error { return p.c.send(to, tag, bufs...) }
func (p path) Recv(from int, tag kx.Tag) ([]byte, error)     { return p.c.recv(from, tag) }
func (p path) Expect(from int, tag kx.Tag, dst []byte)       { p.c.expect(from, tag, dst) }
func (p path) Await(from int, tag kx.Tag) (int, error)       { return p.c.await(from, tag) }
func (p path) AwaitPrefix(from int, tag kx.Tag, n int) error { return p.c.awaitPrefix(from, tag, n) }

func (p path) ExpectFold(from int, tag kx.Tag, dst []byte, f kx.Fold) {
	p.c.expectFold(from, tag, dst, f)
}

// Release hands a payload of Recv back to the transport (pooled receive buffers).
func (p path) Release(b []byte) {
	if b != nil {
		p.c.v.Release(b)
	}
}

// SendFits: a small message (members.InlineSendBytes) is written at once whatever the room.
func (p path) SendFits(to, n int) bool {
	return n <= members.InlineSendBytes || p.c.v.SendFits(to, n)
}

func (p path) WritesBack(to, n int) bool { return p.c.v.WritesBack(to, n) }
func (p path) SameHost(node int) bool    { return p.c.v.SameHost(node) }
