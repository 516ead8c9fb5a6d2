package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// twoHosts is a pair of network namespaces joined by a veth, the "hosts" of a job whose link
// the faults cut and slow: A has 10.207.0.1, B 10.207.0.2. kylixrun stays in the harness's
// namespace and serves the rendezvous on 127.0.0.1; a proxy in A makes it reachable from both
// namespaces at rvAddr (the ranks are told it with CHAOS_RV).
type twoHosts struct {
	a, b, veth string
	rvAddr     string
	ln         net.Listener
	target     chan string // kylixrun's rendezvous, once its job file names it
	conns      sync.WaitGroup
	mu         sync.Mutex
	open       map[net.Conn]bool
}

const (
	hostA = "10.207.0.1"
	hostB = "10.207.0.2"
)

// netnsUsable says why namespaces cannot be used here, or "".
func netnsUsable() string {
	if os.Geteuid() != 0 {
		return "network-namespace faults need root (ip netns)"
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found (iproute2: make test installs it with tests/netns/deps.sh)"
		}
	}
	return ""
}

func ipCmd(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newTwoHosts makes the namespaces (names from tag, at most 9 characters) and the proxy. On an
// error everything made so far is undone.
func newTwoHosts(tag string) (h *twoHosts, err error) {
	h = &twoHosts{a: "kxchA" + tag, b: "kxchB" + tag, veth: "kxch" + tag, target: make(chan string, 1), open: map[net.Conn]bool{}}
	defer func() {
		if err != nil {
			h.close()
			h = nil
		}
	}()
	steps := [][]string{
		{"ip", "netns", "add", h.a}, {"ip", "netns", "add", h.b},
		{"ip", "link", "add", h.veth + "-a", "type", "veth", "peer", "name", h.veth + "-b"},
		{"ip", "link", "set", h.veth + "-a", "netns", h.a}, {"ip", "link", "set", h.veth + "-b", "netns", h.b},
		{"ip", "-n", h.a, "addr", "add", hostA + "/24", "dev", h.veth + "-a"},
		{"ip", "-n", h.b, "addr", "add", hostB + "/24", "dev", h.veth + "-b"},
		{"ip", "-n", h.a, "link", "set", "lo", "up"}, {"ip", "-n", h.b, "link", "set", "lo", "up"},
		{"ip", "-n", h.a, "link", "set", h.veth + "-a", "up"}, {"ip", "-n", h.b, "link", "set", h.veth + "-b", "up"},
	}
	for _, s := range steps {
		if err = ipCmd(s...); err != nil {
			return
		}
	}
	if h.ln, err = listenIn(h.a, hostA+":0"); err != nil {
		return
	}
	h.rvAddr = h.ln.Addr().String()
	go h.serve()
	return
}

// listenIn opens a TCP listener inside network namespace ns: a socket belongs to the namespace
// of the thread that made it, so a locked thread enters ns, listens, and ends with its goroutine.
func listenIn(ns, addr string) (net.Listener, error) {
	type res struct {
		ln  net.Listener
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded, still in ns
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- res{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{nil, fmt.Errorf("setns %s: %v", ns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- res{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}

// setTarget tells the proxy kylixrun's rendezvous address.
func (h *twoHosts) setTarget(addr string) { h.target <- addr }

// serve forwards each connection to kylixrun's rendezvous, once it is known.
func (h *twoHosts) serve() {
	var target string
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		if target == "" {
			target = <-h.target
		}
		h.track(c, true)
		h.conns.Add(1)
		go func() {
			defer h.conns.Done()
			h.forward(c, target)
		}()
	}
}

func (h *twoHosts) track(c net.Conn, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.open[c] = true
	} else {
		delete(h.open, c)
	}
}

func (h *twoHosts) forward(c net.Conn, target string) {
	defer h.track(c, false)
	defer c.Close()
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		return
	}
	h.track(up, true)
	defer h.track(up, false)
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// link cuts (or restores) the link between the two namespaces.
func (h *twoHosts) link(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("ip", "-n", h.a, "link", "set", h.veth+"-a", state)
}

// shape holds both directions of the link to rate with tbf (this kernel has no netem), or
// removes the limit when rate is "". The segments are capped at 16 KiB so that a 32 KiB bucket
// holds the largest packet (tests/netns/shape.sh).
func (h *twoHosts) shape(rate string) error {
	for _, end := range [][2]string{{h.a, h.veth + "-a"}, {h.b, h.veth + "-b"}} {
		var err error
		if rate == "" {
			err = ipCmd("tc", "-n", end[0], "qdisc", "del", "dev", end[1], "root")
		} else if err = ipCmd("ip", "-n", end[0], "link", "set", "dev", end[1], "gso_max_size", "16384"); err == nil {
			err = ipCmd("tc", "-n", end[0], "qdisc", "replace", "dev", end[1], "root", "tbf", "rate", rate,
				"burst", "32kb", "latency", "50ms")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// close stops the proxy and deletes the namespaces (and with them the veth).
func (h *twoHosts) close() {
	if h.ln != nil {
		h.ln.Close()
		select { // a proxy still waiting for the target gives up
		case h.target <- "":
		default:
		}
		h.mu.Lock()
		for c := range h.open {
			c.Close()
		}
		h.mu.Unlock()
		h.conns.Wait()
	}
	for _, ns := range []string{h.a, h.b} {
		if nsExists(ns) {
			ipCmd("ip", "netns", "del", ns)
		}
	}
}

func nsExists(ns string) bool {
	_, err := os.Stat("/run/netns/" + ns)
	return err == nil
}
