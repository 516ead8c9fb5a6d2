package core

import "sync"

// usable reports why the comm cannot run a collective, or nil.
func (c *Comm) usable() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Errorf(CodeState, "comm was finalized")
	}
	if c.broken != nil {
		return Errorf(CodeState, "comm is broken by an earlier failure: %v", c.broken)
	}
	return nil
}

// collective runs body as the next collective of the comm. Every rank takes the same sequence
// number for the same call, so messages of different calls never mix; the fingerprint lets
// peers detect a rank that called something else. A failure is announced to all peers so
// nobody waits for a timeout that cannot end well.
func (c *Comm) collective(fp Fingerprint, body func(seq uint64) error) error {
	if err := c.usable(); err != nil {
		return err
	}
	seq := c.seq
	c.seq++
	c.t.Begin(seq, fp)
	err := body(seq)
	if err != nil {
		c.t.Abort(seq, err)
		switch CodeOf(err) {
		case CodeTimeout, CodePeer, CodeNet:
			c.mu.Lock()
			c.broken = err
			c.mu.Unlock()
		}
	}
	return err
}

// Reject is for a call whose arguments failed validation: it still takes this collective's
// sequence number, so the ranks stay in step, and tells the peers, whose matching call fails
// with CodeMismatch naming this rank instead of waiting for it. It returns err.
func (c *Comm) Reject(err error) error {
	if uerr := c.usable(); uerr != nil {
		return err
	}
	seq := c.seq
	c.seq++
	c.t.Begin(seq, Fingerprint{Kind: KindInvalid})
	c.t.Abort(seq, Errorf(CodeMismatch, "rank %d rejected its arguments: %v", c.Rank(), err))
	return err
}

// sendAll sends to several ranks at once and waits for every send, so no goroutine touches
// the buffers after it returns. It returns the first error.
type sendGroup struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	t    Transport
	self int
}

func (g *sendGroup) send(to int, tag Tag, bufs ...[]byte) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := g.t.Send(to, tag, bufs...); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	}()
}

func (g *sendGroup) wait() error {
	g.wg.Wait()
	return g.err
}

// releaser is offered by transports that pool receive buffers: core hands a payload back as
// soon as it has been combined or copied, so large messages reuse memory instead of
// allocating afresh each time.
type releaser interface{ Release([]byte) }

func (c *Comm) release(b []byte) {
	if r, ok := c.t.(releaser); ok && b != nil {
		r.Release(b)
	}
}
