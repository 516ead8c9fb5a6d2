package mailbox

import (
	"kylix/core/kx"
	"testing"
	"time"
)

// A transport that reads a Recv's links on the waiting thread pulls: WantOf names the awaited
// frame alone, HandOver gives its payload to the Recv unless the collective failed meanwhile,
// and TryRecv finds a frame filed as usual without sleeping.
func TestPullHandsOverTheWantedFrame(t *testing.T) {
	tag := kx.Tag{FP: fpAll, Seq: 4, Layer: 2, Phase: kx.PhaseSmall}
	t.Run("handed over", func(t *testing.T) {
		m := New(0, 2, time.Second)
		m.Begin(4, fpAll)
		want, ok := m.WantOf(1, tag)
		if !ok || !want.Matches(1, kx.Tag{Seq: 4, Layer: 2, Phase: kx.PhaseSmall, FP: fpAll}) ||
			want.Matches(1, kx.Tag{Seq: 4, Layer: 3, Phase: kx.PhaseSmall, FP: fpAll}) ||
			want.Matches(1, kx.Tag{Seq: 4, Layer: 2, Phase: kx.PhaseSmall, FP: fpRed}) ||
			want.Matches(0, kx.Tag{Seq: 4, Layer: 2, Phase: kx.PhaseSmall, FP: fpAll}) {
			t.Fatalf("want %+v (%v) does not name the awaited frame alone", want, ok)
		}
		if !m.HandOver(&want, []byte("direct")) {
			t.Fatal("the payload of a running collective was refused")
		}
		if _, ok := m.WantOf(1, kx.Tag{FP: fpAll, Seq: 4, Layer: 2, Phase: kx.PhaseSmall, Race: true}); ok {
			t.Fatal("a racing message may be handed over")
		}
	})
	t.Run("closed", func(t *testing.T) {
		m := New(0, 2, time.Second)
		m.Begin(4, fpAll)
		want, _ := m.WantOf(1, tag)
		m.Close(kx.Errorf(kx.CodeState, "closed"))
		if m.HandOver(&want, []byte("late")) {
			t.Fatal("a payload was handed over by a closed mailbox")
		}
	})
	t.Run("other frames filed", func(t *testing.T) {
		m := New(0, 2, time.Second)
		m.Begin(4, fpAll)
		if _, ok, err := m.TryRecv(1, tag); ok || err != nil {
			t.Fatalf("TryRecv before the frame: %v, %v", ok, err)
		}
		m.deliver(1, 4, 2, kx.PhaseSmall, fpAll, []byte("filed")) // as Receive files it
		if b, ok, err := m.TryRecv(1, tag); !ok || err != nil || string(b) != "filed" {
			t.Fatalf("TryRecv: %q, %v, %v", b, ok, err)
		}
	})
	t.Run("collective failed", func(t *testing.T) {
		m := New(0, 3, time.Second)
		m.Begin(4, fpAll)
		want, ok := m.WantOf(1, tag)
		if !ok {
			t.Fatal("WantOf refused a running collective")
		}
		m.deliver(2, 4, 0, kx.PhaseSmall, fpRed, []byte("x")) // another rank's mismatch
		if m.HandOver(&want, []byte("late")) {
			t.Fatal("a payload was handed over in a failed collective")
		}
		within(t, time.Second, func() {
			_, ok, err := m.TryRecv(1, tag)
			if !ok {
				t.Fatal("TryRecv in a failed collective said not yet")
			}
			wantErr(t, err, kx.CodeMismatch, "rank 2")
		})
	})
}

// A small wanted frame is read into the mailbox's own buffer while it is free, and Release
// gives it back; a second one while the first is out, or a large one, comes from the pool.
func TestWantBufReusedOnceReleased(t *testing.T) {
	m := New(0, 2, time.Second)
	a := m.WantBuf(32)
	b := m.WantBuf(32) // a is out
	if len(a) != 32 || len(b) != 32 || &a[0] == &b[0] {
		t.Fatalf("two buffers out at once share memory: %p %p", &a[0], &b[0])
	}
	m.Release(a)
	m.Release(b)
	c := m.WantBuf(100)
	if &c[0] != &a[0] {
		t.Fatal("the released buffer was not used again")
	}
	big := m.WantBuf(wantedBytes + 1)
	if &big[0] == &a[0] || len(big) != wantedBytes+1 {
		t.Fatal("a large frame got the small buffer")
	}
	m.Release(big)
	m.Release(c)
	if m.wantedOut.Load() {
		t.Fatal("still out after its release")
	}
	allocs := testing.AllocsPerRun(100, func() { m.Release(m.WantBuf(64)) })
	if allocs != 0 {
		t.Fatalf("%v allocations a wanted frame", allocs)
	}
}
