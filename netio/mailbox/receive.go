package mailbox

import (
	"io"
	"kylix/core/kx"
)

// Payload is the stream a transport reads a frame's payload from (TCP's *bufio.Reader).
type Payload interface {
	io.Reader
	Discard(n int) (int, error)
}

// readChunk is how much of a payload is read between two "still hearing from it" marks.
const readChunk = 1 << 20

// Receive reads the n-byte payload of a data frame from src with tag off r: straight into the
// place core posted for it when there is one (gloo's prepareRead), else into a pooled buffer
// that waits in the mailbox; a racing copy goes through receiveRacing. An error is the
// stream's: the frame is dropped and the transport tells of the peer's end.
//
// Filing the frame (landed, deliver) marks src heard; so do the chunks of a long payload
// before it: one clock reading for a small frame, which is all a small step's frame is.
func (m *Mailbox) Receive(src int, tag kx.Tag, n int, r Payload) error {
	if n > readChunk {
		m.live.heard(src)
	}
	m.live.calling(src, tag.Seq)
	if tag.Race {
		return m.receiveRacing(src, tag, n, r)
	}
	into := m.claim(src, tag.Seq, tag.Layer, tag.Phase, tag.FP, n)
	if into != nil && into.fold.Fn != nil {
		return m.receiveFold(src, tag, into, r)
	}
	var data []byte
	if into != nil {
		data = into.dst
	} else {
		data = GetBuf(n)
	}
	for off := 0; off < len(data); {
		end := min(off+readChunk, len(data))
		if _, err := io.ReadFull(r, data[off:end]); err != nil {
			if into != nil {
				m.unfill(src, into)
			}
			return err
		}
		off = end
		if off < len(data) {
			m.live.heard(src)
			if into != nil {
				m.progress(src, into, off, tag.Layer, tag.Phase)
			}
		}
	}
	if into != nil {
		m.landed(src, into, tag.Layer, tag.Phase)
	} else {
		m.deliver(src, tag.Seq, tag.Layer, tag.Phase, tag.FP, data)
	}
	return nil
}

// discard reads and drops n payload bytes from src's stream r, marking them heard.
func (m *Mailbox) discard(src int, r Payload, n int) error {
	for n > 0 {
		k := min(n, readChunk)
		if _, err := r.Discard(k); err != nil {
			return err
		}
		m.live.heard(src)
		n -= k
	}
	return nil
}

// Put files a message from src that is already in memory (a send to oneself, the in-memory
// transport): copied once, into its posted place when it has one, else into a pooled payload
// buffer.
func (m *Mailbox) Put(src int, tag kx.Tag, bufs [][]byte, n int) {
	if tag.Race {
		m.putRacing(src, tag, bufs, n)
		return
	}
	if p := m.claim(src, tag.Seq, tag.Layer, tag.Phase, tag.FP, n); p != nil && p.fold.Fn != nil {
		data := gather(bufs, n) // Fn may overwrite its source, and bufs are the sender's
		foldPieces(p, data)
		PutBuf(data)
		m.landed(src, p, tag.Layer, tag.Phase)
		return
	} else if p != nil {
		off := 0
		for _, b := range bufs {
			off += copy(p.dst[off:], b)
		}
		m.landed(src, p, tag.Layer, tag.Phase)
		return
	}
	m.deliver(src, tag.Seq, tag.Layer, tag.Phase, tag.FP, gather(bufs, n))
}

// gather copies the concatenation of bufs (n bytes in all) into a fresh payload buffer.
func gather(bufs [][]byte, n int) []byte {
	data := GetBuf(n)
	off := 0
	for _, b := range bufs {
		off += copy(data[off:], b)
	}
	return data
}
