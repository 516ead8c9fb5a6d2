//go:build linux

package shm

import "unsafe"

// A lane lent out of Go: code that is not Go (the C ABI's express allreduce, capi/express.c)
// runs this side's lane protocol (lane.go) on the mapped words between the lender's calls,
// from its own copy of the side's lane state, and gives the state back. A slot's header is its
// words 0 (the sequence, stored last), 1 and 2 (the meta) and 3 (the length); its payload
// starts at LaneHead.

// LaneHead is where a slot's payload starts.
const LaneHead = laneHead

// LaneWords are the addresses of this side's lane in the mapping: its two slots, its
// acknowledgement word, the peer's slots and acknowledgement word, and the peer's sleep word
// (LaneSleep), which a put looks at to wake it. They stay valid while the segment is held.
type LaneWords struct {
	Put, Look               [2]uintptr
	Ack, PeerAck, PeerSleep uintptr
}

// LaneState is this side's lane state: the sequence last put in each slot, at most the peer's
// acknowledgement, and this side's own acknowledgement.
type LaneState struct {
	Seq            [2]uint64
	PeerAck, Acked uint64
}

// LaneWords (the caller holds the segment).
func (s *Segment) LaneWords() LaneWords {
	at := func(off int) uintptr { return uintptr(unsafe.Pointer(&s.mem[off])) }
	peer := 1 - s.side
	return LaneWords{
		Put:       [2]uintptr{at(laneSlotOff(s.side, 0)), at(laneSlotOff(s.side, 1))},
		Look:      [2]uintptr{at(laneSlotOff(peer, 0)), at(laneSlotOff(peer, 1))},
		Ack:       at(offLane + s.side*laneSide + offAck),
		PeerAck:   at(offLane + peer*laneSide + offAck),
		PeerSleep: at(offLane + peer*laneSide + offLSleep),
	}
}

// LaneState is the side's lane state, to lend with the words; the lane calls are not made
// until SetLaneState gives it back.
func (s *Segment) LaneState() LaneState {
	return LaneState{Seq: s.w.laneSeq, PeerAck: s.w.laneAck, Acked: s.r.laneAcked}
}

// SetLaneState takes back the state a borrower kept, with the futex wakes it sent (Stats).
func (s *Segment) SetLaneState(st LaneState, wakes uint64) {
	s.w.laneSeq, s.w.laneAck, s.r.laneAcked = st.Seq, st.PeerAck, st.Acked
	if wakes > 0 {
		s.stats.wakes.Add(wakes)
	}
}
