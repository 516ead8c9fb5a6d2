package tests

import (
	"fmt"
	"testing"
)

// User-defined ops (kylix_op_create): c/userop.c checks two tie-sensitive, non-commutative C
// callbacks against a brute-force fold in rank order, dense and sparse, every dtype, and that
// the callbacks are called with batches of elements.
func TestUserOp(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{1, ""}, {3, ""}, {3, "direct"}, {4, "2x2"}, {4, "direct"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "userop", Args: []string{fmt.Sprint(500 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				for _, sec := range []string{"create:", "dense:", "sparse:", "chunks:"} {
					if !r.has(rk, "PASS", sec) {
						t.Errorf("rank %d did not pass %s", rk, sec)
					}
				}
			}
			if testing.Verbose() {
				for _, s := range r.find(0, "INFO") {
					t.Logf("r0 %s", s)
				}
			}
		})
	}
}
