package core

import (
	"errors"
	"kylix/core/kx"
)

// Shrink (kylix_shrink, like ULFM's MPI_Comm_shrink): members/shrink.go agrees on the survivors
// and makes their view; this is the comm's side of it.

// shrunkError marks a comm that kylix_shrink has used: it is broken for good (cause is the
// failure that broke it before, if any), and a second Shrink is refused.
type shrunkError struct{ cause error }

func (e *shrunkError) Error() string {
	if e.cause != nil {
		return e.cause.Error() + "; the comm was then shrunk: use the comm kylix_shrink returned"
	}
	return "the comm was shrunk: use the comm kylix_shrink returned"
}

// Shrink is called by every surviving rank of c. It returns a new comm of the ranks that are
// alive, renumbered 0..k-1 in the order of their ranks in c, with c's options; when the degrees
// option was a fixed list (8x4x2) whose product is no longer k, the new comm plans with
// degrees=auto ("direct" and "binary" adapt to k).
//
// c itself is broken from then on (collectives fail with CodeState), whether Shrink succeeds or
// not; it must still be closed, and closing it does not disturb the new comm. A comm can be
// shrunk once; to drop further ranks, shrink the comm Shrink returned. Shrink on a comm that is
// not broken works too (it revokes it: peers still calling collectives on c fail at once).
//
// Every survivor must call Shrink within c's timeout of the others: a rank that stays silent
// longer is taken for failed. The time Shrink takes is a few message round trips, plus one
// timeout per round in which a rank is silent. Errors: CodeState (c was closed or already
// shrunk), CodePeer (the others took this rank for failed: it is not in their new comm),
// CodeMismatch/CodeInternal (a protocol violation).
func (c *Comm) Shrink() (*Comm, error) {
	c.ex.waitIdle() // no request in flight may touch the transport from now on
	c.mu.Lock()
	var se *shrunkError
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, kx.Errorf(kx.CodeState, "shrink: comm was finalized")
	case errors.As(c.broken, &se):
		c.mu.Unlock()
		return nil, kx.Errorf(kx.CodeState, "shrink: this comm was already shrunk (once per comm: shrink the comm kylix_shrink returned)")
	}
	c.broken = &shrunkError{cause: c.broken}
	c.mu.Unlock()

	nv, err := c.v.Shrink(c.seq)
	if err != nil {
		return nil, err
	}
	opts := c.opts
	opts.Rank, opts.Size = nv.Rank(), nv.Size()
	if _, err := kx.ParseDegreesSpec(opts.Degrees, nv.Nodes()); err != nil {
		opts.Degrees = "auto"
	}
	nc, err := newComm(nv, opts)
	if err != nil {
		nv.Close()
		return nil, kx.Prefixed("shrink: ", err)
	}
	nc.denseSwitchBytes = c.denseSwitchBytes
	return nc, nil
}
