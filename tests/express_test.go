package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// kylix_allreduce's express path (capi/express.c): small allreduces between the ranks of one
// host run in C once the comm is in a run of them, and every other call takes the comm back
// into Go. tests/c/express.c draws a sequence of calls (small allreduces of every dtype, op but
// RSUM and count, in place or not, unaligned or not, signed zeros, infinities and NaNs among
// the floats where the op's result is promised for them, between a vector past the lanes, a
// count of 0, a non-blocking call, a barrier, a stats read), checks every result bit for bit
// against every rank's regenerated vector combined in rank order, and the bytes around it. Here: the stats count every
// allreduce once (Go's and C's), every lane message once, and the express path did run.
func TestExpressAllreduce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			t.Parallel()
			iters := 3000
			if n > 4 { // oversubscribed: waits yield, and each call costs more
				iters = 1200
			}
			r := run(t, job{N: n, Prog: "express", Args: []string{"check", fmt.Sprint(40 + n), fmt.Sprint(iters)}})
			r.expectClean(t, allRanks(n)...)
			for rk := 0; rk < n; rk++ {
				var allreduces, lanes uint64
				for _, l := range r.find(rk, "INFO") {
					fmt.Sscanf(l, "counts allreduces=%d lanes=%d", &allreduces, &lanes)
				}
				st := expressStats(t, r, rk)
				if st.Collectives.Allreduce.Calls != allreduces {
					t.Errorf("rank %d: stats count %d allreduces, the program made %d", rk, st.Collectives.Allreduce.Calls, allreduces)
				}
				if n == 1 {
					continue // no peer, no lanes
				}
				if st.Shm == nil {
					t.Fatalf("rank %d: no shm stats between ranks of one host", rk)
				}
				if want := lanes * uint64(n-1); st.Shm.LaneMsgs != want {
					t.Errorf("rank %d: %d lane messages read, want %d (%d lane allreduces)", rk, st.Shm.LaneMsgs, want, lanes)
				}
				// Most small Sums follow another and run in C (three quarters here, on a quiet
				// machine or beside a chaos run); a call whose peers are late goes to Go, which a
				// loaded machine makes more of: a tenth is the bound.
				if st.Shm.Express < lanes/10 || st.Shm.Express > lanes {
					t.Errorf("rank %d: %d allreduces ran in C, want between %d and %d", rk, st.Shm.Express, lanes/10, lanes)
				}
			}
		})
	}
}

// A peer that dies or stops in a run of express allreduces: the survivors' call fails as any
// call on a dead or silent peer does (PEER or TIMEOUT within timeout_ms + 3 s, the victim named),
// and so does the next one; and a call whose count differs on one rank fails with MISMATCH on
// every rank.
func TestExpressFaults(t *testing.T) {
	for _, c := range []struct {
		n, victim int
		mode      string
		wantCode  int
	}{{2, 1, "sigkill", 128 + 9}, {3, 0, "sigkill", 128 + 9}, {2, 0, "hang", 0}, {4, 2, "hang", 0}} {
		t.Run(fmt.Sprintf("n%d_%s_victim%d", c.n, c.mode, c.victim), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, KeepGoing: true, Prog: "express", Args: []string{c.mode, fmt.Sprint(c.victim), "2000"}})
			var problems []string
			if r.Code != c.wantCode {
				problems = append(problems, fmt.Sprintf("launcher exit code %d, want %d", r.Code, c.wantCode))
			}
			problems = append(problems, r.failures()...)
			named := 0
			for rk := 0; rk < c.n; rk++ {
				if rk == c.victim {
					continue
				}
				if !r.has(rk, "PASS", "express "+c.mode) {
					problems = append(problems, fmt.Sprintf("survivor %d did not pass", rk))
				}
				if r.has(rk, "INFO", "names-victim=yes") {
					named++
				}
			}
			if named == 0 {
				problems = append(problems, fmt.Sprintf("no survivor's errmsg names rank %d", c.victim))
			}
			if c.mode == "hang" && !r.has(c.victim, "DONE", "fails=0") {
				problems = append(problems, "the stopped rank did not finish cleanly")
			}
			if len(problems) > 0 {
				t.Errorf("%s\n%s", strings.Join(problems, "\n"), r.dump())
			}
		})
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("n%d_mismatch", n), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: n, Prog: "express", Args: []string{"mismatch"}})
			r.expectClean(t, allRanks(n)...)
		})
	}
}

type expressFigures struct {
	Collectives struct {
		Allreduce struct {
			Calls uint64 `json:"calls"`
		} `json:"allreduce"`
	} `json:"collectives"`
	Shm *struct {
		LaneMsgs uint64 `json:"lane_msgs"`
		Express  uint64 `json:"express_calls"`
	} `json:"shm"`
}

// expressStats reads the stats line express.c prints.
func expressStats(t *testing.T, r *result, rk int) expressFigures {
	t.Helper()
	for _, l := range r.find(rk, "INFO") {
		if js, ok := strings.CutPrefix(l, "stats "); ok {
			var st expressFigures
			if err := json.Unmarshal([]byte(js), &st); err != nil {
				t.Fatalf("rank %d: stats: %v: %.200s", rk, err, js)
			}
			return st
		}
	}
	t.Fatalf("rank %d printed no stats\n%s", rk, r.dump())
	return expressFigures{}
}
