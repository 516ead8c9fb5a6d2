package kx

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorFieldsAndRenumber(t *testing.T) {
	err := Errorf(CodeTimeout, "rank %d sent nothing: waited for its message of collective %d, layer %d, and rank %d's",
		RankRef(5), SeqRef(107), LayerRef(2), RankRef(3))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal("Errorf did not make an *Error")
	}
	if r, ok := e.Rank(); !ok || r != 5 {
		t.Errorf("Rank() = %d, %v", r, ok)
	}
	if q, ok := e.Seq(); !ok || q != 107 {
		t.Errorf("Seq() = %d, %v", q, ok)
	}
	if l, ok := e.Layer(); !ok || l != 2 {
		t.Errorf("Layer() = %d, %v", l, ok)
	}
	// A shrunk comm of raw ranks {0, 5, 7}: 5 is now 1, 3 is not a member; its collectives
	// start at raw sequence 100.
	newOf := map[int]int{0: 0, 5: 1, 7: 2}
	rank := func(r int) (int, bool) { n, ok := newOf[r]; return n, ok }
	seq := func(q uint64) (uint64, bool) { return q - 100, q >= 100 }
	got := e.Renumber(rank, seq)
	want := "rank 1 sent nothing: waited for its message of collective 7, layer 2, and rank 3 (of the comm before shrink)'s"
	if got.Error() != want {
		t.Errorf("renumbered:\n%s\nwant\n%s", got.Error(), want)
	}
	if r, _ := got.Rank(); r != 1 || got.Code != CodeTimeout {
		t.Errorf("renumbered Rank() = %d, code %v", r, got.Code)
	}
	if e.Error() == got.Error() {
		t.Error("Renumber changed the original")
	}

	// A peer's report: the reporter is a field, appended to the text and renumbered.
	rep := Reported(CodePeer, "rank 1 is lost", 7, 1)
	if rep.Error() != "rank 1 is lost (reported by rank 7)" {
		t.Errorf("reported: %q", rep.Error())
	}
	if got := rep.Renumber(rank, seq).Error(); got != "rank 1 is lost (reported by rank 2)" {
		t.Errorf("renumbered report: %q", got)
	}
	if r, ok := rep.Reporter(); !ok || r != 7 {
		t.Errorf("Reporter() = %d, %v", r, ok)
	}
	// The rank the report names travelled beside its text, in the same numbers: kept as is.
	if r, ok := rep.Renumber(rank, seq).Rank(); !ok || r != 1 {
		t.Errorf("the renumbered report names rank %d, %v; want 1", r, ok)
	}
	if _, ok := Reported(CodeArg, "x", 7, -1).Rank(); ok {
		t.Error("a report naming no rank names one")
	}

	// A prefix keeps the fields, and renumbering keeps the prefix.
	pre := Prefixed("shrink: ", err)
	if !errors.As(pre, &e) || e.Code != CodeTimeout {
		t.Fatalf("prefixed: %v", pre)
	}
	if got := e.Renumber(rank, seq).Error(); got[:len("shrink: rank 1 ")] != "shrink: rank 1 " {
		t.Errorf("renumbered prefixed: %q", got)
	}
	if !errors.Is(pre, ErrTimeout) || errors.Is(pre, ErrPeer) {
		t.Error("errors.Is by code")
	}
}

// An error that wraps another blames the rank the wrapped one blames, unless it names a rank
// of its own (a comm broken by a death tells its peers which rank died).
func TestRankOfAWrappedError(t *testing.T) {
	cause := Errorf(CodePeer, "rank %d is lost: %s", RankRef(2), "connection closed")
	wrapped := Errorf(CodePeer, "a peer's comm is broken by an earlier failure: %v", cause)
	if r, ok := wrapped.(*Error).Rank(); !ok || r != 2 {
		t.Errorf("wrapped: Rank() = %d, %v; want 2", r, ok)
	}
	own := Errorf(CodeMismatch, "rank %d rejected its arguments: %v", RankRef(1), cause)
	if r, ok := own.(*Error).Rank(); !ok || r != 1 {
		t.Errorf("own rank first: Rank() = %d, %v; want 1", r, ok)
	}
	plain := Errorf(CodeInternal, "no rank here: %v", fmt.Errorf("nor here"))
	if r, ok := plain.(*Error).Rank(); ok {
		t.Errorf("no rank named: Rank() = %d, true", r)
	}
	renum := wrapped.(*Error).Renumber(func(r int) (int, bool) { return r - 1, true }, func(q uint64) (uint64, bool) { return q, true })
	if r, _ := renum.Rank(); r != 1 {
		t.Errorf("renumbered: Rank() = %d, want 1", r)
	}
}
