package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"kylix/cmd/kylixrun/internal/tagfeed"
)

// job is one run of the launcher.
type job struct {
	cfg            *config
	cwd            string
	stdout, stderr *lineWriter
	ranks          []*rank
	exits          chan rankExit
	rv             rendezvousServer         // the ranks' failure reports (causeLine)
	hosts          []string                 // by rank: where it runs, "" for local (placement)
	rvAddr, secret string                   // what joiners are given (elastic.go)
	restartsLeft   int                      // --restarts not yet used
	joiners        int                      // joiners started so far: the next is j<joiners>
	admitted       atomic.Int64             // joiners that resizes admitted (watchAdmissions)
	sshSlots       map[string]chan struct{} // ssh startups in progress, by host (sshSlot)
	watching       sync.WaitGroup           // the ranks' watch goroutines: each reaps its rank
	tagMu          sync.Mutex               // tracked, and each tracked rank's cur (tags.go)
	tracked        []*rank                  // every process started, for the tags to follow resizes
	feed           *tagfeed.Feed            // the resizes, served to kylixrun --join launchers
	joinPrefix     string                   // a kylixrun --join's name for its joiners: j<pid>
}

type rankExit struct {
	r  *rank
	st exitStatus
}

// Exit codes of the launcher itself.
const (
	exitJobTimeout = 124
	exitCannotExec = 126
	exitNotFound   = 127
)

// logf writes one of the launcher's own lines, stamped like the library's (core.Logf): UTC to
// the millisecond, so they sort with the ranks' lines. core.Logf itself labels its lines with a
// rank and writes past the launcher's line-at-a-time writer, so the layout is repeated here.
func (j *job) logf(format string, args ...any) {
	j.stderr.writeOwnLine(time.Now().UTC().Format(logTime) + " kylixrun: " + fmt.Sprintf(format, args...) + "\n")
}

// logTime is core.Logf's time layout.
const logTime = "2006-01-02T15:04:05.000Z"

// newSecret is 32 random bytes in hex, fresh for every job.
func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// run starts the job, supervises it and returns the launcher's exit code.
func (j *job) run() int {
	c := j.cfg
	p, code := j.preflight()
	if p == nil {
		return code
	}
	rv, err := startRendezvous(p.bind, c.n, p.secret, c.rendezvousTimeout())
	if err != nil {
		j.logf("cannot serve the rendezvous on %s: %v", p.bind, err)
		return 1
	}
	defer rv.Close()
	j.rv = rv
	rvAddr := rv.Addr()
	if p.remoteHost != "" {
		if rvAddr, err = advertised(rvAddr, c.rvHost, p.remoteHost); err != nil {
			j.logf("%v", err)
			return 1
		}
	}

	j.hosts, j.rvAddr, j.secret, j.restartsLeft = p.hosts, rvAddr, p.secret, c.restarts
	var tagsAddr string
	if c.jobFile != "" {
		// Other launchers' joiners may come: their tags follow the resizes too.
		if j.feed, err = tagfeed.Serve(p.bind, p.secret); err != nil {
			j.logf("cannot serve the tag feed on %s: %v", p.bind, err)
			return 1
		}
		defer j.feed.Close()
		tagsAddr = j.feed.Addr()
		if p.remoteHost != "" {
			if tagsAddr, err = advertised(tagsAddr, c.rvHost, p.remoteHost); err != nil {
				j.logf("%v", err)
				return 1
			}
		}
	}
	if c.elastic {
		j.watchAdmissions(rv)
	}
	if c.jobFile != "" {
		wrote, err := writeJobFile(c.jobFile, jobFile{Join: rvAddr, Secret: p.secret, Tags: tagsAddr})
		if err != nil {
			j.logf("--job-file: cannot write %s: %v", c.jobFile, err)
			return 1
		}
		defer removeJobFile(c.jobFile, wrote)
	}

	// Signals are caught before the first rank starts, so none can slip past the forwarding.
	sigs := catchSignals()
	defer signal.Reset(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGPIPE)

	code, stopping := j.start(p, rvAddr, sigs)
	code = j.supervise(sigs, code, stopping)
	j.finish(sigs)
	return code
}

// finish waits until every rank is reaped and its process group gone (watch), then for the
// output still in the pipes: the launcher leaves nothing behind. A signal meanwhile does not
// wait for the grace: what is left of the groups gets SIGKILL.
func (j *job) finish(sigs <-chan os.Signal) {
	done := make(chan struct{})
	go func() {
		j.watching.Wait()
		close(done)
	}()
	for {
		select {
		case <-done:
			j.drainOutput()
			return
		case sig := <-sigs:
			j.killLeftovers(sig.(syscall.Signal))
		}
	}
}

// killLeftovers answers a signal that came once every rank's process had exited: the job is
// over, and the signal only hastens the end of what the ranks left in their groups (SIGKILL
// instead of the grace).
func (j *job) killLeftovers(sig syscall.Signal) {
	for _, r := range j.ranks {
		if groupAlive(r.pid) {
			j.logf("got %s; sending SIGKILL to what %s left in its group", sigName(sig), r.where())
			_ = syscall.Kill(-r.pid, syscall.SIGKILL)
		}
	}
}

// drainOutput waits for the output still in the pipes to be copied out; a pipe that a runaway
// process keeps open past its group's end does not hold the launcher.
func (j *job) drainOutput() {
	done := make(chan struct{})
	go func() {
		for _, r := range j.ranks {
			r.pumps.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

// catchSignals turns the signals the launcher forwards into messages, and keeps a closed stdout
// from killing it; signal.Reset(SIGINT, SIGHUP, SIGTERM, SIGPIPE) undoes it.
func catchSignals() chan os.Signal {
	sigs := make(chan os.Signal, 8)
	// SIGINT and SIGTERM are taken even when the launcher was started with them ignored ("&" in
	// a script ignores SIGINT): the job must stop when asked. Only SIGHUP ignored (nohup) stays
	// ignored, for the ranks too.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	// A closed stdout must fail the write of the --tag-output copier, not kill the launcher.
	// (Notify, unlike Ignore, is not inherited by the ranks.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return sigs
}

// placement is what preflight settles before anything starts.
type placement struct {
	hosts      []string // by rank; "" for a local rank
	remoteHost string   // the first remote host, "" when every rank is local
	secret     string
	bind       string // where the rendezvous listens
}

// preflight places the ranks and checks that the program (and ssh, for remote ranks) can run,
// so that such a failure is reported before any rank starts. It returns nil and the exit code
// when the job cannot start.
func (j *job) preflight() (*placement, int) {
	c := j.cfg
	p := &placement{hosts: placeRanks(c.hosts, c.n)}
	anyLocal := false
	for i, h := range p.hosts {
		if isLocalHost(h) {
			p.hosts[i] = ""
			anyLocal = true
		} else if p.remoteHost == "" {
			p.remoteHost = h
		}
	}
	if anyLocal {
		if _, err := exec.LookPath(c.argv[0]); err != nil {
			j.logf("cannot run %s: %v", c.argv[0], err)
			return nil, execErrorCode(err)
		}
	}
	if p.remoteHost != "" {
		if _, err := exec.LookPath(c.ssh[0]); err != nil {
			j.logf("cannot run %s for the remote ranks: %v", c.ssh[0], err)
			return nil, execErrorCode(err)
		}
	}
	var err error
	if j.cwd, err = os.Getwd(); err != nil && p.remoteHost != "" {
		j.logf("cannot find the working directory for remote ranks: %v", err)
		return nil, 1
	}
	if p.secret, err = newSecret(); err != nil {
		j.logf("cannot make a job secret: %v", err)
		return nil, 1
	}
	// Local jobs stay on loopback; with remote ranks every interface listens, IPv4 and IPv6.
	p.bind = "127.0.0.1:0"
	if p.remoteHost != "" {
		p.bind = ":0"
	}
	return p, 0
}

// start starts the ranks in order, each with its environment, and a watcher for each. A
// signal during the ssh startups, or a rank that cannot start, stops the starting: it returns
// the exit code so far and whether the job is stopping.
func (j *job) start(p *placement, rvAddr string, sigs <-chan os.Signal) (code int, stopping bool) {
	c := j.cfg
	j.exits = make(chan rankExit, c.n+c.restarts)
	for id := 0; id < c.n; id++ {
		var release func()
		if p.hosts[id] != "" {
			var sig os.Signal
			if release, sig = j.sshSlot(p.hosts[id], sigs); sig != nil {
				s := sig.(syscall.Signal)
				j.logf("got %s while starting the ranks; stopping the %d started", sigName(s), len(j.ranks))
				return 128 + int(s), true
			}
		}
		spec := rankSpec{id: id, joiner: -1, of: -1, host: p.hosts[id], release: release}
		if _, err := j.launch(spec, jobVars(c, id, rvAddr, p.secret)); err != nil {
			j.logf("cannot start rank %d: %v", id, err)
			return execErrorCode(err), true
		}
	}
	return 0, false
}

// launch starts one process with the job's variables vars (plus its share of the threads of
// its host), adds it to j.ranks and watches it. s.env is filled in here.
func (j *job) launch(s rankSpec, vars []string) (*rank, error) {
	slot := s.id
	if s.of >= 0 {
		slot = s.of // a relaunch takes the dead rank's place on its host
	}
	if slot < len(j.hosts) {
		if t := localThreads(j.hosts, slot, os.Getenv("KYLIX_THREADS")); t != "" {
			vars = append(vars, "KYLIX_THREADS="+t)
		}
		// The library's Go runtime likewise: ranks that share the cores do not each keep
		// threads spinning for work on all of them.
		if t := localThreads(j.hosts, slot, os.Getenv("GOMAXPROCS")); t != "" {
			vars = append(vars, "GOMAXPROCS="+t)
		}
	}
	s.env = rankEnv(os.Environ(), vars)
	r, err := j.startRank(s)
	if err != nil {
		if s.release != nil {
			s.release()
		}
		return nil, err
	}
	j.ranks = append(j.ranks, r)
	j.track(r)
	j.watching.Add(1)
	go j.watch(r)
	return r, nil
}

// execErrorCode is the shell's code for a program that cannot be run.
func execErrorCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExec
}

// rendezvousTimeout bounds each exchange of the rendezvous with a rank: the ranks' own
// timeout, or the library's default.
func (c *config) rendezvousTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return 30 * time.Second
}

// advertised turns the rendezvous' listening address ([::]:port) into one remote ranks can
// dial: the --rendezvous-host given, else the local address the kernel would use to reach the
// first remote host, else this machine's hostname.
func advertised(listen, rvHost, remoteHost string) (string, error) {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("rendezvous address %q: %v", listen, err)
	}
	if rvHost != "" {
		return net.JoinHostPort(rvHost, port), nil
	}
	// ssh's user@host: the route is to host.
	if at := strings.LastIndexByte(remoteHost, '@'); at >= 0 {
		remoteHost = remoteHost[at+1:]
	}
	// UDP "connects" only pick a route; nothing is sent.
	if conn, err := net.Dial("udp", net.JoinHostPort(remoteHost, "9")); err == nil {
		ip := conn.LocalAddr().(*net.UDPAddr).IP
		conn.Close()
		if !ip.IsLoopback() && !ip.IsUnspecified() {
			return net.JoinHostPort(ip.String(), port), nil
		}
	}
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("cannot tell remote ranks where the rendezvous is (give --rendezvous-host): %v", err)
	}
	return net.JoinHostPort(name, port), nil
}

// replicaSet tracks, with replication, how many replicas of each node have not failed: rank r
// is a replica of node r % (n/s). A failed rank whose node still has a live replica is routed
// around by the library, so the job goes on (include/kylix.h, replication).
type replicaSet struct {
	m    int   // nodes
	live []int // per node: replicas that have not failed
}

func replicaNodes(n, s int) *replicaSet {
	if s <= 1 || n%s != 0 {
		return nil
	}
	rs := &replicaSet{m: n / s, live: make([]int, n/s)}
	for i := range rs.live {
		rs.live[i] = s
	}
	return rs
}

func (rs *replicaSet) of(rank int) int { return rank % rs.m }

// lose records that rank failed and reports whether its node still has a live replica (and
// how many).
func (rs *replicaSet) lose(rank int) (left int, tolerated bool) {
	if rs == nil {
		return 0, false
	}
	g := rank % rs.m
	rs.live[g]--
	return rs.live[g], rs.live[g] > 0
}

// replicas is the job's replication: --replication, else KYLIX_REPLICATION, else 1.
func (c *config) replicas() int {
	if c.replication > 0 {
		return c.replication
	}
	if s, err := strconv.Atoi(os.Getenv("KYLIX_REPLICATION")); err == nil && s > 0 {
		return s
	}
	return 1
}
