package core_test

import (
	"encoding/binary"
	"fmt"
	"kylix/core"
	"kylix/core/kx"
	"kylix/netio"
	"kylix/netio/memnet"
	"kylix/netio/rendezvous"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Elastic jobs over real TCP on loopback, ranks and joiners as goroutines of this process, the
// rendezvous served by the test as kylixrun serves it (it stays up: the join address).

const elasticSecret = "resize-test"

func elasticOpts(addr string, timeout time.Duration) kx.Options {
	return kx.Options{Rendezvous: addr, Degrees: "auto", Replication: 1, MinPacket: 4096, Timeout: timeout,
		Liveness: 2 * time.Second, Secret: elasticSecret, Elastic: true, Shm: "off", Log: "error"}
}

// elasticJob starts n ranks of an elastic job and returns the server and the comms, by rank.
// shm, when given, replaces elasticOpts' "off" (the ranks of a test share this host).
func elasticJob(t *testing.T, n int, timeout time.Duration, shm ...string) (*rendezvous.Server, []*core.Comm) {
	t.Helper()
	srv, err := rendezvous.NewServer("127.0.0.1:0", n, elasticSecret, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	comms := make([]*core.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := elasticOpts(srv.Addr(), timeout)
			o.Rank, o.Size = r, n
			if len(shm) > 0 {
				o.Shm = shm[0]
			}
			tr, err := netio.Connect(o)
			if err != nil {
				errs[r] = err
				return
			}
			c, err := core.NewComm(tr, o)
			if err != nil {
				errs[r] = err
				return
			}
			g, err := netio.NewGrower(o)
			if err != nil {
				errs[r] = err
				return
			}
			c.SetGrower(g)
			comms[r] = c
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return srv, comms
}

type joined struct {
	c   *core.Comm
	err error
}

// startJoiner starts a joiner (option join=) and waits until the server holds it.
func startJoiner(t *testing.T, srv *rendezvous.Server, timeout time.Duration) chan joined {
	t.Helper()
	before := len(srv.Waiting())
	ch := make(chan joined, 1)
	go func() {
		o := elasticOpts("", timeout)
		o.Join, o.Rank, o.Size = srv.Addr(), -1, -1
		tr, a, err := netio.Join(o)
		if err != nil {
			ch <- joined{nil, err}
			return
		}
		g, _ := netio.NewGrower(o)
		c, err := core.NewJoinedComm(tr, o, a, g)
		ch <- joined{c, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Waiting()) <= before {
		if time.Now().After(deadline) {
			t.Fatal("the joiner did not reach the join server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ch
}

// resizeAll resizes every comm at once and collects the new comms with the joiners', by rank.
func resizeAll(t *testing.T, comms []*core.Comm, minSize int, joiners []chan joined) []*core.Comm {
	t.Helper()
	out := make([]*core.Comm, len(comms))
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for i, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = c.Resize(minSize)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: resize: %v", i, err)
		}
	}
	for i, ch := range joiners {
		j := <-ch
		if j.err != nil {
			t.Fatalf("joiner %d: %v", i, j.err)
		}
		out = append(out, j.c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Rank() < out[b].Rank() })
	for r, c := range out {
		if c.Rank() != r || c.Size() != len(out) {
			t.Fatalf("after the resize: rank %d of %d at position %d of %d", c.Rank(), c.Size(), r, len(out))
		}
	}
	return out
}

// checkSums runs a dense allreduce on every comm at once against the brute-force sums, seeded
// by iter so that each call's values differ.
func checkSums(t *testing.T, comms []*core.Comm, iter int) {
	t.Helper()
	n := len(comms)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Rank()
			send := make([]byte, 3*8)
			for i := 0; i < 3; i++ {
				binary.LittleEndian.PutUint64(send[8*i:], uint64((r+1)*(i+1)+iter))
			}
			recv := make([]byte, len(send))
			if err := c.Allreduce(send, recv, kx.I64, kx.Sum); err != nil {
				errs[r] = err
				return
			}
			for i := 0; i < 3; i++ {
				want := uint64(n*(n+1)/2*(i+1) + n*iter)
				if got := binary.LittleEndian.Uint64(recv[8*i:]); got != want {
					errs[r] = fmt.Errorf("rank %d of %d: sum[%d] = %d, want %d", r, n, i, got, want)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func closeAll(cs ...[]*core.Comm) {
	for _, l := range cs {
		for _, c := range l {
			if c != nil {
				c.Close()
			}
		}
	}
}

func wantMembers(t *testing.T, comms []*core.Comm, want []int) {
	t.Helper()
	for _, c := range comms {
		if got := c.Members(); !slices.Equal(got, want) {
			t.Fatalf("rank %d: Members() = %v, want %v", c.Rank(), got, want)
		}
	}
}

// Ramp-up (Zhang and Qiu §5): 2 ranks, then 2 joiners, then 2 more, reduces checked in between.
func TestResizeRampUp(t *testing.T) {
	const timeout = 10 * time.Second
	srv, c2 := elasticJob(t, 2, timeout)
	defer closeAll(c2)
	checkSums(t, c2, 0)
	if a, err := c2[1].JoinAddress(); err != nil || a != srv.Addr() {
		t.Fatalf("JoinAddress = %q, %v; want %s", a, err, srv.Addr())
	}
	c4 := resizeAll(t, c2, 4, []chan joined{startJoiner(t, srv, timeout), startJoiner(t, srv, timeout)})
	defer closeAll(c4)
	wantMembers(t, c4, []int{0, 1, -1, -1})
	checkSums(t, c4, 1)
	c6 := resizeAll(t, c4, 6, []chan joined{startJoiner(t, srv, timeout), startJoiner(t, srv, timeout)})
	defer closeAll(c6)
	wantMembers(t, c6, []int{0, 1, 2, 3, -1, -1})
	checkSums(t, c6, 2)
	for _, c := range c2 {
		if err := c.Barrier(); kx.CodeOf(err) != kx.CodeState {
			t.Errorf("a barrier on the resized comm: %v, want CodeState", err)
		}
		if _, err := c.Resize(0); kx.CodeOf(err) != kx.CodeState {
			t.Errorf("a second resize: %v, want CodeState", err)
		}
	}
}

// Failure-ignorance (§6): a rank leaves, the others resize without it, and a new process
// rejoins at the next resize.
func TestResizeLeaveRejoin(t *testing.T) {
	const timeout = 10 * time.Second
	srv, c3 := elasticJob(t, 3, timeout)
	defer closeAll(c3)
	checkSums(t, c3, 0)
	c3[1].Close() // its peers see it finalized
	c2 := resizeAll(t, []*core.Comm{c3[0], c3[2]}, 0, nil)
	defer closeAll(c2)
	wantMembers(t, c2, []int{0, 2})
	checkSums(t, c2, 1)
	back := resizeAll(t, c2, 3, []chan joined{startJoiner(t, srv, timeout)})
	defer closeAll(back)
	wantMembers(t, back, []int{0, 1, -1})
	checkSums(t, back, 2)
}

// min_size that no joiner meets: CodeTimeout after about the timeout, and the comm goes on
// unchanged (same members, collectives work), then resizes normally.
func TestResizeMinSizeTimeout(t *testing.T) {
	for _, shm := range []string{"off", "auto"} {
		t.Run("shm="+shm, func(t *testing.T) { resizeMinSizeTimeout(t, shm) })
	}
}

// resizeMinSizeTimeout: with shm=auto the comm agrees on its lanes first (its first small
// allreduce), and the unchanged comm goes on over them.
func resizeMinSizeTimeout(t *testing.T, shm string) {
	const timeout = 3 * time.Second
	srv, c2 := elasticJob(t, 2, timeout, shm)
	defer closeAll(c2)
	checkSums(t, c2, 4)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range c2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Resize(3)
		}()
	}
	wg.Wait()
	d := time.Since(start)
	for i, err := range errs {
		if kx.CodeOf(err) != kx.CodeTimeout {
			t.Fatalf("member %d: %v, want CodeTimeout", i, err)
		}
	}
	if d < timeout/2 || d > timeout+2*time.Second {
		t.Errorf("the min_size wait took %v, want about %v", d, timeout)
	}
	checkSums(t, c2, 5)
	wantMembers(t, c2, []int{0, 1})
	c3 := resizeAll(t, c2, 3, []chan joined{startJoiner(t, srv, timeout)})
	defer closeAll(c3)
	checkSums(t, c3, 6)
}

// A non-blocking allreduce in flight when Resize is called: Resize waits for it, it completes
// with its own status and correct results, and the new comm works.
func TestResizeWaitsForRequests(t *testing.T) {
	const timeout = 10 * time.Second
	srv, c3 := elasticJob(t, 3, timeout)
	defer closeAll(c3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	next := make([]*core.Comm, 3)
	joiner := startJoiner(t, srv, timeout)
	for i, c := range c3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = func() error {
				const count = 1 << 16
				send := make([]byte, 8*count)
				for k := 0; k < count; k++ {
					binary.LittleEndian.PutUint64(send[8*k:], uint64(i+k))
				}
				recv := make([]byte, len(send))
				req, err := c.IAllreduce(send, recv, kx.I64, kx.Sum)
				if err != nil {
					return err
				}
				nc, err := c.Resize(4)
				if err != nil {
					return err
				}
				next[i] = nc
				if err := req.Wait(); err != nil {
					return fmt.Errorf("the request in flight: %v", err)
				}
				for k := 0; k < count; k++ {
					if got := binary.LittleEndian.Uint64(recv[8*k:]); got != uint64(3*k+3) {
						return fmt.Errorf("element %d = %d, want %d", k, got, 3*k+3)
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	j := <-joiner
	if j.err != nil {
		t.Fatal(j.err)
	}
	all := append(next, j.c)
	defer closeAll(all)
	sort.Slice(all, func(a, b int) bool { return all[a].Rank() < all[b].Rank() })
	checkSums(t, all, 3)
}

// A comm that is not elastic has no join address, and its resize admits nobody.
func TestResizeNotElastic(t *testing.T) {
	ts := memnet.NewJob(2, 2*time.Second)
	comms := make([]*core.Comm, 2)
	for r := range comms {
		c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: 2, Degrees: "auto", Replication: 1, MinPacket: 4096, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		comms[r] = c
	}
	defer closeAll(comms)
	if _, err := comms[0].JoinAddress(); kx.CodeOf(err) != kx.CodeState {
		t.Errorf("JoinAddress of a comm that is not elastic: %v, want CodeState", err)
	}
	if _, err := comms[0].Resize(-1); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("Resize(-1): %v, want CodeArg", err)
	}
	out := resizeAll(t, comms, 2, nil)
	defer closeAll(out)
	wantMembers(t, out, []int{0, 1})
	checkSums(t, out, 1)
}

// The quorum: of 4 ranks, the two that keep rank 0 go on; the two without it get CodePeer naming
// the ranks they lost (a network split leaves exactly one side going on; tests/elastic_test.go
// cuts a real network).
func TestResizeQuorum(t *testing.T) {
	for _, tc := range []struct {
		dead   []int
		goesOn bool
	}{{[]int{2, 3}, true}, {[]int{0, 1}, false}, {[]int{1, 2, 3}, false}, {[]int{3}, true}} {
		t.Run(fmt.Sprintf("dead%v", tc.dead), func(t *testing.T) {
			ts := memnet.NewJob(4, 2*time.Second)
			var live []*core.Comm
			for r := 0; r < 4; r++ {
				c, err := core.NewComm(ts[r], kx.Options{Rank: r, Size: 4, Degrees: "auto", Replication: 1, MinPacket: 4096, Timeout: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if slices.Contains(tc.dead, r) {
					ts[r].Kill()
				} else {
					live = append(live, c)
				}
			}
			errs := make([]error, len(live))
			var wg sync.WaitGroup
			for i, c := range live {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nc, err := c.Resize(0)
					if nc != nil {
						nc.Close()
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for i, err := range errs {
				switch {
				case tc.goesOn && err != nil:
					t.Errorf("member %d: %v", i, err)
				case !tc.goesOn && (kx.CodeOf(err) != kx.CodePeer || !strings.Contains(err.Error(), fmt.Sprint(tc.dead))):
					t.Errorf("member %d: %v, want CodePeer naming the lost ranks %v", i, err, tc.dead)
				}
			}
		})
	}
}

// 200 resize cycles over TCP: every tenth admits a joiner and then lets it leave (a fresh mesh
// each time), the rest admit nobody; goroutines, fds and the live heap stay flat.
func TestResizeCyclesFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("200 resize cycles take about a minute: skipped under -short; make test runs them")
	}
	const timeout = 10 * time.Second
	srv, comms := elasticJob(t, 3, timeout)
	var goroutines, fds int
	var heap uint64
	measure := func() (int, int, uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		ents, _ := os.ReadDir("/proc/self/fd")
		return runtime.NumGoroutine(), len(ents), ms.HeapAlloc
	}
	for i := 0; i < 200; i++ {
		var next []*core.Comm
		if i%10 == 5 {
			grown := resizeAll(t, comms, len(comms)+1, []chan joined{startJoiner(t, srv, timeout)})
			closeAll(comms)
			checkSums(t, grown, i)
			grown[len(grown)-1].Close() // the joiner leaves
			next = resizeAll(t, grown[:len(grown)-1], 0, nil)
			closeAll(grown[:len(grown)-1])
		} else {
			next = resizeAll(t, comms, 0, nil)
			closeAll(comms)
		}
		comms = next
		checkSums(t, comms, i)
		if i == 19 {
			goroutines, fds, heap = measure()
		}
	}
	g, f, h := measure()
	closeAll(comms)
	t.Logf("after 20 cycles: %d goroutines, %d fds, %d heap bytes; after 200: %d, %d, %d", goroutines, fds, heap, g, f, h)
	if g > goroutines+2 || f > fds || h > heap+4<<20 {
		t.Errorf("not flat over 180 resizes: goroutines %d -> %d, fds %d -> %d, heap %d -> %d", goroutines, g, fds, f, heap, h)
	}
}

// When the join server is gone (rank 0's own server dies with it), a resize that needs no
// joiner still goes on, admitting nobody; one that needs joiners fails with CodeNet at once,
// naming the join address, instead of waiting out the timeout.
func TestResizeJoinServerGone(t *testing.T) {
	const timeout = 20 * time.Second
	srv, c3 := elasticJob(t, 3, timeout)
	addr := srv.Addr()
	srv.Close()
	c3b := resizeAll(t, c3, 0, nil)
	closeAll(c3)
	defer closeAll(c3b)
	checkSums(t, c3b, 1)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range c3b {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Resize(4)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if kx.CodeOf(err) != kx.CodeNet || !strings.Contains(err.Error(), addr) {
			t.Errorf("member %d: %v, want CodeNet naming %s", i, err, addr)
		}
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("the resize took %v to find the join server gone", d)
	}
}

// Lanes over real shared memory: two allreduces that one rank rejects (bad arguments) leave
// the others' lane messages to it unread in both slots; the next allreduce must not wait for
// them (the rank's own put acknowledges everything older). Found by the Java binding's tests:
// "rank 2 sent nothing for 20s: waited for its lane message".
func TestLanesAfterRejectedCalls(t *testing.T) {
	const timeout = 5 * time.Second
	_, c3 := elasticJob(t, 3, timeout, "auto")
	defer closeAll(c3)
	checkSums(t, c3, 0) // the comm agrees on its lanes
	for i := 0; i < 2; i++ {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for r, c := range c3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send, recv := make([]byte, 24), make([]byte, 24)
				if r == 1 {
					recv = recv[:16] // rejected here: the others fail with a mismatch
				}
				errs[r] = c.Allreduce(send, recv, kx.I64, kx.Sum)
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err == nil {
				t.Fatalf("call %d: rank %d succeeded beside a rejected call", i, r)
			}
		}
	}
	start := time.Now()
	checkSums(t, c3, 1)
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("the allreduce after the rejected calls took %v", d)
	}
}
