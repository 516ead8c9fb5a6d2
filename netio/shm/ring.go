//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
)

// Frame format: an 8-byte little-endian length, the payload, zero to seven bytes of padding
// so that the next length starts 8-aligned (and so never wraps around the ring's end).
const prefix = 8

func pad8(n uint64) uint64 { return (n + 7) &^ 7 }

// ringView is the shared part of a ring as either end sees it.
type ringView struct {
	s      *Segment
	tail   *atomic.Uint64 // bytes ever published by the writer
	head   *atomic.Uint64 // bytes ever released by the reader
	rsleep *atomic.Uint32 // 1: the reader sleeps or is about to
	wsleep *atomic.Uint32 // 1: the writer sleeps or is about to
	data   []byte
	size   uint64
	mask   uint64
}

func (v *ringView) init(s *Segment, ring int) {
	base := offRing + ring*ringHdr
	v.s = s
	v.tail = s.u64(base + offTail)
	v.head = s.u64(base + offHead)
	v.rsleep = s.u32(base + offRSleep)
	v.wsleep = s.u32(base + offWSleep)
	start := hdrSize + ring*s.ringSize
	v.data = s.mem[start : start+s.ringSize : start+s.ringSize]
	v.size = uint64(s.ringSize)
	v.mask = v.size - 1
}

// Writer sends frames on this side's outgoing ring.
type Writer struct {
	ringView
	pos      uint64 // next byte to write; equals the published tail between frames
	headSeen uint64 // last head loaded: refreshed only when it looks too small
}

func (w *Writer) init(s *Segment, ring int) {
	w.ringView.init(s, ring)
	w.pos = w.tail.Load()
	w.headSeen = w.head.Load()
}

func (w *Writer) free() uint64 { return w.size - (w.pos - w.headSeen) }

// WriteFrame sends one frame whose payload is the concatenation of parts (e.g. a header
// and a caller's buffer, copied straight from where they are). A frame that fits the free
// space is published with one store; a larger one, even larger than the ring, streams
// through it in chunks as the reader frees space. On error the frame may be cut short; the
// ring is then unusable (the peer sees the cut only as a peer error), so close it.
func (w *Writer) WriteFrame(wt Wait, parts ...[]byte) error {
	if err := w.s.enter(); err != nil {
		return err
	}
	defer w.s.exit()
	var n uint64
	for _, p := range parts {
		n += uint64(len(p))
	}
	if n > MaxFrame {
		return fmt.Errorf("shm: frame of %d bytes exceeds %d", n, uint64(MaxFrame))
	}
	total := prefix + pad8(n)
	if w.free() < total {
		w.headSeen = w.head.Load()
	}
	if w.free() >= total { // the common case: no wait, one publication
		binary.LittleEndian.PutUint64(w.data[w.pos&w.mask:], n)
		w.pos += prefix
		for _, p := range parts {
			w.copyIn(p)
		}
		w.pos += pad8(n) - n
		w.publish()
		return nil
	}
	if err := w.reserve(&wt, prefix); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(w.data[w.pos&w.mask:], n)
	w.pos += prefix
	left := pad8(n) // what the frame still needs, padding included
	for _, p := range parts {
		for len(p) > 0 {
			if w.free() == 0 {
				if err := w.reserve(&wt, min(left, w.size/4)); err != nil {
					return err
				}
			}
			k := min(uint64(len(p)), w.free())
			w.copyIn(p[:k])
			p = p[k:]
			left -= k
		}
	}
	if left > 0 {
		if err := w.reserve(&wt, left); err != nil {
			return err
		}
		w.pos += left
	}
	w.publish()
	return nil
}

// Fits reports whether a frame of n payload bytes can be written now without waiting: a
// sender that must not block on a slow reader (a racing copy to a lagging replica) asks
// first and queues the frame elsewhere when it does not fit.
func (w *Writer) Fits(n int) bool {
	if w.s.enter() != nil {
		return false
	}
	defer w.s.exit()
	total := prefix + pad8(uint64(n))
	if w.free() < total {
		w.headSeen = w.head.Load()
	}
	return w.free() >= total
}

// copyIn copies p (len(p) <= free) at pos, in two pieces when it wraps.
func (w *Writer) copyIn(p []byte) {
	off := w.pos & w.mask
	k := copy(w.data[off:], p)
	copy(w.data, p[k:])
	w.pos += uint64(len(p))
}

func (w *Writer) publish() {
	w.tail.Store(w.pos)
	w.s.wake(w.rsleep)
}

// reserve publishes what is written (the reader may be waiting for it) and waits until
// need bytes are free. Waiting for a quarter ring rather than any byte keeps a stream of
// large frames in big chunks instead of waking for each small release.
func (w *Writer) reserve(wt *Wait, need uint64) error {
	w.publish()
	ready := func() bool {
		w.headSeen = w.head.Load()
		return w.free() >= need
	}
	err := w.s.await(wt, w.wsleep, ready, false)
	if err == nil {
		if d := w.pos - w.headSeen; d > w.size {
			return fmt.Errorf("%w: head %d behind tail %d", ErrBadSegment, w.headSeen, w.pos)
		}
	}
	return err
}

// Reader receives frames from the peer's ring.
type Reader struct {
	ringView
	pos      uint64 // next byte to read; published as head lazily
	tailSeen uint64
	left     uint64 // unread payload bytes of the current frame
	pad      uint64 // padding after the current frame, skipped by the next Next
	inFrame  bool
}

func (r *Reader) init(s *Segment, ring int) {
	r.ringView.init(s, ring)
	r.pos = r.head.Load()
	r.tailSeen = r.tail.Load()
}

func (r *Reader) avail() uint64 { return r.tailSeen - r.pos }

// Next waits for the next frame and returns its payload length; the payload is then read
// with ReadFull (into the caller's destination, in place) or Discard. Unread bytes of the
// previous frame are skipped. At a frame boundary after the peer's Close it returns io.EOF.
func (r *Reader) Next(wt Wait) (int, error) {
	if err := r.s.enter(); err != nil {
		return 0, err
	}
	defer r.s.exit()
	if r.left > 0 {
		if err := r.discard(&wt, r.left); err != nil {
			return 0, err
		}
	}
	need := r.pad + prefix
	if r.avail() < need {
		if err := r.fill(&wt, need); err != nil {
			if err == ErrPeerClosed && r.avail() == r.pad {
				return 0, io.EOF
			}
			return 0, err
		}
	}
	r.pos += r.pad
	n := binary.LittleEndian.Uint64(r.data[r.pos&r.mask:])
	if n > MaxFrame {
		return 0, fmt.Errorf("%w: frame length %d", ErrBadSegment, n)
	}
	r.pos += prefix
	r.left, r.pad, r.inFrame = n, pad8(n)-n, true
	return int(n), nil
}

// Remaining is the unread payload of the current frame.
func (r *Reader) Remaining() int { return int(r.left) }

// ReadFull copies the next len(dst) payload bytes of the current frame into dst, waiting
// (and streaming through the ring) as needed; len(dst) must not exceed Remaining.
func (r *Reader) ReadFull(wt Wait, dst []byte) error {
	if err := r.s.enter(); err != nil {
		return err
	}
	defer r.s.exit()
	if uint64(len(dst)) > r.left || !r.inFrame {
		return fmt.Errorf("%w: %d bytes asked, %d left", ErrFrameState, len(dst), r.left)
	}
	for len(dst) > 0 {
		if r.avail() == 0 {
			if err := r.fill(&wt, 1); err != nil {
				return midFrame(err)
			}
		}
		k := min(uint64(len(dst)), r.avail())
		off := r.pos & r.mask
		c := copy(dst[:k], r.data[off:])
		copy(dst[c:k], r.data)
		dst = dst[k:]
		r.pos += k
		r.left -= k
		r.release()
	}
	return nil
}

// Discard skips n payload bytes of the current frame.
func (r *Reader) Discard(wt Wait, n int) error {
	if err := r.s.enter(); err != nil {
		return err
	}
	defer r.s.exit()
	if n < 0 || uint64(n) > r.left {
		return fmt.Errorf("%w: discard %d, %d left", ErrFrameState, n, r.left)
	}
	return r.discard(&wt, uint64(n))
}

func (r *Reader) discard(wt *Wait, n uint64) error {
	for n > 0 {
		if r.avail() == 0 {
			if err := r.fill(wt, 1); err != nil {
				return midFrame(err)
			}
		}
		k := min(n, r.avail())
		r.pos += k
		r.left -= k
		n -= k
		r.release()
	}
	return nil
}

// ReadFrame receives a whole frame into dst and returns its length; a frame longer than
// dst is skipped and reported as io.ErrShortBuffer.
func (r *Reader) ReadFrame(wt Wait, dst []byte) (int, error) {
	n, err := r.Next(wt)
	if err != nil {
		return 0, err
	}
	if n > len(dst) {
		if err := r.Discard(wt, n); err != nil {
			return 0, err
		}
		return n, io.ErrShortBuffer
	}
	return n, r.ReadFull(wt, dst[:n])
}

// release publishes the head so that the writer may reuse the space, and wakes it if it
// sleeps for space; one store and one load when it does not.
func (r *Reader) release() {
	r.head.Store(r.pos)
	r.s.wake(r.wsleep)
}

// fill waits until need bytes are available, releasing first what was consumed (the
// writer may be waiting for exactly that space).
func (r *Reader) fill(wt *Wait, need uint64) error {
	if r.head.Load() != r.pos {
		r.release()
	}
	ready := func() bool {
		r.tailSeen = r.tail.Load()
		return r.avail() >= need
	}
	err := r.s.await(wt, r.rsleep, ready, false)
	if err == nil && r.avail() > r.size {
		return fmt.Errorf("%w: tail %d ahead of head %d", ErrBadSegment, r.tailSeen, r.pos)
	}
	return err
}

// midFrame turns a peer's Close inside a frame into an unexpected EOF.
func midFrame(err error) error {
	if err == ErrPeerClosed {
		return fmt.Errorf("%w: %w", ErrPeerClosed, io.ErrUnexpectedEOF)
	}
	return err
}
