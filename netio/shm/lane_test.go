//go:build linux

package shm

import (
	"bytes"
	"testing"
	"time"
)

// A lane message is found by its sequence on the other side only, meta and payload whole; a
// slot is not written again before its reader acknowledged it, and an acknowledgement of a
// later message frees the slot of one that was never read.
func TestLaneSlots(t *testing.T) {
	a, b := lanePair(t)
	msg := func(seq uint64, n int) []byte { return bytes.Repeat([]byte{byte(seq)}, n) }
	look := func(s *Segment, seq uint64, want []byte) {
		t.Helper()
		meta, p, ok := s.LaneLook(seq)
		if !ok {
			t.Fatalf("sequence %d not found", seq)
		}
		if meta != [2]uint64{seq, ^seq} || !bytes.Equal(p, want) {
			t.Fatalf("sequence %d: meta %x, %d bytes, want %d", seq, meta, len(p), len(want))
		}
	}
	if !a.LanePut(1, [2]uint64{1, ^uint64(1)}, msg(1, LaneMax)) || !a.LanePut(2, [2]uint64{2, ^uint64(2)}, msg(2, 8)) {
		t.Fatal("two puts into free slots refused")
	}
	if _, _, ok := a.LaneLook(1); ok {
		t.Fatal("a side found its own message")
	}
	look(b, 1, msg(1, LaneMax))
	look(b, 2, msg(2, 8))
	if _, _, ok := b.LaneLook(3); ok {
		t.Fatal("found a sequence nobody put")
	}
	if a.LanePut(3, [2]uint64{3, ^uint64(3)}, msg(3, 1)) {
		t.Fatal("a third put went over a message the peer had not acknowledged")
	}
	b.LaneDone(1)
	if !a.LanePut(3, [2]uint64{3, ^uint64(3)}, msg(3, 1)) {
		t.Fatal("a put refused after the acknowledgement")
	}
	look(b, 2, msg(2, 8)) // the unacknowledged slot is intact
	look(b, 3, msg(3, 1))
	// message 4 is never read; acknowledging 5 frees its slot too
	b.LaneDone(3)
	a.LanePut(4, [2]uint64{4, ^uint64(4)}, msg(4, 0))
	a.LanePut(5, [2]uint64{5, ^uint64(5)}, msg(5, 3))
	b.LaneDone(5)
	for seq := uint64(6); seq < 10; seq++ {
		if !a.LanePut(seq, [2]uint64{seq, ^seq}, msg(seq, int(seq))) {
			t.Fatalf("put %d refused after everything was acknowledged", seq)
		}
		look(b, seq, msg(seq, int(seq)))
		b.LaneDone(seq)
	}
	// both directions at once
	if !b.LanePut(7, [2]uint64{7, ^uint64(7)}, msg(7, 5)) {
		t.Fatal("the other side's put refused")
	}
	look(a, 7, msg(7, 5))
}

// LaneSleep returns at once when the message is there, and is woken by the peer's put well
// before its bound.
func TestLaneSleepWakes(t *testing.T) {
	a, b := lanePair(t)
	start := time.Now()
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.LanePut(1, [2]uint64{}, []byte{1})
	}()
	b.LaneSleep(1, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the put did not wake the sleeper: %v", d)
	}
	if _, _, ok := b.LaneLook(1); !ok {
		t.Fatal("woken without the message")
	}
	start = time.Now()
	b.LaneSleep(1, 10*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("slept %v for a message already there", d)
	}
}

// Two messages the peer never read (its calls failed) do not keep a third from being put once
// the peer puts a message of a later collective: it reads nothing older after that.
func TestLanePutAcknowledgesOlder(t *testing.T) {
	a, b := lanePair(t)
	a.LanePut(1, [2]uint64{}, []byte{1})
	a.LanePut(2, [2]uint64{}, []byte{2})
	if a.LanePut(5, [2]uint64{}, []byte{5}) {
		t.Fatal("put over two messages the peer has not read")
	}
	b.LanePut(5, [2]uint64{}, []byte{50}) // b is in collective 5: 1 and 2 are not read any more
	if !a.LanePut(5, [2]uint64{}, []byte{5}) {
		t.Fatal("refused after the peer put a later collective's message")
	}
	if _, p, ok := b.LaneLook(5); !ok || p[0] != 5 {
		t.Fatal("the message of collective 5 is not there")
	}
	if _, p, ok := a.LaneLook(5); !ok || p[0] != 50 {
		t.Fatal("the peer's message of collective 5 is not there")
	}
}

// lanePair is a pair of segments held for lane calls, closed when the test ends.
func lanePair(t *testing.T) (a, b *Segment) {
	a, b = pair(t, MinRing, Options{})
	for _, s := range []*Segment{a, b} {
		if err := s.Hold(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Unhold(); s.Close() })
	}
	return a, b
}
