package tests

// Launchers other than a local kylixrun, for real:
//
//   - TestMpirun: Open MPI's mpirun starts c/launch_check.c with nothing but KYLIX_RENDEZVOUS
//     (rank 0 serves it) or a static KYLIX_PEERS table, and KYLIX_SECRET.
//   - TestKylixrunSSHNetns: kylixrun --hosts over real ssh to two sshds in two network
//     namespaces joined by a veth pair, as if they were two machines.
//
// Missing tools are installed by tests/netns/deps.sh, which make test runs first; a test whose
// tools are missing is skipped, naming them. TestKylixrunSSHNetns also skips when not root or
// when `ip netns add` fails (no CAP_SYS_ADMIN, no netns support). Namespaces,
// sshds and whatever runs in the namespaces are removed on every path (t.Cleanup).

import (
	"bytes"
	"fmt"
	"kylix/internal/freeport"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const launcherDeadline = 90 * time.Second // hard bound on one mpirun or kylixrun here

var (
	depsMu   sync.Mutex
	depsDone = map[string]error{}
)

// missingDeps asks tests/netns/deps.sh what (mpi or ssh) whether its packages are installed,
// once per test binary. A Go test never installs packages: make test runs deps.sh first.
func missingDeps(what string) error {
	depsMu.Lock()
	defer depsMu.Unlock()
	if err, ok := depsDone[what]; ok {
		return err
	}
	cmd := exec.Command("sh", filepath.Join(repoRoot(), "tests", "netns", "deps.sh"), what)
	cmd.Env = append(os.Environ(), "DEPS_CHECK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%s (make test installs them with tests/netns/deps.sh %s)", strings.TrimSpace(string(out)), what)
	}
	depsDone[what] = err
	return err
}

// runBounded runs cmd (not started yet) in its own process group, bounded by limit (then the
// group is stopped), and parses the check.h lines of its combined output.
func runBounded(t *testing.T, cmd *exec.Cmd, limit time.Duration) *result {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &out, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	r := &result{Cmd: strings.Join(cmd.Args, " "), Lines: map[int][]line{}}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", r.Cmd, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
		r.Code = cmd.ProcessState.ExitCode()
		if werr != nil && r.Code == 0 {
			r.Code = -2
			t.Errorf("%s: %v", r.Cmd, werr)
		}
	case <-time.After(limit):
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
		r.Code = -1
		t.Errorf("%s: still running after %v; stopped it", r.Cmd, limit)
	}
	r.Elapsed = time.Since(start)
	r.Output = out.String()
	for _, l := range strings.Split(r.Output, "\n") {
		if m := lineRE.FindStringSubmatch(l); m != nil {
			rk, _ := strconv.Atoi(m[1])
			r.Lines[rk] = append(r.Lines[rk], line{m[2], m[3]})
		}
	}
	t.Logf("%s: exit %d in %.2fs", r.Cmd, r.Code, r.Elapsed.Seconds())
	if testing.Verbose() && os.Getenv("KYLIX_TEST_OUTPUT") != "" {
		t.Log(r.dump())
	}
	return r
}

// whereInfo returns the "where" INFO fields of rank rk (launcher=, netns=, ...).
func (r *result) whereInfo(rk int) map[string]string {
	m := map[string]string{}
	for _, s := range r.find(rk, "INFO") {
		if rest, ok := strings.CutPrefix(s, "where "); ok {
			for _, f := range strings.Fields(rest) {
				if k, v, ok := strings.Cut(f, "="); ok {
					m[k] = v
				}
			}
		}
	}
	return m
}

// ---------------------------------------------------------------- mpirun

// openMPI finds Open MPI's mpirun: Debian's mpirun.openmpi (there even when the mpirun
// alternative is MPICH's), or an mpirun that says it is Open MPI.
func openMPI() (string, error) {
	var tried []string
	for _, name := range []string{"mpirun.openmpi", "mpirun"} {
		path, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		out, err := runTool(".", 30*time.Second, path, "--version")
		if err == nil && strings.Contains(out, "Open MPI") {
			return path, nil
		}
		tried = append(tried, fmt.Sprintf("%s --version: %v: %q", path, err, strings.TrimSpace(out)))
	}
	return "", fmt.Errorf("no Open MPI mpirun: %s", strings.Join(tried, "; "))
}

func TestMpirun(t *testing.T) {
	mpirun, err := openMPI()
	if err != nil {
		if derr := missingDeps("mpi"); derr != nil {
			t.Skipf("%v; %v", err, derr)
		}
		t.Fatalf("tests/netns/deps.sh finds Open MPI installed, but: %v", err)
	}
	prog := program(t, "launch_check")
	const n = 3
	secret := "mpirun-test-secret"
	mpi := func(t *testing.T, env []string, argv ...string) *result {
		args := []string{"--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n", strconv.Itoa(n)}
		for _, kv := range env {
			args = append(args, "-x", kv)
		}
		cmd := exec.Command(mpirun, append(args, argv...)...)
		cmd.Dir = t.TempDir()
		// No stray KYLIX_* of the caller's environment (a kylixrun around go test) may leak in.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KYLIX_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		return runBounded(t, cmd, launcherDeadline)
	}
	clean := func(t *testing.T, r *result) {
		t.Helper()
		r.expectClean(t, allRanks(n)...)
		for rk := 0; rk < n; rk++ {
			if w := r.whereInfo(rk); w["launcher"] != "openmpi" || w["launcher_rank"] != strconv.Itoa(rk) {
				t.Errorf("rank %d did not take its rank from Open MPI's variables: %v\n%s", rk, w, r.dump())
			}
		}
	}

	// Rank 0 serves the rendezvous: on 127.0.0.1, and under this host's name (which rank 0
	// serves on every interface).
	t.Run("rendezvous", func(t *testing.T) {
		rv := freeport.Loopback(t, 1)[0]
		r := mpi(t, []string{"KYLIX_RENDEZVOUS=" + rv, "KYLIX_SECRET=" + secret, "KYLIX_TIMEOUT_MS=20000"}, prog)
		clean(t, r)
	})
	t.Run("rendezvous_hostname", func(t *testing.T) {
		host, err := os.Hostname()
		if err != nil || host == "" {
			t.Skipf("no hostname: %v", err)
		}
		if _, err := net.LookupHost(host); err != nil {
			t.Skipf("this host's name %q does not resolve: %v", host, err)
		}
		_, port, _ := net.SplitHostPort(freeport.Loopback(t, 1)[0])
		r := mpi(t, []string{"KYLIX_RENDEZVOUS=" + net.JoinHostPort(host, port), "KYLIX_SECRET=" + secret,
			"KYLIX_TIMEOUT_MS=20000"}, prog)
		clean(t, r)
	})
	// A static peers table, the other recipe of the README.
	t.Run("static_peers", func(t *testing.T) {
		peers := strings.Join(freeport.Loopback(t, n), ",")
		r := mpi(t, []string{"KYLIX_PEERS=" + peers, "KYLIX_SECRET=" + secret, "KYLIX_TIMEOUT_MS=20000"}, prog)
		clean(t, r)
	})
	// A rank with another secret is refused by rank 0's rendezvous, and the job fails (rank 0
	// times out naming it) instead of running with an intruder.
	t.Run("wrong_secret", func(t *testing.T) {
		rv := freeport.Loopback(t, 1)[0]
		wrap := `if [ "$OMPI_COMM_WORLD_RANK" = 2 ]; then KYLIX_SECRET=not-the-secret; export KYLIX_SECRET; fi; exec "$0"`
		r := mpi(t, []string{"KYLIX_RENDEZVOUS=" + rv, "KYLIX_SECRET=" + secret, "KYLIX_TIMEOUT_MS=3000"}, "sh", "-c", wrap, prog)
		if r.Code == 0 || !strings.Contains(r.Output, "wrong secret") {
			t.Errorf("want a failed job and rank 2 refused for its wrong secret\n%s", r.dump())
		}
		if r.has(0, "PASS", "sparse") || r.has(2, "PASS", "sparse") {
			t.Errorf("a rank ran collectives in a job with a wrong secret\n%s", r.dump())
		}
	})
}

// ---------------------------------------------------------------- kylixrun over ssh in netns

// netnsLab is two network namespaces with an sshd each, joined by a veth pair.
type netnsLab struct {
	dir    string // keys and sshd configs
	ns     [2]string
	addr   [2]string
	netID  [2]string // readlink /proc/self/ns/net inside each namespace
	sshCmd string    // kylixrun --ssh
	sshd   [2]*exec.Cmd
	done   [2]chan struct{} // closed when that sshd has exited
}

func netnsScript(name string) string { return filepath.Join(repoRoot(), "tests", "netns", name) }

// startNetnsLab sets up the namespaces and sshds, or skips the test when it cannot have
// namespaces at all. Everything is undone by t.Cleanup, also when the test fails.
func startNetnsLab(t *testing.T) *netnsLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kylixrun over ssh in network namespaces needs root (ip netns, sshd on port 22)")
	}
	if err := missingDeps("ssh"); err != nil {
		t.Skip(err)
	}
	sweepStaleLabs(t)
	id := strconv.Itoa(os.Getpid())
	lab := &netnsLab{ns: [2]string{"kx-a-" + id, "kx-b-" + id}, addr: [2]string{"10.201.0.1", "10.201.0.2"}}
	if out, err := runTool(".", 20*time.Second, "ip", "netns", "add", lab.ns[0]); err != nil {
		t.Skipf("cannot create a network namespace (ip netns add: %v): %s", err, out)
	}
	if out, err := runTool(".", 20*time.Second, "ip", "netns", "del", lab.ns[0]); err != nil {
		t.Fatalf("ip netns del %s: %v\n%s", lab.ns[0], err, out)
	}

	t.Cleanup(func() {
		if out, err := runTool(".", 30*time.Second, "sh", netnsScript("down.sh"), lab.ns[0], lab.ns[1]); err != nil {
			t.Errorf("down.sh: %v\n%s", err, out)
		}
	})
	if out, err := runTool(".", 30*time.Second, "sh", netnsScript("up.sh"), lab.ns[0], lab.ns[1], "kxv"+id); err != nil {
		t.Fatalf("up.sh: %v\n%s", err, out)
	}
	// Whatever still runs in the namespaces when the test ends was started by it: the sshds
	// (stopped by PID), and anything a broken launcher left behind (reported, then killed).
	t.Cleanup(func() { lab.stop(t) })

	lab.dir = t.TempDir()
	if out, err := runTool(".", 30*time.Second, "sh", netnsScript("keys.sh"), lab.dir); err != nil {
		t.Fatalf("keys.sh: %v\n%s", err, out)
	}
	for i := range lab.ns {
		out, err := runTool(".", 10*time.Second, "ip", "netns", "exec", lab.ns[i], "readlink", "/proc/self/ns/net")
		if err != nil {
			t.Fatalf("reading the id of namespace %s: %v\n%s", lab.ns[i], err, out)
		}
		lab.netID[i] = strings.TrimSpace(out)
		var log bytes.Buffer
		cmd := exec.Command("sh", netnsScript("sshd.sh"), lab.ns[i], lab.addr[i], lab.dir)
		cmd.Stdout, cmd.Stderr = &log, &log
		// sshd.sh execs ip, which execs sshd: the PID is sshd's. Should this test binary die
		// without its cleanups, the kernel stops the sshd.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting sshd in %s: %v", lab.ns[i], err)
		}
		lab.sshd[i], lab.done[i] = cmd, make(chan struct{})
		go func() {
			_ = cmd.Wait()
			if log.Len() > 0 {
				t.Logf("sshd in %s: %s", lab.ns[i], log.String())
			}
			close(lab.done[i])
		}()
	}
	lab.sshCmd = "ssh -i " + filepath.Join(lab.dir, "id") +
		" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10"
	// Both sshds answer, over the veth for the far one, with the test key.
	for i := range lab.addr {
		deadline := time.Now().Add(15 * time.Second)
		for {
			argv := append([]string{"netns", "exec", lab.ns[0]}, strings.Fields(lab.sshCmd)...)
			argv = append(argv, "-o", "BatchMode=yes", lab.addr[i], "readlink /proc/self/ns/net")
			out, err := runTool(".", 15*time.Second, "ip", argv...)
			if err == nil && strings.TrimSpace(out) == lab.netID[i] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ssh from %s to %s: %v\n%s", lab.ns[0], lab.addr[i], err, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return lab
}

// sweepStaleLabs removes the namespaces of earlier runs of this test whose process is gone
// (killed before its cleanups ran, e.g. by go test -timeout), with what still runs in them.
func sweepStaleLabs(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !(strings.HasPrefix(f[0], "kx-a-") || strings.HasPrefix(f[0], "kx-b-")) {
			continue
		}
		pid, err := strconv.Atoi(f[0][len("kx-a-"):])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i < 0 || !bytes.HasPrefix(b[i+1:], []byte(" Z")) {
				continue // that test is still running (not a zombie)
			}
		}
		for _, p := range nsPIDs(f[0]) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if out, err := runTool(".", 30*time.Second, "sh", netnsScript("down.sh"), f[0]); err != nil {
			t.Logf("removing the stale namespace %s: %v\n%s", f[0], err, out)
		} else {
			t.Logf("removed the stale namespace %s of an earlier run", f[0])
		}
	}
}

// nsPIDs lists the processes in namespace ns.
func nsPIDs(ns string) []int {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// leftovers waits up to d for the namespaces to hold nothing but the sshd listeners, and
// returns what else still runs there (pid and command line).
func (lab *netnsLab) leftovers(d time.Duration) map[int]string {
	deadline := time.Now().Add(d)
	for {
		left := map[int]string{}
		for i, ns := range lab.ns {
			for _, p := range nsPIDs(ns) {
				if lab.sshd[i] != nil && p == lab.sshd[i].Process.Pid {
					continue
				}
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
				left[p] = ns + ": " + strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (lab *netnsLab) stop(t *testing.T) {
	for i, c := range lab.sshd {
		if c == nil {
			continue
		}
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case <-lab.done[i]:
		case <-time.After(3 * time.Second):
			t.Errorf("sshd %d in %s ignored SIGTERM; killing it", c.Process.Pid, lab.ns[i])
			_ = c.Process.Kill()
			<-lab.done[i]
		}
	}
	left := lab.leftovers(3 * time.Second)
	for p, what := range left {
		t.Errorf("still running in the test's namespaces at cleanup, killed: pid %d (%s)", p, what)
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// kylixrun runs kylixrun inside namespace A (where 10.201.0.1 is local and 10.201.0.2 is across
// the veth) with the lab's ssh.
func (lab *netnsLab) kylixrun(t *testing.T, args ...string) *result {
	t.Helper()
	dir := setup(t)
	argv := append([]string{"netns", "exec", lab.ns[0], filepath.Join(dir, "kylixrun"),
		"--ssh", lab.sshCmd, "--tag-output", "--job-timeout", "60", "--timeout", "20"}, args...)
	cmd := exec.Command("ip", argv...)
	cmd.Dir = t.TempDir() // the remote ranks cd here too: the namespaces share the filesystem
	return runBounded(t, cmd, launcherDeadline)
}

func TestKylixrunSSHNetns(t *testing.T) {
	lab := startNetnsLab(t)
	prog := program(t, "launch_check")
	a, b := lab.addr[0], lab.addr[1]

	cases := []struct {
		name string
		args []string
		nsOf []int // namespace index of each rank
	}{
		// kylixrun and ranks 0,1 in A (over ssh to A's own sshd), ranks 2,3 across the veth.
		{"hosts", []string{"--hosts", a + ":2," + b + ":2", "--rendezvous-host", a}, []int{0, 0, 1, 1}},
		// Rank 0 far from the launcher, the rendezvous host found from the route to B, and B
		// given as ssh's user@host.
		{"rank0_remote", []string{"--hosts", "root@" + b + ":2," + a + ":1"}, []int{1, 1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lab.kylixrun(t, append(c.args, "--", prog)...)
			r.expectClean(t, allRanks(len(c.nsOf))...)
			for rk, nsi := range c.nsOf {
				if got := r.whereInfo(rk)["netns"]; got != lab.netID[nsi] {
					t.Errorf("rank %d ran in network namespace %q, want %s's %s", rk, got, lab.ns[nsi], lab.netID[nsi])
				}
			}
			if left := lab.leftovers(5 * time.Second); len(left) > 0 {
				t.Errorf("processes left in the namespaces after the job: %v", left)
			}
		})
	}

	// More ranks on one host than sshd's default MaxStartups (10) lets log in at once.
	t.Run("many_ranks_one_host", func(t *testing.T) {
		const n = 24
		r := lab.kylixrun(t, "--hosts", b+":"+strconv.Itoa(n), "--rendezvous-host", a, "--",
			"sh", "-c", `echo "r$KYLIX_RANK PASS started over ssh"; echo "r$KYLIX_RANK DONE fails=0"`)
		r.expectClean(t, allRanks(n)...)
	})

	// ^C to kylixrun reaches the remote ranks through their ssh sessions: all stop, and the
	// launcher exits 130.
	t.Run("interrupt", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command("ip", "netns", "exec", lab.ns[0], filepath.Join(setup(t), "kylixrun"),
			"--ssh", lab.sshCmd, "--job-timeout", "60", "--hosts", a+":2,"+b+":2", "--rendezvous-host", a,
			"--", "sh", "-c", `touch started.$KYLIX_RANK; exec sleep 60`)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		defer func() {
			select {
			case <-done:
			default:
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}()
		deadline := time.Now().Add(30 * time.Second)
		for rk := 0; rk < 4; rk++ {
			for {
				if _, err := os.Stat(filepath.Join(dir, "started."+strconv.Itoa(rk))); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("rank %d did not start within 30s\n%s", rk, out.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		start := time.Now()
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(60 * time.Second): // fail-safe: it stops in seconds
			t.Fatalf("kylixrun still runs 60s after SIGINT\n%s", out.String())
		}
		t.Logf("kylixrun stopped %v after SIGINT", time.Since(start).Round(time.Millisecond))
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("exit %d after SIGINT, want 130\n%s", code, out.String())
		}
		if left := lab.leftovers(10 * time.Second); len(left) > 0 {
			t.Errorf("ranks left running in the namespaces after ^C: %v", left)
		}
	})

	// A remote rank fails: kylixrun exits with its code and stops the others, on both "hosts",
	// through their ssh sessions (not the --job-timeout: they would sleep past it).
	t.Run("remote_failure", func(t *testing.T) {
		script := `if [ "$KYLIX_RANK" = 3 ]; then sleep 0.5; exit 5; fi; exec sleep 287`
		r := lab.kylixrun(t, "--hosts", a+":2,"+b+":2", "--rendezvous-host", a, "--", "sh", "-c", script)
		if r.Code != 5 || !strings.Contains(r.Output, "rank 3 (on "+b+") exited with status 5; stopping the 3 other ranks") {
			t.Errorf("exit %d, want 5 and a message naming rank 3 and the 3 ranks it stops\n%s", r.Code, r.dump())
		}
		if strings.Contains(r.Output, "--job-timeout") {
			t.Errorf("the job ended by its --job-timeout, not by rank 3's failure\n%s", r.dump())
		}
		if left := lab.leftovers(10 * time.Second); len(left) > 0 {
			t.Errorf("ranks left running in the namespaces after the job: %v", left)
		}
	})
}
