package core

import "kylix/core/kx"

// The comm's data path. Every message goes through two explicit layers: the view (members/,
// which rank is which process, replicas raced) and the recorder (core/stats, the statistics of
// kylix_stats_json and the timeline). The algorithms reach it as coll.Path (path.go), never the
// transport; begin and abort are the comm's own, at the start and failure of a collective.

func (c *Comm) begin(seq uint64, fp kx.Fingerprint) {
	c.rec.Begin(seq, fp)
	c.v.Begin(seq, fp)
}

// abort ends collective seq with err here and tells every live peer.
func (c *Comm) abort(seq uint64, err error) {
	c.rec.End(seq, err) // a rejected call ends here (run's own hook ran first otherwise)
	c.v.Abort(seq, err)
}

func (p path) Send(to int, tag kx.Tag, bufs ...[]byte) error { return p.send(to, tag, bufs, false) }

// SendAside is Send from a goroutine beside the collective's own (coll.Path): the recorder
// counts it under its lock (core/stats/own.go).
func (p path) SendAside(to int, tag kx.Tag, bufs ...[]byte) error { return p.send(to, tag, bufs, true) }

func (p path) send(to int, tag kx.Tag, bufs [][]byte, aside bool) error {
	var t0 int64
	if aside {
		t0 = p.c.rec.EnterAside(bufs)
	} else {
		t0 = p.c.rec.EnterSend(tag, bufs)
	}
	err := p.c.v.Send(to, tag, bufs...)
	if err == nil {
		n := 0
		for _, b := range bufs {
			n += len(b)
		}
		if aside {
			p.c.rec.CountAside(tag, n)
		} else {
			p.sent(tag, to, n, t0)
		}
	}
	return err
}

// sent counts a send of the running collective that completed, and gives it to the timeline.
func (p path) sent(tag kx.Tag, to, n int, t0 int64) {
	p.c.rec.Count(tag, n, true)
	p.c.rec.Message(tag, to, n, true, t0, nil) // the timeline's send (core/stats/timeline.go)
}

// Post is Send for a message the peer may copy by reference (kx.Sender.Post), from the
// goroutine that runs the collective; Complete ends it there, and counts it then.
func (p path) Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error) {
	t0 := p.c.rec.EnterSend(tag, bufs)
	ps, err := p.c.v.Post(to, tag, bufs...)
	if err != nil || ps.Mark == 0 {
		if err == nil {
			n := 0
			for _, b := range bufs {
				n += len(b)
			}
			p.sent(tag, to, n, t0)
		}
		return kx.Posted{}, err
	}
	ps.Node, ps.T0 = to, t0
	return ps, nil
}

func (p path) Complete(ps kx.Posted) error {
	if ps.Mark == 0 {
		return nil
	}
	err := p.c.v.Complete(ps)
	if err == nil {
		p.sent(ps.Tag, ps.Node, ps.N, ps.T0)
	}
	return err
}

func (p path) Recv(from int, tag kx.Tag) ([]byte, error) {
	t0 := p.c.rec.Enter(tag)
	b, err := p.c.v.Recv(from, tag)
	if err == nil {
		p.c.rec.Count(tag, len(b), false)
	}
	p.c.rec.Message(tag, from, len(b), false, t0, err) // the timeline's wait
	return b, err
}

func (p path) Expect(from int, tag kx.Tag, dst []byte) { p.c.v.Expect(from, tag, dst) }

func (p path) ExpectFold(from int, tag kx.Tag, dst []byte, f kx.Fold) {
	p.c.v.ExpectFold(from, tag, dst, f)
}

func (p path) Await(from int, tag kx.Tag) (int, error) {
	t0 := p.c.rec.EnterWait(tag, from, -1)
	n, err := p.c.v.Await(from, tag)
	if err == nil {
		p.c.rec.Count(tag, n, false)
	}
	p.c.rec.Message(tag, from, n, false, t0, err) // the timeline's wait
	return n, err
}

// awaitPrefix is not counted: the await that follows it counts the whole message.
func (p path) AwaitPrefix(from int, tag kx.Tag, n int) error {
	t0 := p.c.rec.EnterWait(tag, from, n)
	err := p.c.v.AwaitPrefix(from, tag, n)
	p.c.rec.Message(tag, from, -1, false, t0, err) // the timeline's wait, when it blocked
	return err
}
