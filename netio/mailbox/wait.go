package mailbox

import (
	"errors"
	"kylix/core/kx"
	"strings"
	"time"
)

// Waits: Recv and Await block in wait until their message is there, the
// collective failed, the peer is gone or it has been silent for the timeout.

type waiter struct {
	seq   uint64
	key   msgKey
	need  int           // a prefix wait's bytes (progress below it does not wake), else < 0
	ch    chan struct{} // buffered(1): a wake-up is never lost and never blocks the sender
	timer *time.Timer   // stopped while the waiter is free
	due   time.Time     // when the wait next looks at the clock (its timer fires)
	armed bool          // timer runs: set only when the wait sleeps
}

// getWaiter takes a waiter from the free list (waits are frequent; their channel and timer
// are reused) or makes one. need is a prefix wait's byte count (else negative).
func (m *Mailbox) getWaiter(seq uint64, k msgKey, need int) *waiter {
	if n := len(m.freeWaiters); n > 0 {
		w := m.freeWaiters[n-1]
		m.freeWaiters = m.freeWaiters[:n-1]
		w.seq, w.key, w.need = seq, k, need
		return w
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{seq: seq, key: k, need: need, ch: make(chan struct{}, 1), timer: t}
}

// putWaiter takes w off the waiting list and files it for reuse, its timer stopped and its
// channel empty. The caller holds the lock.
func (m *Mailbox) putWaiter(w *waiter) {
	m.removeWaiter(w)
	if w.armed && !w.timer.Stop() { // fired and not received: drain so the next Reset starts clean
		select {
		case <-w.timer.C:
		default:
		}
	}
	w.armed = false
	select { // a wake-up that came too late must not wake the next user
	case <-w.ch:
	default:
	}
	m.freeWaiters = append(m.freeWaiters, w)
}

func (m *Mailbox) removeWaiter(w *waiter) {
	for i, x := range m.waiters {
		if x == w {
			last := len(m.waiters) - 1
			m.waiters[i] = m.waiters[last]
			m.waiters[last] = nil
			m.waiters = m.waiters[:last]
			return
		}
	}
}

// plan sets when w next looks at the clock, d after now; its timer is started only when the
// wait sleeps (sleep).
func (w *waiter) plan(now time.Time, d time.Duration) {
	w.due = now.Add(d)
	if w.armed {
		w.timer.Reset(d)
	}
}

// sleep starts w's timer for the time left until due, unless it runs.
func (w *waiter) sleep() {
	if !w.armed {
		w.timer.Reset(max(time.Until(w.due), 0))
		w.armed = true
	}
}

func wake(w *waiter) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (m *Mailbox) wakeKey(seq uint64, k msgKey) {
	for _, w := range m.waiters {
		if w.seq == seq && w.key == k {
			wake(w)
		}
	}
}

// Recv waits for the message from rank `from` with tag and returns its payload, which the
// caller owns. A failed collective, a dead peer, a closed mailbox or timeout of silence from
// `from` end the wait with an error.
func (m *Mailbox) Recv(from int, tag kx.Tag) ([]byte, error) {
	r, err := m.wait(from, tag, recvWhole, false)
	return r.data, err
}

// TryRecv is Recv that does not wait: ok is false while the message is not there and nothing
// has ended the wait for it yet.
func (m *Mailbox) TryRecv(from int, tag kx.Tag) (b []byte, ok bool, err error) {
	r, err := m.wait(from, tag, recvWhole, true)
	if err == errNotYet {
		return nil, false, nil
	}
	return r.data, true, err
}

// Verdict is what would end a wait for rank from's message of collective tag.Seq now, without
// waiting: nil while it may still come; else the mailbox's close, the collective left or failed
// (a peer's abort, a frame of another fingerprint), the source's report that it gave up, or its
// loss. A wait that watches another channel for the message (the lanes: netio/lanes) asks it
// between looks. It looks for a key no collective sends, so that only what ends a wait answers.
func (m *Mailbox) Verdict(from int, tag kx.Tag) error {
	tag.Layer, tag.Phase, tag.Race = verdictLayer, kx.PhaseSmall, false
	r, err := m.wait(from, tag, recvWhole, true)
	switch {
	case err == errNotYet:
		return nil
	case r.data != nil: // a frame on that key: a peer's bug
		m.Release(r.data)
		return kx.Errorf(kx.CodeInternal, "rank %d sent a frame of layer %d, which no collective sends", kx.RankRef(from), verdictLayer)
	}
	return err
}

// verdictLayer is the layer of the key Verdict looks for.
const verdictLayer = 255

// errNotYet ends a wait that may not sleep (TryRecv, TryAwait) before its message is there.
var errNotYet = errors.New("not yet")

// takeMsg pops the first buffered message with key k, or returns nil.
func takeMsg(b *seqBox, k msgKey) []byte {
	i := b.msgAt(k)
	if i < 0 {
		return nil
	}
	q := &b.msgs[i].q
	data := q.head.data
	if len(q.rest) == 0 {
		b.dropMsg(i)
		return data
	}
	q.head = q.rest[0]
	q.rest[0] = frame{}
	q.rest = q.rest[1:]
	return data
}

// What wait waits for: a buffered message (Recv), a posted message landed whole, or (n >= 0)
// the first n bytes of a posted message.
const (
	recvWhole = -2
	postWhole = -1
)

// wait blocks until the message is there (readyLocked). A failed collective, a dead peer (for
// a racing message: every replica of the source node dead), a closed mailbox or timeout without
// data from `from` end the wait with an error. A wait that stalls logs a line every stallEvery.
// With try it does not sleep: it returns errNotYet instead.
func (m *Mailbox) wait(from int, tag kx.Tag, prefix int, try bool) (ready, error) {
	if from < 0 || from >= m.size {
		return ready{}, kx.Errorf(kx.CodeArg, "recv: source rank %d is not in 0..%d", kx.RankRef(from), m.size-1)
	}
	k := m.race.key(tag.Layer, wirePhase(tag), from)
	var w *waiter
	var start time.Time // of the wait proper: set when it first sleeps
	var startMono int64 // start on the liveness clock (kx.MonoNow)
	nextStall := m.stallEvery
	m.mu.Lock()
	defer func() {
		if w != nil {
			m.putWaiter(w)
		}
		m.mu.Unlock()
	}()
	for {
		if r, done, err := m.lookLocked(tag, k, from, prefix); done {
			return r, err
		}
		if try {
			return ready{}, errNotYet
		}
		if w == nil {
			w = m.getWaiter(tag.Seq, k, prefix)
			m.waiters = append(m.waiters, w)
			start, startMono = time.Now(), kx.MonoNow()
			w.plan(start, m.nextCheck(m.timeout, nextStall))
		}
		m.mu.Unlock()
		w.sleep()
		select {
		case <-w.ch:
			m.mu.Lock()
		case <-w.timer.C:
			m.mu.Lock()
			waited := time.Since(start)
			if nextStall > 0 && waited >= nextStall {
				m.reportStall(tag, k, from, waited)
				nextStall += m.stallEvery
			}
			// The timeout counts from the later of the start of this wait and the last data
			// from the peer (a long message may still be arriving); heartbeats do not count.
			last := max(startMono, m.live.latestData(m.race.sources(k, from)))
			if left := time.Duration(last-kx.MonoNow()) + m.timeout; left > 0 {
				w.plan(time.Now(), m.nextCheck(left, nextStall-waited))
				continue
			}
			// One last look: the message may have raced the timer.
			if b := m.boxOf(tag.Seq); b != nil && b.fail != nil {
				return ready{}, b.fail
			} else if b != nil {
				if r, ok := m.readyLocked(b, k, tag.Seq, prefix); ok {
					return r, nil
				}
			}
			if m.closed != nil || m.goneLocked(k, from) != nil {
				continue
			}
			return ready{}, kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its %s message of collective %d, layer %d",
				kx.RankRef(from), m.timeout, phaseName(tag.Phase), kx.SeqRef(tag.Seq), kx.LayerRef(tag.Layer))
		}
	}
}

// lookLocked is one look of a wait: done with the message (readyLocked) or with why it cannot
// come (a closed mailbox, a collective left or failed, a source that gave up on it or is gone).
func (m *Mailbox) lookLocked(tag kx.Tag, k msgKey, from, prefix int) (r ready, done bool, err error) {
	if m.closed != nil {
		return ready{}, true, m.closed
	}
	if m.stale(tag.Seq) {
		return ready{}, true, kx.Errorf(kx.CodeState, "recv: collective %d is over (this rank is in %d)", kx.SeqRef(tag.Seq), kx.SeqRef(m.cur))
	}
	b := m.box(tag.Seq)
	if b.fail != nil {
		return ready{}, true, b.fail
	}
	if r, ok := m.readyLocked(b, k, tag.Seq, prefix); ok {
		return r, true, nil
	}
	if err := m.stalledLocked(b, k, from); err != nil {
		// The rank we wait for gave up on this collective: it will not send.
		m.failLocked(tag.Seq, b, err)
		b.remote = true
		return ready{}, true, err
	}
	if err := m.goneLocked(k, from); err != nil {
		return ready{}, true, err
	}
	return ready{}, false, nil
}

// ready is what wait found: a buffered payload (Recv, or an early frame of a post) and, for
// Await, the post.
type ready struct {
	data    []byte
	post    *post
	partial bool // only the prefix asked for has landed
}

// readyLocked looks for the message: a buffered frame (Recv) or a post that has landed or holds
// an early frame, which it takes out of the post (Await).
func (m *Mailbox) readyLocked(b *seqBox, k msgKey, seq uint64, prefix int) (ready, bool) {
	if prefix == recvWhole {
		data := takeMsg(b, k)
		return ready{data: data}, data != nil
	}
	q := m.postOf(k)
	if q == nil || q.seq != seq {
		return ready{}, false
	}
	if q.state == postFilling && prefix >= 0 && q.filled >= prefix {
		return ready{post: q, partial: true}, true
	}
	if q.state != postLanded && q.state != postEarly {
		return ready{}, false
	}
	r := ready{post: q}
	if q.state == postEarly {
		r.data, q.data, q.state = q.data, nil, postLanded
	}
	return r, true
}

// goneLocked is why no copy of a message from `from` can come any more: every rank it may come
// from is dead. One dead rank keeps its own error; several are named together.
func (m *Mailbox) goneLocked(k msgKey, from int) error {
	srcs, one := m.race.sources(k, from)
	if srcs == nil {
		return m.dead[one]
	}
	var why []string
	var refs []any
	for _, r := range srcs {
		if m.dead[r] == nil {
			return nil
		}
		why = append(why, m.dead[r].Error())
		refs = append(refs, kx.RankRef(r))
	}
	return kx.Errorf(kx.CodePeer, "every replica of node %d is lost (ranks "+kx.RankListFormat(len(refs))+"): %s",
		append(append([]any{k.src}, refs...), strings.Join(why, "; "))...)
}

// stalledLocked is the timeout report that ends a wait for k: the source's, or for a racing
// message the report of every live replica of the source node.
func (m *Mailbox) stalledLocked(b *seqBox, k msgKey, from int) error {
	srcs, one := m.race.sources(k, from)
	if srcs == nil {
		return b.stalled[one]
	}
	var first error
	for _, r := range srcs {
		if m.dead[r] != nil {
			continue
		}
		err := b.stalled[r]
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}
