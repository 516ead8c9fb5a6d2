package mailbox

import (
	"bytes"
	"io"
	"kylix/core/kx"
	"testing"
	"time"
)

// gatedPayload serves data and stops at gate bytes until open is closed (a copy whose sender
// is slow, or was descheduled, in the middle of a message).
type gatedPayload struct {
	data []byte
	off  int
	gate int
	open chan struct{}
}

func (g *gatedPayload) Read(b []byte) (int, error) {
	if g.off == g.gate {
		<-g.open
	}
	end := len(g.data)
	if g.off < g.gate {
		end = g.gate
	}
	n := copy(b, g.data[g.off:end])
	g.off += n
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (g *gatedPayload) Discard(n int) (int, error) {
	b := make([]byte, n)
	return io.ReadFull(g, b)
}

// A racing copy buffered whole before its place was posted must not write over the prefix that
// another copy already filled in place: the waiter may have combined into that prefix
// (Await of a prefix; dense allreduce accumulates in the first member's slot). Ranks 1 and 2 are the
// replicas of node 1.
func TestRacingCopyKeepsLandedPrefix(t *testing.T) {
	m := New(0, 3, 5*time.Second)
	if err := m.SetReplicaGroups([]int{0, 1, 1}); err != nil {
		t.Fatal(err)
	}
	fp := kx.Fingerprint{Kind: kx.KindAllreduce, Count: 1}
	tag := kx.Tag{Seq: 1, Phase: kx.PhaseDense, Race: true, FP: fp}
	m.Begin(1, fp)
	msg := bytes.Repeat([]byte{7}, 3*raceChunk)
	// The copy from rank 2 starts before the post: it is buffered, and stalls halfway.
	a := &gatedPayload{data: msg, gate: raceChunk + raceChunk/2, open: make(chan struct{})}
	aDone := make(chan error, 1)
	go func() { aDone <- m.Receive(2, tag, len(msg), a) }()
	for m.bufferedCopyStarted(1, tag) == false {
		time.Sleep(time.Millisecond)
	}
	dst := make([]byte, len(msg))
	m.Post(1, tag, dst, kx.Fold{})
	// The copy from rank 1 fills the place in order, up to its first chunk, and stalls.
	b := &gatedPayload{data: msg, gate: raceChunk, open: make(chan struct{})}
	bDone := make(chan error, 1)
	go func() { bDone <- m.Receive(1, tag, len(msg), b) }()
	if _, err := m.Await(1, tag, raceChunk); err != nil {
		t.Fatal(err)
	}
	for i := range dst[:raceChunk] { // combined in place
		dst[i] = 9
	}
	close(a.open) // the buffered copy completes the message
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	close(b.open)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Await(1, tag, kx.Whole); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst[:raceChunk], bytes.Repeat([]byte{9}, raceChunk)) {
		t.Fatal("the landed prefix was written again after its waiter used it")
	}
	if !bytes.Equal(dst[raceChunk:], msg[raceChunk:]) {
		t.Fatal("the rest of the message did not land")
	}
}

// bufferedCopyStarted tells whether a racing copy of tag from node `node` is being buffered
// (claimed before any post: seen counted, not yet accepted).
func (m *Mailbox) bufferedCopyStarted(node int, tag kx.Tag) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxOf(tag.Seq)
	if b == nil {
		return false
	}
	for ck, n := range b.seen {
		if ck.k.src == node && n > 0 {
			return true
		}
	}
	return false
}
