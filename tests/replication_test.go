package tests

import (
	"fmt"
	"strings"
	"testing"
)

// Replication (include/kylix.h, replication; the Kylix paper §V): real processes over loopback
// TCP run tests/c/replicated.c, which checks every result of every iteration bit for bit
// against a brute-force sum over the node data, while replicas die (SIGKILL in the middle of a
// call), stop (SIGSTOP) or dawdle.

// survivors are the ranks of n not in dead.
func survivors(n int, dead ...int) []int {
	var out []int
next:
	for r := 0; r < n; r++ {
		for _, d := range dead {
			if r == d {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// expectIterations asserts that every rank in ranks passed iterations 0..iters-1.
func (r *result) expectIterations(t *testing.T, iters int, ranks ...int) {
	t.Helper()
	for _, rk := range ranks {
		for it := 0; it < iters; it++ {
			if !r.has(rk, "PASS", fmt.Sprintf("iteration %d", it)) {
				t.Errorf("rank %d did not pass iteration %d\n%s", rk, it, r.dump())
				return
			}
		}
	}
}

func TestReplicationSurvivesDeadReplicas(t *testing.T) {
	for _, c := range []struct {
		name    string
		n, s    int
		degrees string
		events  []string
		dead    []int
	}{
		{"no_failure", 8, 2, "", nil, nil},
		{"sigkill_mid_reduce", 8, 2, "", []string{"5:kill:reduce:1:300"}, []int{5}},
		{"three_nodes_config_reduce_dense", 8, 2, "", []string{"2:kill:config:1:100", "5:kill:reduce:2:300", "7:kill:dense:3:500"}, []int{2, 5, 7}},
		{"direct_cfgred", 8, 2, "direct", []string{"1:kill:cfgred:1:200"}, []int{1}},
		{"binary_ireduce", 8, 2, "binary", []string{"6:kill:ireduce:1:100"}, []int{6}},
		{"s3_on_6", 6, 3, "", []string{"0:kill:reduce:1:200", "5:kill:dense:2:300"}, []int{0, 5}},
		{"s2_prime_5_nodes", 10, 2, "", []string{"3:kill:config:1:100", "9:kill:reduce:2:200"}, []int{3, 9}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const iters = 5
			r := run(t, job{N: c.n, Replicas: c.s, Degrees: c.degrees, Prog: "replicated",
				Args: append([]string{fmt.Sprint(iters)}, c.events...)})
			live := survivors(c.n, c.dead...)
			r.expectClean(t, live...)
			r.expectIterations(t, iters, live...)
			for _, d := range c.dead {
				if !strings.Contains(r.Output, fmt.Sprintf("kylixrun: rank %d ", d)) || !strings.Contains(r.Output, "the job goes on") {
					t.Errorf("kylixrun did not report dead rank %d and go on\n%s", d, r.dump())
				}
			}
		})
	}
}

// Both replicas of a node killed: every survivor's call fails with KYLIX_ERR_PEER naming both,
// within liveness_ms + 1 s (the program checks), and the launcher reports the job failed.
func TestReplicationEveryReplicaOfANodeDead(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 8, Replicas: 2, Prog: "replicated", KeepGoing: true,
		Env:  []string{"EXPECT=peer", "DEAD=1,5", "KYLIX_LIVENESS_MS=2000"},
		Args: []string{"3", "1:kill:reduce:1:100", "5:kill:reduce:1:100"}})
	if r.Code == 0 {
		t.Errorf("kylixrun exited 0 though node 1 lost every replica\n%s", r.dump())
	}
	if f := r.failures(); len(f) > 0 {
		t.Errorf("%s\n%s", strings.Join(f, "\n"), r.dump())
	}
	for _, rk := range survivors(8, 1, 5) {
		if !r.has(rk, "PASS", "peer-error") {
			t.Errorf("rank %d did not get KYLIX_ERR_PEER naming ranks 1 and 5\n%s", rk, r.dump())
		}
	}
}

// Liveness: a stopped process is declared dead after liveness_ms though its connections stay
// open. A stopped replica is routed around; a stopped unreplicated rank fails the call with
// KYLIX_ERR_PEER within liveness_ms + 1 s. (The stopped rank, once resumed, finds itself
// dropped and exits cleanly: "declared-dead".)
func TestLivenessStoppedProcess(t *testing.T) {
	t.Run("replica", func(t *testing.T) {
		t.Parallel()
		r := run(t, job{N: 8, Replicas: 2, Prog: "replicated", Env: []string{"KYLIX_LIVENESS_MS=1000"},
			Args: []string{"5", "3:stop:1:3000"}})
		r.expectClean(t, allRanks(8)...)
		r.expectIterations(t, 5, survivors(8, 3)...)
		if !r.has(3, "INFO", "declared-dead") {
			t.Errorf("the stopped replica was not dropped\n%s", r.dump())
		}
	})
	t.Run("unreplicated", func(t *testing.T) {
		t.Parallel()
		r := run(t, job{N: 4, Prog: "replicated",
			Env:  []string{"KYLIX_LIVENESS_MS=1000", "EXPECT=peer", "DEAD=2"},
			Args: []string{"3", "2:stop:1:3000"}})
		r.expectClean(t, allRanks(4)...)
		for _, rk := range survivors(4, 2) {
			if !r.has(rk, "PASS", "peer-error") {
				t.Errorf("rank %d did not get KYLIX_ERR_PEER naming rank 2\n%s", rk, r.dump())
			}
		}
	})
}

// A live rank that computes for 12 s, more than twice the default liveness_ms, before its call
// is waited for, with heartbeats proving it alive, and everything succeeds. The others report
// the stall (log=warn, here every 4 s) naming it.
func TestLivenessLateRankIsWaitedFor(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 4, Prog: "replicated", Env: []string{"KYLIX_STALL_MS=4000"},
		Args: []string{"3", "2:sleep:1:12000"}})
	r.expectClean(t, allRanks(4)...)
	r.expectIterations(t, 3, allRanks(4)...)
	if !strings.Contains(r.Output, "not called yet by rank(s) 2") {
		t.Errorf("no stall report names rank 2\n%s", r.dump())
	}
}

// Replicas that were given different index lists (here the same in indices in another order)
// make config fail with KYLIX_ERR_MISMATCH on every rank, naming both replicas, instead of
// giving wrong sums with status OK; the comm stays usable.
func TestReplicasGivenDifferentIndices(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 4, Replicas: 2, Prog: "replica_mismatch"})
	r.expectClean(t, allRanks(4)...)
	for rk := 0; rk < 4; rk++ {
		if !r.has(rk, "PASS", "diverging replicas: KYLIX_ERR_MISMATCH") || !r.has(rk, "PASS", "agreeing replicas") {
			t.Errorf("rank %d did not pass\n%s", rk, r.dump())
		}
	}
}
