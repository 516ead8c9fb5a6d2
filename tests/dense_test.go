package tests

import (
	"fmt"
	"testing"
)

// Dense allreduce from C over loopback TCP: counts 0..2^20, every dtype x op, in place and
// out of place, on 1..8 ranks (odd and prime counts included) and several degree plans.
func TestDenseAllreduce(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{1, ""}, {2, ""}, {3, ""}, {4, "2x2"}, {5, ""}, {6, "3x2"}, {7, ""}, {8, "2x2x2"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "dense", Args: []string{fmt.Sprint(30 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				if !r.has(rk, "PASS", "allreduce:") {
					t.Errorf("rank %d did not pass", rk)
				}
			}
		})
	}
}
