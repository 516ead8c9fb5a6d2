package main

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

// supervisor waits for every process of a job and applies its rules: the fixed job's (a
// failure stops the others, fixedExit), the elastic job's (the job goes on, elastic.go) or
// the joiners' of kylixrun --join (join.go). Only the supervising goroutine touches it.
type supervisor struct {
	j        *job
	sigs     <-chan os.Signal
	live     int
	code     int
	stopping bool
	nodes    *replicaSet // with replication: the live replicas of each node

	killTimer, jobTimer, endTimer <-chan time.Time
	orphanTick                    <-chan time.Time // --elastic: are only waiting joiners left? (elastic.go)

	onExit func(rankExit) // the job's rule for a process that ended
	onEnd  func()         // called once every process has ended
	el     elasticLog     // --elastic: who died, who was relaunched (elastic.go)
}

// supervise waits for every started process and applies the stopping rules. code and stopping
// carry a failure that happened while starting.
func (j *job) supervise(sigs <-chan os.Signal, code int, stopping bool) int {
	c := j.cfg
	s := &supervisor{j: j, sigs: sigs, live: len(j.ranks), code: code}
	s.onExit, s.onEnd = s.fixedExit, func() {}
	switch {
	case c.join != "":
		s.onExit = s.joinExit
	case c.elastic:
		s.onExit, s.onEnd = s.elasticExit, s.elasticEnd
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		s.orphanTick = tick.C
	default:
		s.nodes = replicaNodes(len(j.ranks), c.replicas())
	}
	if c.jobTimeout > 0 {
		s.jobTimer = time.After(c.jobTimeout)
	}
	if stopping && s.live > 0 {
		s.stop(syscall.SIGTERM)
	}
	for s.live > 0 {
		select {
		case e := <-j.exits:
			e.r.ended = true
			s.live--
			s.onExit(e)
		case sig := <-sigs:
			s.signalled(sig.(syscall.Signal))
		case <-s.jobTimer:
			s.jobTimer = nil
			if s.stopping {
				continue
			}
			if s.code == 0 {
				s.code = exitJobTimeout
			}
			j.logf("--job-timeout of %v reached; stopping %s", c.jobTimeout, ranksWord(s.running()))
			s.stop(syscall.SIGTERM)
		case <-s.killTimer:
			s.killTimer = nil
			if n := s.running(); n > 0 {
				j.logf("%s still running %v after SIGTERM; sending SIGKILL", ranksWord(n), grace)
				s.signalLive(syscall.SIGKILL)
			}
		case <-s.endTimer:
			s.endTimer = nil
			s.strandJoiners()
		case now := <-s.orphanTick:
			s.checkOrphans(now)
		}
	}
	s.onEnd()
	return s.code
}

// signalLive sends sig to the process group of every rank still running. A rank whose
// process has exited is left to its watch, which stops what it left in its group.
func (s *supervisor) signalLive(sig syscall.Signal) {
	for _, r := range s.j.ranks {
		if !r.ended && r.running() {
			r.signal(sig)
		}
	}
}

// running counts the ranks whose process has not exited, whether or not their exit has reached
// the supervisor yet: the number the launcher's messages give.
func (s *supervisor) running() int {
	n := 0
	for _, r := range s.j.ranks {
		if !r.ended && r.running() {
			n++
		}
	}
	return n
}

// stop signals every live process and SIGKILLs what is left after the grace.
func (s *supervisor) stop(sig syscall.Signal) {
	s.stopping = true
	s.signalLive(sig)
	s.killTimer = time.After(grace)
}

// signalled forwards a signal to the launcher to every process; a second one kills them.
func (s *supervisor) signalled(sig syscall.Signal) {
	if s.stopping {
		// A second ^C, or one during the grace: no more waiting.
		s.j.logf("got %s again; sending SIGKILL to the %s", sigName(sig), remaining(s.running()))
		s.signalLive(syscall.SIGKILL)
		return
	}
	if c := s.j.cfg; c.join == "" && !c.elastic && s.running() == 0 {
		// A fixed job whose every rank's process has exited, their ends not all taken yet (the
		// signal and an end can be ready at once): the job is over and nothing more starts,
		// so its code is the ranks', as for a signal after it (finish). An elastic job may
		// still start a rank: there the signal stops it as any other.
		s.j.killLeftovers(sig)
		return
	}
	if s.code == 0 {
		s.code = 128 + int(sig)
	}
	s.j.logf("got %s; forwarding it to %s", sigName(sig), ranksWord(s.running()))
	s.stop(sig)
}

// others names the other ranks still running, for a message about one that ended.
func (s *supervisor) others() string {
	n := s.running()
	if n == 1 {
		return "1 other rank"
	}
	return strconv.Itoa(n) + " other ranks"
}

func ranksWord(n int) string {
	if n == 1 {
		return "1 rank"
	}
	return strconv.Itoa(n) + " ranks"
}

func remaining(n int) string {
	if n == 1 {
		return "1 remaining rank"
	}
	return strconv.Itoa(n) + " remaining ranks"
}

// fixedExit is the rule of a job of fixed size: the first failure stops the others (unless
// --keep-going, or a replica of the rank's node lives on) and gives the job its exit code.
func (s *supervisor) fixedExit(e rankExit) {
	j := s.j
	if e.st.ok() || s.stopping {
		// While stopping, deaths are the launcher's doing, not news.
		return
	}
	if left, tolerated := s.nodes.lose(e.r.id); tolerated {
		// Replication: the node's other replicas stand in (packet racing).
		j.logf("%s %v; node %d has %d live replica(s) left: the job goes on", e.r.where(), e.st, s.nodes.of(e.r.id), left)
		return
	}
	if s.code == 0 {
		s.code = e.st.exitCode()
		for _, why := range j.causeLines(e.r.id) {
			j.logf("%s", why)
		}
	}
	switch {
	case s.live == 0:
		j.logf("%s %v", e.r.where(), e.st)
	case j.cfg.keepGoing:
		j.logf("%s %v; --keep-going: waiting for the %s", e.r.where(), e.st, s.others())
	default:
		j.logf("%s %v; stopping the %s", e.r.where(), e.st, s.others())
		s.stop(syscall.SIGTERM)
	}
}
