package tests

import (
	"fmt"
	"testing"
)

// Non-blocking calls (c/nonblocking.c): several requests in flight, blocking calls queued
// behind them, kylix_test polling, overlap with local computation, double wait and other
// misuse refused with a status, finalize with requests in flight.
func TestNonblocking(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{2, ""}, {3, ""}, {4, "2x2"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "nonblocking", Args: []string{fmt.Sprint(10 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			for rk := 0; rk < c.n; rk++ {
				for _, sec := range []string{"inflight:", "mixed:", "poll:", "overlap:", "errors:", "finalize:"} {
					if !r.has(rk, "PASS", sec) {
						t.Errorf("rank %d did not pass %s", rk, sec)
					}
				}
				for _, info := range r.find(rk, "INFO") {
					t.Logf("rank %d: %s", rk, info)
				}
			}
		})
	}
}
