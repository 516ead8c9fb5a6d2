package kx

import (
	"slices"
	"testing"
)

// Joiners follow the survivors; with replication they fill holes lowest node first, then form
// whole new nodes, and the rest wait.
func TestPlace(t *testing.T) {
	p, pv := Place([]string{"a", "b"}, []int{0, 2}, 1, []string{"x", "y"})
	if !slices.Equal(p, []string{"a", "b", "x", "y"}) || !slices.Equal(pv, []int{0, 2, -1, -1}) {
		t.Errorf("s=1: %v %v", p, pv)
	}
	// s=2, kept nodes 0 and 1 (m=2): replica 1 of node 0 is dead, and replica 0 of node 1.
	members := []string{"a0", "", "", "b1"}
	prev := []int{0, 1, 3, 4}
	if n := AdmitCount(5, 2, 2); n != 4 {
		t.Fatalf("AdmitCount(5,2,2)=%d, want 4", n)
	}
	p, pv = Place(members, prev, 2, []string{"j0", "j1", "j2", "j3"})
	// node 0: a0, j1?  lowest node first: node 0's hole (replica 1) gets j0, node 1's hole
	// (replica 0) gets j1; j2, j3 form node 2. Rank k*3+j.
	want := []string{"a0", "j1", "j2", "j0", "b1", "j3"}
	wantPrev := []int{0, -1, -1, -1, 4, -1}
	if !slices.Equal(p, want) || !slices.Equal(pv, wantPrev) {
		t.Errorf("s=2: %v %v, want %v %v", p, pv, want, wantPrev)
	}
	for _, c := range []struct{ w, h, s, want int }{{1, 2, 2, 0}, {1, 0, 2, 0}, {3, 0, 2, 2}, {2, 1, 3, 1}, {7, 0, 1, 7}} {
		if n := AdmitCount(c.w, c.h, c.s); n != c.want {
			t.Errorf("AdmitCount(%d,%d,%d)=%d, want %d", c.w, c.h, c.s, n, c.want)
		}
	}
}
