package mailbox

import (
	"io"
	"kylix/core/kx"
)

// Racing copies (race.go). Copies race on a TCP stream each, so a second copy often arrives
// while the first is still being read, and the first may never finish (its sender was killed in
// the middle of it). So a racing payload is not read straight into its place: each reader reads
// chunks into its own scratch and offers them (offer), and under the mailbox's lock whatever
// extends the filled prefix is copied in. Whichever copy completes the place wins; a copy that
// falls behind the filled prefix only discards bytes, and nothing is ever buffered whole twice.
// A copy that arrives before the place is posted is buffered as an ordinary early frame, and the
// copies behind it notice (raceDone) and stop buffering.

// raceChunk is how much of a racing payload a reader offers at a time.
const raceChunk = 256 << 10

// raceAction is what a reader does with a racing payload (claimRace).
type raceAction uint8

const (
	raceBuffer  raceAction = iota // no place yet: buffer it, watching raceDone
	raceOffer                     // offer its chunks to the post
	raceDiscard                   // another copy already won: read and drop it
)

// copyKey names the frames of one key from one rank (seqBox.seen).
type copyKey struct {
	k   msgKey
	src int
}

// claimRace is asked by a reader before it reads a racing payload of n bytes from src. It also
// numbers the frame among src's frames of its key (idx): a key may carry several messages in
// one collective, and the i-th frame from every replica is the same message.
func (m *Mailbox) claimRace(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, n int) (action raceAction, into *post, idx int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		return raceDiscard, nil, 0
	}
	k := m.race.key(layer, phase, src)
	b := m.box(seq)
	ck := copyKey{k, src}
	idx = b.seen[ck]
	b.seen[ck] = idx + 1
	if b.fail != nil || idx < b.accepted[k] {
		return raceDiscard, nil, idx
	}
	if !m.started || seq != m.cur || fp != m.fp {
		return raceBuffer, nil, idx // deliver checks the fingerprint and files or drops it
	}
	p := m.postOf(k)
	if p == nil || p.seq != seq || idx != b.accepted[k] {
		return raceBuffer, nil, idx
	}
	switch p.state {
	case postLanded, postEarly:
		return raceBuffer, nil, idx // the next message of the key: it waits for its own post
	}
	if len(p.dst) != n {
		if p.state == postOpen {
			p.state = postLanded
			p.err = lengthError(src, seq, layer, phase, n, len(p.dst))
			b.accepted[k] = idx + 1
			m.wakeKey(seq, k)
		}
		return raceDiscard, nil, idx
	}
	p.state = postFilling
	return raceOffer, p, idx
}

// offer copies what chunk (bytes off.. of a racing copy from src) adds to the filled prefix of
// post p. It reports whether the reader should stop: the place is full (by this chunk or by
// another copy) or gone with its collective. won is true when this chunk completed it.
func (m *Mailbox) offer(src int, p *post, off int, chunk []byte) (stop, won bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.race.key(p.layer, p.phase, src)
	if p.state != postFilling || m.postOf(k) != p || m.closed != nil {
		return true, false
	}
	if end := off + len(chunk); end > p.filled && off <= p.filled {
		copy(p.dst[p.filled:end], chunk[p.filled-off:])
		p.filled = end
	}
	if p.filled == len(p.dst) {
		p.state = postLanded
		m.box(p.seq).accepted[k]++
		m.wakeKey(p.seq, k)
		return true, true
	}
	m.wakeKey(p.seq, k)
	return false, false
}

// raceDone reports whether another copy of the racing message (src's frame idx of its key) has
// already won, so a copy being buffered can stop.
func (m *Mailbox) raceDone(src int, seq uint64, layer uint8, phase kx.Phase, idx int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		return true
	}
	b := m.boxOf(seq)
	return b != nil && (b.fail != nil || idx < b.accepted[m.race.key(layer, phase, src)])
}

// putRacing files a racing message an in-memory sender hands over whole: into its place when
// posted (each buffer offered in turn), else buffered, unless another copy already won.
func (m *Mailbox) putRacing(src int, tag kx.Tag, bufs [][]byte, n int) {
	phase := wirePhase(tag)
	m.live.heard(src)
	m.live.calling(src, tag.Seq)
	action, into, idx := m.claimRace(src, tag.Seq, tag.Layer, phase, tag.FP, n)
	switch action {
	case raceDiscard:
		m.race.count(src, false, n)
	case raceBuffer:
		m.deliverCopy(src, tag.Seq, tag.Layer, phase, tag.FP, gather(bufs, n), idx)
	case raceOffer:
		off := 0
		for _, b := range bufs {
			if stop, won := m.offer(src, into, off, b); stop {
				m.race.count(src, won, off+len(b))
				return
			}
			off += len(b)
		}
		if n == 0 {
			_, won := m.offer(src, into, 0, nil)
			m.race.count(src, won, 0)
		}
	}
}

// receiveRacing reads a racing payload of n bytes from src's stream r: offered chunk by chunk
// to its place, buffered when it has none yet, or discarded once another copy has won.
func (m *Mailbox) receiveRacing(src int, tag kx.Tag, n int, r Payload) error {
	phase := wirePhase(tag)
	action, into, idx := m.claimRace(src, tag.Seq, tag.Layer, phase, tag.FP, n)
	var data []byte
	switch action {
	case raceDiscard:
		m.race.count(src, false, n)
		return m.discard(src, r, n)
	case raceBuffer:
		data = GetBuf(n)
	case raceOffer:
		if m.scratch[src] == nil {
			m.scratch[src] = make([]byte, raceChunk)
		}
		if n == 0 {
			_, won := m.offer(src, into, 0, nil)
			m.race.count(src, won, 0)
			return nil
		}
	}
	for off := 0; off < n; {
		end := min(off+raceChunk, n)
		chunk := m.scratch[src]
		if data != nil {
			chunk = data[off:end]
		}
		chunk = chunk[:end-off]
		if _, err := io.ReadFull(r, chunk); err != nil {
			if data != nil {
				PutBuf(data)
			}
			return err
		}
		m.live.heard(src)
		off = end
		if data == nil { // offering
			if stop, won := m.offer(src, into, off-len(chunk), chunk); stop {
				m.race.count(src, won, off)
				return m.discard(src, r, n-off)
			}
		} else if off < n && m.raceDone(src, tag.Seq, tag.Layer, phase, idx) {
			PutBuf(data)
			m.race.count(src, false, off)
			return m.discard(src, r, n-off)
		}
	}
	if data != nil {
		m.deliverCopy(src, tag.Seq, tag.Layer, phase, tag.FP, data, idx) // counts it won or lost
	}
	return nil
}
