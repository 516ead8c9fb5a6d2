package tests

import (
	"fmt"
	"strings"
	"testing"
)

// kylix_mix through the C ABI on 2, 4, 6 and 8 ranks, with one-layer (default, direct) and
// multi-layer butterflies: exact member-order group averages each step, the global mean after L
// steps with the same bits on every rank, bad arguments, and step/count/dtype disagreements
// detected without a timeout (tests/c/mix.c).
func TestMix(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
		layers  int
	}{
		{2, "", 1}, {4, "", 2}, {4, "2x2", 2}, {6, "3x2", 2}, {6, "2x3", 2},
		{8, "2x2x2", 3}, {8, "4x2", 2}, {8, "binary", 3},
	} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "mix", Args: []string{c.degrees, fmt.Sprint(11 + c.n)}})
			r.expectClean(t, allRanks(c.n)...)
			want := fmt.Sprintf("mixing butterfly: %d layer(s)", c.layers)
			for rk := 0; rk < c.n; rk++ {
				if !r.has(rk, "INFO", want) {
					t.Errorf("rank %d did not report %q", rk, want)
				}
				for _, sec := range []string{"converge:", "badargs:", "mismatch:"} {
					if !r.has(rk, "PASS", sec) {
						t.Errorf("rank %d did not pass %s", rk, sec)
					}
				}
			}
			// the same bits everywhere after L steps
			d0 := strings.Join(r.find(0, "DIGEST"), ";")
			if !strings.Contains(d0, "mix_f64") || !strings.Contains(d0, "mix_f32") {
				t.Fatalf("rank 0 printed no mix digests:\n%s", r.dump())
			}
			for rk := 1; rk < c.n; rk++ {
				if d := strings.Join(r.find(rk, "DIGEST"), ";"); d != d0 {
					t.Errorf("rank %d digests %q, rank 0 %q", rk, d, d0)
				}
			}
		})
	}
}
