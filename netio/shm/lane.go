//go:build linux

package shm

import (
	"sync/atomic"
	"time"
	"unsafe"
)

// Lanes: a small message between the two sides written into a slot of the segment's header
// page, not framed through a ring. A slot's first cache line holds its sequence word, the
// message's two words of meta (the transport's: its fingerprint), its length and its first 32
// bytes, so an 8-float message is one line the reader polls and reads, as Open MPI's vader
// fast boxes and NCCL's LL protocol are. It carries what is not a stream: the one message a
// collective sends to a peer, looked up by the collective's sequence number (LaneLook), in any
// order with the ring's frames.
//
// Each side writes two slots and an acknowledgement word, each in lines no other side writes.
// A writer takes the slot holding the older message once the peer acknowledged it: the highest
// sequence the peer read (LaneDone), or put itself (it reads nothing older afterwards). A put
// acknowledges first, so a message read tells what the peer had acknowledged, and in a run of
// collectives the writer never loads the word. So a
// slot is never written while its reader may still read it, and messages the peer never read
// (calls that failed there) hold nothing up once it put a later one.
const (
	offLane   = offRing + 2*ringHdr // 1536
	laneSlot  = 384                 // a slot: a header line and five payload lines
	laneSide  = 1024                // two slots and the acknowledgement's line
	offAck    = 2 * laneSlot        // the acknowledgement's line
	offLSleep = offAck + line       // the sleep word's line: 1 while this side sleeps in LaneSleep
	laneHead  = 32                  // sequence, meta, length
	LaneMax   = laneSlot - laneHead
	laneWords = 2 // meta words
)

// compile-time check: both sides' lanes fit in the header page
var _ = [hdrSize - offLane - 2*laneSide]struct{}{}

// laneSlotOff is the offset of side's slot i.
func laneSlotOff(side, i int) int { return offLane + side*laneSide + i*laneSlot }

// Hold keeps the segment mapped until Unhold, also through a Close (ErrClosed once closing):
// lane calls are made holding it, and a payload LaneLook returned is read holding it.
func (s *Segment) Hold() error { return s.enter() }
func (s *Segment) Unhold()     { s.exit() }

// Closed reports whether Close was called (the mapping stays while it is held).
func (s *Segment) Closed() bool { return s.closing() }

// LanePut writes payload (at most LaneMax bytes) with meta into a free slot of this side and
// publishes it under seq (seqs grow and are never 0). It reports false, writing nothing, while
// both slots hold messages the peer has not acknowledged. The caller holds the segment; one
// goroutine at a time puts.
func (s *Segment) LanePut(seq uint64, meta [laneWords]uint64, payload []byte) bool {
	if len(payload) > LaneMax || seq == 0 {
		panic("shm: lane payload over LaneMax, or sequence 0")
	}
	// A side puts only in the collective it runs and never reads an older message after
	// that: the peer's messages before seq are acknowledged with the put, so that two the
	// peer put in collectives that failed here, and never read, do not keep it from putting
	// this one.
	s.laneAckUpTo(seq - 1)
	w := &s.w
	i := 0 // the older slot
	if w.laneSeq[1] < w.laneSeq[0] {
		i = 1
	}
	if w.laneSeq[i] > w.laneAck {
		w.laneAck = s.u64(offLane + (1-s.side)*laneSide + offAck).Load() // the peer's word
		if w.laneSeq[i] > w.laneAck {
			if w.laneSeq[1-i] > w.laneAck {
				return false
			}
			i = 1 - i
		}
	}
	off := laneSlotOff(s.side, i)
	h := (*[4]uint64)(unsafe.Pointer(&s.mem[off]))
	h[1], h[2], h[3] = meta[0], meta[1], uint64(len(payload))
	copy(s.mem[off+laneHead:off+laneHead+len(payload)], payload)
	// A sequentially consistent store, then the peer's sleep word: the sleep protocol's half
	// (LaneSleep). The store's fence waits for the slot's line, while this side goes on to wait
	// for the peer's message anyway.
	(*atomic.Uint64)(unsafe.Pointer(&h[0])).Store(seq)
	w.laneSeq[i] = seq
	s.wake(s.laneSleepWord(1 - s.side))
	return true
}

func (s *Segment) laneSleepWord(side int) *atomic.Uint32 {
	return s.u32(offLane + side*laneSide + offLSleep)
}

// LaneSleep sleeps for at most d until the peer publishes seq (any put of the peer wakes it),
// unless it already did. Dekker's protocol as the rings' (wait.go): this side announces that it sleeps and then
// looks, the peer publishes and then loads the announcement. The caller holds the segment.
func (s *Segment) LaneSleep(seq uint64, d time.Duration) {
	w := s.laneSleepWord(s.side)
	w.Store(1)
	if _, _, ok := s.LaneLook(seq); !ok && !s.closing() {
		futexWait(w, 1, d)
	}
	w.Store(0)
}

// LaneLook returns the peer's message published under seq: its meta and payload, which stays
// valid and unchanged until this side's LaneDone for seq or a later one. ok is false while the
// peer has not published it. The caller holds the segment.
func (s *Segment) LaneLook(seq uint64) (meta [laneWords]uint64, payload []byte, ok bool) {
	for i := 0; i < 2; i++ {
		off := laneSlotOff(1-s.side, i)
		if s.u64(off).Load() != seq {
			continue
		}
		// The peer acknowledged its messages before seq-1 when it put this one (LanePut), so
		// this side's next put needs no load of its acknowledgement's line: in back-to-back
		// collectives that load was a cache miss on every call.
		s.w.laneAck = max(s.w.laneAck, seq-1)
		h := (*[4]uint64)(unsafe.Pointer(&s.mem[off]))
		n := h[3]
		if n > LaneMax { // a corrupted or hostile peer: never read past the slot
			n = 0
		}
		return [laneWords]uint64{h[1], h[2]}, s.mem[off+laneHead : off+laneHead+int(n) : off+laneHead+int(n)], true
	}
	return meta, nil, false
}

// LaneDone acknowledges the peer's messages up to seq: their slots may be written again. The
// caller holds the segment.
func (s *Segment) LaneDone(seq uint64) { s.laneAckUpTo(seq) }

// laneAckUpTo raises this side's acknowledgement to seq; it never goes down.
func (s *Segment) laneAckUpTo(seq uint64) {
	if seq > s.r.laneAcked {
		s.r.laneAcked = seq
		storeRelease(s.u64(offLane+s.side*laneSide+offAck), seq)
	}
}
