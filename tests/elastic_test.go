package tests

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"kylix/internal/freeport"
	"kylix/tests/chaos"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Elastic membership from C (c/elastic.c): the ranks are started by this driver, not kylixrun,
// so that joiners can be started with only KYLIX_JOIN and the job's KYLIX_SECRET, as a user
// would from another shell; the join address is then rank 0's own rendezvous (ServeOwn).

// elasticRun is one elastic job: members, joiners and strangers, each a process.
type elasticRun struct {
	t      *testing.T
	prog   string
	dir    string // marker files
	rv     string // the rendezvous, and join address
	secret string
	env    []string // extra KYLIX_ settings for everyone
	args   []string
	wrap   func(id int) []string // a command that runs the program (ip netns exec NS), or nil

	mu    sync.Mutex
	procs map[int]*eproc // by ELASTIC_ID
}

type eproc struct {
	id   int
	cmd  *exec.Cmd
	out  *syncBuf
	done chan struct{}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newElastic(t *testing.T, env []string, args ...string) *elasticRun {
	t.Helper()
	rv := freeport.Loopback(t, 1)[0]
	return &elasticRun{t: t, prog: program(t, "elastic"), dir: t.TempDir(), rv: rv,
		secret: fmt.Sprintf("elastic-%d", time.Now().UnixNano()), env: env, args: args, procs: map[int]*eproc{}}
}

// baseEnv is this process's environment without KYLIX_ settings, which the job sets.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KYLIX_") {
			env = append(env, kv)
		}
	}
	return env
}

func (e *elasticRun) start(id int, env ...string) *eproc {
	e.t.Helper()
	full := append(baseEnv(), e.env...)
	full = append(full, env...)
	full = append(full, "ELASTIC_ID="+strconv.Itoa(id))
	argv := append([]string{e.prog, e.args[0], e.dir}, e.args[1:]...)
	if e.wrap != nil {
		argv = append(e.wrap(id), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = full
	p := &eproc{id: id, cmd: cmd, out: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("starting process %d: %v", id, err)
	}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	e.mu.Lock()
	e.procs[id] = p
	e.mu.Unlock()
	e.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// members starts ranks 0..n-1 of an elastic job.
func (e *elasticRun) members(n int, env ...string) {
	for r := 0; r < n; r++ {
		e.start(r, append([]string{"KYLIX_RANK=" + strconv.Itoa(r), "KYLIX_SIZE=" + strconv.Itoa(n),
			"KYLIX_RENDEZVOUS=" + e.rv, "KYLIX_SECRET=" + e.secret, "KYLIX_ELASTIC=1"}, env...)...)
	}
}

// joiner starts a process that joins the job with KYLIX_JOIN and the secret only.
func (e *elasticRun) joiner(id int, env ...string) *eproc {
	return e.start(id, append([]string{"KYLIX_JOIN=" + e.rv, "KYLIX_SECRET=" + e.secret}, env...)...)
}

// marker waits for a file rank 0 writes, or fails after limit.
func (e *elasticRun) marker(name string, limit time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(filepath.Join(e.dir, name)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("marker %s did not appear within %v\n%s", name, limit, e.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *elasticRun) mark(name string) {
	if err := os.WriteFile(filepath.Join(e.dir, name), nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// wait waits for every process (bounded), then returns the lines by process id.
func (e *elasticRun) wait(limit time.Duration) map[int][]line {
	e.t.Helper()
	deadline := time.After(limit)
	e.mu.Lock()
	procs := make([]*eproc, 0, len(e.procs))
	for _, p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			e.t.Errorf("process %d still running after %v: killed\n%s", p.id, limit, e.dump())
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if os.Getenv("KYLIX_TEST_OUTPUT") != "" {
		e.t.Log(e.dump())
	}
	lines := map[int][]line{}
	for _, p := range procs {
		sc := bufio.NewScanner(strings.NewReader(p.out.String()))
		for sc.Scan() {
			if m := lineRE.FindStringSubmatch(sc.Text()); m != nil {
				id, _ := strconv.Atoi(m[1]) // a process's id is the rank it prints (kylixrun's output holds several)
				lines[id] = append(lines[id], line{m[2], m[3]})
			}
		}
	}
	return lines
}

func (e *elasticRun) dump() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int, 0, len(e.procs))
	for id := range e.procs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "--- process %d ---\n%s", id, e.procs[id].out.String())
	}
	return b.String()
}

// expectPass checks that each process printed a PASS containing want, DONE fails=0 and no FAIL.
func (e *elasticRun) expectPass(lines map[int][]line, ids []int, want string) {
	e.t.Helper()
	var problems []string
	for _, id := range ids {
		pass, done := false, false
		for _, l := range lines[id] {
			switch {
			case l.Kind == "FAIL":
				problems = append(problems, fmt.Sprintf("process %d: FAIL %s", id, l.Text))
			case l.Kind == "PASS" && strings.Contains(l.Text, want):
				pass = true
			case l.Kind == "DONE" && l.Text == "fails=0":
				done = true
			}
		}
		if !pass || !done {
			problems = append(problems, fmt.Sprintf("process %d: PASS %q %v, DONE fails=0 %v", id, want, pass, done))
		}
	}
	if len(problems) > 0 {
		e.t.Errorf("%s\n%s", strings.Join(problems, "\n"), e.dump())
	}
}

func slot() func() {
	jobSlots <- struct{}{}
	return func() { <-jobSlots }
}

// Ramp-up (seed 004 §5): 2 ranks run a checked loop, 2 joiners come, then 2 more: 2 -> 4 -> 6.
func TestElasticRampUp(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=40000", "KYLIX_LOG=info"}, "ramp", "2,4,6")
	e.members(2)
	e.joiner(100)
	e.joiner(101)
	e.marker("resized.4", 60*time.Second)
	e.joiner(102)
	e.joiner(103)
	lines := e.wait(120 * time.Second)
	e.expectPass(lines, []int{0, 1, 100, 101, 102, 103}, "ramp: rank")
}

// min_size: a resize that no joiner can meet gives TIMEOUT and the comm goes on unchanged; then
// one waits for the joiner. Meanwhile strangers at the join port change nothing: a joiner with
// the wrong secret gets AUTH, one of another protocol version AUTH naming both versions, and
// garbage, a forged length and a half-open connection stay there through both resizes.
func TestElasticMinSizeWrongSecret(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=20000"}, "minwait")
	e.members(2)
	bad := &elasticRun{t: t, prog: e.prog, dir: e.dir, rv: e.rv, secret: "wrong", args: []string{"badjoin"}, procs: e.procs}
	bad.joiner(200)
	hostile := strangersAtJoinPort(t, e.rv)
	defer hostile()
	e.marker("timedout", 60*time.Second)
	e.joiner(100)
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{200}, "badjoin: refused with AUTH")
	e.expectPass(lines, []int{0, 1, 100}, "minwait: rank")
	e.expectPass(lines, []int{0, 1}, "min_size: TIMEOUT with c unchanged")
}

// Failure-ignorance (§6): kill -9 of a rank, the others resize without it and go on, then the
// relaunched process rejoins.
func TestElasticKillRejoin(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=40000", "KYLIX_LIVENESS_MS=2000", "KYLIX_LOG=info"}, "fail", "2", "3")
	e.members(3)
	select {
	case <-e.procs[2].done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the victim did not die\n%s", e.dump())
	}
	if ws, ok := e.procs[2].cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the victim ended with %v, want SIGKILL", e.procs[2].cmd.ProcessState)
	}
	// Relaunched once the survivors have shrunk without it: a replacement already waiting at
	// the join server would rightly be admitted by the failure-ignorance resize itself.
	e.marker("shrunk", 60*time.Second)
	e.joiner(100)
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1, 100}, "failure-ignorance and rejoin")
}

// A joiner that stops (SIGSTOP) while waiting holds a resize up by liveness_ms at most and is
// passed over; resumed, it is admitted at the next resize.
func TestElasticStalledJoiner(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=40000", "KYLIX_LIVENESS_MS=1500"}, "stall")
	e.members(2)
	j := e.joiner(100)
	// Stop it once it waits at the join server: connected, then a moment to authenticate.
	_, port, _ := net.SplitHostPort(e.rv)
	deadline := time.Now().Add(60 * time.Second)
	for p, _ := strconv.Atoi(port); !chaos.ConnectedTo(j.cmd.Process.Pid, p); {
		if time.Now().After(deadline) {
			t.Fatalf("the joiner never connected to the join port\n%s", e.dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(j.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e.mark("stopped")
	e.marker("passed", 60*time.Second)
	syscall.Kill(j.cmd.Process.Pid, syscall.SIGCONT)
	e.mark("resumed")
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1}, "stalled joiner: a resize took")
	e.expectPass(lines, []int{0, 1, 100}, "stall: rank")
}

// An ireduce in flight when the members call kylix_resize: the resize waits for it, its
// kylix_wait returns OK with the old comm's sums, and its plan no longer reduces.
func TestElasticIreduceInFlight(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=30000"}, "inflight")
	e.members(3)
	e.joiner(100)
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1, 2}, "inflight: the ireduce in flight completed")
	e.expectPass(lines, []int{0, 1, 2, 100}, "inflight: rank")
}

// Replication 2: a replica dies, a joiner takes its place, and the results are bitwise those of
// an unreplicated job of the same nodes.
func TestElasticReplicaReplaced(t *testing.T) {
	t.Parallel()
	defer slot()()
	ref := newElastic(t, []string{"KYLIX_TIMEOUT_MS=30000"}, "ref")
	ref.members(2)
	refLines := ref.wait(60 * time.Second)
	ref.expectPass(refLines, []int{0, 1}, "ref: rank")

	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=40000", "KYLIX_LIVENESS_MS=2000"}, "replica", "3")
	e.members(4, "KYLIX_REPLICATION=2")
	select {
	case <-e.procs[3].done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the victim did not die\n%s", e.dump())
	}
	e.joiner(100)
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1, 2, 100}, "replica: rank")
	want := map[string]string{}
	for _, l := range refLines[0] {
		if l.Kind == "DIGEST" {
			f := strings.Fields(l.Text)
			want[f[0]] = f[len(f)-1]
		}
	}
	if len(want) != 2 {
		t.Fatalf("the reference printed digests %v\n%s", want, ref.dump())
	}
	for _, id := range []int{0, 1, 2, 100} {
		n := 0
		for _, l := range lines[id] {
			if l.Kind != "DIGEST" {
				continue
			}
			f := strings.Fields(l.Text)
			n++
			if f[len(f)-1] != want[f[0]] {
				t.Errorf("process %d: %s digest %s, the unreplicated job's %s", id, f[0], f[len(f)-1], want[f[0]])
			}
		}
		if n == 0 {
			t.Errorf("process %d printed no digest", id)
		}
	}
}

// 200 resizes (nobody joining: each one still agrees, opens a listener and asks the join
// server) with fds, RSS and threads flat.
func TestElasticCycles(t *testing.T) {
	t.Parallel()
	defer slot()()
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=30000"}, "cycles", "200")
	e.members(3)
	lines := e.wait(140 * time.Second)
	e.expectPass(lines, []int{0, 1, 2}, "cycles: 200 resizes")
}

// A network split (two network namespaces, the link cut while the job runs): the half with rank
// 0 resizes and goes on, the other half gets PEER from its resize. Needs root and iproute2.
func TestElasticNetworkSplit(t *testing.T) {
	needNetns(t, "ip")
	t.Parallel()
	defer slot()()
	tag := strconv.Itoa(os.Getpid() % 100000)
	nsA, nsB, veth := "kxsplA"+tag, "kxsplB"+tag, "kxsp"+tag
	twoNamespaces(t, nsA, nsB, veth)
	const n = 4
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=30000", "KYLIX_LIVENESS_MS=2000", "KYLIX_SHM=off"}, "split")
	e.rv = "10.201.0.1:7300"
	e.wrap = func(id int) []string {
		ns := nsA
		if id >= n/2 {
			ns = nsB
		}
		return []string{"ip", "netns", "exec", ns}
	}
	e.members(n)
	for r := 0; r < n; r++ {
		e.marker("ready."+strconv.Itoa(r), 60*time.Second)
	}
	if out, err := runTool(".", 20*time.Second, "ip", "-n", nsA, "link", "set", veth+"-a", "down"); err != nil {
		t.Fatalf("cutting the link: %v: %s", err, out)
	}
	e.mark("cut")
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1}, "split: this side went on")
	e.expectPass(lines, []int{2, 3}, "split: this side stopped with PEER")
}

// The contract with the launcher: a job under kylixrun --elastic is joined at its rendezvous
// address, KYLIX_RENDEZVOUS, with its secret; rank 0 writes both (and checks that
// kylix_join_address gives the address) for this driver, which starts the joiner itself.
func TestElasticUnderKylixrun(t *testing.T) {
	t.Parallel()
	defer slot()()
	dir := setup(t)
	e := newElastic(t, []string{"KYLIX_TIMEOUT_MS=20000", "KYLIX_ELASTIC=1"}, "minwait")
	e.wrap = func(int) []string {
		return []string{filepath.Join(dir, "kylixrun"), "-n", "2", "--elastic", "--job-timeout", "100", "--"}
	}
	e.start(0)
	e.marker("timedout", 60*time.Second)
	b, err := os.ReadFile(filepath.Join(e.dir, "join.env"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("join.env: %q", b)
	}
	e.rv, e.secret = f[0], f[1]
	e.wrap = nil
	e.joiner(100)
	lines := e.wait(90 * time.Second)
	e.expectPass(lines, []int{0, 1, 100}, "minwait: rank")
}

// strangersAtJoinPort speaks to a running job's join port as strangers do: a join of protocol
// version 99 (refused with AUTH naming both versions), garbage, a forged length, and a connection
// that says nothing. It returns what closes the connections still open.
func strangersAtJoinPort(t *testing.T, addr string) func() {
	t.Helper()
	var conns []net.Conn
	dial := func() net.Conn {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conns = append(conns, c)
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("the join port %s: %v", addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	frame := func(b []byte) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...) }
	c := dial()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var lb [4]byte
	if _, err := io.ReadFull(c, lb[:]); err != nil {
		t.Fatalf("no challenge from the join port: %v", err)
	}
	io.CopyN(io.Discard, c, int64(binary.LittleEndian.Uint32(lb[:])))
	c.Write(frame([]byte(`{"type":"join","v":99,"addr":"127.0.0.1:9","nonce":"AAAA","proof":"AAAA"}`)))
	if _, err := io.ReadFull(c, lb[:]); err != nil {
		t.Fatalf("no answer to a join of version 99: %v", err)
	}
	body := make([]byte, binary.LittleEndian.Uint32(lb[:]))
	io.ReadFull(c, body)
	var m struct {
		Type  string `json:"type"`
		Code  int    `json:"code"`
		Error string `json:"error"`
	}
	json.Unmarshal(body, &m)
	if m.Type != "error" || m.Code != 6 || !strings.Contains(m.Error, "version 1") || !strings.Contains(m.Error, "99") {
		t.Errorf("a joiner of version 99 got %s, want an AUTH error (6) naming versions 1 and 99", body)
	}
	dial().Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	dial().Write(binary.LittleEndian.AppendUint32(nil, 1<<31))
	dial() // half-open: says nothing
	return func() {
		for _, c := range conns {
			c.Close()
		}
	}
}
