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
