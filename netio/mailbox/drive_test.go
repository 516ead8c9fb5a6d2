package mailbox

import (
	"bufio"
	"kylix/core/kx"
	"strings"
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

// A driving Await claims its open post (TryAwaitWant), so that a frame read into it lands with
// one lock (LandWant); a claimed post is nobody else's until then, and given back (Unwant) it
// takes a frame as any post does; a read that broke off fails the wait (FailWant).
func TestAwaitWantClaimsThePost(t *testing.T) {
	tag := kx.Tag{FP: fpAll, Seq: 4, Layer: 1, Phase: kx.PhaseDown}
	start := func(size int) (*Mailbox, []byte) {
		m := New(0, size, time.Second)
		m.Begin(4, fpAll)
		dst := make([]byte, 8)
		m.Post(1, tag, dst, kx.Fold{})
		return m, dst
	}
	claimed := func(t *testing.T, size int) (*Mailbox, []byte, *Want) {
		t.Helper()
		m, dst := start(size)
		w := new(Want)
		if _, ok, err := m.TryAwaitWant(1, tag, kx.Whole, w); ok || err != nil || !w.Claimed() {
			t.Fatalf("TryAwaitWant on an open post: ok %v, err %v, want %+v", ok, err, w)
		}
		return m, dst, w
	}
	landedAs := func(t *testing.T, m *Mailbox, dst []byte, want string) {
		t.Helper()
		if n, err := m.Await(1, tag, kx.Whole); n != len(want) || err != nil || string(dst) != want {
			t.Fatalf("Await: %d, %v, %q; want %q", n, err, dst, want)
		}
	}
	t.Run("landed", func(t *testing.T) {
		m, dst, w := claimed(t, 2)
		if len(w.Into) != 8 || &w.Into[0] != &dst[0] {
			t.Fatalf("the want's place is not the post's: %+v", w)
		}
		if !w.Matches(1, kx.Tag{Seq: 4, Layer: 1, Phase: kx.PhaseDown, FP: fpAll}) {
			t.Fatalf("want %+v does not name the frame", w)
		}
		// while claimed, a frame the usual way (a reader that should not have it) is not landed in it
		if p := m.claim(1, 4, 1, kx.PhaseDown, fpAll, 8); p != nil {
			t.Fatal("a claimed post was claimed again")
		}
		copy(w.Into, "abcdefgh")
		w.Data = w.Into
		if n, err := m.LandWant(w); n != 8 || err != nil || w.Claimed() {
			t.Fatalf("LandWant: %d, %v (want cleared: %v)", n, err, !w.Claimed())
		}
		landedAs(t, m, dst, "abcdefgh")
	})
	t.Run("given back", func(t *testing.T) {
		m, dst, w := claimed(t, 2)
		m.Unwant(w)
		if w.Claimed() || w.Matches(1, kx.Tag{Seq: 4, Layer: 1, Phase: kx.PhaseDown, FP: fpAll}) {
			t.Fatalf("a want given back still names the frame: %+v", w)
		}
		if err := m.Receive(1, kx.Tag{Seq: 4, Layer: 1, Phase: kx.PhaseDown, FP: fpAll}, 8, bufio.NewReader(strings.NewReader("12345678"))); err != nil {
			t.Fatal(err)
		}
		landedAs(t, m, dst, "12345678")
	})
	t.Run("read broke off", func(t *testing.T) {
		m, _, w := claimed(t, 2)
		m.FailWant(w)
		within(t, time.Second, func() {
			_, err := m.Await(1, tag, kx.Whole)
			wantErr(t, err, kx.CodePeer, "rank 1")
		})
	})
	t.Run("not claimed", func(t *testing.T) {
		m, _ := start(3)
		var w Want
		// racing, folded, or a message that landed: TryAwaitWant looks as TryAwait does
		if _, ok, _ := m.TryAwaitWant(1, kx.Tag{FP: fpAll, Seq: 4, Layer: 1, Phase: kx.PhaseDown, Race: true}, kx.Whole, &w); ok || w.Claimed() {
			t.Fatal("a racing message's post was claimed")
		}
		m.Post(2, tag, make([]byte, 8), kx.Fold{Unit: 4, Fn: func(dst, src []byte) {}})
		if _, ok, _ := m.TryAwaitWant(2, tag, kx.Whole, &w); ok || w.Claimed() {
			t.Fatal("a folded post was claimed")
		}
		m.Put(1, kx.Tag{Seq: 4, Layer: 1, Phase: kx.PhaseDown, FP: fpAll}, [][]byte{[]byte("landed!!")}, 8)
		if n, ok, err := m.TryAwaitWant(1, tag, kx.Whole, &w); !ok || err != nil || n != 8 || w.Claimed() {
			t.Fatalf("TryAwaitWant on a landed message: %d, %v, %v (claimed %v)", n, ok, err, w.Claimed())
		}
	})
	t.Run("collective failed meanwhile", func(t *testing.T) {
		m, _, w := claimed(t, 3)
		m.deliver(2, 4, 0, kx.PhaseSmall, fpRed, []byte("x")) // another rank's mismatch
		w.Data = w.Into
		_, err := m.LandWant(w)
		wantErr(t, err, kx.CodeMismatch, "rank 2")
	})
}

// An Await for a message that landed whole answers without the mailbox's lock (Landed), but
// only in its own collective and while nothing failed: a failure after the landing is still
// the wait's answer, as it was with the lock.
func TestLandedAnswersWithoutTheLock(t *testing.T) {
	tag := kx.Tag{FP: fpAll, Seq: 4, Layer: 0, Phase: kx.PhaseUp}
	frame := kx.Tag{Seq: 4, Layer: 0, Phase: kx.PhaseUp, FP: fpAll}
	m := New(0, 3, time.Second)
	m.Begin(4, fpAll)
	m.Post(1, tag, make([]byte, 4), kx.Fold{})
	if _, ok := m.Landed(1, tag); ok {
		t.Fatal("Landed before the message came")
	}
	m.Put(1, frame, [][]byte{[]byte("abcd")}, 4)
	m.mu.Lock() // held: a look that took it would block
	n, ok := m.Landed(1, tag)
	other, otherOK := m.Landed(2, tag)
	m.mu.Unlock()
	if !ok || n != 4 || otherOK || other != 0 {
		t.Fatalf("Landed: %d, %v; another source's: %v", n, ok, otherOK)
	}
	if got, err := m.Await(1, tag, 2); got != 4 || err != nil { // a prefix of a landed message: all of it
		t.Fatalf("Await of a prefix: %d, %v", got, err)
	}
	m.deliver(2, 4, 0, kx.PhaseSmall, fpRed, []byte("x")) // the collective fails
	if _, ok := m.Landed(1, tag); ok {
		t.Fatal("Landed answered after the collective failed")
	}
	_, err := m.Await(1, tag, kx.Whole)
	wantErr(t, err, kx.CodeMismatch, "rank 2")

	// the next collective: the post is reused, and what landed before is not its answer
	m.Begin(5, fpAll)
	tag.Seq, frame.Seq = 5, 5
	m.Post(1, tag, make([]byte, 4), kx.Fold{})
	if _, ok := m.Landed(1, tag); ok {
		t.Fatal("Landed answered for a message of the next collective that has not come")
	}
	m.Put(1, frame, [][]byte{[]byte("efgh")}, 4)
	if n, ok := m.Landed(1, tag); !ok || n != 4 {
		t.Fatalf("Landed in the next collective: %d, %v", n, ok)
	}
	m.Quiesce(5)
	if _, ok := m.Landed(1, tag); ok {
		t.Fatal("Landed answered after Quiesce")
	}
}
