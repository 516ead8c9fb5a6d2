package tests

import (
	"fmt"
	"testing"
)

// Calls whose own buffers fit under a capped address space but whose scratch would not get
// KYLIX_ERR_NOMEM naming the argument, on every rank, and the comm keeps working (nomem.c).
func TestNoMem(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: n, Prog: "nomem"})
			r.expectClean(t, allRanks(n)...)
			for rank := 0; rank < n; rank++ {
				for _, what := range []string{"kylix_reduce width=INT32_MAX", "kylix_config 80M+80M",
					"kylix_config_reduce width=2^24", "kylix_allreduce 1 GiB"} {
					if !r.has(rank, "PASS", what) {
						t.Errorf("rank %d: no PASS for %s\n%s", rank, what, r.dump())
					}
				}
			}
		})
	}
}
