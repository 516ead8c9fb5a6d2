package main

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"kylix/cmd/kylixrun/internal/tagfeed"
)

// runJoin is kylixrun --join F -n K: K local processes join the running elastic job that F
// describes, each at the members' next kylix_resize.
func (j *job) runJoin() int {
	c := j.cfg
	jf, err := readJobFile(c.join)
	if err != nil {
		j.logf("%v", err)
		return 1
	}
	if _, err := exec.LookPath(c.argv[0]); err != nil {
		j.logf("cannot run %s: %v", c.argv[0], err)
		return execErrorCode(err)
	}
	j.hosts = make([]string, c.n) // all local: the threads are shared among the K
	j.joinPrefix = "j" + strconv.Itoa(os.Getpid())
	if c.tagOutput {
		// Before the first joiner starts, so that no resize that admits one goes unseen.
		if jf.Tags == "" {
			j.logf("--tag-output: the job file %s names no tag feed (a job of an older kylixrun): the joiners' tags will not follow their ranks", c.join)
		} else if name, stop, err := tagfeed.Follow(jf.Tags, jf.Secret, j.joinPrefix, j.renumber); err != nil {
			j.logf("--tag-output: cannot follow the job's resizes at %s: %v; the joiners' tags will not follow their ranks", jf.Tags, err)
		} else {
			defer stop()
			j.joinPrefix = name
		}
	}
	sigs := catchSignals()
	defer signal.Reset(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGPIPE)

	j.exits = make(chan rankExit, c.n)
	code, stopping := 0, false
	for id := 0; id < c.n; id++ {
		spec := rankSpec{id: id, joiner: id, name: j.joinerName(id), of: -1}
		if _, err := j.launch(spec, joinerVars(c, jf.Join, jf.Secret)); err != nil {
			j.logf("cannot start joiner %s: %v", spec.name, err)
			code, stopping = execErrorCode(err), true
			break
		}
	}
	j.joiners = len(j.ranks)
	code = j.supervise(sigs, code, stopping)
	j.finish(sigs)
	return code
}

// joinExit is the rule of kylixrun --join: the joiners are members of the job they joined, so
// one that fails does not stop the others (the job's resize drops it); the first failure gives
// the exit code.
func (s *supervisor) joinExit(e rankExit) {
	if e.st.ok() || s.stopping {
		return
	}
	if s.code == 0 {
		s.code = e.st.exitCode()
	}
	if s.live == 0 {
		s.j.logf("%s %v", e.r.where(), e.st)
		return
	}
	s.j.logf("%s %v; the other joiners go on", e.r.where(), e.st)
}
