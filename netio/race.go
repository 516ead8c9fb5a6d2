package netio

import (
	"kylix/core/kx"
	"strings"
	"sync/atomic"
)

// Packet racing ("Kylix: A Sparse Allreduce for Commodity Clusters", §V). With replication
// every message for a node goes to all of its live replicas, so a receiver gets up to s copies
// of each message, one from each replica of the source node. Those copies are byte for byte
// the same (replicas hold the same data), so the receiver keys them by the source's node, lets
// the first copy win and drops the rest.
//
// Copies race on a TCP stream each, so a second copy often arrives while the first is still
// being read, and the first may never finish (its sender was killed in the middle of it). So a
// racing payload is not read straight into its place: each reader reads chunks into its own
// scratch and offers them (offer), and under the mailbox's lock whatever extends the filled
// prefix is copied in. Whichever copy completes the place wins; a copy that falls behind the
// filled prefix only discards bytes, and nothing is ever buffered whole twice. A copy that
// arrives before the place is posted is buffered as an ordinary early frame, and the copies
// behind it notice (raceDone) and stop buffering.

// raceBit marks a racing message in the phase byte of its frame header (phases are < 128).
const raceBit kx.Phase = 0x80

// wirePhase is the phase byte a message with tag travels with.
func wirePhase(tag kx.Tag) kx.Phase {
	if tag.Race {
		return tag.Phase | raceBit
	}
	return tag.Phase
}

// raceChunk is how much of a racing payload a reader offers at a time.
const raceChunk = 256 << 10

// raceCounters count, per peer, the copies that won and lost a race and the bytes of the lost
// ones (what replication costs in duplicate traffic).
type raceCounters struct {
	won, lost, dupBytes atomic.Uint64
}

// setGroups turns on racing: rank r belongs to node groupOf[r]. Called once, before the first
// racing message (core's replicated comm does it at creation); a second call with the same
// grouping is a no-op, another grouping is refused.
func (m *mailbox) setGroups(groupOf []int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(groupOf) != m.size {
		return kx.Errorf(kx.CodeInternal, "replication: %d group entries for %d ranks", len(groupOf), m.size)
	}
	if m.groupOf != nil {
		for r, g := range groupOf {
			if m.groupOf[r] != g {
				return kx.Errorf(kx.CodeArg, "replication: this job's transport already groups its ranks differently")
			}
		}
		return nil
	}
	n := 0
	for _, g := range groupOf {
		n = max(n, g+1)
	}
	m.members = make([][]int, n)
	for r, g := range groupOf {
		m.members[g] = append(m.members[g], r)
	}
	m.groupOf = append([]int(nil), groupOf...)
	return nil
}

// key files a message: by source rank, or for a racing message by the source's node.
func (m *mailbox) key(layer uint8, phase kx.Phase, src int) msgKey {
	if phase&raceBit != 0 && m.groupOf != nil && src >= 0 && src < len(m.groupOf) {
		src = m.groupOf[src]
	}
	return msgKey{layer, phase, src}
}

// sources are the ranks a message with key k may come from: the members of the source's node
// for a racing message, else from alone (returned in one, with nil: waits call this on every
// wake-up, and the common case must not allocate).
func (m *mailbox) sources(k msgKey, from int) (group []int, one int) {
	if k.phase&raceBit != 0 && m.groupOf != nil {
		return m.members[k.src], -1
	}
	return nil, from
}

// goneLocked is why no copy of a message from `from` can come any more: every rank it may come
// from is dead. One dead rank keeps its own error; several are named together.
func (m *mailbox) goneLocked(k msgKey, from int) error {
	srcs, one := m.sources(k, from)
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

// lastDataFrom is the latest data from any rank the message may come from (unix ns).
func (m *mailbox) lastDataFrom(k msgKey, from int) int64 {
	srcs, one := m.sources(k, from)
	if srcs == nil {
		return m.lastData[one].Load()
	}
	var last int64
	for _, r := range srcs {
		last = max(last, m.lastData[r].Load())
	}
	return last
}

// stalledLocked is the timeout report that ends a wait for k: the source's, or for a racing
// message the report of every live replica of the source node.
func (m *mailbox) stalledLocked(b *seqBox, k msgKey, from int) error {
	srcs, one := m.sources(k, from)
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
func (m *mailbox) claimRace(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, n int) (action raceAction, into *post, idx int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		return raceDiscard, nil, 0
	}
	k := m.key(layer, phase, src)
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
	p := m.posts[k]
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
func (m *mailbox) offer(src int, p *post, off int, chunk []byte) (stop, won bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.key(p.layer, p.phase, src)
	if p.state != postFilling || m.posts[k] != p || m.closed != nil {
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
func (m *mailbox) raceDone(src int, seq uint64, layer uint8, phase kx.Phase, idx int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		return true
	}
	b := m.boxes[seq]
	return b != nil && (b.fail != nil || idx < b.accepted[m.key(layer, phase, src)])
}

// raced counts a copy from src: won, or lost after reading n bytes of it.
func (m *mailbox) raced(src int, won bool, n int) {
	if src < 0 || src >= len(m.race) {
		return
	}
	c := &m.race[src]
	if won {
		c.won.Add(1)
		return
	}
	c.lost.Add(1)
	c.dupBytes.Add(uint64(n))
}

func (m *mailbox) raceStats() []kx.RacePeerStats {
	out := make([]kx.RacePeerStats, len(m.race))
	for r := range m.race {
		c := &m.race[r]
		out[r] = kx.RacePeerStats{Rank: r, CopiesWon: c.won.Load(), CopiesLost: c.lost.Load(), DupBytes: c.dupBytes.Load()}
	}
	return out
}

// putRacing files a racing message an in-memory sender hands over whole: into its place when
// posted (each buffer offered in turn), else buffered, unless another copy already won.
func (m *mailbox) putRacing(src int, tag kx.Tag, fp kx.Fingerprint, bufs [][]byte, n int) {
	phase := wirePhase(tag)
	m.heard(src)
	m.calling(src, tag.Seq)
	action, into, idx := m.claimRace(src, tag.Seq, tag.Layer, phase, fp, n)
	switch action {
	case raceDiscard:
		m.raced(src, false, n)
	case raceBuffer:
		m.deliverCopy(src, tag.Seq, tag.Layer, phase, fp, gather(bufs, n), idx)
	case raceOffer:
		off := 0
		for _, b := range bufs {
			if stop, won := m.offer(src, into, off, b); stop {
				m.raced(src, won, off+len(b))
				return
			}
			off += len(b)
		}
		if n == 0 {
			_, won := m.offer(src, into, 0, nil)
			m.raced(src, won, 0)
		}
	}
}
