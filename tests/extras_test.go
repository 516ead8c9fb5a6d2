package tests

import (
	"fmt"
	"testing"
)

// The rest of the C ABI: non-blocking calls, user ops, butterfly mixing, fork safety, a second
// kylix_init in one process, shrink.
func TestExtras(t *testing.T) {
	type ecase struct {
		n       int
		degrees string
		section string
		args    []string
		victim  int // shrink: the rank that dies; -1 otherwise
	}
	cs := []ecase{
		{3, "", "nonblocking", nil, -1},
		{4, "2x2", "nonblocking", nil, -1},
		{3, "direct", "userop", nil, -1},
		{6, "3x2", "userop", nil, -1},
		{4, "2x2", "mix", []string{"2"}, -1},
		{6, "3x2", "mix", []string{"2"}, -1},
		{8, "2x2x2", "mix", []string{"3"}, -1},
		{5, "direct", "mix", []string{"1"}, -1},
		{2, "", "fork", nil, -1},
		{3, "", "reinit", nil, -1},
		{4, "", "shrink", nil, 3},
	}
	for _, c := range cs {
		t.Run(fmt.Sprintf("n%d_%s_%s", c.n, degName(c.degrees), c.section), func(t *testing.T) {
			t.Parallel()
			j := job{N: c.n, Degrees: c.degrees, Prog: "extras", Args: append([]string{c.section}, c.args...)}
			if c.victim < 0 {
				r := run(t, j)
				r.expectClean(t, allRanks(c.n)...)
				return
			}
			j.KeepGoing = true
			r := run(t, j)
			var survivors []int
			for rk := 0; rk < c.n; rk++ {
				if rk != c.victim {
					survivors = append(survivors, rk)
				}
			}
			if r.Code != 128+9 {
				t.Errorf("launcher exit code %d, want 137 (the killed rank's)", r.Code)
			}
			for _, f := range r.failures() {
				t.Error(f)
			}
			for _, rk := range survivors {
				if !r.has(rk, "DONE", "fails=0") {
					t.Errorf("survivor %d did not print DONE fails=0", rk)
				}
			}
			if t.Failed() {
				t.Log(r.dump())
			}
		})
	}
}
