package main

import (
	"testing"

	"kylix/netio/rendezvous"
)

// culprit follows blame from the failing rank to the rank that blames itself or said nothing.
func TestCulprit(t *testing.T) {
	c := func(blamed int, msg string) rendezvous.Cause { return rendezvous.Cause{Msg: msg, Blamed: blamed} }
	for _, tc := range []struct {
		name     string
		causes   map[int]rendezvous.Cause
		failed   int
		rank, by int
		why      string
		ok       bool
		settled  bool // false: the chain ends at a rank that has not told (yet)
	}{
		{"no reports", nil, 2, 2, 2, "", false, true},
		{"own failure", map[int]rendezvous.Cause{2: c(2, "bad arg")}, 2, 2, 2, "bad arg", true, true},
		{"blames a silent peer", map[int]rendezvous.Cause{1: c(0, "rank 0 is lost")}, 1, 0, 1, "rank 0 is lost", true, false},
		{"blames a peer that rejected its call", map[int]rendezvous.Cause{3: c(1, "rank 1 rejected"), 1: c(1, "out is NULL")}, 3, 1, 1, "out is NULL", true, true},
		{"two hops", map[int]rendezvous.Cause{1: c(2, "via 2"), 2: c(0, "rank 0 is lost")}, 1, 0, 2, "rank 0 is lost", true, false},
		{"a cycle stops", map[int]rendezvous.Cause{1: c(2, "a"), 2: c(1, "b")}, 1, 2, 2, "b", true, true},
		{"out of range", map[int]rendezvous.Cause{1: c(9, "x")}, 1, 1, 1, "x", true, true},
	} {
		rank, by, why, ok, settled := culprit(tc.causes, tc.failed, 4)
		if rank != tc.rank || by != tc.by || why != tc.why || ok != tc.ok || settled != tc.settled {
			t.Errorf("%s: culprit = %d, %d, %q, %v, %v; want %d, %d, %q, %v, %v", tc.name, rank, by, why, ok, settled,
				tc.rank, tc.by, tc.why, tc.ok, tc.settled)
		}
	}
}
