package core

import (
	"errors"
	"kylix/core/kx"
)

// Shrink (kylix_shrink, like ULFM's MPI_Comm_shrink) is a resize that admits nobody
// (resize.go, members/resize.go).

// shrunkError marks a comm that a resize or shrink has used: broken for good once one succeeded
// (done; cause is the failure that broke it before, if any), and a second resize is refused.
// After a failed one (not done) the comm is broken but may be resized again.
type shrunkError struct {
	cause error
	done  bool
}

func (e *shrunkError) Error() string {
	what := "the comm was shrunk or resized: use the comm kylix_shrink or kylix_resize returned"
	if !e.done {
		what = "a resize of this comm failed: call kylix_resize (or kylix_shrink) again on every live member"
	}
	if e.cause != nil {
		return e.cause.Error() + "; " + what
	}
	return what
}

func (e *shrunkError) Unwrap() error { return e.cause }

// Shrink is called by every surviving rank of c. It returns a new comm of the ranks that are
// alive, renumbered 0..k-1 in the order of their ranks in c, with c's options; when the degrees
// option was a fixed list (8x4x2) whose product is no longer k, the new comm plans with
// degrees=auto ("direct" and "binary" adapt to k). It is Resize(0) admitting nobody, even on an
// elastic comm.
//
// c itself is broken from then on (collectives fail with CodeState), whether Shrink succeeds or
// not; it must still be closed, and closing it does not disturb the new comm. A comm can be
// shrunk once; to drop further ranks, shrink the comm Shrink returned. Shrink on a comm that is
// not broken works too (it revokes it: peers still calling collectives on c fail at once).
//
// Every survivor must call Shrink within c's timeout of the others: a rank that stays silent
// longer is taken for failed. The time Shrink takes is a few message round trips, plus one
// timeout per round in which a rank is silent. Errors: CodeState (c was closed or already
// shrunk), CodePeer (the others took this rank for failed: it is not in their new comm; or
// this side holds no majority of c), CodeMismatch/CodeInternal (a protocol violation).
func (c *Comm) Shrink() (*Comm, error) {
	return c.resize(0, false, "shrink: ")
}

// startResize marks the comm as being resized and returns the attempt number, or CodeState.
func (s *state) startResize(what string) (attempt int, prior error, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var se *shrunkError
	switch {
	case s.closed:
		return 0, nil, kx.Errorf(kx.CodeState, "%scomm was finalized", what)
	case errors.As(s.broken, &se) && se.done:
		return 0, nil, kx.Errorf(kx.CodeState, "%sthis comm was already shrunk or resized (once per comm: use the comm kylix_shrink or kylix_resize returned)", what)
	case errors.As(s.broken, &se):
		prior = se.cause
	default:
		prior = s.broken
	}
	s.broken = &shrunkError{cause: prior}
	s.mirror()
	attempt = s.resizeAttempts
	s.resizeAttempts++
	return attempt, prior, nil
}
