package members

import (
	"kylix/core/kx"
	"testing"
)

// Of the two sides of any split, exactly one may go on.
func TestQuorumOneSide(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for mask := 0; mask < 1<<n; mask++ {
			a, b := newBitset(n), newBitset(n) // a: side A's failed set (side B's ranks), b: the reverse
			for r := 0; r < n; r++ {
				if mask>>r&1 != 0 {
					a.add(r)
				} else {
					b.add(r)
				}
			}
			ea, eb := quorum(a, n), quorum(b, n)
			if (ea == nil) == (eb == nil) {
				t.Fatalf("n=%d split %b: side A %v, side B %v: exactly one side must go on", n, mask, ea, eb)
			}
			for _, e := range []error{ea, eb} {
				if e != nil && kx.CodeOf(e) != kx.CodePeer {
					t.Fatalf("quorum error %v is not CodePeer", e)
				}
			}
		}
	}
}

// A side goes on with more than half of the old members alive, or exactly half with rank 0
// among them: every failed set of up to 10 ranks against that rule, written out.
func TestQuorumMatchesRule(t *testing.T) {
	for n := 1; n <= 10; n++ {
		for mask := 0; mask < 1<<n; mask++ {
			failed := newBitset(n)
			live := n
			for r := 0; r < n; r++ {
				if mask>>r&1 != 0 {
					failed.add(r)
					live--
				}
			}
			want := 2*live > n || (2*live == n && mask&1 == 0)
			err := quorum(failed, n)
			if (err == nil) != want {
				t.Fatalf("n=%d failed=%b: quorum says %v, want going on=%v", n, mask, err, want)
			}
		}
	}
}
