package tests

import (
	"strings"
	"testing"
)

// Shared memory (shm=auto, the default: every rank of these jobs shares the host) changes how
// bytes travel, never what arrives: the brute-force sparse checks pass over it, and every
// digest is the same bits as over TCP (shm=off) for the same inputs and degrees. log=debug
// shows that the auto run really went through shared memory and the off run did not.
func TestSparseShmMatchesTCP(t *testing.T) {
	cases := []sparseCase{
		{n: 2, degrees: "auto", seed: 2201, nfeat: 3000, density: "0.03", widths: "1,3"},
		{n: 4, degrees: "2x2", seed: 4401, nfeat: 50000, density: "0.02", widths: "1,3", extra: []string{"--quick"}},
		{n: 3, degrees: "direct", seed: 3301, nfeat: 1000000, density: "0.02", widths: "3", extra: []string{"--quick", "--reps", "1"}},
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			got := map[string]map[int]map[string]string{}
			for _, mode := range []string{"off", "auto"} {
				cm := c
				cm.env = []string{"KYLIX_SHM=" + mode, "KYLIX_LOG=debug"}
				r := run(t, cm.job())
				r.expectClean(t, allRanks(c.n)...)
				for _, sec := range []string{"plans:", "empty:", "config_reduce:", "determinism:"} {
					for rk := 0; rk < c.n; rk++ {
						if !r.has(rk, "PASS", sec) {
							t.Errorf("shm=%s: rank %d did not pass section %s", mode, rk, sec)
						}
					}
				}
				via := strings.Count(r.Output, "talks through shared memory")
				if want := map[string]int{"off": 0, "auto": c.n * (c.n - 1)}[mode]; via != want {
					t.Errorf("shm=%s: %d pairs' ends on shared memory, want %d\n%s", mode, via, want, r.dump())
				}
				got[mode] = digests(r, c.n)
			}
			if len(got["off"][0]) == 0 {
				t.Fatal("no digests")
			}
			for rk := 0; rk < c.n; rk++ {
				for k, v := range got["off"][rk] {
					if got["auto"][rk][k] != v {
						t.Errorf("rank %d digest %s: %s over TCP, %s over shared memory", rk, k, v, got["auto"][rk][k])
					}
				}
			}
		})
	}
}
