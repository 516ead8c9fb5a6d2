package mailbox

import (
	"kylix/core/kx"
	"slices"
	"unsafe"
)

// Receive in place: core posts where a message lands (Post), a transport asks before reading a
// payload whether it has a place (claim) and reads straight into it, and core waits for the
// whole message or a prefix of it (Await).

// post is one landing place. Its state moves open -> filling (a reader is writing into dst)
// -> landed, or open -> early (the frame came before the post and waits, buffered, in data).
type post struct {
	key    msgKey // the message's (layer, wire phase, source)
	seq    uint64
	layer  uint8
	phase  kx.Phase // as on the wire (racing messages carry raceBit)
	dst    []byte
	state  postState
	data   []byte  // early: the buffered payload, copied into dst by Await
	err    error   // landed with an error (a payload of the wrong length)
	filled int     // filling: bytes of dst already read (a prefix)
	fold   kx.Fold // with Fn set, the payload is combined into dst, not copied
	// wholeGen is the mailbox's gen when the post landed whole without error (0: it did not;
	// stored atomically under the lock, loaded by Landed), wholeAt its changes then (landed.go).
	wholeGen, wholeAt int64
}

type postState uint8

const (
	postOpen postState = iota
	postFilling
	postEarly
	postLanded
)

// Post posts dst as the landing place of the message from rank `from` with tag, a message of
// the current collective (kx.Receiver.Post). A frame that already arrived is moved into the post
// (Await copies it); a later one is read straight into dst by claim. A post for a collective this
// rank has left is ignored (Await reports why). With fold.Fn set the message is combined into dst:
// read in pieces through the reader's scratch and folded there, or folded from its buffered copy
// by Await when it came first. A racing message cannot be folded (its copies would each be); it
// panics, a bug of the caller's.
func (m *Mailbox) Post(from int, tag kx.Tag, dst []byte, fold kx.Fold) {
	if fold.Fn != nil && (tag.Race || fold.Unit < 1 || len(dst)%fold.Unit != 0) {
		panic("mailbox: a fold of a racing message, or of a place that is not whole units")
	}
	m.expect(from, tag, dst, fold)
}

// Release gives a payload of Recv back: to WantBuf's buffer or to the pool (PutBuf).
func (m *Mailbox) Release(b []byte) {
	if cap(b) > 0 && unsafe.SliceData(b) == unsafe.SliceData(m.wanted) {
		m.wantedOut.Store(false)
		return
	}
	PutBuf(b)
}

func (m *Mailbox) expect(from int, tag kx.Tag, dst []byte, fold kx.Fold) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.race.key(tag.Layer, wirePhase(tag), from)
	if m.closed != nil || !m.started || tag.Seq != m.cur {
		return
	}
	p := m.newPost()
	*p = post{key: k, seq: tag.Seq, layer: tag.Layer, phase: k.phase, dst: dst, fold: fold}
	if b := m.boxOf(tag.Seq); b != nil {
		if data := takeMsg(b, k); data != nil {
			p.state, p.data = postEarly, data
		}
	}
	m.setPost(p)
}

// newPost is a post from the free list, or a new one.
func (m *Mailbox) newPost() *post {
	if n := len(m.freePosts); n > 0 {
		p := m.freePosts[n-1]
		m.freePosts[n-1] = nil
		m.freePosts = m.freePosts[:n-1]
		return p
	}
	return new(post)
}

// recyclePost keeps a post of a collective that ended (Begin) for newPost, unless someone may
// still hold it: a reader filling it (claim handed it out; landed or unfill is its last touch),
// or one of a racing message, whose readers offer chunks to a post they claimed until they see
// it landed (offer), which a post reused for the same key would not be.
func (m *Mailbox) recyclePost(p *post) {
	if p.state == postFilling || p.phase&raceBit != 0 || len(m.freePosts) >= 64 {
		return
	}
	*p = post{}
	m.freePosts = append(m.freePosts, p)
}

// claim is asked by a transport, before it reads a data frame's payload of n bytes, whether the
// payload has a landing place. It returns the post, now being filled, whose dst is exactly n
// bytes; or nil, and the frame goes through deliver. A posted place of another length makes the
// post fail with CodeInternal naming the sender (the frame is then delivered and dropped with
// the collective): nothing is ever written outside the place.
func (m *Mailbox) claim(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, n int) *post {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || !m.started || seq != m.cur || fp != m.fp {
		return nil
	}
	k := m.race.key(layer, phase, src)
	p := m.postOf(k)
	if p == nil || p.state != postOpen {
		return nil
	}
	if len(p.dst) != n {
		p.state = postLanded
		p.err = lengthError(src, seq, layer, phase, n, len(p.dst))
		m.wakeKey(seq, k)
		return nil
	}
	p.state = postFilling
	return p
}

// lengthError is a payload whose length is not that of its posted place.
func lengthError(src int, seq uint64, layer uint8, phase kx.Phase, got, want int) error {
	return kx.Errorf(kx.CodeInternal, "rank %d sent a %s message of %d bytes in layer %d of collective %d, want %d",
		kx.RankRef(src), phaseName(phase), got, kx.LayerRef(layer), kx.SeqRef(seq), want)
}

// progress records that the first n bytes of a post being filled have landed, for waits on a
// prefix (awaitPrefix).
func (m *Mailbox) progress(src int, p *post, n int, layer uint8, phase kx.Phase) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state == postFilling {
		p.filled = n
		k := m.race.key(layer, phase, src)
		for _, w := range m.waiters { // only prefix waits that now have their bytes: a wait
			// for the whole message, woken every chunk, would only go back to sleep
			if w.seq == p.seq && w.key == k && w.need >= 0 && w.need <= n {
				wake(w)
			}
		}
	}
}

// landed marks a post claimed by claim as filled.
func (m *Mailbox) landed(src int, p *post, layer uint8, phase kx.Phase) {
	m.live.heard(src)
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state == postFilling {
		p.state = postLanded
		m.noteWhole(p)
	}
	m.wakeKey(p.seq, m.race.key(layer, phase, src))
	m.quiet.Broadcast()
}

// unfill is told by a reader whose connection failed in the middle of a payload it was reading
// into post p: the post ends with the peer's error, and nobody writes into it any more. Where the
// peer was already found dead (liveness, its process gone), that is the error: the read failed
// because of it, and "connection broke" would hide why.
func (m *Mailbox) unfill(src int, p *post) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state == postFilling {
		p.state = postLanded
		p.err = LostError(src, "its connection broke in the middle of a message")
		if src >= 0 && src < len(m.dead) && m.dead[src] != nil {
			p.err = m.dead[src]
		}
		m.wakeKey(p.seq, m.race.key(p.layer, p.phase, src))
	}
	m.quiet.Broadcast()
}

// Quiesce ends the posts of collective seq when it failed, so that no byte lands in a posted
// place once the collective has returned (a place may be the caller's memory, or a plan's that
// the next call reuses). Places not yet claimed are withdrawn: a frame for one is then buffered
// and dropped with the collective. Racing copies write only under the lock, so withdrawing
// their places stops them. A place a reader is filling straight from the socket is waited for:
// its peer is sending it now, or dies (at once, or after liveness_ms), and either ends it.
func (m *Mailbox) Quiesce(seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kx.AddRelaxed(&m.gen, 1) // what landed is no answer any more: a look takes the lock (Landed)
	for {
		busy := false
		m.posts = slices.DeleteFunc(m.posts, func(p *post) bool {
			switch {
			case p.seq != seq:
				return false
			case p.state == postFilling && p.phase&raceBit == 0:
				busy = true
				return false
			case p.state == postEarly:
				PutBuf(p.data)
				p.data = nil
			}
			return true
		})
		if !busy || m.closed != nil {
			return
		}
		m.quiet.Wait()
	}
}

// Await waits until at least the first prefix bytes of the posted message have landed (all of
// it when prefix < 0, kx.Whole), so a caller can combine the front of a large message while the
// rest streams in. It returns the message's length once it has landed whole, else prefix. It
// fails as Recv does, and with CodeInternal for a payload of the wrong length.
func (m *Mailbox) Await(from int, tag kx.Tag, n int) (int, error) {
	got, _, err := m.await(from, tag, n, false)
	return got, err
}

// TryAwait is Await that does not wait: ok is false while the message (or its prefix) has not
// landed and nothing has ended the wait for it yet.
func (m *Mailbox) TryAwait(from int, tag kx.Tag, n int) (got int, ok bool, err error) {
	return m.await(from, tag, n, true)
}

func (m *Mailbox) await(from int, tag kx.Tag, n int, try bool) (int, bool, error) {
	if got, ok := m.Landed(from, tag); ok {
		return got, true, nil
	}
	if n < 0 {
		n = postWhole
	}
	r, err := m.wait(from, tag, n, try)
	if err == errNotYet {
		return 0, false, nil
	}
	if err != nil {
		return 0, true, err
	}
	p := r.post
	if early := r.data; early != nil {
		defer PutBuf(early)
		if len(early) != len(p.dst) {
			return 0, true, lengthError(from, tag.Seq, tag.Layer, tag.Phase, len(early), len(p.dst))
		}
		if p.fold.Fn != nil {
			foldPieces(p, early)
		} else {
			copy(p.dst, early)
		}
	}
	if r.partial {
		return n, true, nil
	}
	return len(p.dst), true, p.err
}
