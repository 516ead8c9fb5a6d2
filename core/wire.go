package core

import "kylix/core/kx"

// The comm's data path. Every message goes through two explicit layers: the view (members/,
// which rank is which process, replicas raced) and the recorder (core/stats, the statistics of
// kylix_stats_json). Collectives call these, never the transport.

func (c *Comm) begin(seq uint64, fp kx.Fingerprint) {
	c.rec.Begin(seq, fp)
	c.v.Begin(seq, fp)
}

// abort ends collective seq with err here and tells every live peer.
func (c *Comm) abort(seq uint64, err error) {
	c.rec.End(seq, err) // a rejected call ends here (run's own hook ran first otherwise)
	c.v.Abort(seq, err)
}

func (c *Comm) send(to int, tag kx.Tag, bufs ...[]byte) error {
	t0 := c.rec.EnterSend(tag, bufs)
	err := c.v.Send(to, tag, bufs...)
	if err == nil {
		n := 0
		for _, b := range bufs {
			n += len(b)
		}
		c.rec.Count(tag, n, true)
		c.rec.Message(tag, to, n, true, t0, nil) // the timeline's send (core/stats/timeline.go)
	}
	return err
}

func (c *Comm) recv(from int, tag kx.Tag) ([]byte, error) {
	t0 := c.rec.Enter(tag)
	b, err := c.v.Recv(from, tag)
	if err == nil {
		c.rec.Count(tag, len(b), false)
	}
	c.rec.Message(tag, from, len(b), false, t0, err) // the timeline's wait
	return b, err
}

func (c *Comm) expect(from int, tag kx.Tag, dst []byte) { c.v.Expect(from, tag, dst) }

func (c *Comm) expectFold(from int, tag kx.Tag, dst []byte, f kx.Fold) {
	c.v.ExpectFold(from, tag, dst, f)
}

func (c *Comm) await(from int, tag kx.Tag) (int, error) {
	t0 := c.rec.EnterWait(tag, from, -1)
	n, err := c.v.Await(from, tag)
	if err == nil {
		c.rec.Count(tag, n, false)
	}
	c.rec.Message(tag, from, n, false, t0, err) // the timeline's wait
	return n, err
}

// awaitPrefix is not counted: the await that follows it counts the whole message.
func (c *Comm) awaitPrefix(from int, tag kx.Tag, n int) error {
	t0 := c.rec.EnterWait(tag, from, n)
	err := c.v.AwaitPrefix(from, tag, n)
	c.rec.Message(tag, from, -1, false, t0, err) // the timeline's wait, when it blocked
	return err
}
