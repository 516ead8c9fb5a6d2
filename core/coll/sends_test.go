package coll

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kylix/core/kx"
)

// slowPath is a Path whose sends of more than fits bytes take a while, as a write to a full
// socket does; it records every send and fails the sends to node fail.
type slowPath struct {
	Path // unused methods panic
	fits int
	fail int
	mu   sync.Mutex
	sent map[int]int // node -> bytes sent
	busy atomic.Int32
}

func (p *slowPath) SendFits(to, n int) bool { return n <= p.fits }

// WritesBack: nothing goes by reference here (Post is the transport's; see TestSendsPost).
func (p *slowPath) WritesBack(to, n int) bool { return false }

// SendAside: the background sends of Sends come here; the fake counts them as any send.
func (p *slowPath) SendAside(to int, tag kx.Tag, bufs ...[]byte) error {
	return p.Send(to, tag, bufs...)
}

func (p *slowPath) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	p.busy.Add(1)
	defer p.busy.Add(-1)
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n > p.fits {
		time.Sleep(20 * time.Millisecond)
	}
	if to == p.fail {
		return kx.Errorf(kx.CodePeer, "rank %d is gone", to)
	}
	p.mu.Lock()
	p.sent[to] += n
	p.mu.Unlock()
	return nil
}

// Wait returns only once every send of the group is done, inline or on a goroutine of its own,
// and reports the first error: no goroutine touches the buffers after it.
func TestSendsWaitForEverySend(t *testing.T) {
	for _, fail := range []int{-1, 2, 3} { // none, a send on a goroutine, an inline send
		p := &slowPath{fits: 100, fail: fail, sent: map[int]int{}}
		cx := &Ctx{Path: p, Nodes: 5}
		sg := cx.Sends()
		big := make([]byte, 1000)
		for to := 0; to < 5; to++ {
			if to%2 == 0 {
				sg.Send(to, kx.Tag{}, big) // on a goroutine of its own
			} else {
				sg.Sendv(to, kx.Tag{}, [][]byte{big[:30], big[:20]}) // inline
			}
		}
		err := sg.Wait()
		if n := p.busy.Load(); n != 0 {
			t.Fatalf("fail=%d: %d sends still running after Wait", fail, n)
		}
		want := map[int]int{0: 1000, 1: 50, 2: 1000, 3: 50, 4: 1000}
		if fail >= 0 {
			delete(want, fail)
			if !errors.Is(err, kx.ErrPeer) {
				t.Errorf("fail=%d: Wait = %v, want the failed send's CodePeer", fail, err)
			}
		} else if err != nil {
			t.Errorf("Wait = %v", err)
		}
		for to, n := range want {
			if p.sent[to] != n {
				t.Errorf("fail=%d: node %d got %d bytes, want %d", fail, to, p.sent[to], n)
			}
		}
		if cx.one[0] != nil {
			t.Errorf("the one-buffer list still holds a caller's buffer after the sends")
		}
	}
}

// postPath is a Path whose messages over postFrom bytes go by reference: Post returns at once
// and Complete is where the peer's copy is waited for (kx.Sender.Post).
type postPath struct {
	Path     // unused methods panic
	postFrom int
	fail     int // Complete fails for this node
	posted   []int
	done     []int
	inline   []int
}

func (p *postPath) SendFits(to, n int) bool   { return n < p.postFrom }
func (p *postPath) WritesBack(to, n int) bool { return n >= p.postFrom }
func (p *postPath) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	p.inline = append(p.inline, to)
	return nil
}
func (p *postPath) Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error) {
	p.posted = append(p.posted, to)
	return kx.Posted{Rank: to, Mark: uint64(len(p.posted)), Node: to, N: len(bufs[0])}, nil
}
func (p *postPath) Complete(ps kx.Posted) error {
	p.done = append(p.done, ps.Node)
	if ps.Node == p.fail {
		return kx.Errorf(kx.CodePeer, "rank %d is gone", ps.Node)
	}
	return nil
}

// A message that goes by reference is posted on the calling goroutine, with no goroutine of its
// own (so kx.AsyncSends stays 0 and the waits that follow may read on this thread), and Wait
// completes every post, in order, even after one failed, reporting the first error.
func TestSendsPostByReference(t *testing.T) {
	for _, fail := range []int{-1, 1} {
		p := &postPath{postFrom: 1000, fail: fail}
		cx := &Ctx{Path: p, Nodes: 4}
		sg := cx.Sends()
		big, small := make([]byte, 1000), make([]byte, 10)
		sg.Send(1, kx.Tag{}, big)
		sg.Send(2, kx.Tag{}, small)
		sg.Send(3, kx.Tag{}, big)
		if n := kx.AsyncSends.Load(); n != 0 {
			t.Fatalf("%d sends run on goroutines of their own", n)
		}
		if len(p.done) != 0 {
			t.Fatalf("posts completed before Wait: %v", p.done)
		}
		err := sg.Wait()
		if !slices.Equal(p.posted, []int{1, 3}) || !slices.Equal(p.done, []int{1, 3}) || !slices.Equal(p.inline, []int{2}) {
			t.Fatalf("posted %v, completed %v, inline %v; want [1 3], [1 3], [2]", p.posted, p.done, p.inline)
		}
		if fail < 0 && err != nil || fail >= 0 && !errors.Is(err, kx.ErrPeer) {
			t.Errorf("fail=%d: Wait = %v", fail, err)
		}
		if err := sg.Wait(); fail < 0 && err != nil || len(p.done) != 2 {
			t.Errorf("a second Wait completed posts again (%v) or failed: %v", p.done, err)
		}
	}
}

// A posted message's buffers stay reachable until Wait: the peer reads them by address, and the
// caller may hold no other reference (here a buffer made in a helper and dropped). The buffer's
// finalizer must not run before Wait, whatever collections run meanwhile.
func TestSendsKeepPostedBuffersAlive(t *testing.T) {
	p := &postPath{postFrom: 1000, fail: -1}
	cx := &Ctx{Path: p, Nodes: 2}
	sg := cx.Sends()
	var freed atomic.Bool
	func() {
		b := make([]byte, 1<<20)
		runtime.SetFinalizer(&b[0], func(*byte) { freed.Store(true) })
		sg.Send(1, kx.Tag{}, b)
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond) // finalizers run on a goroutine of their own
	}
	if freed.Load() {
		t.Fatal("a posted buffer was collected before Wait")
	}
	if err := sg.Wait(); err != nil {
		t.Fatal(err)
	}
}
