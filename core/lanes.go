package core

import "kylix/core/kx"

// lanePath is the comm's coll.Lanes: the view's lanes, counted by the recorder as the data
// path's messages are (wire.go), a wait given to the timeline.
type lanePath struct{ c *Comm }

func (p lanePath) LaneMax(node int) int { return p.c.v.LaneMax(node) }

func (p lanePath) LanePut(to int, tag kx.Tag, b []byte) error {
	t0 := p.c.rec.EnterSend(tag, nil)
	err := p.c.v.LanePut(to, tag, b)
	if err == nil {
		path{p.c}.sent(tag, to, len(b), t0)
	}
	return err
}

func (p lanePath) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	t0 := p.c.rec.EnterWait(tag, from, -1)
	fp, b, err := p.c.v.LaneAwait(from, tag)
	if err == nil {
		p.c.rec.Count(tag, len(b), false)
	}
	p.c.rec.Message(tag, from, len(b), false, t0, err)
	return fp, b, err
}

func (p lanePath) LaneDone(from int, tag kx.Tag) { p.c.v.LaneDone(from, tag) }
