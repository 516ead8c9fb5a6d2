// Package chaos runs a real elastic job (kylixrun --elastic, the checked program workload.c)
// under a seeded schedule of faults, then says what was checked, what went wrong and what was
// left behind. chaos_test.go runs it: a bounded run in make test, a long one from
// tests/bench/run_chaos.sh.
package chaos

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config is one job.
type Config struct {
	Seed     int64
	Faults   time.Duration // how long faults are injected
	Gap      time.Duration // mean time between faults
	Ranks    int
	Repl     int
	Netns    bool // ranks in two network namespaces, with the link faults
	Liveness time.Duration
	Timeout  time.Duration
	MaxSize  int    // joins stop at this many processes
	Build    string // libkylix.so and kylixrun
	Workload string // the compiled workload.c
	Tag      string // at most 9 characters: names the namespaces
	Log      io.Writer
}

// bound is what a call may take: timeout_ms plus a margin for a loaded machine.
func (c Config) bound() time.Duration { return c.Timeout + 2*time.Second }

// Result is what a job did.
type Result struct {
	Cfg                  Config
	Faults, Skipped      map[string]int
	Checks               map[string]int64
	Wrong, Late, Bad     int64
	GaveUp, Left         int
	Resizes, Resets      int64
	MaxCall              time.Duration
	Processes            int
	LeakProcs            []int
	LeakWhat             []string // what each leaked process was
	Zombies              int      // of LeakProcs: exited, but not reaped by their launcher
	LeakFds, LeakThreads []string
	LeakRSS              []string
	LeakShm, LeakNetns   []string
	FdGrowth, ThrGrowth  int64
	RSSGrowthKB          int64
	Code                 int  // kylixrun's exit status
	Lost                 bool // the job ended during the faults: every member gave up or died
	// Refused: Lost, and the members that gave up last were refused by the quorum rule (a
	// resize needs more than half of the old members): the faults took out a majority, and the
	// library stopped as the contract says. Not a failure; the long run goes on with a new job.
	Refused   bool
	FaultsRan time.Duration // how long faults were injected (less than Cfg.Faults when Lost)
	Ended     []string      // why the members gave up, when the job was Lost
	Excused   []string      // calls past the bound that the faults in flight account for
	Problems  []string
	Kept      string // the job's directory (kylixrun's output, state records), kept when it failed
	Elapsed   time.Duration
}

// Leak thresholds, per process, between its warm-up (30 steps into the first comm with as many
// live members as it ends with; threads: 30 steps into its life) and its end (before the final
// barrier, while no peer can have finalized): a leak per resize or per fault would pass them
// within a run. A leak names what grew (fdDiff).
const (
	fdSlack     = 2 // descriptors more than with as many live members before (RSS likewise)
	threadSlack = 4 // the Go runtime adds threads while calls block in syscalls
	rssSlackKB  = 64 << 10
)

// Failed says whether the run found anything.
func (r *Result) Failed() bool {
	code := r.Code != 0 && !r.Refused // kylixrun reports the members' refusal
	return r.Wrong > 0 || r.Late > 0 || r.Bad > 0 || code || (r.Lost && !r.Refused) || len(r.LeakProcs) > 0 || len(r.LeakFds) > 0 ||
		len(r.LeakThreads) > 0 || len(r.LeakRSS) > 0 || len(r.LeakShm) > 0 || len(r.LeakNetns) > 0 || len(r.Problems) > 0
}

// run is the state of one job while it runs.
type run struct {
	cfg      Config
	dir      string
	token    string
	env      []string
	hosts    *twoHosts
	joinAddr string
	res      *Result

	mu        sync.Mutex
	starts    map[int]uint64    // workload pids seen, with their start times
	stopped   map[int]bool      // pids held by SIGSTOP now
	doomed    map[int]time.Time // pids a removing fault took out, until when they count as gone
	launchers []*exec.Cmd       // kylixrun --join processes
	timers    sync.WaitGroup    // pending restores
	injected  []injection       // the faults that took place
	removedAt time.Time         // the last removing fault
	linkUntil time.Time         // the link fault in force ends
}

func newToken() string {
	var b [6]byte
	rand.Read(b[:])
	return "chaos-" + hex.EncodeToString(b[:])
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "%s chaos: "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

// Run runs one job under its fault schedule and checks what it left behind.
func Run(cfg Config) (*Result, error) {
	t0 := time.Now()
	r := &run{cfg: cfg, token: newToken(), starts: map[int]uint64{}, stopped: map[int]bool{}, doomed: map[int]time.Time{},
		res: &Result{Cfg: cfg, Faults: map[string]int{}, Skipped: map[string]int{}, Checks: map[string]int64{}}}
	var err error
	if r.dir, err = os.MkdirTemp("", "kylix-chaos-"); err != nil {
		return nil, err
	}
	defer func() {
		// A failed job's outputs and state records stay for a look (CHAOS_KEEP=1 keeps every job's).
		if r.res.Failed() || os.Getenv("CHAOS_KEEP") != "" {
			r.res.Kept = r.dir
			return
		}
		os.RemoveAll(r.dir)
	}()
	if err := os.Mkdir(filepath.Join(r.dir, "state"), 0o755); err != nil {
		return nil, err
	}
	shm0 := shmEntries()
	if cfg.Netns {
		if r.hosts, err = newTwoHosts(cfg.Tag); err != nil {
			return nil, fmt.Errorf("network namespaces: %v", err)
		}
	}
	r.env = r.environment()
	main, err := r.startMain()
	if err != nil {
		if r.hosts != nil {
			r.hosts.close()
		}
		return nil, err
	}
	mainDone := make(chan struct{})
	go func() {
		main.Wait()
		close(mainDone)
	}()
	defer r.onInterrupt(main)()
	if r.joinAddr, err = r.awaitJobFile(mainDone); err == nil {
		if r.hosts != nil {
			r.hosts.setTarget(r.joinAddr)
		}
		r.inject(mainDone)
		r.restoreAll()
		r.finish(mainDone)
	} else {
		r.res.Problems = append(r.res.Problems, err.Error())
	}
	r.stopJob(main, mainDone)
	if r.hosts != nil {
		r.hosts.close()
		for _, ns := range []string{r.hosts.a, r.hosts.b} {
			if nsExists(ns) {
				r.res.LeakNetns = append(r.res.LeakNetns, ns)
			}
		}
	}
	r.account(shm0)
	r.res.Elapsed = time.Since(t0)
	return r.res, nil
}

// environment is the harness's own without KYLIX_ settings, plus the job's.
func (r *run) environment() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KYLIX_") && !strings.HasPrefix(kv, "CHAOS_") {
			env = append(env, kv)
		}
	}
	c := r.cfg
	env = append(env, "CHAOS_STATE="+filepath.Join(r.dir, "state"), "CHAOS_END="+filepath.Join(r.dir, "end"),
		"CHAOS_BOUND_MS="+strconv.FormatInt(c.bound().Milliseconds(), 10), "CHAOS_REPL="+strconv.Itoa(c.Repl),
		"KYLIX_LIVENESS_MS="+strconv.FormatInt(c.Liveness.Milliseconds(), 10), "KYLIX_LOG=error")
	if r.hosts != nil {
		env = append(env, "CHAOS_NETNS="+r.hosts.a+","+r.hosts.b, "CHAOS_RV="+r.hosts.rvAddr, "KYLIX_SHM=off")
	}
	return env
}

func (r *run) outFile(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(r.dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func (r *run) command(out string, args ...string) (*exec.Cmd, error) {
	f, err := r.outFile(out)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(r.cfg.Build, "kylixrun"), args...)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	f.Close()
	return cmd, err
}

func (r *run) timeoutS() string { return strconv.FormatFloat(r.cfg.Timeout.Seconds(), 'f', -1, 64) }

func (r *run) startMain() (*exec.Cmd, error) {
	c := r.cfg
	limit := c.Faults + 6*c.Timeout + 60*time.Second
	args := []string{"-n", strconv.Itoa(c.Ranks), "--elastic", "--restarts", "100000", "--job-file",
		filepath.Join(r.dir, "job.json"), "--timeout", r.timeoutS(), "--job-timeout", strconv.Itoa(int(limit.Seconds()))}
	if c.Repl > 1 {
		args = append(args, "--replication", strconv.Itoa(c.Repl))
	}
	r.logf("kylixrun %s -- workload %s", strings.Join(args, " "), r.token)
	return r.command("job.out", append(args, "--", c.Workload, r.token)...)
}

// awaitJobFile returns the job's join address from its job file.
func (r *run) awaitJobFile(mainDone chan struct{}) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var jf struct{ Join string }
		if b, err := os.ReadFile(filepath.Join(r.dir, "job.json")); err == nil && json.Unmarshal(b, &jf) == nil && jf.Join != "" {
			return jf.Join, nil
		}
		select {
		case <-mainDone:
			return "", fmt.Errorf("kylixrun ended before it wrote its job file")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("kylixrun wrote no job file within 60 s")
}

// records reads the state records and remembers each process's start time while it runs.
func (r *run) records() map[int]record {
	recs := readRecords(filepath.Join(r.dir, "state"))
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid := range recs {
		if _, seen := r.starts[pid]; !seen {
			r.starts[pid] = procStart(pid)
		}
	}
	return recs
}

// signal sends sig to a workload process, unless its pid now names another process.
func (r *run) signal(pid int, sig syscall.Signal) bool {
	r.mu.Lock()
	start := r.starts[pid]
	r.mu.Unlock()
	if start == 0 || procStart(pid) != start {
		return false
	}
	return syscall.Kill(pid, sig) == nil
}

func (r *run) later(d time.Duration, f func()) {
	r.timers.Add(1)
	time.AfterFunc(d, func() {
		defer r.timers.Done()
		f()
	})
}

// stop holds pid with SIGSTOP for d.
func (r *run) stop(pid int, d time.Duration) bool {
	if !r.signal(pid, syscall.SIGSTOP) {
		return false
	}
	r.mu.Lock()
	r.stopped[pid] = true
	r.mu.Unlock()
	r.later(d, func() { r.resume(pid) })
	return true
}

func (r *run) resume(pid int) {
	r.mu.Lock()
	held := r.stopped[pid]
	delete(r.stopped, pid)
	r.mu.Unlock()
	if held {
		r.signal(pid, syscall.SIGCONT)
	}
}

// restoreAll ends every fault still in force: the stopped go on, the link is up and unshaped.
func (r *run) restoreAll() {
	r.mu.Lock()
	var held []int
	for pid := range r.stopped {
		held = append(held, pid)
	}
	r.mu.Unlock()
	for _, pid := range held {
		r.resume(pid)
	}
	if r.hosts != nil {
		r.hosts.link(true)
		r.hosts.shape("")
	}
	r.timers.Wait()
}

// finish lets the job settle (a member taken out by the last fault is found dead within
// liveness_ms), then tells it the last step.
func (r *run) finish(mainDone chan struct{}) {
	select {
	case <-mainDone:
		return
	case <-time.After(r.cfg.Liveness + 2*time.Second):
	}
	var last int64
	for _, rec := range r.records() {
		if rec.Step > last {
			last = rec.Step
		}
	}
	end := last + 40
	r.logf("faults over; the job ends after step %d", end)
	os.WriteFile(filepath.Join(r.dir, "end.tmp"), []byte(strconv.FormatInt(end, 10)+"\n"), 0o644)
	os.Rename(filepath.Join(r.dir, "end.tmp"), filepath.Join(r.dir, "end"))
}

// stopJob waits for kylixrun and the join launchers, bounded; what is still running then has
// hung: it is recorded, and its process group stopped.
func (r *run) stopJob(main *exec.Cmd, mainDone chan struct{}) {
	limit := 3*r.cfg.Timeout + 30*time.Second
	select {
	case <-mainDone:
	case <-time.After(limit):
		r.res.Problems = append(r.res.Problems, fmt.Sprintf("kylixrun still ran %v after the job was told to end: stopped", limit))
		syscall.Kill(-main.Process.Pid, syscall.SIGKILL)
		<-mainDone
	}
	r.res.Code = main.ProcessState.ExitCode()
	r.mu.Lock()
	launchers := r.launchers
	r.mu.Unlock()
	for _, l := range launchers {
		done := make(chan struct{})
		go func() {
			l.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			// Its joiner was never admitted before the job's end: not a fault of the job.
			syscall.Kill(-l.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				syscall.Kill(-l.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
	}
}

// account sums the state records and looks for what the job left behind.
func (r *run) account(shm0 map[string]bool) {
	res := r.res
	time.Sleep(200 * time.Millisecond) // a reaped process's /proc entry goes at once; be generous
	for _, pid := range withToken(r.token) {
		res.LeakProcs = append(res.LeakProcs, pid)
	}
	recs := readRecords(filepath.Join(r.dir, "state"))
	r.mu.Lock()
	for pid, start := range r.starts {
		if start != 0 && procStart(pid) == start && !contains(res.LeakProcs, pid) {
			res.LeakProcs = append(res.LeakProcs, pid)
		}
	}
	r.mu.Unlock()
	for _, pid := range res.LeakProcs {
		if !alive(pid) {
			res.Zombies++
		}
		res.LeakWhat = append(res.LeakWhat, describe(pid, recs[pid]))
		syscall.Kill(pid, syscall.SIGKILL) // a process of this job, by pid; counted above
	}
	res.Processes = len(recs)
	for _, rec := range recs {
		for _, k := range checkKinds {
			res.Checks[k.key] += rec.Counts[k.key]
		}
		res.Wrong += rec.Counts["wrong"]
		res.Bad += rec.Counts["bad"]
		res.Resizes += rec.Counts["resizes"]
		res.Resets += rec.Counts["resets"]
		if d := time.Duration(rec.Counts["maxms"]) * time.Millisecond; d > res.MaxCall {
			res.MaxCall = d
		}
		switch rec.Phase {
		case "gaveup":
			res.GaveUp++
		case "left":
			res.Left++
		case "done":
			who := fmt.Sprintf("pid %d (rank %d of %d)", rec.Pid, rec.Rank, rec.Size)
			if fd0, fd1 := rec.Counts["fd0"], rec.Counts["fd1"]; fd0 > 0 {
				res.FdGrowth = max(res.FdGrowth, fd1-fd0)
				if fd1-fd0 > fdSlack {
					res.LeakFds = append(res.LeakFds, fmt.Sprintf("%s: %d -> %d descriptors%s", who, fd0, fd1,
						fdDiff(filepath.Join(r.dir, "state", fmt.Sprintf("fds-%d", rec.Pid)))))
				}
			}
			if t0, t1 := rec.Counts["thr0"], rec.Counts["thr1"]; t0 > 0 {
				res.ThrGrowth = max(res.ThrGrowth, t1-t0)
				if t1-t0 > threadSlack {
					res.LeakThreads = append(res.LeakThreads, fmt.Sprintf("%s: %d -> %d threads", who, t0, t1))
				}
			}
			if m0, m1 := rec.Counts["rss0"], rec.Counts["rss1"]; m0 > 0 {
				res.RSSGrowthKB = max(res.RSSGrowthKB, m1-m0)
				if m1-m0 > rssSlackKB {
					res.LeakRSS = append(res.LeakRSS, fmt.Sprintf("%s: RSS %d -> %d kB", who, m0, m1))
				}
			}
		}
	}
	for name := range shmEntries() {
		if !shm0[name] {
			res.LeakShm = append(res.LeakShm, name)
		}
	}
	outs, _ := filepath.Glob(filepath.Join(r.dir, "*.out"))
	for _, f := range outs {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			l := sc.Text()
			if i := strings.Index(l, "CHAOS "); i >= 0 && len(res.Problems) < 40 {
				switch kind, _, _ := strings.Cut(l[i+6:], " "); kind {
				case "WRONG", "BAD":
					res.Problems = append(res.Problems, l[i:])
				case "LATE":
					// Judged here against the faults in flight (allowance); a line without
					// its times is late.
					if why, ok := r.excused(l[i:]); ok {
						res.Excused = append(res.Excused, l[i:]+": "+why)
					} else {
						res.Late++
						res.Problems = append(res.Problems, l[i:]+why)
					}
				}
			}
		}
		fh.Close()
	}
	// A job whose kylixrun failed with no member done ended like a lost one, only after the
	// faults: the last faults may have taken out a majority as well.
	done := false
	for _, rec := range recs {
		done = done || rec.Phase == "done"
	}
	if res.Lost || (res.Code != 0 && !done) {
		r.judgeLoss(recs)
	}
	if res.Code != 0 && !res.Refused {
		b, _ := os.ReadFile(filepath.Join(r.dir, "job.out"))
		res.Problems = append(res.Problems, fmt.Sprintf("kylixrun exited with status %d; its last lines:\n%s", res.Code, tail(string(b), 15)))
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// joinPort is the port a joiner connects to: the proxy's in namespaces, else kylixrun's.
func (r *run) joinPort() int {
	addr := r.joinAddr
	if r.hosts != nil {
		addr = r.hosts.rvAddr
	}
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// describe says what a leaked process is: its state, parent and command, and its last phase.
func describe(pid int, rec record) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 {
		f := strings.Fields(st[i+1:])
		if len(f) > 1 {
			st = "state " + f[0] + ", ppid " + f[1]
		}
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	what := fmt.Sprintf("pid %d (%s): %s", pid, st, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "))
	if rec.Pid != 0 {
		what += fmt.Sprintf("; workload phase %s, rank %d of %d", rec.Phase, rec.Rank, rec.Size)
	}
	return what
}

// onInterrupt cleans up if the harness itself is interrupted (SIGINT, SIGTERM) while the job
// runs: the job's process groups are stopped, the namespaces deleted, and the harness exits.
// It returns what stops watching.
func (r *run) onInterrupt(main *exec.Cmd) func() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			r.logf("got %v: stopping the job and removing what it made", sig)
			syscall.Kill(-main.Process.Pid, syscall.SIGKILL)
			r.mu.Lock()
			for _, l := range r.launchers {
				syscall.Kill(-l.Process.Pid, syscall.SIGKILL)
			}
			r.mu.Unlock()
			for _, pid := range withToken(r.token) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if r.hosts != nil {
				r.hosts.close()
			}
			os.RemoveAll(r.dir)
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// excused says whether a LATE line's call took no longer than the faults in flight during it
// allow (allowance), and why.
func (r *run) excused(line string) (string, bool) {
	took, t0, t1, ok := lateTimes(line)
	if !ok {
		return "", false
	}
	start, end := time.UnixMilli(t0), time.UnixMilli(t1)
	allow, in := r.allowance(start, end)
	why := fmt.Sprintf(" (allowed %.1f s with %d fault(s) in flight: %s)", allow.Seconds(), len(in), strings.Join(in, ", "))
	return why, took <= allow
}

// lateTimes reads a LATE line's duration and its wall-clock span "[wall t0 t1]" (Unix ms).
func lateTimes(line string) (took time.Duration, t0, t1 int64, ok bool) {
	i := strings.LastIndex(line, "[wall ")
	if i < 0 {
		return 0, 0, 0, false
	}
	if _, err := fmt.Sscanf(line[i:], "[wall %d %d]", &t0, &t1); err != nil || t1 < t0 {
		return 0, 0, 0, false
	}
	return time.Duration(t1-t0) * time.Millisecond, t0, t1, true
}

// quorumRefusal is what kylix_resize says when this side holds no majority (core/members).
const quorumRefusal = "a resize needs more than half of them"

// judgeLoss says why a job ended during its faults. The members that gave up last (within
// liveness_ms + timeout_ms of the last one, by their state records' times) name the reason;
// when every one of them was refused by the quorum rule, the job is Refused: the faults took
// out a majority of some comm's members, and no side could go on. Anything else (a member that
// gave up after too many resizes, an error other than the refusal, no member giving up at all)
// leaves it a loss.
func (r *run) judgeLoss(recs map[int]record) {
	res := r.res
	why := map[int]string{}
	outs, _ := filepath.Glob(filepath.Join(r.dir, "*.out"))
	for _, f := range outs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, "CHAOS GAVEUP pid="); i >= 0 {
				var pid int
				fmt.Sscanf(l[i+len("CHAOS GAVEUP pid="):], "%d", &pid)
				why[pid] = l[i:]
			}
		}
	}
	var last time.Time
	when := map[int]time.Time{}
	for pid, rec := range recs {
		if rec.Phase != "gaveup" {
			continue
		}
		if st, err := os.Stat(filepath.Join(r.dir, "state", fmt.Sprintf("p%d", pid))); err == nil {
			when[pid] = st.ModTime()
			if st.ModTime().After(last) {
				last = st.ModTime()
			}
		}
	}
	refused := len(when) > 0
	for pid, t := range when {
		if last.Sub(t) > r.cfg.Liveness+r.cfg.Timeout {
			continue
		}
		line := why[pid]
		if line == "" {
			line = fmt.Sprintf("pid %d gave up, saying nothing", pid)
		}
		res.Ended = append(res.Ended, t.Format("15:04:05.000")+" "+line)
		refused = refused && strings.Contains(line, quorumRefusal)
	}
	sort.Strings(res.Ended)
	// The faults before the end: what took the majority out. A refusal is the contract's
	// answer only when they could have: faults that take members out, at least half of the
	// largest comm refused (a split takes out up to half). Fewer, and the library dropped
	// members that were there: a loss.
	biggest := 0
	for _, l := range res.Ended {
		var k, n int
		if i := strings.Index(l, "only "); i >= 0 {
			if _, err := fmt.Sscanf(l[i:], "only %d of %d members", &k, &n); err == nil {
				biggest = max(biggest, n)
			}
		}
	}
	taken := 0
	r.mu.Lock()
	for _, f := range r.injected {
		if !last.IsZero() && f.at.After(last.Add(-3*r.cfg.Liveness-r.cfg.Timeout)) && f.at.Before(last) {
			res.Ended = append(res.Ended, fmt.Sprintf("%s fault %s", f.at.Format("15:04:05.000"), f.kind))
			switch {
			case f.kind == "link-long":
				taken += biggest / 2
			case removing(f.kind):
				taken++
			}
		}
	}
	r.mu.Unlock()
	if refused && 2*taken < biggest {
		refused = false
		res.Ended = append(res.Ended, fmt.Sprintf("not a refusal the faults explain: %d member(s) taken out before it, of comms of %d", taken, biggest))
	}
	res.Refused = refused
	what := "no member was left"
	if refused {
		what = "the members left were refused by the quorum rule (refused, not lost)"
	}
	msg := fmt.Sprintf("kylixrun ended %v into the faults, before the job was told to end: %s", res.FaultsRan.Round(time.Second), what)
	if !res.Lost {
		msg = "every member gave up or died after the faults: " + what
	}
	if refused {
		r.logf("%s", msg)
	} else {
		res.Problems = append(res.Problems, msg)
	}
}
