package mailbox

import (
	"kylix/core/kx"
	"sync/atomic"
)

// Await's look without the lock. A small step waits several times for messages that have
// landed already: a combine waits for a prefix of a message, then sub-range by sub-range, then
// for all of it, and each look took the mailbox's lock (two locked instructions). The posts
// that landed whole lately are published in a few slots; a wait that finds its post there, of
// the current collective, with nothing failed or closed since it landed, has its answer.

// noteWhole publishes p, which has just landed whole without error, for Landed; mu is held.
// A post of a collective that failed, or of a closed mailbox, is not: a look must say why.
// wholeGen's store is the publication (a Landed that loads it sees the payload and wholeAt);
// the slot's, a locked instruction too, is made only when the slot holds another post.
func (m *Mailbox) noteWhole(p *post) {
	if m.closed != nil || m.stale(p.seq) || p.phase&raceBit != 0 {
		return
	}
	if b := m.boxOf(p.seq); b != nil && b.fail != nil {
		return
	}
	p.wholeAt = int64(m.changes.Load())
	atomic.StoreInt64(&p.wholeGen, int64(m.gen.Load()))
	if s := m.wholeSlot(p.key); s.Load() != p {
		s.Store(p)
	}
}

// wholeSlot is where a post of key k is published: one slot a key (the few of a small step's
// layer fall in different ones), so a key's post reused from one collective to the next finds
// itself there already.
func (m *Mailbox) wholeSlot(k msgKey) *atomic.Pointer[post] {
	return &m.wholes[(int(k.layer)+int(k.phase)<<1+k.src)&(len(m.wholes)-1)]
}

// Landed is Await's answer when the message posted for `from` with tag has landed whole: its
// length (what Await returns for any prefix then). ok is false when that cannot be told
// without the lock (the message has not landed, or something failed or closed since): the
// caller then waits as usual.
//
// Why this is safe: a post is published under the lock after it landed, with the gen and the
// count of failures and closes of that moment. Begin and Quiesce move gen on (a post is reused
// only after Begin), and a failure or a close moves changes on; the key and sequence of a post
// are written only by the goroutine that posts and waits.
func (m *Mailbox) Landed(from int, tag kx.Tag) (int, bool) {
	if tag.Race || from < 0 {
		return 0, false
	}
	k := m.race.key(tag.Layer, wirePhase(tag), from)
	p := m.wholeSlot(k).Load()
	if p != nil && atomic.LoadInt64(&p.wholeGen) == int64(m.gen.Load()) && p.key == k && p.seq == tag.Seq &&
		p.wholeAt == int64(m.changes.Load()) {
		return len(p.dst), true
	}
	return 0, false
}
