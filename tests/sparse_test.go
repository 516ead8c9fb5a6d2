package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// sparseCase is one run of c/sparse.c.
type sparseCase struct {
	n       int
	degrees string
	seed    int
	nfeat   int
	density string
	widths  string
	extra   []string
	env     []string
}

func (c sparseCase) job() job {
	args := []string{fmt.Sprint(c.seed), fmt.Sprint(c.nfeat), c.density, c.widths}
	return job{N: c.n, Degrees: c.degrees, Prog: "sparse", Args: append(args, c.extra...), Env: c.env}
}

func (c sparseCase) name() string {
	s := fmt.Sprintf("n%d_%s_seed%d_f%d", c.n, degName(c.degrees), c.seed, c.nfeat)
	for _, e := range c.env {
		s += "_" + strings.ToLower(strings.TrimPrefix(e, "KYLIX_"))
	}
	return s
}

// The matrix: every rank count from 1 to 6 and 8, with auto, direct, binary and mixed degrees.
func sparseMatrix() []sparseCase {
	base := func(n int, d string, seed int) sparseCase {
		return sparseCase{n: n, degrees: d, seed: seed, nfeat: 3000, density: "0.03", widths: "1,3"}
	}
	cs := []sparseCase{
		base(1, "auto", 11), base(1, "direct", 12),
		base(2, "auto", 21), base(2, "direct", 22), base(2, "binary", 23),
		base(3, "auto", 31), base(3, "direct", 32),
		base(4, "auto", 41), base(4, "direct", 42), base(4, "binary", 43), base(4, "2x2", 44),
		base(5, "auto", 51), base(5, "direct", 52),
		base(6, "auto", 61), base(6, "direct", 62), base(6, "3x2", 63), base(6, "2x3", 64), base(6, "binary", 65),
		base(8, "auto", 81), base(8, "direct", 82), base(8, "4x2", 83), base(8, "2x4", 84), base(8, "2x2x2", 85),
	}
	// a large sparse feature space (bigger messages) and a tiny dense one (every index hot)
	cs = append(cs,
		sparseCase{n: 4, degrees: "auto", seed: 401, nfeat: 200000, density: "0.01", widths: "1", extra: []string{"--reps", "1", "--quick"}},
		sparseCase{n: 8, degrees: "2x2x2", seed: 801, nfeat: 40, density: "0.5", widths: "1,2", extra: []string{"--quick"}},
		sparseCase{n: 3, degrees: "direct", seed: 301, nfeat: 1, density: "1", widths: "4"},
		// options that change the code path: compression on, one thread, tiny min_packet (deep
		// auto butterflies)
		sparseCase{n: 4, degrees: "2x2", seed: 402, nfeat: 50000, density: "0.02", widths: "1,3", extra: []string{"--quick"},
			env: []string{"KYLIX_COMPRESS=lz4"}},
		sparseCase{n: 6, degrees: "auto", seed: 602, nfeat: 5000, density: "0.05", widths: "2", extra: []string{"--quick"},
			env: []string{"KYLIX_THREADS=1"}},
		// large messages (about 20000 indices per rank, width 3), and 60 live plans
		sparseCase{n: 4, degrees: "auto", seed: 403, nfeat: 1000000, density: "0.02", widths: "3", extra: []string{"--quick", "--reps", "1"}},
		sparseCase{n: 5, degrees: "auto", seed: 503, nfeat: 2000, density: "0.02", widths: "1", extra: []string{"--quick", "--reps", "1", "--many-plans", "60"}},
		sparseCase{n: 8, degrees: "auto", seed: 802, nfeat: 20000, density: "0.05", widths: "1", extra: []string{"--quick", "--reps", "1"},
			env: []string{"KYLIX_MIN_PACKET=64"}},
	)
	return cs
}

func TestSparse(t *testing.T) {
	for _, c := range sparseMatrix() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			r := run(t, c.job())
			r.expectClean(t, allRanks(c.n)...)
			secs := []string{"plans:", "empty:", "config_reduce:", "determinism:"}
			if strings.Contains(strings.Join(c.extra, " "), "--many-plans") {
				secs = append(secs, "many:")
			}
			for _, sec := range secs {
				for rk := 0; rk < c.n; rk++ {
					if !r.has(rk, "PASS", sec) {
						t.Errorf("rank %d did not pass section %s", rk, sec)
					}
				}
			}
			checkDigestsAgree(t, r, c.n)
		})
	}
}

// digests returns rank -> name -> digest.
func digests(r *result, n int) map[int]map[string]string {
	d := map[int]map[string]string{}
	for rk := 0; rk < n; rk++ {
		d[rk] = map[string]string{}
		for _, s := range r.find(rk, "DIGEST") {
			f := strings.Fields(s)
			if len(f) == 2 {
				d[rk][f[0]] = f[1]
			}
		}
	}
	return d
}

// checkDigestsAgree: every rank printed the same digests (same bits for the same indices).
func checkDigestsAgree(t *testing.T, r *result, n int) {
	t.Helper()
	d := digests(r, n)
	if len(d[0]) == 0 {
		t.Errorf("rank 0 printed no digests\n%s", r.dump())
		return
	}
	for rk := 1; rk < n; rk++ {
		for k, v := range d[0] {
			if d[rk][k] != v {
				t.Errorf("digest %s: rank 0 %s, rank %d %s", k, v, rk, d[rk][k])
			}
		}
	}
}

// The same inputs on the same ranks and degrees give bitwise-same results run after run
// (inexact float sums included): run the same job twice and compare the digests.
func TestSparseDeterminism(t *testing.T) {
	cases := []sparseCase{
		{n: 6, degrees: "3x2", seed: 606, nfeat: 2000, density: "0.05", widths: "1", extra: []string{"--reps", "1", "--quick"}},
		{n: 8, degrees: "auto", seed: 808, nfeat: 2000, density: "0.05", widths: "1", extra: []string{"--reps", "1", "--quick"}},
		{n: 5, degrees: "direct", seed: 505, nfeat: 2000, density: "0.05", widths: "1", extra: []string{"--reps", "1", "--quick"}},
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			var first map[int]map[string]string
			for i := 0; i < 2; i++ {
				r := run(t, c.job())
				r.expectClean(t, allRanks(c.n)...)
				d := digests(r, c.n)
				if len(d[0]) == 0 {
					t.Fatalf("no digests\n%s", r.dump())
				}
				if i == 0 {
					first = d
					continue
				}
				var keys []string
				for k := range first[0] {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					for rk := 0; rk < c.n; rk++ {
						if first[rk][k] != d[rk][k] {
							t.Errorf("rank %d digest %s: run 1 %s, run 2 %s", rk, k, first[rk][k], d[rk][k])
						}
					}
				}
			}
		})
	}
}
