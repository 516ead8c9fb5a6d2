package core

import (
	"errors"
	"kylix/core/kx"
	"kylix/core/members"
	"slices"
	"sync"
)

// usable reports why the comm cannot run a collective, or nil. A usable comm answers without
// the lock (unusable mirrors closed and broken).
func (c *Comm) usable() error {
	if !c.unusable.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kx.Errorf(kx.CodeState, "comm was finalized")
	}
	if c.broken != nil {
		return kx.Errorf(kx.CodeState, "comm is broken by an earlier failure: %v", c.broken)
	}
	return nil
}

// issue makes body the next collective of the comm and returns its request. Every rank takes
// the same sequence number for the same call, so messages of different calls never mix; the
// fingerprint lets peers detect a rank that called something else. A failure is announced to
// all peers so nobody waits for a timeout that cannot end well.
//
// Every collective is issued, as NCCL enqueues every call. The sequence number is taken now,
// in call order. A non-blocking call (issue) queues on the comm's executor (request.go) and
// returns its request. A blocking one (collective) waits for the requests in flight, then runs
// on the caller's goroutine: no hand-off, and body is not kept, so the caller's closure
// need not be allocated (a small step allocates nothing here).
func (c *Comm) issue(fp kx.Fingerprint, body func(seq uint64) error) (*Request, error) {
	seq, err := c.nextSeq()
	if err != nil {
		return nil, err
	}
	return c.submit(seq, fp, body), nil
}

// collective runs a blocking collective (see issue) and returns its outcome.
func (c *Comm) collective(fp kx.Fingerprint, body func(seq uint64) error) error {
	seq, err := c.nextSeq()
	if err != nil {
		return err
	}
	c.ex.waitIdle() // the requests issued before this call run first
	return c.run(seq, fp, body)
}

// nextSeq takes the next collective's sequence number, or says why the comm cannot run one.
func (c *Comm) nextSeq() (uint64, error) {
	if err := c.usable(); err != nil {
		c.revoke()
		return 0, err
	}
	seq := c.seq
	c.seq++
	return seq, nil
}

// run executes collective seq on the transport. Only one runs at a time on a comm: the caller
// is either the issuing goroutine with the executor idle, or the executor.
func (c *Comm) run(seq uint64, fp kx.Fingerprint, body func(seq uint64) error) error {
	c.begin(seq, fp)
	c.fp = fp // what this collective's sends carry (sends)
	err := body(seq)
	c.statsEnd(seq, err) // stats.go: time and outcome of the collective
	if err != nil {
		c.abort(seq, err)
		c.v.Quiesce(seq) // no byte may land in a posted place once this call returns
		switch kx.CodeOf(err) {
		case kx.CodeTimeout, kx.CodePeer, kx.CodeNet:
			c.mu.Lock()
			c.broken = err
			c.mirrorUsable()
			c.mu.Unlock()
		}
	}
	return err
}

// revoke tells the peers, when this comm is broken, that this rank will not take part in the
// collective it is being asked for: peers that got through the failed collective (they did not
// need what failed) and wait for this rank in the next one fail at once, naming the cause,
// instead of waiting out timeout_ms. The collective's sequence number is used up, as every
// rank's call takes one.
func (c *Comm) revoke() {
	c.mu.Lock()
	cause := c.broken
	var shrunk *shrunkError
	if c.closed || cause == nil || errors.As(cause, &shrunk) {
		c.mu.Unlock()
		return
	}
	seq := c.seq
	c.seq++
	c.mu.Unlock()
	code := kx.CodeOf(cause)
	c.abort(seq, &kx.Error{Code: code, Msg: "a peer's comm is broken by an earlier failure: " + cause.Error()})
}

// Reject is for a call whose arguments failed validation: it still takes this collective's
// sequence number, so the ranks stay in step, and tells the peers, whose matching call fails
// with CodeMismatch naming this rank instead of waiting for it. It returns err.
func (c *Comm) Reject(err error) error {
	c.reject(kx.Errorf(kx.CodeMismatch, "rank %d rejected its arguments: %v", c.Rank(), err))
	return err
}

// RejectCall gives up this rank's turn at the next collective with a reason of the caller's
// (kylix_reject: a binding found a bad argument the library cannot see): the matching call fails
// on every other rank with CodeMismatch naming this rank and the reason. It fails only when the
// comm cannot run collectives any more.
func (c *Comm) RejectCall(reason string) error {
	if err := c.usable(); err != nil {
		return err
	}
	c.reject(kx.Errorf(kx.CodeMismatch, "rank %d rejected its call: %s", c.Rank(), reason))
	return nil
}

// reject takes the next sequence number with a collective that fails at once with abort, which
// run sends to the peers.
func (c *Comm) reject(abort error) {
	if uerr := c.usable(); uerr != nil {
		return
	}
	seq := c.seq
	c.seq++
	fp := kx.Fingerprint{Kind: kx.KindInvalid}
	body := func(uint64) error { return abort } // run aborts seq with it, as for any failure
	if c.ex.busyNow() {
		c.submit(seq, fp, body) // queued behind the requests in flight: not waited for
	} else {
		c.run(seq, fp, body)
	}
}

// sendGroup sends to several nodes at once and waits for every send, so no goroutine touches
// the buffers after it returns. It returns the first error. It lives on the collective's stack:
// only a send that goes out on a goroutine of its own makes the shared part (bg).
type sendGroup struct {
	c   *Comm
	fp  kx.Fingerprint // the collective's, set on every message
	err error          // the first error of a send made on this goroutine
	bg  *bgSends
}

// bgSends are a group's sends on goroutines of their own.
type bgSends struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

// sends is a sendGroup for the running collective.
func (c *Comm) sends() sendGroup { return sendGroup{c: c, fp: c.fp} }

// send sends b (nil: an empty message) as one message. The one-buffer list it hands the
// transport is the comm's (Comm.one), so a send allocates nothing: the transport's Send takes
// an interface call's arguments, which escape.
func (g *sendGroup) send(to int, tag kx.Tag, b []byte) {
	if len(b) == 0 {
		g.sendv(to, tag, nil)
		return
	}
	c := g.c
	c.one[0] = b
	g.sendv(to, tag, c.one[:])
	c.one[0] = nil
}

// sendv sends the concatenation of bufs as one message; the list may be reused once it
// returns (a send on a goroutine of its own takes a copy).
func (g *sendGroup) sendv(to int, tag kx.Tag, bufs [][]byte) {
	tag.FP = g.fp
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	c := g.c
	// The write returns at once (a small message, or room for it in the ring or socket
	// buffer): no goroutine, and the waits that follow may read on this thread (netio's
	// caller-thread reads stand aside while a send runs on a goroutine of its own).
	if n <= members.InlineSendBytes || c.v.SendFits(to, n) {
		if err := c.send(to, tag, bufs...); err != nil && g.err == nil {
			g.err = err
		}
		return
	}
	if g.bg == nil {
		g.bg = &bgSends{}
	}
	bg := g.bg
	bg.wg.Add(1)
	kx.AsyncSends.Add(1)
	bufs = slices.Clone(bufs)
	go func() {
		defer bg.wg.Done()
		defer kx.AsyncSends.Add(-1)
		if err := c.send(to, tag, bufs...); err != nil {
			bg.mu.Lock()
			if bg.err == nil {
				bg.err = err
			}
			bg.mu.Unlock()
		}
	}()
}

func (g *sendGroup) wait() error {
	if g.bg != nil {
		g.bg.wg.Wait()
		if g.err == nil {
			g.err = g.bg.err
		}
	}
	return g.err
}

// release hands a payload of Recv back to the transport (pooled receive buffers).
func (c *Comm) release(b []byte) {
	if b != nil {
		c.v.Release(b)
	}
}
