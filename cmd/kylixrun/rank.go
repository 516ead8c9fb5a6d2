package main

import (
	"errors"
	"fmt"
	"io"
	"kylix/core/kx"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// grace is how long a rank has between SIGTERM and SIGKILL.
const grace = 2 * time.Second

// exitStatus is how one rank ended: an exit code, or the signal that killed it.
type exitStatus struct {
	code int
	sig  syscall.Signal
}

func (s exitStatus) ok() bool { return s.code == 0 && s.sig == 0 }

// exitCode is the launcher's exit code for a job that ends with s: 128+signal as shells do.
func (s exitStatus) exitCode() int {
	if s.sig != 0 {
		return 128 + int(s.sig)
	}
	return s.code
}

func (s exitStatus) String() string {
	if s.sig != 0 {
		return fmt.Sprintf("was killed by signal %d (%s)", int(s.sig), sigName(s.sig))
	}
	return fmt.Sprintf("exited with status %d", s.code)
}

var sigNames = map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
	syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGUSR2: "SIGUSR2", syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM",
	syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ"}

func sigName(s syscall.Signal) string {
	if n, ok := sigNames[s]; ok {
		return n
	}
	return s.String()
}

func statusOf(ps *os.ProcessState) exitStatus {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus{sig: ws.Signal()}
	}
	return exitStatus{code: ps.ExitCode()}
}

// rank is one started process of the job: the program itself, or ssh for a remote rank.
type rank struct {
	id   int    // index in job.ranks: the rank number for the ranks started with the job
	host string // "" when local
	// joiner is the joiner's number (j0, j1, ...) for a process started with KYLIX_JOIN, or -1;
	// of is the rank it relaunches (--restarts), or -1.
	joiner, of int
	name       string // the process's name in tags and messages: its launch rank, or j0 (tags.go)
	tagging           // its --tag-output prefix, which follows its rank (tags.go)
	cmd        *exec.Cmd
	pid        int
	stdin      *os.File // write end held open: the secret and liveness pipe of a remote rank
	// release frees the rank's ssh startup slot (sshSlot); nil for a local rank.
	release func()

	mu     sync.Mutex
	reaped bool

	ended    bool // reported on job.exits (the supervisor's own)
	stranded bool // a joiner the supervisor stopped at the job's end (elastic.go)

	pumps sync.WaitGroup // output copiers with --tag-output
}

// signal sends sig to the rank's process group, unless the rank has been reaped (its PID
// might then belong to someone else).
func (r *rank) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.reaped && r.pid > 0 {
		_ = syscall.Kill(-r.pid, sig)
	}
}

// exitNow is how the rank's process ended, if it has ended (reported to the supervisor yet or
// not); ok is false while it runs.
func (r *rank) exitNow() (st exitStatus, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reaped {
		return statusOf(r.cmd.ProcessState), true
	}
	if r.pid <= 0 {
		return exitStatus{}, false
	}
	return exitedNow(r.pid)
}

func (r *rank) running() bool {
	_, ended := r.exitNow()
	return !ended
}

func (r *rank) where() string {
	if r.joiner >= 0 {
		return r.joinerWhere()
	}
	if r.host == "" {
		return fmt.Sprintf("rank %d (pid %d)", r.id, r.pid)
	}
	return fmt.Sprintf("rank %d (on %s)", r.id, r.host)
}

func (r *rank) joinerWhere() string {
	at := fmt.Sprintf("pid %d", r.pid)
	if r.host != "" {
		at = "on " + r.host
	}
	if r.of >= 0 {
		return fmt.Sprintf("joiner %s (%s, relaunch of rank %d)", r.name, at, r.of)
	}
	return fmt.Sprintf("joiner %s (%s)", r.name, at)
}

// rankSpec is what start needs to know beyond the job-wide settings.
type rankSpec struct {
	id      int
	joiner  int    // joiner number, -1 for a rank started with the job
	name    string // j.joinerName(joiner) for a joiner
	of      int    // the rank a joiner relaunches, or -1
	host    string // "" when local
	env     []string
	release func() // frees the ssh startup slot of a remote rank
}

// managedVars are the variables the launcher owns: inherited values would point a rank at
// another job (KYLIX_PEERS would even win over the rendezvous).
var managedVars = []string{"KYLIX_RANK", "KYLIX_SIZE", "KYLIX_RENDEZVOUS", "KYLIX_SECRET", "KYLIX_PEERS",
	"KYLIX_JOIN", "KYLIX_ELASTIC", kx.LauncherEnv}

// launcherVar tells the library that kylixrun started the process (and reported the job's
// unknown KYLIX_ variables, warnUnknownEnv).
const launcherVar = kx.LauncherEnv + "=kylixrun"

// rankEnv is base without the managed variables and those in extra, followed by extra.
func rankEnv(base, extra []string) []string {
	drop := map[string]bool{}
	for _, k := range managedVars {
		drop[k] = true
	}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// jobVars are the KYLIX_* settings of rank id.
func jobVars(c *config, id int, rendezvous, secret string) []string {
	v := []string{
		"KYLIX_RANK=" + strconv.Itoa(id),
		"KYLIX_SIZE=" + strconv.Itoa(c.n),
		"KYLIX_RENDEZVOUS=" + rendezvous,
		"KYLIX_SECRET=" + secret,
		launcherVar,
	}
	if c.degrees != "" {
		v = append(v, "KYLIX_DEGREES="+c.degrees)
	}
	if c.replication > 0 {
		v = append(v, "KYLIX_REPLICATION="+strconv.Itoa(c.replication))
	}
	if c.elastic {
		v = append(v, "KYLIX_ELASTIC=1")
	}
	return append(v, timeoutVars(c)...)
}

// joinerVars are the KYLIX_* settings of a process that joins the job at join: no rank, size
// or rendezvous, which the admitting resize decides.
func joinerVars(c *config, join, secret string) []string {
	v := []string{"KYLIX_JOIN=" + join, "KYLIX_SECRET=" + secret, "KYLIX_ELASTIC=1", launcherVar}
	return append(v, timeoutVars(c)...)
}

func timeoutVars(c *config) []string {
	if c.timeout > 0 {
		return []string{"KYLIX_TIMEOUT_MS=" + strconv.FormatInt(c.timeout.Milliseconds(), 10)}
	}
	return nil
}

// localThreads is the KYLIX_THREADS (and GOMAXPROCS) a local rank gets when the user set
// none: the cores shared out among the ranks on this host (at least 1), as torchrun sets
// OMP_NUM_THREADS, so that ranks' worker threads do not oversubscribe the cores. "" leaves the library's default
// (remote ranks, or a user's own setting).
func localThreads(hosts []string, id int, user string) string {
	if user != "" || hosts[id] != "" {
		return ""
	}
	local := 0
	for _, h := range hosts {
		if h == "" {
			local++
		}
	}
	return strconv.Itoa(max(1, runtime.NumCPU()/max(local, 1)))
}

// startRank starts one rank (the program, or ssh for a remote host) with the given
// environment. Output goes through pipes and copiers that write whole lines (with --tag-output,
// each prefixed with the rank's tag), or straight to a terminal.
func (j *job) startRank(s rankSpec) (*rank, error) {
	r := &rank{id: s.id, joiner: s.joiner, of: s.of, host: s.host, release: s.release, name: s.name}
	if s.joiner < 0 {
		r.name = strconv.Itoa(s.id)
	}
	r.initTag(s.joiner < 0)
	var cmd *exec.Cmd
	var secret string
	if s.host == "" {
		cmd = exec.Command(j.cfg.argv[0], j.cfg.argv[1:]...)
		cmd.Env = s.env
		if s.id == 0 && s.joiner < 0 {
			stdin, closeAfter, err := rank0Stdin()
			if err != nil {
				return nil, err
			}
			cmd.Stdin = stdin
			if closeAfter != nil {
				defer closeAfter.Close()
			}
		}
	} else {
		var remote []string
		for _, kv := range s.env {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == "KYLIX_SECRET":
				secret = v
			case strings.HasPrefix(k, "KYLIX_"):
				remote = append(remote, kv)
			}
		}
		argv := sshArgv(j.cfg.ssh, s.host, j.cwd, remote, j.cfg.argv)
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Env = rankEnv(os.Environ(), nil) // no KYLIX_ secrets in ssh's own environment
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer pr.Close()
		cmd.Stdin = pr
		r.stdin = pw
	}
	cmd.SysProcAttr = sysProcAttr()

	var toClose []*os.File
	defer func() {
		for _, f := range toClose {
			f.Close()
		}
	}()
	// Output goes through copiers that write whole lines, so that the launcher's own lines are
	// never cut into a rank's line. Only a terminal (or /dev/null) gets the ranks' output
	// straight without --tag-output: there, C's stdio writes whole lines itself, and a rank
	// sees a terminal. A remote rank's stderr always goes through a copier, which drops the
	// remote script's startup marker (and frees the rank's ssh startup slot when it comes).
	for _, d := range []struct {
		dst    *io.Writer
		sink   io.Writer
		direct *os.File
		marker bool
	}{{&cmd.Stdout, j.stdout, os.Stdout, false}, {&cmd.Stderr, j.stderr, os.Stderr, s.host != ""}} {
		if !j.cfg.tagOutput && !d.marker && charDevice(d.direct) {
			*d.dst = d.direct
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		*d.dst = pw
		toClose = append(toClose, pw)
		var src io.Reader = pr
		prefixAt := r.prefixAt
		if d.marker && s.release != nil {
			src = newMarkerFilter(pr, remoteUpMarker, s.release)
		} else if s.host == "" && j.cfg.tagOutput {
			if ts := newTagStream(pr, r.prefix()); ts != nil {
				src, prefixAt = ts, ts.prefixAt
				r.streams = append(r.streams, ts)
			}
		}
		r.pumps.Add(1)
		go func(sink io.Writer) {
			defer r.pumps.Done()
			if j.cfg.tagOutput {
				_ = copyLines(src, sink, prefixAt, true)
			} else {
				_ = pumpExact(src, sink)
			}
			pr.Close() // a rank still writing now gets EPIPE, as with a closed stdout
		}(d.sink)
	}

	if err := startCmd(cmd); err != nil {
		for _, f := range toClose {
			f.Close()
		}
		toClose = nil
		r.pumps.Wait()
		if r.stdin != nil {
			r.stdin.Close()
		}
		return nil, err
	}
	r.cmd, r.pid = cmd, cmd.Process.Pid
	if r.stdin != nil {
		// A pipe holds far more than one line, so this cannot block.
		if _, err := io.WriteString(r.stdin, secret+"\n"); err != nil {
			r.signal(syscall.SIGKILL)
			r.stdin.Close()
			_ = cmd.Wait()
			return nil, fmt.Errorf("passing the secret to ssh: %v", err)
		}
	}
	return r, nil
}

// charDevice tells whether f is a terminal or another character device such as /dev/null.
func charDevice(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// rank0Stdin gives rank 0 the launcher's stdin. A terminal is not passed on: rank 0 is in its
// own process group, and reading a terminal from a background group stops the reader
// (SIGTTIN) for good. The launcher reads the terminal instead, when it is in the foreground,
// and feeds a pipe (closeAfter is its read end, to close once the rank started); a launcher in
// the background gives rank 0 /dev/null.
func rank0Stdin() (stdin io.Reader, closeAfter *os.File, err error) {
	tty, fg := terminalForeground(int(os.Stdin.Fd()))
	switch {
	case !tty:
		return os.Stdin, nil, nil
	case !fg:
		return nil, nil, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = io.Copy(pw, os.Stdin)
		pw.Close()
	}()
	return pr, pr, nil
}

// watch waits for r to end, reports it on j.exits, stops whatever the rank left running in its
// process group (SIGTERM, SIGKILL after the grace) and reaps it. The launcher does not exit
// before every watch has returned (j.watching).
func (j *job) watch(r *rank) {
	defer j.watching.Done()
	if r.release != nil {
		defer r.release() // an ssh that ends before logging in frees its startup slot
	}
	if st, ok := waitNoReap(r.pid); ok {
		// The leader is a zombie until reaped below, so its group ID stays ours.
		j.exits <- rankExit{r, st}
		j.cleanGroup(r)
		r.mu.Lock()
		_ = r.cmd.Wait()
		r.reaped = true
		r.mu.Unlock()
	} else {
		err := r.cmd.Wait()
		r.mu.Lock()
		r.reaped = true
		r.mu.Unlock()
		st := exitStatus{code: 1}
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) {
			st = statusOf(r.cmd.ProcessState)
		}
		// Without waitid(WNOWAIT) the group is cleaned after the reap: a small window in which
		// the group ID could be reused, accepted on such systems.
		j.cleanGroup(r)
		j.exits <- rankExit{r, st}
	}
	if r.stdin != nil {
		r.stdin.Close()
	}
}

// cleanGroup ends what is left of r's process group once its leader has exited: SIGTERM, then
// SIGKILL (said) to what is still there after the grace. It returns once the group is gone, or
// a grace after the SIGKILL (a process stuck in the kernel).
func (j *job) cleanGroup(r *rank) {
	pgid := r.pid
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if groupGone(pgid, grace) {
		return
	}
	j.logf("%s left processes running in its group %v after SIGTERM; sending SIGKILL", r.where(), grace)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	groupGone(pgid, grace)
}

// groupGone waits up to d for process group pgid to have no live member.
func groupGone(pgid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if !groupAlive(pgid) {
			return true
		}
	}
	return false
}
