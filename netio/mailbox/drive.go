package mailbox

import (
	"kylix/core/kx"
)

// Reading on the waiting thread (netio's caller-thread reads, netio/selfread_linux.go). The
// thread that made a cgo call into Kylix is locked to its goroutine, so every hand-off to a
// reader goroutine and back costs two thread switches: a transport may read a wait's links
// itself before the wait sleeps. The mailbox calls nothing back for it; the transport pulls:
//
//   - Sources names the ranks a message may come from (one, or every replica of a racing
//     source), whose links the transport reads;
//   - TryRecv and TryAwait look without sleeping, after each frame the transport filed;
//   - for a Recv, WantOf names the frame waited for, so that its reader reads the payload into a
//     pooled buffer of its own and hands it over (HandOver) instead of filing it, which would
//     take the mailbox's lock twice, put it in a box and take it out again;
//   - for an Await, TryAwaitWant names the frame and its posted place, which the reader reads
//     the payload into and lands (LandWant) with one lock, not the three of claiming the place,
//     landing it and looking again.

// Want is the frame a Recv or an Await waits for: a data frame from Src with Tag (not racing),
// whose fingerprint is Tag.FP. Whoever reads it sets Data to its payload: for an Await, Into,
// the posted place, which a payload of its length is read straight into.
type Want struct {
	Src  int
	Tag  kx.Tag
	Data []byte
	Into []byte
	post *post // Into's post, claimed for the reader (state filling) until LandWant or Unwant
	// changes is the mailbox's count of failures and closes when WantOf named the frame:
	// HandOver takes no lock while it has not moved.
	changes uint64
}

// Matches tells whether a data frame from src with tag is the one wanted.
func (w *Want) Matches(src int, tag kx.Tag) bool {
	return w != nil && w.Data == nil && src == w.Src && tag == w.Tag
}

// WantOf is the frame a Recv from `from` with tag waits for, and whether it may be handed over:
// a message of the current collective that is not racing, none of whose key is filed already,
// of a mailbox and collective that did not fail (the caller's TryRecv then says why).
// The caller holds the read tokens of the links it may come on, so no other reader files one
// meanwhile; a frame filed before it took them (by a reader goroutine) is the Recv's, and the
// next frame read a later message of the key: handing that over would take a key's messages
// out of order.
func (m *Mailbox) WantOf(from int, tag kx.Tag) (Want, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tag.Race || !m.started || tag.Seq != m.cur || m.closed != nil {
		return Want{}, false
	}
	if b := m.boxOf(tag.Seq); b != nil && (b.fail != nil || b.msgAt(m.race.key(tag.Layer, wirePhase(tag), from)) >= 0) {
		return Want{}, false
	}
	return Want{Src: from, Tag: kx.Tag{Seq: tag.Seq, Layer: tag.Layer, Phase: tag.Phase, FP: m.fp},
		changes: m.changes.Load()}, true
}

// Took records that the reader took the wanted frame from src, read whole: src was heard from
// and is in the frame's collective (Receive's marks).
func (m *Mailbox) Took(src int, seq uint64) {
	m.live.calling(src, seq)
	m.live.heard(src)
}

// HandOver gives a Recv the payload of w, its wanted frame, read whole (Want.Data): ok is false
// when its collective is over or failed meanwhile (the payload goes back to the pool, and the
// Recv's next look says why). Nothing failed or closed since WantOf: ok without the lock (the
// collective is still current: only the Recv's own goroutine begins the next).
func (m *Mailbox) HandOver(w *Want, data []byte) (ok bool) {
	if m.changes.Load() == w.changes {
		return true
	}
	seq := w.Tag.Seq
	m.mu.Lock()
	b := m.boxOf(seq)
	ok = m.closed == nil && !m.stale(seq) && (b == nil || b.fail == nil)
	m.mu.Unlock()
	if !ok {
		m.Release(data)
	}
	return ok
}

// wantedBytes is the size of WantBuf's buffer: a small step's message.
const wantedBytes = 4 << 10

// WantBuf is a buffer of n bytes for the payload of a Recv's wanted frame (Want.Data), read on
// the Recv's own thread; Release gives it back. A small one is the mailbox's own while it is
// free, so a small step's receive takes no pooled buffer.
func (m *Mailbox) WantBuf(n int) []byte {
	if n > wantedBytes || m.wantedOut.Load() || !m.wantedOut.CompareAndSwap(false, true) {
		return GetBuf(n)
	}
	return m.wanted[:n]
}

// Sources puts into buf the ranks a message from `from` with tag may come from, and returns it:
// `from` alone, or every replica of a racing source's node.
func (m *Mailbox) Sources(from int, tag kx.Tag, buf []int) []int {
	k := m.race.key(tag.Layer, wirePhase(tag), from)
	srcs, one := m.race.sources(k, from)
	if srcs == nil {
		return append(buf[:0], one)
	}
	return append(buf[:0], srcs...)
}

// TryAwaitWant is TryAwait for a driving Await. When the message has not landed, its place may
// be read into on the waiting thread: a plain post (neither folded nor racing), small enough to
// be read in one piece (Receive's chunk), of the current collective, whose wait nothing has ended.
// w then names the frame and its place (Into), claimed for the reader as claim does: nobody else
// lands it until LandWant (read whole), FailWant (the read broke off) or Unwant (given back).
// The caller holds the read tokens of the links it may come on, as for WantOf.
func (m *Mailbox) TryAwaitWant(from int, tag kx.Tag, n int, w *Want) (got int, ok bool, err error) {
	*w = Want{Src: -1}
	if m.wantPost(from, tag, w) {
		return 0, false, nil
	}
	return m.TryAwait(from, tag, n)
}

// wantPost claims the open post of the message from `from` with tag for w, if it may be.
func (m *Mailbox) wantPost(from int, tag kx.Tag, w *Want) bool {
	if tag.Race || from < 0 || from >= m.size {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || !m.started || tag.Seq != m.cur || m.dead[from] != nil {
		return false
	}
	k := m.race.key(tag.Layer, wirePhase(tag), from)
	if b := m.boxOf(tag.Seq); b != nil && (b.fail != nil || len(b.stalled) > 0 && b.stalled[from] != nil) {
		return false
	}
	p := m.postOf(k)
	if p == nil || p.seq != tag.Seq || p.state != postOpen || p.fold.Fn != nil || len(p.dst) == 0 || len(p.dst) > readChunk {
		return false
	}
	p.state = postFilling
	*w = Want{Src: from, Tag: kx.Tag{Seq: tag.Seq, Layer: tag.Layer, Phase: tag.Phase, FP: m.fp}, Into: p.dst, post: p}
	return true
}

// Claimed tells whether w holds a posted place (TryAwaitWant).
func (w *Want) Claimed() bool { return w != nil && w.post != nil }

// LandWant lands w's place, read whole (Data set): it returns what Await returns, the
// message's length, or why the collective ended meanwhile.
func (m *Mailbox) LandWant(w *Want) (int, error) {
	p := w.post
	*w = Want{Src: -1}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state == postFilling {
		p.state = postLanded
		m.noteWhole(p)
	}
	m.quiet.Broadcast()
	if m.closed != nil {
		return 0, m.closed
	}
	if b := m.boxOf(p.seq); b != nil && b.fail != nil {
		return 0, b.fail
	}
	return len(p.dst), nil
}

// Unwant gives w's place back unread: a reader lands it as any post from now on. Called before
// the caller lets go of the read tokens. Nothing when w holds no place.
func (m *Mailbox) Unwant(w *Want) {
	p := w.post
	*w = Want{Src: -1}
	if p == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state == postFilling {
		p.state = postOpen
	}
	m.quiet.Broadcast()
}

// FailWant ends w's place with the error of a read that broke off in its payload (unfill).
func (m *Mailbox) FailWant(w *Want) {
	p, src := w.post, w.Src
	*w = Want{Src: -1}
	if p != nil {
		m.unfill(src, p)
	}
}
