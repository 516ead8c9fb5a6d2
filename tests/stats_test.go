package tests

import (
	"fmt"
	"testing"
)

// kylix_stats_json and kylix_stats_reset from C (c/stats.c), on two-layer butterflies.
func TestStatsC(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{4, "2x2"}, {6, "3x2"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, c.degrees), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "stats", Args: []string{c.degrees}})
			r.expectClean(t, allRanks(c.n)...)
		})
	}
}
