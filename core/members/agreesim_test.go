package members

import (
	"flag"
	"fmt"
	"kylix/core/kx"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The membership agreement, simulated: every live member of a comm runs the real Resize
// (resize.go, shrink.go) over the simulated network (simnet_test.go) and join side
// (simjoin_test.go), while one seed's schedule kills members at their i-th send or at a time,
// stops them (shorter and longer than liveness_ms and timeout_ms), splits the network, holds
// frames up (which reorders them across links), starts members late, has members come to stale
// verdicts (a live, connected peer taken for failed: a wait that timed out while its process
// was stopped, or while the peer was still in another attempt), and brings joiners at various
// points (some of them die or stall). Each run is then checked:
//
//   - every participant that returns a comm (members and joiners) has the same members and the
//     same new sequence space (the comm's base, or the fresh mesh's job);
//   - the same for the participants that get "unchanged" (min_size not met), and never both;
//   - when the network is split, the members that go on are all on one side;
//   - every failure has a documented status (PEER or TIMEOUT), and a resize that cannot reach
//     min_size fails on every member, which a run without faults shows as "unchanged" on all;
//   - a run without faults and with min_size met succeeds on every member;
//   - in a run whose only faults are stale verdicts, no member that came to none is left out
//     while those members hold a quorum: a stale verdict costs at most the rank that came to
//     it, never a live peer that takes part (and with it the majority);
//   - no member (and no admitted joiner) is still running past the bound (simulated time).
//
// go test runs a bounded number of schedules; -sim.schedules=N runs N (tests/bench/
// run_agreement_sim.sh runs 10^5) and -sim.seed=S replays one with its trace.

var (
	simSchedules = flag.Int("sim.schedules", 0, "agreement simulation: schedules to run (0: the bounded set of go test)")
	simFirst     = flag.Uint64("sim.first", 1, "agreement simulation: the first schedule's seed")
	simSeed      = flag.Uint64("sim.seed", 0, "agreement simulation: replay this seed and print its trace")
)

const simRevokeSeq = 7 // the old comm's collective the resize revokes

type simConfig struct {
	n, s     int
	elastic  bool
	minSize  int
	joiners  int
	timeout  time.Duration
	liveness time.Duration
	pDelay   float64 // chance that a frame is held up
}

type simOutcome struct {
	who     string
	oldRank int // -1 for a joiner
	state   string
	code    kx.Code
	err     string
	members string // the new comm's ranks, each as its old rank (-1: joiner)
	prev    []int
	space   string // the new comm's sequence space
	rank    int
	end     time.Duration
}

// simRun is one schedule: its configuration, the faults it injected, what every participant
// came to, and what the checks found.
type simRun struct {
	seed     uint64
	cfg      simConfig
	faults   map[string]int
	outcomes []*simOutcome
	problems []string
	hangs    int
	bound    time.Duration
	log      []string
	reorders int
	crash    string
	// staleChecked: checkStaleVerdicts applied (stale verdicts its only faults, a quorum of
	// the members came to none)
	staleChecked bool
}

func (r *simRun) problem(kind, format string, args ...any) {
	r.problems = append(r.problems, kind+": "+fmt.Sprintf(format, args...))
}

// runSchedule builds seed's schedule and runs it to the end.
func runSchedule(seed uint64, trace bool) *simRun {
	s := newSim(seed)
	rng := s.rng
	pick := func(xs ...time.Duration) time.Duration { return xs[rng.IntN(len(xs))] }
	uniform := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	cfg := simConfig{n: 2 + rng.IntN(7), s: 1, elastic: rng.IntN(4) != 0,
		timeout:  pick(time.Second, 3*time.Second, 10*time.Second, 60*time.Second),
		liveness: pick(100*time.Millisecond, 500*time.Millisecond, 2*time.Second, 5*time.Second)}
	if cfg.n%2 == 0 && rng.IntN(3) == 0 {
		cfg.s = 2
	}
	if rng.IntN(2) == 0 {
		cfg.pDelay = []float64{0.02, 0.1, 0.3}[rng.IntN(3)]
	}
	if cfg.elastic {
		cfg.joiners = rng.IntN(5)
	}
	switch rng.IntN(6) {
	case 0:
		cfg.minSize = cfg.n + cfg.joiners + 1 // cannot be met
	case 1:
		cfg.minSize = cfg.n + rng.IntN(cfg.joiners+1)
	default:
		cfg.minSize = rng.IntN(cfg.n + 1)
	}
	run := &simRun{seed: seed, cfg: cfg, faults: map[string]int{}}
	T, L := cfg.timeout, cfg.liveness
	maxDelay := min(L, T) * 8 / 10
	w := newSimWorld(run, s, func() time.Duration {
		if cfg.pDelay > 0 && rng.Float64() < cfg.pDelay {
			run.faults["frame held up"]++
			return uniform(0, maxDelay)
		}
		return uniform(20*time.Microsecond, 500*time.Microsecond)
	})
	nt, j, killMember := w.nt, w.j, w.killMember
	// stop pauses member r's process for d: peers that hear nothing from it for liveness_ms
	// drop it.
	stop := func(r int, d time.Duration) {
		p := nt.eps[r].proc
		s.note("stop rank %d for %v", r, d)
		until := s.now + d
		for q := range nt.eps {
			if q == r {
				continue
			}
			at := s.now + L + uniform(0, L/5)
			if at < until {
				s.at(at, func() {
					if p.paused >= s.now && !p.done {
						nt.cut(r, q)
					}
				})
			}
		}
		p.pause(d)
	}
	stopFor := func() time.Duration {
		switch rng.IntN(3) {
		case 0:
			return uniform(time.Millisecond, L/2)
		case 1:
			return L + uniform(L/5, T)
		}
		return T + uniform(0, T)
	}

	// The faults.
	type sendFault struct {
		rank, at int
		stop     time.Duration // 0: a death
	}
	var atSend []sendFault
	// A stale verdict: at its at-th receive of the agreement, rank's wait for a live peer
	// ends in a timeout the network did not cause, at once or after a stop shorter than half
	// of liveness_ms and timeout_ms (its deadline ran out while it was stopped; nobody cuts
	// its links or times out on it: only the verdict is wrong).
	type recvFault struct {
		rank, at int
		stop     time.Duration
	}
	var atRecv []recvFault
	var side []bool // a split: side[r] is which side rank r is on
	nFaults := []int{0, 0, 1, 1, 1, 2, 2, 3}[rng.IntN(8)]
	// Stale verdicts come from a generator of their own, so that the schedules without them
	// (and the seeds of TestAgreementSimFoundBugs) stay as they were. Half the runs that have
	// them have no other fault, for checkStaleVerdicts.
	vr := rand.New(rand.NewPCG(seed, 0x57a1e))
	if vr.IntN(6) == 0 {
		if vr.IntN(2) == 0 {
			nFaults, cfg.pDelay = 0, 0
			run.cfg = cfg
		}
		for range 1 + vr.IntN(2) {
			run.faults["stale verdict"]++
			f := recvFault{rank: vr.IntN(cfg.n), at: 1 + vr.IntN(2*cfg.n)} // in the first rounds
			if vr.IntN(2) == 0 {
				f.stop = time.Millisecond + time.Duration(vr.Int64N(int64(min(L, T)/2)))
			}
			atRecv = append(atRecv, f)
		}
	}
	starts := make([]time.Duration, cfg.n)
	for r := range starts {
		starts[r] = uniform(0, 5*time.Millisecond)
	}
	for range nFaults {
		switch k := rng.IntN(10); {
		case k < 3:
			run.faults["death at a send"]++
			atSend = append(atSend, sendFault{rank: rng.IntN(cfg.n), at: rng.IntN(3*cfg.n + 2)})
		case k < 5:
			run.faults["death at a time"]++
			r, at := rng.IntN(cfg.n), uniform(0, 2*T)
			s.at(at, func() { killMember(r, "at a time") })
		case k < 7:
			run.faults["stop at a send"]++
			atSend = append(atSend, sendFault{rank: rng.IntN(cfg.n), at: rng.IntN(3*cfg.n + 2), stop: stopFor()})
		case k < 8:
			run.faults["late start"]++
			starts[rng.IntN(cfg.n)] = uniform(T/5, 3*T/2)
		case k < 9 && side == nil && cfg.n >= 2:
			run.faults["network split"]++
			side = make([]bool, cfg.n)
			for r := range side {
				side[r] = rng.IntN(2) == 0
			}
			if !slices.Contains(side, !side[0]) {
				side[rng.IntN(cfg.n-1)+1] = !side[0] // a split has two sides
			}
			at := uniform(0, T)
			sides := slices.Clone(side)
			s.at(at, func() {
				s.note("split the network: %v", sides)
				for a := range sides {
					for b := a + 1; b < len(sides); b++ {
						if sides[a] != sides[b] {
							nt.silence(a, b)
						}
					}
				}
			})
		default:
			if cfg.joiners > 0 {
				run.faults["joiner death or stop"]++ // applied to a joiner below
			} else {
				run.faults["death at a time"]++
				r, at := rng.IntN(cfg.n), uniform(0, 2*T)
				s.at(at, func() { killMember(r, "at a time") })
			}
		}
	}
	nt.beforeSend = func(ep *simEP, to int, tag kx.Tag) {
		if trace {
			s.note("rank %d sends seq %#x to rank %d", ep.rank, tag.Seq, to)
		}
		for i, f := range atSend {
			if f.rank == ep.rank && f.at == ep.sends {
				atSend[i].rank = -1
				if f.stop > 0 {
					stop(ep.rank, f.stop)
				} else {
					killMember(ep.rank, fmt.Sprintf("before its send #%d, to rank %d", f.at, to))
					panic(simKilled{})
				}
			}
		}
	}

	accusers := newBitset(cfg.n) // the ranks that came to a stale verdict
	nt.beforeRecv = func(ep *simEP, from int, tag kx.Tag) error {
		for i, f := range atRecv {
			if f.rank != ep.rank || f.at != ep.recvs || tag.Seq&(1<<attemptShift-1) >= decisionRound {
				continue
			}
			atRecv[i].rank = -1
			if f.stop > 0 {
				s.note("stop rank %d for %v", ep.rank, f.stop)
				ep.proc.pause(f.stop)
			}
			s.note("rank %d takes live rank %d for failed (a stale verdict)", ep.rank, from)
			accusers.add(ep.rank)
			return kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v (a stale verdict)", kx.RankRef(from), T)
		}
		return nil
	}

	w.startMembers(starts)

	// The joiners: arriving before the resize, during the agreement, or late.
	for range cfg.joiners {
		w.addJoiner(pick(0, uniform(0, T/2), uniform(0, 2*T)))
	}
	for range run.faults["joiner death or stop"] {
		jn := w.jns[rng.IntN(len(w.jns))]
		at := uniform(0, 2*T)
		if rng.IntN(2) == 0 {
			s.at(at, func() {
				if !jn.proc.done && !jn.proc.killed {
					s.note("kill joiner %s", jn.addr)
					jn.proc.kill()
					j.kill(jn.addr)
				}
			})
		} else {
			d := stopFor()
			s.at(at, func() {
				s.note("stop joiner %s for %v", jn.addr, d)
				jn.proc.paused = max(jn.proc.paused, s.now+d)
			})
		}
	}

	w.finish()
	check(run, side)
	checkStaleVerdicts(run, accusers)
	return run
}

// checkStaleVerdicts: in a run whose only faults are stale verdicts, the members that came to
// none are alive, connected and take part; when they hold a quorum, none of them may be left
// out (PEER: taken for failed, or no quorum left). A TIMEOUT is allowed: a verdict that came
// after the decision (confirm) makes its rank leave, and the leader's admit then fails the
// attempt on every member, which leaves the comm to be resized again (resize.go).
func checkStaleVerdicts(run *simRun, accusers bitset) {
	for k := range run.faults {
		if k != "stale verdict" && k != "frame reordered" { // reordered: latencies of 20-500µs
			return
		}
	}
	if run.faults["stale verdict"] == 0 || quorum(accusers, run.cfg.n) != nil || run.crash != "" {
		return
	}
	run.staleChecked = true
	for _, o := range run.outcomes {
		if o.oldRank >= 0 && !accusers.has(o.oldRank) && o.state == "error" && o.code == kx.CodePeer {
			run.problem("stale verdict", "%s, which took no peer for failed, was left out: %s %v (%s)", o.who, o.state, o.code, o.err)
		}
	}
}

// check applies the run's checks (see the file comment).
func check(run *simRun, side []bool) {
	cfg := run.cfg
	if run.crash != "" {
		run.problem("crash", "%s", run.crash)
		return
	}
	groups := map[string][]string{} // state -> distinct (members, space)
	ranks := map[int]string{}
	// Members untouched: no member died, stopped, started late, was split off or had a frame
	// held up (joiners may have died or stalled).
	quiet := run.faults["death at a send"]+run.faults["death at a time"]+run.faults["stop at a send"]+
		run.faults["late start"]+run.faults["network split"]+run.faults["frame held up"]+run.faults["stale verdict"] == 0
	for _, o := range run.outcomes {
		if o.state == "hung" || (o.state != "waiting" && o.end > run.bound) {
			run.hangs++
			run.problem("hang", "%s is still running at %v, past its bound %v", o.who, min(o.end, 3*run.bound), run.bound)
		}
		switch o.state {
		case "ok", "unchanged":
			key := o.members + " in " + o.space
			if !slices.Contains(groups[o.state], key) {
				groups[o.state] = append(groups[o.state], key)
			}
			if o.state == "ok" {
				if w, dup := ranks[o.rank]; dup {
					run.problem("disagreement", "%s and %s both became rank %d", w, o.who, o.rank)
				}
				ranks[o.rank] = o.who
			}
			if o.state == "unchanged" && o.code != kx.CodeTimeout {
				run.problem("status", "%s is unchanged with status %v", o.who, o.code)
			}
		case "error":
			if o.code != kx.CodePeer && o.code != kx.CodeTimeout {
				run.problem("status", "%s failed with status %v, not PEER or TIMEOUT: %s", o.who, o.code, o.err)
			}
		}
	}
	for _, st := range []string{"ok", "unchanged"} {
		if len(groups[st]) > 1 {
			run.problem("disagreement", "participants that returned %s hold different comms: %s", st, strings.Join(groups[st], " | "))
		}
	}
	// A side that found nobody failed resizes to the comm it had, at the numbers "unchanged"
	// gives: the same comm either way. Any other mix is two memberships.
	if len(groups["ok"]) > 0 && len(groups["unchanged"]) > 0 && groups["ok"][0] != groups["unchanged"][0] {
		run.problem("disagreement", "some participants resized (%s) and others kept the comm unchanged (%s)", groups["ok"][0], groups["unchanged"][0])
	}
	// Members on both sides of a split that went on must have done so together (agreed before
	// the split): two sides going on each with a comm of its own is two memberships.
	if side != nil {
		seen := map[bool]string{}
		for _, o := range run.outcomes {
			if o.state == "ok" && o.oldRank >= 0 {
				seen[side[o.oldRank]] = o.members + " in " + o.space
			}
		}
		if len(seen) == 2 && seen[true] != seen[false] {
			run.problem("split", "both sides of the split %v went on: %s | %s", side, seen[false], seen[true])
		}
	}
	possible := cfg.n
	if cfg.elastic {
		possible += cfg.joiners
	}
	mustFail := cfg.minSize > possible
	for _, o := range run.outcomes {
		if o.oldRank < 0 {
			continue
		}
		switch {
		case mustFail && o.state == "ok":
			run.problem("must fail", "%s resized with min_size=%d, above the %d ranks there can be", o.who, cfg.minSize, possible)
		case mustFail && quiet && o.state != "unchanged":
			run.problem("must fail", "%s: %s %v (%s) where the comm should be unchanged with TIMEOUT", o.who, o.state, o.code, o.err)
		case !mustFail && quiet && cfg.minSize <= cfg.n && o.state != "ok":
			run.problem("liveness", "%s: %s %v (%s) in a run without faults", o.who, o.state, o.code, o.err)
		}
	}
}

// report is a failed schedule's account: the seed that replays it and what it did.
func (r *simRun) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (replay: go test ./core/members -run TestAgreementSimReplay -sim.seed=%d -v)\n", r.seed, r.seed)
	fmt.Fprintf(&b, "config %+v\n", r.cfg)
	for _, p := range r.problems {
		fmt.Fprintf(&b, "  %s\n", p)
	}
	b.WriteString("schedule:\n")
	for _, l := range r.log {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// simTally sums many runs.
type simTally struct {
	schedules, disagreements, hangs, otherProblems int
	staleChecked                                   int // runs checkStaleVerdicts applied to
	faults                                         map[string]int
	outcomes                                       map[string]int
	failed                                         []*simRun
	worst                                          float64 // the longest member's time, in bounds
}

func (t *simTally) add(r *simRun) {
	t.schedules++
	if r.staleChecked {
		t.staleChecked++
	}
	for k, v := range r.faults {
		t.faults[k] += v
	}
	for _, o := range r.outcomes {
		key := o.state
		if o.state == "error" {
			key += " " + o.code.String()
		}
		if o.oldRank < 0 {
			key = "joiner " + key
		}
		t.outcomes[key]++
		if o.state != "hung" && o.state != "waiting" {
			t.worst = max(t.worst, float64(o.end)/float64(r.bound))
		}
	}
	dis := false
	for _, p := range r.problems {
		switch {
		case strings.HasPrefix(p, "disagreement"), strings.HasPrefix(p, "split"):
			dis = true
		case strings.HasPrefix(p, "hang"):
		default:
			t.otherProblems++
		}
	}
	if dis {
		t.disagreements++
	}
	if r.hangs > 0 {
		t.hangs++
	}
	if len(r.problems) > 0 && len(t.failed) < 5 {
		t.failed = append(t.failed, r)
	}
}

func (t *simTally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedules %d, disagreements %d, hangs %d, other failed checks %d\n", t.schedules, t.disagreements, t.hangs, t.otherProblems)
	line := func(title string, m map[string]int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s:", title)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s %d;", k, m[k])
		}
		b.WriteString("\n")
	}
	line("faults injected", t.faults)
	fmt.Fprintf(&b, "runs with stale verdicts only, a quorum of members with none (checked that none of those is left out): %d\n", t.staleChecked)
	line("outcomes", t.outcomes)
	fmt.Fprintf(&b, "longest resize: %.2f of its bound\n", t.worst)
	return b.String()
}

func runSchedules(t *testing.T, first uint64, n int) *simTally {
	tally := &simTally{faults: map[string]int{}, outcomes: map[string]int{}}
	for seed := first; seed < first+uint64(n); seed++ {
		tally.add(runSchedule(seed, false))
	}
	return tally
}

// TestAgreementSim runs the bounded set of schedules (or -sim.schedules of them).
func TestAgreementSim(t *testing.T) {
	n := *simSchedules
	if n == 0 {
		n = 3000
		if testing.Short() {
			n = 500
		}
	}
	tally := runSchedules(t, *simFirst, n)
	t.Logf("agreement simulation, seeds %d..%d:\n%s", *simFirst, *simFirst+uint64(n)-1, tally)
	for _, r := range tally.failed {
		t.Errorf("%s", r.report())
	}
}

// TestAgreementSimReplay replays one seed (-sim.seed, or a fixed one) with its trace, and shows
// that a seed replays exactly: the same schedule and the same outcomes twice.
func TestAgreementSimReplay(t *testing.T) {
	seed := *simSeed
	if seed == 0 {
		seed = 12345
	}
	a, b := runSchedule(seed, true), runSchedule(seed, true)
	if strings.Join(a.log, "\n") != strings.Join(b.log, "\n") {
		t.Fatalf("seed %d did not replay the same schedule:\n%s\n---\n%s", seed, strings.Join(a.log, "\n"), strings.Join(b.log, "\n"))
	}
	t.Logf("%s", a.report())
	if len(a.problems) > 0 {
		t.Errorf("seed %d failed its checks", seed)
	}
}

// Schedules that found faults of the agreement, each replayed: on the code before the fixes,
// each of them fails its checks.
func TestAgreementSimFoundBugs(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		what string
	}{
		{1258, "a rank stopped past liveness_ms decided on the sets that waited for it, alone with all 5 ranks"},
		{1814, "a rank stopped past the timeout (liveness_ms above it) decided on stale sets; two comms of 7 and 8"},
		{16764, "min_size not met, a joiner stopped at the deadline: the leader's decision came after the others' timeout"},
		{34507, "a split just after a decided message: a rank of the smaller side adopted it and went on"},
		{41128, "a split of 2 ranks during the last round: both went on, each with its own comm"},
		{698, "a stale verdict of rank 1 on live rank 0: ranks 0 and 2 (the live majority) left out"},
		{2052, "a stale verdict of rank 2 on live rank 1 (after a stop): rank 1 left out"},
	} {
		if r := runSchedule(c.seed, false); len(r.problems) > 0 {
			t.Errorf("%s\n%s", c.what, r.report())
		}
	}
}
