package core

import (
	"errors"
	"kylix/core/kx"
)

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
	return c.ex.submit(c, seq, fp, body), nil
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
//
// When this comm is broken, it first tells the peers that this rank will not take part in the
// collective it is being asked for: peers that got through the failed collective (they did not
// need what failed) and wait for this rank in the next one fail at once, naming the cause,
// instead of waiting out timeout_ms. The collective's sequence number is used up, as every
// rank's call takes one.
func (c *Comm) nextSeq() (uint64, error) {
	if c.lent {
		return 0, kx.Errorf(kx.CodeInternal, "a collective on a comm whose express allreduce is lent out of Go")
	}
	if err := c.st.usable(); err != nil {
		c.tellBroken()
		return 0, err
	}
	seq := c.seq
	c.seq++
	return seq, nil
}

// tellBroken tells the peers, when this comm is broken by a failure (not closed, not shrunk or
// resized), that this rank will not take part in its next collective, and why; the number is
// used up. Peers that got through the failed collective and wait for this rank in the next one
// then fail at once naming the cause, whether this rank asks for another collective or closes
// the comm.
func (c *Comm) tellBroken() {
	c.st.mu.Lock()
	cause := c.st.broken
	var shrunk *shrunkError
	if c.st.closed || cause == nil || errors.As(cause, &shrunk) {
		c.st.mu.Unlock()
		return
	}
	seq := c.seq
	c.seq++
	c.st.mu.Unlock()
	// Wrapped, not flattened to text: the peers' errors then blame the rank the cause blames.
	c.abort(seq, kx.Errorf(kx.CodeOf(cause), "a peer's comm is broken by an earlier failure: %v", cause))
}

// run executes collective seq on the transport. Only one runs at a time on a comm: the caller
// is either the issuing goroutine with the executor idle, or the executor.
func (c *Comm) run(seq uint64, fp kx.Fingerprint, body func(seq uint64) error) error {
	c.begin(seq, fp)
	c.cx.FP = fp // what this collective's sends carry (coll.Sends)
	err := body(seq)
	c.rec.End(seq, err) // time and outcome of the collective
	if err != nil {
		c.abort(seq, err)
		c.v.Quiesce(seq) // no byte may land in a posted place once this call returns
		switch kx.CodeOf(err) {
		case kx.CodeTimeout, kx.CodePeer, kx.CodeNet:
			c.st.breakWith(err)
		}
	}
	return err
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
	if err := c.st.usable(); err != nil {
		return err
	}
	c.reject(kx.Errorf(kx.CodeMismatch, "rank %d rejected its call: %s", c.Rank(), reason))
	return nil
}

// reject takes the next sequence number with a collective that fails at once with abort, which
// run sends to the peers.
func (c *Comm) reject(abort error) {
	if uerr := c.st.usable(); uerr != nil {
		return
	}
	seq := c.seq
	c.seq++
	fp := kx.Fingerprint{Kind: kx.KindInvalid}
	body := func(uint64) error { return abort } // run aborts seq with it, as for any failure
	if c.ex.active() {
		c.ex.submit(c, seq, fp, body) // queued behind the requests in flight: not waited for
	} else {
		c.run(seq, fp, body)
	}
}
