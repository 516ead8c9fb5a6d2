package mailbox

import (
	"errors"
	"kylix/core/kx"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMailboxOrderAndTags(t *testing.T) {
	m := New(0, 3, time.Second)
	m.Begin(5, fpAll)
	tag := func(l uint8, p kx.Phase) kx.Tag { return kx.Tag{FP: fpAll, Seq: 5, Layer: l, Phase: p} }
	m.deliver(1, 5, 0, kx.PhaseDown, fpAll, []byte("a1"))
	m.deliver(1, 5, 0, kx.PhaseDown, fpAll, []byte("a2"))
	m.deliver(2, 5, 0, kx.PhaseDown, fpAll, []byte("b"))
	m.deliver(1, 5, 1, kx.PhaseDown, fpAll, []byte("c"))
	m.deliver(1, 5, 0, kx.PhaseUp, fpAll, []byte("d"))
	for _, c := range []struct {
		from int
		tag  kx.Tag
		want string
	}{{1, tag(1, kx.PhaseDown), "c"}, {1, tag(0, kx.PhaseDown), "a1"}, {2, tag(0, kx.PhaseDown), "b"},
		{1, tag(0, kx.PhaseDown), "a2"}, {1, tag(0, kx.PhaseUp), "d"}} {
		b, err := m.Recv(c.from, c.tag)
		if err != nil || string(b) != c.want {
			t.Fatalf("recv(%d, %+v) = %q, %v; want %q", c.from, c.tag, b, err, c.want)
		}
	}
	if _, err := m.Recv(3, tag(0, 1)); kx.CodeOf(err) != kx.CodeArg {
		t.Fatalf("bad source: %v", err)
	}
}

func TestMailboxEarlyFramesAndStaleDrop(t *testing.T) {
	m := New(0, 2, 200*time.Millisecond)
	// Before any Begin nothing is dropped; frames of a later collective wait for it.
	m.deliver(1, 0, 0, 1, fpAll, []byte("s0"))
	m.deliver(1, 1, 0, 1, fpAll, []byte("s1"))
	m.deliver(1, 2, 0, 1, fpAll, []byte("s2"))
	m.Begin(1, fpAll)
	if b, err := m.Recv(1, kx.Tag{FP: fpAll, Seq: 1, Phase: 1}); err != nil || string(b) != "s1" {
		t.Fatalf("got %q %v", b, err)
	}
	if _, err := m.Recv(1, kx.Tag{FP: fpAll, Seq: 0, Phase: 1}); kx.CodeOf(err) != kx.CodeState {
		t.Fatalf("recv of a finished collective: %v", err)
	}
	m.deliver(1, 0, 0, 1, fpAll, []byte("late")) // dropped: seq 0 is over
	m.Begin(2, fpAll)
	if b, err := m.Recv(1, kx.Tag{FP: fpAll, Seq: 2, Phase: 1}); err != nil || string(b) != "s2" {
		t.Fatalf("got %q %v", b, err)
	}
	m.mu.Lock()
	n := len(m.boxes)
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d boxes kept, want only the current one", n)
	}
}

func TestMailboxMismatch(t *testing.T) {
	t.Run("arriving", func(t *testing.T) {
		m := New(0, 4, time.Second)
		m.Begin(7, fpAll)
		var err error
		done := make(chan struct{})
		go func() { _, err = m.Recv(1, kx.Tag{FP: fpAll, Seq: 7, Phase: kx.PhaseDense}); close(done) }()
		time.Sleep(10 * time.Millisecond)
		within(t, 500*time.Millisecond, func() {
			m.deliver(3, 7, 0, kx.PhaseDense, fpRed, []byte("x"))
			<-done
		})
		wantErr(t, err, kx.CodeMismatch, "rank 3 called reduce but this rank called allreduce")
		// The collective stays failed, even for a message that did arrive.
		m.deliver(1, 7, 0, kx.PhaseDense, fpAll, []byte("y"))
		_, err = m.Recv(1, kx.Tag{FP: fpAll, Seq: 7, Phase: kx.PhaseDense})
		wantErr(t, err, kx.CodeMismatch, "rank 3")
		// The next collective is clean.
		m.Begin(8, fpAll)
		m.deliver(1, 8, 0, kx.PhaseDense, fpAll, []byte("z"))
		if b, err := m.Recv(1, kx.Tag{FP: fpAll, Seq: 8, Phase: kx.PhaseDense}); err != nil || string(b) != "z" {
			t.Fatalf("next collective: %q %v", b, err)
		}
	})
	t.Run("buffered", func(t *testing.T) {
		m := New(0, 4, time.Second)
		m.Begin(1, fpAll)
		wide := fpAll
		wide.Width = 4
		m.deliver(3, 2, 0, kx.PhaseDown, wide, []byte("early"))
		m.deliver(2, 2, 0, kx.PhaseDown, fpAll, []byte("fine"))
		m.Begin(2, fpAll)
		_, err := m.Recv(2, kx.Tag{FP: fpAll, Seq: 2, Phase: kx.PhaseDown})
		wantErr(t, err, kx.CodeMismatch, "rank 3 disagrees on width: 4 vs 2")
	})
	t.Run("fields", func(t *testing.T) {
		for _, c := range []struct {
			edit func(*kx.Fingerprint)
			msg  string
		}{
			{func(f *kx.Fingerprint) { f.Dtype = uint8(kx.I64) }, "dtype: i64 vs f32"},
			{func(f *kx.Fingerprint) { f.Op = uint16(kx.Max) }, "op: max vs sum"},
			{func(f *kx.Fingerprint) { f.Op = 70 }, "op: op 70 vs sum"},
			{func(f *kx.Fingerprint) { f.Count = 11 }, "count: 11 vs 10"},
			{func(f *kx.Fingerprint) { f.Plan = 9 }, "plan: 9 vs 0"},
			{func(f *kx.Fingerprint) { f.Kind = kx.KindInvalid }, "called invalid-arguments"},
		} {
			m := New(0, 2, time.Second)
			m.Begin(0, fpAll)
			fp := fpAll
			c.edit(&fp)
			m.deliver(1, 0, 0, 1, fp, nil)
			_, err := m.Recv(1, kx.Tag{FP: fpAll, Phase: 1})
			wantErr(t, err, kx.CodeMismatch, "rank 1", c.msg)
		}
	})
}

func TestMailboxAbort(t *testing.T) {
	m := New(0, 3, 2*time.Second)
	m.Begin(1, fpAll)
	// An abort for a future collective is kept until this rank gets there.
	m.Abort(3, 2, kx.CodeTimeout, -1, "rank 1 sent nothing")
	m.deliver(1, 1, 0, 1, fpAll, []byte("ok"))
	if b, err := m.Recv(1, kx.Tag{FP: fpAll, Seq: 1, Phase: 1}); err != nil || string(b) != "ok" {
		t.Fatalf("collective 1 disturbed: %q %v", b, err)
	}
	m.Begin(2, fpAll)
	m.Begin(3, fpAll)
	// A timeout report ends at once the waits on the rank that gave up...
	_, err := m.Recv(2, kx.Tag{FP: fpAll, Seq: 3, Phase: 1})
	wantErr(t, err, kx.CodeTimeout, "rank 1 sent nothing", "reported by rank 2")

	// ...but not waits on other ranks: they run out their own timer and name whom they waited
	// for, so the rank that really stalled is the one named.
	m.Begin(10, fpAll)
	m.Abort(10, 2, kx.CodeTimeout, -1, "rank 1 sent nothing")
	start := time.Now()
	_, err = m.Recv(1, kx.Tag{FP: fpAll, Seq: 10, Phase: 1})
	wantErr(t, err, kx.CodeTimeout, "rank 1 sent nothing for")
	if strings.Contains(err.Error(), "reported by") || time.Since(start) < time.Second {
		t.Fatalf("a wait on rank 1 ended early through rank 2's timeout report: %v after %v", err, time.Since(start))
	}

	// An abort arriving while waiting ends the wait at once, whichever peer it comes from.
	m.Begin(4, fpAll)
	var werr error
	done := make(chan struct{})
	go func() { _, werr = m.Recv(1, kx.Tag{FP: fpAll, Seq: 4, Phase: 1}); close(done) }()
	time.Sleep(10 * time.Millisecond)
	within(t, 500*time.Millisecond, func() {
		m.Abort(4, 2, kx.CodeMismatch, -1, "rank 2 rejected its arguments")
		<-done
	})
	wantErr(t, werr, kx.CodeMismatch, "rank 2 rejected")

	// An abort of a collective already left is dropped; the first abort of a sequence wins.
	m.Begin(5, fpAll)
	m.Abort(4, 1, kx.CodePeer, -1, "old")
	m.Abort(5, -1, kx.CodePeer, -1, "first")
	m.Abort(5, 1, kx.CodeTimeout, -1, "second")
	_, err = m.Recv(2, kx.Tag{FP: fpAll, Seq: 5, Phase: 1})
	wantErr(t, err, kx.CodePeer, "first")
}

func TestMailboxTimeout(t *testing.T) {
	m := New(0, 3, 150*time.Millisecond)
	m.Begin(9, fpAll)
	var err error
	took := within(t, time.Second, func() { _, err = m.Recv(2, kx.Tag{FP: fpAll, Seq: 9, Layer: 1, Phase: kx.PhaseDown}) })
	wantErr(t, err, kx.CodeTimeout, "rank 2", "down", "collective 9", "layer 1")
	if took < 150*time.Millisecond {
		t.Fatalf("timed out after %v, before the timeout", took)
	}
	if !errors.Is(err, kx.ErrTimeout) {
		t.Fatal("errors.Is(err, ErrTimeout) is false")
	}
}

// Bytes still streaming in from the peer push the timeout on: it bounds silence, not the wait.
func TestMailboxTimeoutCountsSilenceOnly(t *testing.T) {
	m := New(0, 2, 500*time.Millisecond)
	m.Begin(0, fpAll)
	go func() {
		for i := 0; i < 8; i++ { // 800 ms of trickle: well past the timeout, never silent
			time.Sleep(100 * time.Millisecond)
			m.live.heard(1)
		}
		m.deliver(1, 0, 0, 1, fpAll, []byte("big"))
	}()
	b, err := m.Recv(1, kx.Tag{FP: fpAll, Phase: 1})
	if err != nil || string(b) != "big" {
		t.Fatalf("got %q %v", b, err)
	}
}

func TestMailboxDeadPeer(t *testing.T) {
	m := New(0, 3, 5*time.Second)
	m.Begin(0, fpAll)
	m.deliver(1, 0, 0, 1, fpAll, []byte("last words"))
	var err error
	done := make(chan struct{})
	go func() { _, err = m.Recv(1, kx.Tag{FP: fpAll, Phase: 2}); close(done) }()
	time.Sleep(10 * time.Millisecond)
	within(t, 500*time.Millisecond, func() {
		m.MarkDead(1, LostError(1, "connection reset"))
		<-done
	})
	wantErr(t, err, kx.CodePeer, "rank 1 is lost")
	// What it delivered before dying is still there.
	if b, err := m.Recv(1, kx.Tag{FP: fpAll, Phase: 1}); err != nil || string(b) != "last words" {
		t.Fatalf("delivered frame lost: %q %v", b, err)
	}
	_, err = m.Recv(1, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodePeer, "rank 1")
	m.MarkDead(2, FinalizedError(2))
	_, err = m.Recv(2, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodePeer, "rank 2 has finalized")
	if got := m.FailedRanks(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("failedRanks = %v", got)
	}
}

func TestMailboxConcurrentRecv(t *testing.T) {
	const n = 6
	m := New(0, n, 2*time.Second)
	m.Begin(0, fpAll)
	var wg sync.WaitGroup
	errs := make(chan error, n*4)
	for src := 0; src < n; src++ {
		for phase := kx.Phase(1); phase <= 4; phase++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := m.Recv(src, kx.Tag{FP: fpAll, Phase: phase})
				if err != nil || len(b) != 1 || b[0] != byte(src*10)+byte(phase) {
					errs <- errors.New("wrong message")
				}
			}()
		}
	}
	time.Sleep(10 * time.Millisecond)
	for phase := kx.Phase(4); phase >= 1; phase-- {
		for src := n - 1; src >= 0; src-- {
			m.deliver(src, 0, 0, phase, fpAll, []byte{byte(src*10) + byte(phase)})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.waiters) != 0 {
		t.Fatalf("%d waiters left behind", len(m.waiters))
	}
}

func TestMailboxClose(t *testing.T) {
	m := New(0, 2, 5*time.Second)
	var err error
	done := make(chan struct{})
	go func() { _, err = m.Recv(1, kx.Tag{FP: fpAll, Phase: 1}); close(done) }()
	time.Sleep(10 * time.Millisecond)
	within(t, 500*time.Millisecond, func() {
		m.Close(kx.Errorf(kx.CodeState, "transport of rank 0 is closed"))
		<-done
	})
	wantErr(t, err, kx.CodeState, "closed")
}

// A box left by a collective is reused for a later one with nothing of the old one in it: a
// racing copy seen but never accepted (dropped with a failed collective) would otherwise number
// the next collective's copies of its key from where the old one stopped.
func TestRecycledBoxStartsEmpty(t *testing.T) {
	m := New(0, 3, 5*time.Second)
	m.Begin(1, fpAll)
	m.mu.Lock()
	old := m.box(1)
	k := msgKey{layer: 1, phase: kx.PhaseDense | raceBit, src: 1}
	old.seen[copyKey{k, 2}] = 1 // seen, not accepted
	old.stalled = map[int]error{2: errors.New("stalled")}
	m.mu.Unlock()
	m.Begin(2, fpAll) // box 1 is recycled
	m.mu.Lock()
	b := m.box(2)
	m.mu.Unlock()
	if b != old {
		t.Fatal("the recycled box was not reused")
	}
	if len(b.seen) != 0 || len(b.accepted) != 0 || len(b.stalled) != 0 || len(b.msgs) != 0 || b.fail != nil {
		t.Fatalf("reused box keeps seen %v, accepted %v, stalled %v, %d queues, fail %v",
			b.seen, b.accepted, b.stalled, len(b.msgs), b.fail)
	}
}

// Finalized tells a rank that said bye (MarkFinalized) from one that died, waiting a bounded
// time for the verdict: a send whose wait the peer's bye ended counts as done (netio's
// awaitRefCopied), a death does not.
func TestFinalizedTellsByeFromDeath(t *testing.T) {
	m := New(0, 4, time.Second)
	m.MarkFinalized(1)
	m.MarkDead(2, LostError(2, "its process died (shared memory)"))
	if !m.Finalized(1, 0) {
		t.Errorf("rank 1 said bye: Finalized = false")
	}
	if m.Finalized(2, time.Second) {
		t.Errorf("rank 2 died: Finalized = true")
	}
	_, err := m.Recv(1, kx.Tag{FP: fpAll, Phase: 1})
	wantErr(t, err, kx.CodePeer, "rank 1 has finalized")
	go func() {
		time.Sleep(20 * time.Millisecond) // the reader reaches the bye after the wait ended
		m.MarkFinalized(3)
	}()
	if !m.Finalized(3, 10*time.Second) {
		t.Errorf("rank 3's bye, marked after the question: not waited for")
	}
	start := time.Now()
	if m.Finalized(0, 50*time.Millisecond) || time.Since(start) < 50*time.Millisecond {
		t.Errorf("a rank not marked gone: Finalized true, or it did not wait its bound")
	}
	m.MarkDead(3, LostError(3, "late")) // a later death does not undo the bye
	if !m.Finalized(3, 0) {
		t.Errorf("rank 3's bye forgotten")
	}
}

// Verdict answers at once what would end a wait, and nothing while the message may still come:
// a frame of another fingerprint, a peer's abort, the peer's loss, a frame on its own key.
func TestMailboxVerdict(t *testing.T) {
	m := New(0, 3, time.Second)
	m.Begin(1, fpAll)
	tag := kx.Tag{FP: fpAll, Seq: 1, Phase: kx.PhaseSmall}
	m.deliver(1, 1, 0, kx.PhaseSmall, fpAll, []byte("a message of another key"))
	if err := m.Verdict(1, tag); err != nil {
		t.Fatalf("verdict while the message may still come: %v", err)
	}
	other := fpAll
	other.Count++
	m.deliver(2, 1, 0, kx.PhaseSmall, other, []byte("x"))
	wantErr(t, m.Verdict(1, tag), kx.CodeMismatch, "rank 2", "count")

	m.Begin(2, fpAll)
	tag.Seq = 2
	m.Abort(2, 2, kx.CodeTimeout, -1, "rank 1 sent nothing")
	if err := m.Verdict(1, tag); err != nil { // rank 1 may still send (TestMailboxAbort)
		t.Fatalf("a wait on rank 1 ended by rank 2's timeout report: %v", err)
	}
	// rank 2 gave up, so it sends nothing: as a wait on it, the verdict fails the collective
	wantErr(t, m.Verdict(2, tag), kx.CodeTimeout, "reported by rank 2")
	wantErr(t, m.Verdict(1, tag), kx.CodeTimeout, "reported by rank 2")

	m.Begin(4, fpAll)
	tag.Seq = 4
	m.Abort(4, 2, kx.CodeMismatch, -1, "rank 2 rejected its arguments")
	wantErr(t, m.Verdict(1, tag), kx.CodeMismatch, "rank 2 rejected")

	m.Begin(5, fpAll)
	tag.Seq = 5
	m.MarkDead(1, LostError(1, "killed"))
	wantErr(t, m.Verdict(1, tag), kx.CodePeer, "rank 1")
	if err := m.Verdict(2, tag); err != nil {
		t.Fatalf("rank 2's verdict after rank 1 died: %v", err)
	}
	m.deliver(2, 5, verdictLayer, kx.PhaseSmall, fpAll, []byte("y"))
	wantErr(t, m.Verdict(2, tag), kx.CodeInternal, "rank 2", "no collective sends")
}
