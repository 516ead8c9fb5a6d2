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
//     take the mailbox's lock twice, put it in a box and take it out again.

// Want is the frame a Recv waits for: a data frame from Src with Tag (not racing), whose
// fingerprint is Tag.FP. Whoever reads it sets Data to its payload.
type Want struct {
	Src  int
	Tag  kx.Tag
	Data []byte
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
