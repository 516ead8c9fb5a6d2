package mailbox

// The mailbox's per-collective tables (boxes by sequence, posts and buffered frames by key) hold
// a handful of entries: the current collective and perhaps the next, one entry per peer and
// phase of a layer. A slice searched in order costs less a call than a map, which hashes every
// key and reseeds itself from the random source each time a delete empties it; a small step
// makes a dozen such lookups.

// boxOf is seq's box, or nil.
func (m *Mailbox) boxOf(seq uint64) *seqBox {
	for _, b := range m.boxes {
		if b.seq == seq {
			return b
		}
	}
	return nil
}

// postOf is the post with key k, or nil.
func (m *Mailbox) postOf(k msgKey) *post {
	for _, p := range m.posts {
		if p.key == k {
			return p
		}
	}
	return nil
}

// setPost makes p the post of its key, replacing an older one.
func (m *Mailbox) setPost(p *post) {
	for i, q := range m.posts {
		if q.key == p.key {
			m.posts[i] = p
			return
		}
	}
	m.posts = append(m.posts, p)
}

// keyedQ is the queue of buffered frames of one key.
type keyedQ struct {
	k msgKey
	q frameQ
}

// msgAt is where key k's queue is in b.msgs, or -1.
func (b *seqBox) msgAt(k msgKey) int {
	for i := range b.msgs {
		if b.msgs[i].k == k {
			return i
		}
	}
	return -1
}

// dropMsg removes the queue at i (order among keys does not matter).
func (b *seqBox) dropMsg(i int) {
	last := len(b.msgs) - 1
	b.msgs[i] = b.msgs[last]
	b.msgs[last] = keyedQ{}
	b.msgs = b.msgs[:last]
}
