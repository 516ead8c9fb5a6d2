package tests

import "testing"

// KYLIX_RSUM's promise across jobs: c/rsum.c deals one multiset among the job's ranks (by a
// hash of the job size, so every job splits and orders it differently) and prints digests of
// its results; jobs of 1, 2, 3 and 4 ranks, different degrees and a replicated job must print
// the same digests. Each job also checks its results against __float128 itself.
func TestRSumAcrossJobs(t *testing.T) {
	jobs := []job{
		{N: 4, Degrees: "direct", Prog: "rsum"},
		{N: 2, Degrees: "auto", Prog: "rsum"},
		{N: 4, Degrees: "2x2", Prog: "rsum", Env: []string{"KYLIX_THREADS=1"}},
		{N: 3, Degrees: "direct", Prog: "rsum"},
		{N: 1, Prog: "rsum"},
		{N: 4, Replicas: 2, Prog: "rsum"},
	}
	var first map[string]string
	for i, j := range jobs {
		r := run(t, j)
		r.expectClean(t, allRanks(j.N)...)
		checkDigestsAgree(t, r, j.N)
		d := digests(r, j.N)[0]
		if len(d) != 6 {
			t.Fatalf("%s: rank 0 printed %d digests, want 6\n%s", j, len(d), r.dump())
		}
		if i == 0 {
			first = d
			continue
		}
		for k, v := range first {
			if d[k] != v {
				t.Errorf("digest %s: %s gives %s, %s gives %s", k, jobs[0], v, j, d[k])
			}
		}
	}
}
