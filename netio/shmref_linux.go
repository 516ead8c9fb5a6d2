//go:build linux

package netio

import (
	"encoding/binary"
	"errors"
	"io"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"kylix/netio/shm"
	"time"
	"unsafe"
)

// Large data frames between ranks of one host go by reference (netio/shm/cma.go): the ring
// carries the header, where the payload lies in the sender's memory (a list of address and
// length pairs, one per buffer of the Send) and an 8-byte trailer; the receiver copies the
// payload straight from the sender's buffers into its landing place with process_vm_readv(2)
// and only then reads the trailer, which releases the frame's last ring bytes. The sender's
// Send returns once the ring's head has passed the trailer: one copy instead of two, and the
// ring no longer bounds a message's pace.
//
// Only where the peer could read this process's memory when the segment was set up
// (shm.PeerReadsMine), for frames of refMin bytes and more, and only for plain sends: a racing
// copy's write may be left to the background (latesend.go), which a reference cannot outlive.

// refMin is the smallest payload sent by reference: below it, two copies through the ring cost
// less than the wait for the peer's copy.
const refMin = 256 << 10

// maxRefs bounds a reference frame's list (a Send has a few buffers).
const maxRefs = 1024

// byRef tells whether a data frame of n payload bytes goes by reference.
func (l *ringLink) byRef(n uint64) bool { return n >= refMin && l.seg.PeerReadsMine() }

// writeShmRef writes the reference frame for h and bufs (the caller holds the write lock) and
// returns the ring position the peer releases once it has copied the payload.
func (p *peer) writeShmRef(h *Header, bufs [][]byte, hard time.Time) (end uint64, err error) {
	l := p.ring()
	desc := binary.LittleEndian.AppendUint32(l.desc[:0], 0)
	count := uint32(0)
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		desc = binary.LittleEndian.AppendUint64(desc, uint64(uintptr(unsafe.Pointer(&b[0]))))
		desc = binary.LittleEndian.AppendUint64(desc, uint64(len(b)))
		count++
	}
	binary.LittleEndian.PutUint32(desc, count)
	l.refsSent.Add(1)
	desc = append(desc, make([]byte, 8)...) // the trailer
	l.desc = desc
	rh := *h
	rh.Type, rh.Len = FrameDataRef, uint64(len(desc))
	if err := l.write(rh, [][]byte{desc}, hard); err != nil {
		return 0, err
	}
	return l.seg.Writer().FrameEnd(), nil
}

// awaitRefCopied waits until the peer has copied a reference frame's payload (the ring's head
// passed end). The buffers must not change before: a peer that goes, or stays silent for the
// timeout, ends the wait with its error.
func (p *peer) awaitRefCopied(h *Header, end uint64) error {
	l := p.ring()
	err := l.seg.Writer().AwaitRead(shm.Wait{Deadline: time.Now().Add(p.t.timeout)}, end)
	if err != nil {
		// The buffers are the caller's again: a peer that comes back must not write its
		// fold's result over them (refPayload.WriteBack checks).
		l.seg.AbandonRefs(l.refsSent.Load())
		if (errors.Is(err, shm.ErrPeerClosed) || p.t.mb.Dead(p.rank) != nil) &&
			p.t.mb.Finalized(p.rank, min(p.t.timeout, time.Second)) {
			return nil // docs/netio-notes.md, "A bye before the release"
		}
		return p.writeFailed(h, err)
	}
	return nil
}

// receiveRef files a reference frame's payload, copied from the sender's memory, then reads
// the trailer that tells the sender its buffers are free.
func (t *TCP) receiveRef(p *peer, h *Header, r mailbox.Payload) error {
	rp, ok := r.(*ringPayload)
	l := p.ring()
	if !ok || h.Len < 12 || h.Len > 4+16*maxRefs+8 {
		p.down(kx.Errorf(kx.CodeNet, "rank %d sent a reference frame of %d bytes outside shared memory", kx.RankRef(p.rank), h.Len))
		return errDropped
	}
	if cap(l.rdesc) < int(h.Len) {
		l.rdesc = make([]byte, h.Len)
	}
	desc := l.rdesc[:h.Len-8] // not the trailer yet
	if _, err := io.ReadFull(rp, desc); err != nil {
		return err
	}
	refs, n, ok := decodeRefs(l.refs[:0], desc)
	l.refs = refs
	if !ok {
		p.down(kx.Errorf(kx.CodeNet, "rank %d sent a malformed reference frame", kx.RankRef(p.rank)))
		return errDropped
	}
	l.refsIn++
	l.refsRead.Add(1)
	l.ref = refPayload{link: l, refs: refs, idx: l.refsIn, rank: p.rank}
	t.count(p.rank, int(n), false) // before the hand-over, as in file
	if err := t.mb.Receive(p.rank, h.tag(), int(n), &l.ref); err != nil {
		return err
	}
	return rp.r.Discard(rp.w, 8) // the trailer: releasing it frees the sender's buffers
}

type memRef struct{ addr, n uint64 }

// decodeRefs parses a reference list into refs and returns it and the payload's length.
func decodeRefs(refs []memRef, b []byte) ([]memRef, uint64, bool) {
	count := int(binary.LittleEndian.Uint32(b))
	if count > maxRefs || len(b) != 4+16*count {
		return refs, 0, false
	}
	var n uint64
	for i := 0; i < count; i++ {
		r := memRef{binary.LittleEndian.Uint64(b[4+16*i:]), binary.LittleEndian.Uint64(b[12+16*i:])}
		if r.n > MaxPayload || n+r.n > MaxPayload {
			return refs, 0, false
		}
		n += r.n
		refs = append(refs, r)
	}
	return refs, n, true
}

// refPayload is mailbox.Payload over a reference frame's data in the sender's memory.
type refPayload struct {
	link *ringLink
	refs []memRef
	i    int    // the reference being read
	off  uint64 // bytes of it already read
	pos  uint64 // bytes of the payload read (or discarded) in all
	idx  uint64 // the frame's number among the peer's reference frames (1, 2, …)
	rank int    // the sender
}

// WriteBack writes b over the last len(b) payload bytes read, in the sender's memory
// (mailbox.WriteBacker: a folding reader returns its result where the data came from). It
// refuses once the sender gave up on the frame (AbandonRefs): its buffers are no longer ours
// to write.
func (rp *refPayload) WriteBack(b []byte) error {
	seg := rp.link.seg
	if seg.PeerAbandonedRefs() >= rp.idx {
		return kx.Errorf(kx.CodeNet, "rank %d gave up waiting for its message to be read", kx.RankRef(rp.rank))
	}
	if uint64(len(b)) > rp.pos {
		return kx.Errorf(kx.CodeInternal, "write-back of %d bytes after %d read", len(b), rp.pos)
	}
	start := rp.pos - uint64(len(b)) // payload offset of b's first byte
	for _, r := range rp.refs {
		if len(b) == 0 {
			break
		}
		if start >= r.n {
			start -= r.n
			continue
		}
		k := min(uint64(len(b)), r.n-start)
		if err := seg.WritePeer(b[:k], r.addr+start); err != nil {
			return err
		}
		rp.link.wroteBack.Add(k)
		b, start = b[k:], 0
	}
	return nil
}

func (rp *refPayload) Read(b []byte) (int, error) {
	for rp.i < len(rp.refs) && rp.off == rp.refs[rp.i].n {
		rp.i, rp.off = rp.i+1, 0
	}
	if rp.i == len(rp.refs) {
		return 0, io.ErrUnexpectedEOF
	}
	r := rp.refs[rp.i]
	k := min(uint64(len(b)), r.n-rp.off)
	if err := rp.link.seg.ReadPeer(b[:k], r.addr+rp.off); err != nil {
		return 0, err
	}
	rp.off += k
	rp.pos += k
	return int(k), nil
}

func (rp *refPayload) Discard(n int) (int, error) {
	left := uint64(n)
	for left > 0 && rp.i < len(rp.refs) {
		k := min(left, rp.refs[rp.i].n-rp.off)
		rp.off += k
		rp.pos += k
		left -= k
		if rp.off == rp.refs[rp.i].n {
			rp.i, rp.off = rp.i+1, 0
		}
	}
	if left > 0 {
		return n - int(left), io.ErrUnexpectedEOF
	}
	return n, nil
}
