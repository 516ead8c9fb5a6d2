package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kylix_shrink from C under kylixrun --keep-going: ranks SIGKILL themselves, the survivors see
// the failure, list it with kylix_failed_ranks, shrink, and run every collective on the new comm
// (c/shrink.c checks the results against brute force); in some cases a second round of deaths
// and a second shrink of the shrunk comm. Victims are numbered as in the original comm.
func TestShrinkC(t *testing.T) {
	type scase struct {
		n       int
		degrees string
		victims []int // die before the first shrink
		second  []int // die after it (original numbering)
	}
	cs := []scase{
		{4, "", []int{3}, nil},
		{4, "2x2", []int{0}, nil}, // rank 0 dies: the survivors renumber from old rank 1
		{5, "direct", []int{1, 3}, nil},
		{8, "2x2x2", []int{0, 5}, nil}, // 6 left: the fixed degrees fall back to auto
		{6, "3x2", []int{2}, []int{0}},
		{3, "", nil, nil}, // nobody dies: a shrink keeps every rank
	}
	for _, c := range cs {
		t.Run(fmt.Sprintf("n%d_%s_kill%s_then%s", c.n, degName(c.degrees), shrinkList(c.victims), shrinkList(c.second)), func(t *testing.T) {
			t.Parallel()
			j := job{N: c.n, Degrees: c.degrees, KeepGoing: true, Prog: "shrink",
				Args: []string{shrinkList(c.victims), shrinkList(c.second), "4000"}}
			r := run(t, j)
			dead := append(slices.Clone(c.victims), c.second...)
			var problems []string
			wantCode := 0
			if len(dead) > 0 {
				wantCode = 128 + 9 // a SIGKILLed rank's code, reported by the launcher
			}
			if r.Code != wantCode {
				problems = append(problems, fmt.Sprintf("launcher exit code %d, want %d", r.Code, wantCode))
			}
			problems = append(problems, r.failures()...)
			for rk := 0; rk < c.n; rk++ {
				if slices.Contains(dead, rk) {
					continue
				}
				if !r.has(rk, "DONE", "fails=0") {
					problems = append(problems, fmt.Sprintf("survivor %d did not print DONE fails=0", rk))
				}
				if !r.has(rk, "PASS", "shrink:") {
					problems = append(problems, fmt.Sprintf("survivor %d did not pass", rk))
				}
				if !r.has(rk, "PASS", "after shrink 1") {
					problems = append(problems, fmt.Sprintf("survivor %d did not pass the collectives on the shrunk comm", rk))
				}
			}
			if len(problems) > 0 {
				t.Errorf("%s\n%s", strings.Join(problems, "\n"), r.dump())
			}
		})
	}
}

func shrinkList(rs []int) string {
	if len(rs) == 0 {
		return "-"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.Itoa(r)
	}
	return strings.Join(s, ",")
}

// A comm shrunk from a replicated one keeps every replication layer (members.View): with both
// replicas of one node killed and the comm shrunk to two nodes of two replicas, a replica stopped
// with SIGSTOP (and not declared dead: liveness is longer than the stop) holds up none of the
// others' reduces, whose messages are far larger than a socket's buffers, and racing copies show
// in the statistics. c/shrink_replicated.c checks results and that the replica was still stopped
// when the reduces ended.
func TestShrinkReplicatedKeepsRacing(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "stopped.pid")
	r := run(t, job{N: 6, Replicas: 2, KeepGoing: true, Prog: "shrink_replicated",
		Env: []string{"KYLIX_LIVENESS_MS=60000"}, Args: []string{pidfile}})
	if f := r.failures(); len(f) > 0 {
		t.Errorf("%s\n%s", strings.Join(f, "\n"), r.dump())
	}
	for _, rk := range []int{0, 1, 3} {
		for _, want := range []string{"reduces on the shrunk replicated comm", "while the replica was stopped", "race stats"} {
			if !r.has(rk, "PASS", want) {
				t.Errorf("rank %d did not pass %q\n%s", rk, want, r.dump())
			}
		}
	}
}
