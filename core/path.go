package core

import "kylix/core/members"

// path is the comm's data path as its algorithms see it (coll.Path; its message methods are in
// wire.go): each message goes through the recorder and the view, and the algorithms in core's
// sub-packages see neither. It is one pointer, so making the interface value allocates nothing.
type path struct{ c *Comm }

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
