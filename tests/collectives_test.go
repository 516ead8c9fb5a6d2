package tests

import (
	"fmt"
	"testing"
)

// Dense collectives: bcast from every root at 0, 1, 7, 4097 and 1000000 bytes, barrier
// semantics, dense allreduce.
func TestBcastBarrier(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{1, ""}, {2, ""}, {3, ""}, {4, "binary"}, {5, "direct"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "bcast_barrier", Args: []string{fmt.Sprint(100 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				for _, sec := range []string{"bcast:", "barrier:", "allreduce:"} {
					if !r.has(rk, "PASS", sec) {
						t.Errorf("rank %d did not pass %s", rk, sec)
					}
				}
			}
		})
	}
}
