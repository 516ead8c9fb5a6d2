package tests

import (
	"fmt"
	"kylix/internal/freeport"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bad arguments: KYLIX_ERR_ARG with a message naming the argument; the comm keeps working.
func TestBadArgs(t *testing.T) {
	for _, c := range []struct {
		n       int
		degrees string
	}{{1, ""}, {2, ""}, {3, "direct"}, {4, "2x2"}} {
		t.Run(fmt.Sprintf("n%d_%s", c.n, degName(c.degrees)), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "badargs"})
			r.expectClean(t, allRanks(c.n)...)
		})
	}
}

var mismatchScenarios = []string{"barrier_vs_reduce", "width", "op", "dtype", "plan", "bcast_vs_allreduce",
	"bcast_root", "bcast_bytes", "allreduce_count", "allreduce_dtype", "config_vs_reduce", "badarg",
	"barrier_vs_bcast"}

// Disagreeing ranks: KYLIX_ERR_MISMATCH on every rank in well under timeout_ms, then the comm
// works again. Each scenario alone on 4 ranks (odd rank 1), and all in a row on other shapes.
func TestMismatch(t *testing.T) {
	type mcase struct {
		n        int
		degrees  string
		scenario string
		odd      int
	}
	var cs []mcase
	for _, s := range mismatchScenarios {
		cs = append(cs, mcase{4, "2x2", s, 1})
	}
	// the odd rank is the root the others expect: nobody sends unless the root is checked
	cs = append(cs, mcase{3, "direct", "bcast_root", 0})
	cs = append(cs, mcase{2, "", "all", 1}, mcase{3, "direct", "all", 0}, mcase{5, "", "all", 4},
		mcase{8, "2x2x2", "all", 6}, mcase{1, "", "all", 0})
	for _, c := range cs {
		t.Run(fmt.Sprintf("n%d_%s_%s_odd%d", c.n, degName(c.degrees), c.scenario, c.odd), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, Degrees: c.degrees, Prog: "mismatch", Args: []string{c.scenario, fmt.Sprint(c.odd)}})
			r.expectClean(t, allRanks(c.n)...)
		})
	}
}

// A rank dies (or goes silent) before the 3rd reduce: the others fail with PEER/TIMEOUT within
// timeout_ms, name it, and later calls fail with STATE; the launcher (--keep-going) ends.
func TestKill(t *testing.T) {
	type kcase struct {
		n         int
		degrees   string
		mode      string
		victim    int
		timeoutMS int
		wantCode  int    // launcher's exit code; -1: any non-zero
		call      string // the collective the victim misses; "" is reduce
	}
	cs := []kcase{
		{4, "", "sigkill", 3, 4000, 128 + 9, ""},
		{4, "2x2", "sigkill", 0, 4000, 128 + 9, ""},
		{4, "direct", "abort", 3, 4000, -1, ""},
		{3, "", "exit", 2, 4000, 3, ""},
		{6, "3x2", "sigkill", 4, 4000, 128 + 9, ""},
		{3, "", "hang", 2, 3000, 0, ""},
		{4, "2x2", "hang", 1, 3000, 0, ""},
		{3, "direct", "hang", 0, 0, 0, ""}, // timeout from kylixrun --timeout 2.5
		// the other collectives, with a dead and with a silent peer
		{4, "", "sigkill", 2, 4000, 128 + 9, "config"},
		{4, "2x2", "sigkill", 1, 4000, 128 + 9, "config_reduce"},
		{5, "", "sigkill", 3, 4000, 128 + 9, "allreduce"},
		{4, "", "sigkill", 3, 4000, 128 + 9, "bcast"},
		{3, "", "sigkill", 1, 4000, 128 + 9, "barrier"},
		{4, "", "hang", 2, 2000, 0, "config"},
		{4, "", "hang", 3, 2000, 0, "allreduce"},
		{4, "", "hang", 0, 2000, 0, "bcast"},
	}
	for _, c := range cs {
		if c.call == "" {
			c.call = "reduce"
		}
		t.Run(fmt.Sprintf("n%d_%s_%s_victim%d_%s", c.n, degName(c.degrees), c.mode, c.victim, c.call), func(t *testing.T) {
			t.Parallel()
			j := job{N: c.n, Degrees: c.degrees, KeepGoing: true, Prog: "kill",
				Args: []string{c.mode, fmt.Sprint(c.victim), fmt.Sprint(c.timeoutMS), c.call}}
			if c.timeoutMS == 0 {
				j.TimeoutS = 2.5
			}
			r := run(t, j)
			var survivors []int
			for rk := 0; rk < c.n; rk++ {
				if rk != c.victim {
					survivors = append(survivors, rk)
				}
			}
			var problems []string
			switch {
			case r.Code == -1:
				problems = append(problems, "the launcher did not end by itself")
			case c.wantCode == -1 && r.Code == 0:
				problems = append(problems, "launcher exit code 0, want the dead rank's non-zero code")
			case c.wantCode >= 0 && r.Code != c.wantCode:
				problems = append(problems, fmt.Sprintf("launcher exit code %d, want %d", r.Code, c.wantCode))
			}
			problems = append(problems, r.failures()...)
			named, listed := 0, 0
			for _, rk := range survivors {
				if !r.has(rk, "DONE", "fails=0") {
					problems = append(problems, fmt.Sprintf("survivor %d did not print DONE fails=0", rk))
				}
				if !r.has(rk, "PASS", "kill "+c.mode+" "+c.call) {
					problems = append(problems, fmt.Sprintf("survivor %d did not pass", rk))
				}
				if r.has(rk, "INFO", "names-victim=yes") {
					named++
				}
				if r.has(rk, "INFO", fmt.Sprintf("failed_ranks: n=1 [%d]", c.victim)) {
					listed++
				}
			}
			if named == 0 {
				problems = append(problems, fmt.Sprintf("no survivor's errmsg names rank %d", c.victim))
			}
			for _, rk := range survivors {
				if !r.blameLeadsTo(rk, c.victim) {
					problems = append(problems, fmt.Sprintf("survivor %d's errmsg names neither rank %d nor a survivor whose errmsg leads to it", rk, c.victim))
				}
			}
			if listed == 0 && c.mode != "hang" { // a silent rank is alive: listing it is optional
				problems = append(problems, fmt.Sprintf("no survivor's kylix_failed_ranks lists rank %d", c.victim))
			}
			if c.mode == "hang" && !r.has(c.victim, "DONE", "fails=0") {
				problems = append(problems, "the silent rank did not finish cleanly")
			}
			if len(problems) > 0 {
				t.Errorf("%s\n%s", strings.Join(problems, "\n"), r.dump())
			}
		})
	}
}

// blameRE finds the rank a survivor's failed call names first, in kill.c's line
// "<call> returned <status> after <t> s: <errmsg>".
var blameRE = regexp.MustCompile(`^\S+ returned \S+ after [0-9.]+ s: .*?\brank (\d+)\b`)

// blameLeadsTo reports whether rank rk's failed call names victim, or a rank whose own failed
// call leads there. A survivor that waited for a live peer, which waited for a silent victim,
// can time out at the same moment as that peer and name it rather than the victim; the chain of
// names still ends at the victim (the launcher follows the same chain to name a job's cause).
func (r *result) blameLeadsTo(rk, victim int) bool {
	for seen := map[int]bool{}; !seen[rk]; {
		seen[rk] = true
		named := -1
		for _, t := range r.find(rk, "INFO") {
			if m := blameRE.FindStringSubmatch(t); m != nil {
				named, _ = strconv.Atoi(m[1])
				break
			}
		}
		if named == victim || named < 0 {
			return named == victim
		}
		rk = named
	}
	return false
}

// A rank killed in the middle of large dense allreduces (tests/c/killmid.c): between ranks of
// one host its peers may be reading its memory (a fold), writing their result back into it or
// waiting for it to copy theirs. Each survivor's call fails with PEER (or TIMEOUT) in bounded
// time, the results before were right, and at least one survivor's message names the victim.
func TestKillMidAllreduce(t *testing.T) {
	for _, c := range []struct{ n, victim, afterMS int }{{2, 1, 300}, {2, 0, 450}, {4, 2, 400}} {
		t.Run(fmt.Sprintf("n%d_victim%d", c.n, c.victim), func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: c.n, KeepGoing: true, Prog: "killmid",
				Args: []string{fmt.Sprint(c.victim), fmt.Sprint(c.afterMS), fmt.Sprint(4 << 20), "4000"}})
			var problems []string
			if r.Code != 128+9 {
				problems = append(problems, fmt.Sprintf("launcher exit code %d, want %d", r.Code, 128+9))
			}
			problems = append(problems, r.failures()...)
			named := 0
			for rk := 0; rk < c.n; rk++ {
				if rk == c.victim {
					continue
				}
				if !r.has(rk, "PASS", "killmid allreduce") {
					problems = append(problems, fmt.Sprintf("survivor %d did not pass", rk))
				}
				if r.has(rk, "INFO", "names-victim=yes") {
					named++
				}
			}
			if named == 0 {
				problems = append(problems, fmt.Sprintf("no survivor's errmsg names rank %d", c.victim))
			}
			if len(problems) > 0 {
				t.Errorf("%s\n%s", strings.Join(problems, "\n"), r.dump())
			}
		})
	}
}

// sleeperS is how long kill.c's exitearly ranks sleep outside the library before they say the
// launcher did not stop them.
const sleeperS = 60

// Without --keep-going the launcher stops every rank when one exits non-zero, and exits with
// that rank's code. The other ranks sleep 60 s outside the library.
func TestLauncherStopsOthers(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 3, Prog: "kill", Args: []string{"exitearly", "2"}})
	if r.Code != 7 {
		t.Errorf("launcher exit code %d, want 7 (the failing rank's)\n%s", r.Code, r.dump())
	}
	// The sleepers print a FAIL line if they wake (checked below): ending before their 60 s is
	// the launcher stopping them, not them finishing. (The job-timeout is 120 s.)
	if r.Elapsed >= sleeperS*time.Second {
		t.Errorf("the job took %v: the launcher did not stop the sleeping ranks before they woke\n%s", r.Elapsed, r.dump())
	}
	if f := r.failures(); len(f) > 0 {
		t.Errorf("%s\n%s", strings.Join(f, "\n"), r.dump())
	}
}

// --job-timeout ends a job whose ranks never finish: exit 124, promptly. Nobody exits early here
// (victim -1), so every rank sleeps 60 s outside the library.
func TestLauncherJobTimeout(t *testing.T) {
	t.Parallel()
	r := run(t, job{N: 3, Prog: "kill", Args: []string{"exitearly", "-1"}, JobLimitS: 3})
	if r.Code != 124 {
		t.Errorf("launcher exit code %d, want 124 (--job-timeout)\n%s", r.Code, r.dump())
	}
	// Exit 124 is the job-timeout ending the job; ending before the sleepers' 60 s is it
	// stopping them (10 job-timeouts are a fail-safe within that).
	if r.Elapsed > 10*3*time.Second {
		t.Errorf("the job took %v with --job-timeout 3\n%s", r.Elapsed, r.dump())
	}
	if f := r.failures(); len(f) > 0 {
		t.Errorf("%s\n%s", strings.Join(f, "\n"), r.dump())
	}
}

// A rank with the wrong secret gets KYLIX_ERR_AUTH; the others are refused too, and everyone
// returns within timeout_ms. Both through the launcher's rendezvous and with a static peers=
// table (then the ranks' own handshake must refuse it); odd -1 is the control where everyone
// has the right secret.
func TestAuth(t *testing.T) {
	type acase struct {
		n      int
		odd    int
		static bool
	}
	for _, c := range []acase{{2, 1, false}, {3, 1, false}, {4, 0, false}, {3, 1, true}, {4, 0, true}, {3, -1, true}} {
		t.Run(fmt.Sprintf("n%d_odd%d_static%v", c.n, c.odd, c.static), func(t *testing.T) {
			t.Parallel()
			args := []string{fmt.Sprint(c.odd), "3000"}
			if c.static {
				args = append(args, strings.Join(freeport.Loopback(t, c.n), ","))
			}
			r := run(t, job{N: c.n, KeepGoing: true, Prog: "auth", Args: args})
			r.expectClean(t, allRanks(c.n)...)
			if c.odd >= 0 && !r.has(c.odd, "PASS", "KYLIX_ERR_AUTH") {
				t.Errorf("rank %d (wrong secret) did not report KYLIX_ERR_AUTH\n%s", c.odd, r.dump())
			}
		})
	}
}
