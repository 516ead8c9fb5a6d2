package coll

import (
	"errors"
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
