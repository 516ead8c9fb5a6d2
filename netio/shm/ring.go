//go:build linux

package shm

import (
	"fmt"
	"io"
	"sync/atomic"
	"unsafe"
)

// Frame format: a check word, an 8-byte little-endian length, the payload, and zero to fifteen
// bytes of padding so that the next frame starts 16-aligned (its two words never wrap around the
// ring's end). The writer stores the check word last, once the frame is written (or, for a frame
// that streams through the ring, once its length is): the reader polls the word in the frame's own
// cache line, not the tail index on another one (NCCL's LL protocol and Open MPI's vader fast
// boxes poll a flag inside the message for the same reason). The word is a hash of the frame's
// ring position, its length, whether it is whole, and a key the creator drew for the segment, so
// bytes left by an earlier lap or a payload never pass for a frame.
const prefix = 16

func pad16(n uint64) uint64 { return (n + 15) &^ 15 }

// check is the word that says a frame of n bytes starts at ring position pos: whole, all of it
// written; else its payload streams in behind the published tail.
func (v *ringView) check(pos, n uint64, whole bool) uint64 {
	x := v.key ^ pos*0x9e3779b97f4a7c15 ^ n*0xc2b2ae3d27d4eb4f
	if whole {
		x = ^x
	}
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>29
}

// word is the 8-byte word at ring offset off (16-aligned for a check word).
func (v *ringView) word(off uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&v.data[off]))
}

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
	key    uint64 // the segment's check key (check)
	// raceSync orders the ring for the race detector (race_sync.go); nil in other builds
	raceSync *uint64
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
	v.key = s.u64(offKey).Load()
	v.raceSync = raceSyncOf(v.key, ring)
}

// Writer sends frames on this side's outgoing ring.
type Writer struct {
	ringView
	pos      uint64 // next byte to write; equals the published tail between frames
	headSeen uint64 // last head loaded: refreshed only when it looks too small
	end      uint64 // the position just past the payload of the last frame written
	// lanes (lane.go): the sequence last written in each slot, the peer's acknowledgement last loaded
	laneSeq [2]uint64
	laneAck uint64 // at most the peer's word: loaded, or known from the sequence of its last message (LaneLook)
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
	return w.WriteFrameHead(wt, nil, parts)
}

// WriteFrameHead is WriteFrame of head followed by parts: a transport's frame header and the
// caller's buffers, without first building one list of them.
func (w *Writer) WriteFrameHead(wt Wait, head []byte, parts [][]byte) error {
	if err := w.s.enter(); err != nil {
		return err
	}
	defer w.s.exit()
	n := uint64(len(head))
	for _, p := range parts {
		n += uint64(len(p))
	}
	if n > MaxFrame {
		return fmt.Errorf("shm: frame of %d bytes exceeds %d", n, uint64(MaxFrame))
	}
	total := prefix + pad16(n)
	if w.free() < total {
		w.headSeen = w.head.Load()
	}
	start := w.pos
	off := start & w.mask
	if w.free() >= total { // the common case: no wait, one publication
		storeRelease(w.word(off+8), n)
		w.pos += prefix
		w.copyIn(head)
		for _, p := range parts {
			w.copyIn(p)
		}
		w.end = w.pos
		w.pos += pad16(n) - n
		w.raceRelease()
		storeRelease(w.word(off), w.check(start, n, true)) // the frame is there
		w.publish()
		return nil
	}
	if err := w.reserve(&wt, prefix); err != nil {
		return err
	}
	w.word(off + 8).Store(n)
	w.word(off).Store(w.check(start, n, false)) // the frame streams in behind the tail
	w.pos += prefix
	left := pad16(n) // what the frame still needs, padding included
	for i := -1; i < len(parts); i++ {
		p := head
		if i >= 0 {
			p = parts[i]
		}
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
	w.end = w.pos // every payload byte is in; what is left is padding
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
	total := prefix + pad16(uint64(n))
	if w.free() < total {
		w.headSeen = w.head.Load()
	}
	return w.free() >= total
}

// copyIn copies p (len(p) <= free) at pos, in two pieces when it wraps.
func (w *Writer) copyIn(p []byte) {
	off := w.pos & w.mask
	if k := copy(w.data[off:], p); k < len(p) {
		copy(w.data, p[k:])
	}
	w.pos += uint64(len(p))
}

func (w *Writer) publish() {
	w.raceRelease()
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
	// The next frame as peek found it: its length, and a length past the bound or the ring.
	next    uint64
	nextBad bool
	// held: the read token's holder entered the segment for a run of reads (Direct), which
	// then skip their own entry and exit, a locked instruction each.
	held bool
	// lanes (lane.go): the acknowledgement last stored; written by the lane calls, one at a time
	laneAcked uint64
}

// Direct(true) enters the segment for a run of reads by the read token's holder (a wait that
// reads the ring on its own thread); Direct(false) ends the run. Meanwhile Ready, Next,
// NextInto, ReadFull and Discard look at the segment's closing instead of entering it, and
// the segment stays mapped until the run ends.
func (r *Reader) Direct(on bool) {
	switch {
	case on && !r.held:
		r.held = r.s.enter() == nil
	case !on && r.held:
		r.held = false
		r.s.exit()
	}
}

// use enters the segment for one call of the reader's, unless a run holds it (Direct);
// entered says whether the call must exit.
func (r *Reader) use() (entered bool, err error) {
	if r.held {
		if r.s.closing() {
			return false, ErrClosed
		}
		return false, nil
	}
	return true, r.s.enter()
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
	entered, err := r.use()
	if err != nil {
		return 0, err
	}
	if entered {
		defer r.s.exit()
	}
	return r.nextFrame(&wt)
}

// NextInto is Next followed by ReadFull(wt, dst) when the frame holds at least len(dst) bytes
// (a frame's header): one entry into the segment instead of two, each a locked instruction pair.
func (r *Reader) NextInto(wt Wait, dst []byte) (int, error) {
	entered, err := r.use()
	if err != nil {
		return 0, err
	}
	if entered {
		defer r.s.exit()
	}
	n, err := r.nextFrame(&wt)
	if err != nil || n < len(dst) {
		return n, err
	}
	return n, r.readFull(&wt, dst)
}

func (r *Reader) nextFrame(wt *Wait) (int, error) {
	if r.left > 0 {
		if err := r.discard(wt, r.left); err != nil {
			return 0, err
		}
	}
	if !r.peek() {
		err := r.s.await(wt, r.rsleep, r.peek, false)
		if err == ErrPeerClosed && r.tail.Load() <= r.pos+r.pad {
			return 0, io.EOF
		}
		if err != nil {
			return 0, err
		}
	}
	n := r.next
	if r.nextBad {
		return 0, fmt.Errorf("%w: frame length %d", ErrBadSegment, n)
	}
	r.pos += r.pad + prefix
	r.left, r.pad, r.inFrame = n, pad16(n)-n, true
	return int(n), nil
}

// peek tells whether the next frame's check word is there (past the current frame's padding),
// and notes its length. Once it is, the frame's two words are written and, for a whole frame,
// its payload: tailSeen moves up to what the word vouches for, so that reading it looks at no
// other cache line.
func (r *Reader) peek() bool {
	start := r.pos + r.pad
	off := start & r.mask
	c := r.word(off).Load()
	n := r.word(off + 8).Load()
	var end uint64
	switch c {
	case r.check(start, n, true):
		end = start + prefix + pad16(n)
	case r.check(start, n, false):
		end = start + prefix
	default:
		return false
	}
	r.raceAcquire()
	r.next = n
	r.nextBad = n > MaxFrame || end-start > r.size
	if !r.nextBad && end-r.tailSeen < 1<<63 { // end is past tailSeen
		r.tailSeen = end
	}
	return true
}

// Remaining is the unread payload of the current frame.
func (r *Reader) Remaining() int { return int(r.left) }

// ReadFull copies the next len(dst) payload bytes of the current frame into dst, waiting
// (and streaming through the ring) as needed; len(dst) must not exceed Remaining.
func (r *Reader) ReadFull(wt Wait, dst []byte) error {
	entered, err := r.use()
	if err != nil {
		return err
	}
	if entered {
		defer r.s.exit()
	}
	return r.readFull(&wt, dst)
}

func (r *Reader) readFull(wt *Wait, dst []byte) error {
	if uint64(len(dst)) > r.left || !r.inFrame {
		return fmt.Errorf("%w: %d bytes asked, %d left", ErrFrameState, len(dst), r.left)
	}
	for len(dst) > 0 {
		if r.avail() == 0 {
			if err := r.fill(wt, 1); err != nil {
				return midFrame(err)
			}
		}
		if r.avail() > r.size {
			return fmt.Errorf("%w: tail %d ahead of head %d", ErrBadSegment, r.tailSeen, r.pos)
		}
		k := min(uint64(len(dst)), r.avail())
		off := r.pos & r.mask
		c := copy(dst[:k], r.data[off:])
		copy(dst[c:k], r.data)
		dst = dst[k:]
		r.pos += k
		r.left -= k
		if r.left == 0 { // the frame is read: its space goes back (a part read waits for the rest)
			r.release()
		}
	}
	return nil
}

// Discard skips n payload bytes of the current frame.
func (r *Reader) Discard(wt Wait, n int) error {
	entered, err := r.use()
	if err != nil {
		return err
	}
	if entered {
		defer r.s.exit()
	}
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
		if r.avail() > r.size {
			return fmt.Errorf("%w: tail %d ahead of head %d", ErrBadSegment, r.tailSeen, r.pos)
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
		r.seeTail()
		return r.avail() >= need
	}
	err := r.s.await(wt, r.rsleep, ready, false)
	if err == nil && r.avail() > r.size {
		return fmt.Errorf("%w: tail %d ahead of head %d", ErrBadSegment, r.tailSeen, r.pos)
	}
	return err
}

// seeTail loads the published tail; a check word may have vouched for more already (peek).
func (r *Reader) seeTail() {
	if t := r.tail.Load(); t-r.tailSeen < 1<<63 {
		r.tailSeen = t
	}
	r.raceAcquire()
}

// midFrame turns a peer's Close inside a frame into an unexpected EOF.
func midFrame(err error) error {
	if err == ErrPeerClosed {
		return fmt.Errorf("%w: %w", ErrPeerClosed, io.ErrUnexpectedEOF)
	}
	return err
}
