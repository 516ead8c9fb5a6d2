package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kylix/netio/rendezvous"
)

// joinerEndWait is how long a joiner may run on once a rank of an elastic job finished cleanly.
// The members of a comm finish together (the last collective holds them) and an admitted
// joiner is a member, so a joiner still running this long after waits for a resize that will
// never come: it is stopped, and its end does not count against the job.
const joinerEndWait = 10 * time.Second

// elasticLog is what an elastic job's supervisor remembers for its last line.
type elasticLog struct {
	ending     bool     // a rank exited 0: the job is at its end and nobody is relaunched
	died       []string // "rank 2 (pid 7) was killed by signal 9", in order
	firstDeath int      // the exit code the first death would give
	relaunched []string
	rejoined   []string  // relaunched joiners that ended with status 0
	stranded   []string  // joiners stopped at the end, never admitted (strandJoiners)
	orphans    time.Time // since when only waiting joiners are left (checkOrphans)
}

// elasticExit is the rule of an --elastic job: a rank that dies before the job's end is
// dropped by the survivors' kylix_resize (and relaunched while --restarts allow); once a rank
// has finished cleanly the job is at its end, and a rank that fails then fails the job.
func (s *supervisor) elasticExit(e rankExit) {
	el := &s.el
	switch {
	case s.stopping, e.r.stranded:
		// The launcher's doing: no news.
	case e.st.ok():
		if e.r.of >= 0 {
			el.rejoined = append(el.rejoined, e.r.where())
		}
		if !el.ending {
			el.ending = true
			s.endTimer = time.After(joinerEndWait)
		}
	case el.ending:
		if s.code == 0 {
			s.code = e.st.exitCode()
		}
		s.j.logf("%s %v at the job's end: the job fails", e.r.where(), e.st)
	default:
		s.died(e)
	}
}

// died records a death before the job's end and relaunches the rank as a joiner while
// --restarts allow.
func (s *supervisor) died(e rankExit) {
	j, el := s.j, &s.el
	el.died = append(el.died, e.r.where()+" "+e.st.String())
	if len(el.died) == 1 {
		el.firstDeath = e.st.exitCode()
	}
	switch {
	case s.live == 0:
		j.logf("%s %v; no rank is left", e.r.where(), e.st)
		return
	case j.restartsLeft == 0:
		j.logf("%s %v; --elastic: the job goes on with the %s", e.r.where(), e.st, s.others())
		return
	}
	nr, sig, err := j.relaunch(e.r, s.sigs)
	switch {
	case sig != nil:
		j.logf("%s %v; not relaunched", e.r.where(), e.st)
		s.signalled(sig.(syscall.Signal))
	case err != nil:
		j.logf("%s %v; cannot relaunch it: %v; the job goes on with the %s", e.r.where(), e.st, err, s.others())
	default:
		j.restartsLeft--
		s.live++
		el.relaunched = append(el.relaunched, nr.where())
		j.logf("%s %v; relaunched as %s to join at the next resize (%d restarts left)", e.r.where(), e.st, nr.where(), j.restartsLeft)
	}
}

// relaunch starts a joiner in the place of dead, on its host. A signal that comes while it
// waits for an ssh startup slot is returned instead.
func (j *job) relaunch(dead *rank, sigs <-chan os.Signal) (*rank, os.Signal, error) {
	of := dead.id
	if dead.joiner >= 0 {
		of = dead.of
	}
	var release func()
	if dead.host != "" {
		var sig os.Signal
		if release, sig = j.sshSlot(dead.host, sigs); sig != nil {
			return nil, sig, nil
		}
	}
	spec := rankSpec{id: len(j.ranks), joiner: j.joiners, name: j.joinerName(j.joiners), of: of, host: dead.host, release: release}
	r, err := j.launch(spec, joinerVars(j.cfg, j.rvAddr, j.secret))
	if err != nil {
		return nil, nil, err
	}
	j.joiners++
	return r, nil, nil
}

// waiter is the part of netio/rendezvous.Server that lists the joiners waiting now.
type waiter interface {
	Waiting() []string
}

// checkOrphans ends a job whose members are all gone while its relaunched joiners wait to be
// admitted by nobody: when every live process is a joiner and the rendezvous has at least as
// many joiners waiting, for joinerEndWait, the joiners are stopped. (Joiners that were admitted
// are not waiting, so a job whose ranks have all been replaced goes on.)
func (s *supervisor) checkOrphans(now time.Time) {
	w, ok := s.j.rv.(waiter)
	if !ok || s.stopping || s.el.ending {
		return
	}
	onlyJoiners := s.live > 0
	for _, r := range s.j.ranks {
		onlyJoiners = onlyJoiners && (r.ended || r.joiner >= 0)
	}
	if !onlyJoiners || len(w.Waiting()) < s.live {
		s.el.orphans = time.Time{}
		return
	}
	if s.el.orphans.IsZero() {
		s.el.orphans = now
		return
	}
	if now.Sub(s.el.orphans) >= joinerEndWait {
		s.j.logf("no member of the job is left to admit the %d joiner(s) waiting", s.live)
		s.strandJoiners()
	}
}

// strandJoiners stops the joiners still running joinerEndWait after the job's first clean
// exit (or once no member is left, checkOrphans): they were never admitted. The ranks started
// with the job are left to their own end.
func (s *supervisor) strandJoiners() {
	var stranded []*rank
	for _, r := range s.j.ranks {
		if !r.ended && r.joiner >= 0 {
			r.stranded = true
			stranded = append(stranded, r)
			s.el.stranded = append(s.el.stranded, r.where())
			s.j.logf("%s was not admitted before the job's end; stopping it", r.where())
			r.signal(syscall.SIGTERM)
		}
	}
	if len(stranded) > 0 {
		time.AfterFunc(grace, func() {
			for _, r := range stranded {
				if r.running() {
					s.j.logf("%s still running %v after SIGTERM; sending SIGKILL", r.where(), grace)
					r.signal(syscall.SIGKILL)
				}
			}
		})
	}
}

// elasticEnd settles the exit code of an elastic job and writes its last line: which ranks
// died, which were relaunched and rejoined. A job in which no rank finished cleanly fails
// with its first death's code.
func (s *supervisor) elasticEnd() {
	el := &s.el
	if !el.ending && s.code == 0 && len(el.died) > 0 {
		s.code = el.firstDeath
	}
	admitted := s.j.admitted.Load()
	if len(el.died) == 0 && len(el.stranded) == 0 && admitted == 0 {
		return
	}
	parts := []string{fmt.Sprintf("--elastic job ended with status %d", s.code)}
	if admitted > 0 {
		parts = append(parts, fmt.Sprintf("%d joiner(s) admitted", admitted))
	}
	if !el.ending && !s.stopping {
		parts[0] += " (no rank finished cleanly)"
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{"died", el.died}, {"relaunched", el.relaunched}, {"rejoined and finished", el.rejoined},
		{"never admitted", el.stranded}} {
		if len(l.names) > 0 {
			parts = append(parts, l.what+": "+strings.Join(l.names, ", "))
		}
	}
	s.j.logf("%s", strings.Join(parts, "; "))
}

// admitter is the part of netio/rendezvous.Server that reports the resizes that admitted joiners.
type admitter interface {
	OnAdmit(func(rendezvous.Admitted))
}

// watchAdmissions logs each resize that admitted joiners (the joiners' new ranks), and counts
// them for the job's last line.
func (j *job) watchAdmissions(rv rendezvousServer) {
	a, ok := rv.(admitter)
	if !ok {
		return
	}
	a.OnAdmit(func(adm rendezvous.Admitted) {
		j.renumber(adm)
		if j.feed != nil {
			j.feed.Publish(adm) // bounded: tagfeed.AckWait
		}
		var ranks []string
		for r, prev := range adm.Prev {
			if prev < 0 {
				ranks = append(ranks, strconv.Itoa(r))
			}
		}
		if len(ranks) == 0 {
			return
		}
		j.admitted.Add(int64(len(ranks)))
		j.logf("a resize admitted %d joiner(s) as rank(s) %s: the job has %d ranks", len(ranks), strings.Join(ranks, ", "), len(adm.Prev))
	})
}
