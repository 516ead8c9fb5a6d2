package members

import (
	"fmt"
	"kylix/core/kx"
	"time"
)

// simWorld is one simulated job: the members of a comm about to resize (run.cfg: its size,
// replication, min_size, elasticity), the join side, and what each participant came to. The
// schedule adds its faults around it (agreesim_test.go); the numbering tests run it quiet.
type simWorld struct {
	s     *sim
	run   *simRun
	nt    *simNet
	j     *simJoin
	views []*View
	jns   []*simJoiner
	jouts []*joinerOutcome
}

func newSimWorld(run *simRun, s *sim, delay func() time.Duration) *simWorld {
	cfg := run.cfg
	if run.bound == 0 {
		// A member's resize: the agreement (at most one timeout per member, plus the rounds),
		// the leader's admit (its wait is below the timeout), the decision, and the mesh.
		run.bound = time.Duration(cfg.n+6)*cfg.timeout + 4*cfg.liveness
	}
	s.limit = 3 * run.bound
	w := &simWorld{s: s, run: run, nt: newSimNet(s, cfg.n, cfg.timeout, cfg.liveness)}
	w.nt.delay = delay
	w.j = newSimJoin(w.nt)
	for _, ep := range w.nt.eps {
		v, err := New(NewProc(simTransport{p: ep}), cfg.s)
		if err != nil {
			panic(err)
		}
		ep.Begin(simRevokeSeq, kx.Fingerprint{Kind: kx.KindReduce, Plan: 1})
		w.views = append(w.views, v)
	}
	return w
}

// killMember crashes member r now (its process, its connections, its listener).
func (w *simWorld) killMember(r int, why string) {
	p := w.nt.eps[r].proc
	if p == nil || p.killed || p.done {
		return
	}
	w.s.note("kill rank %d (%s)", r, why)
	w.nt.kill(r)
	w.j.kill(memberAddr(r))
}

// startMembers has every member call Resize at its start time.
func (w *simWorld) startMembers(starts []time.Duration) {
	cfg, s := w.run.cfg, w.s
	for r, ep := range w.nt.eps {
		o := &simOutcome{who: fmt.Sprintf("rank %d", r), oldRank: r, state: "killed"}
		w.run.outcomes = append(w.run.outcomes, o)
		req := ResizeRequest{RevokeSeq: simRevokeSeq, MinSize: cfg.minSize, Liveness: cfg.liveness}
		if cfg.elastic {
			req.Grower = &simGrower{j: w.j, ep: ep}
		}
		ep.proc = s.spawn(o.who, starts[r], func(p *simProc) {
			res, err := w.views[r].Resize(req)
			o.end = s.now
			memberOutcome(w.run, o, res, err)
			s.note("%s: %s %s %s %s", o.who, o.state, o.members, o.space, o.err)
		})
		w.j.procOf[memberAddr(r)] = ep.proc
	}
}

// addJoiner brings a joiner to the join server at arrive.
func (w *simWorld) addJoiner(arrive time.Duration) {
	out := &joinerOutcome{}
	w.jouts = append(w.jouts, out)
	w.jns = append(w.jns, w.j.addJoiner(arrive, 2*w.run.bound, out))
}

// finish runs the job to its end and records every participant's outcome.
func (w *simWorld) finish() {
	run, s := w.run, w.s
	s.run()
	run.crash = s.crash
	run.reorders = w.nt.reorders
	if run.reorders > 0 {
		run.faults["frame reordered"] += run.reorders
	}
	for r, ep := range w.nt.eps {
		if !ep.proc.done {
			run.outcomes[r].state = "hung"
		}
	}
	for i, out := range w.jouts {
		jn := w.jns[i]
		o := &simOutcome{who: "joiner " + jn.addr, oldRank: -1, state: "waiting", end: jn.proc.end}
		switch {
		case jn.proc.killed:
			o.state = "killed"
		case out.admitted && !jn.proc.done:
			o.state = "hung"
		case out.admitted && out.err != nil:
			o.state, o.code, o.err = "error", kx.CodeOf(out.err), out.err.Error()
		case out.admitted:
			o.state, o.rank, o.prev = "ok", out.rank, out.adm.Prev
			o.members, o.space = fmt.Sprint(out.adm.Prev), fmt.Sprintf("mesh job %d", out.adm.Job)
			if out.rank < 0 || out.rank >= len(out.adm.Prev) || out.adm.Prev[out.rank] != -1 || out.adm.Peers[out.rank] != jn.addr {
				run.problem("renumbering", "%s was given rank %d of %v (%v)", o.who, out.rank, out.adm.Peers, out.adm.Prev)
			}
		}
		run.outcomes = append(run.outcomes, o)
	}
	s.stop()
	run.log = s.log
}

// memberOutcome records what a member's Resize returned.
func memberOutcome(run *simRun, o *simOutcome, res *Resized, err error) {
	var u *Unchanged
	switch {
	case err == nil:
		o.state, o.rank, o.prev = "ok", res.View.Rank(), res.Prev
		o.members = fmt.Sprint(res.Prev)
		if res.Adm != nil {
			o.space = fmt.Sprintf("mesh job %d", res.Adm.Job)
		} else {
			o.space = fmt.Sprintf("comm base %#x", res.View.Base())
		}
		if o.rank < 0 || o.rank >= len(res.Prev) || res.Prev[o.rank] != o.oldRank || res.View.Size() != len(res.Prev) {
			run.problem("renumbering", "%s is rank %d of a comm of %d whose ranks were %v", o.who, o.rank, res.View.Size(), res.Prev)
		}
	case asUnchanged(err, &u):
		o.state, o.code, o.err = "unchanged", kx.CodeOf(err), err.Error()
		o.members = fmt.Sprint(u.View.procOf)
		o.space = fmt.Sprintf("comm base %#x", u.View.Base())
		o.rank = u.View.Rank()
	default:
		o.state, o.code, o.err = "error", kx.CodeOf(err), err.Error()
	}
}

func asUnchanged(err error, u **Unchanged) bool {
	x, ok := err.(*Unchanged)
	*u = x
	return ok
}
