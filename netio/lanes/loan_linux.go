//go:build linux

package lanes

import (
	"kylix/core/kx"
	"kylix/netio/shm"
)

// LendLane lends rank's lane out of Go (kx.LaneLender): the loan counts as a lane call in
// flight, so the segment stays mapped through a Close until ReturnLane.
func (s *Set) LendLane(rank int) (kx.LaneLoan, bool) {
	seg := s.seg(rank)
	if seg == nil || s.enter() != nil {
		return kx.LaneLoan{}, false
	}
	w, st := seg.LaneWords(), seg.LaneState()
	return kx.LaneLoan{Put: w.Put, Look: w.Look, AckWord: w.Ack, PeerAckWord: w.PeerAck, PeerSleepWord: w.PeerSleep,
		Seq: st.Seq, PeerAcked: st.PeerAck, Acked: st.Acked, Spin: s.cfg.Spin}, true
}

// ReturnLane takes rank's lane back with what the borrower counted (kx.LaneLender).
func (s *Set) ReturnLane(rank int, l *kx.LaneLoan) {
	seg := s.seg(rank)
	seg.SetLaneState(shm.LaneState{Seq: l.Seq, PeerAck: l.PeerAcked, Acked: l.Acked}, l.Wakes)
	c := &s.stats[rank]
	kx.AddRelaxed(&c.MsgsSent, l.Sent)
	kx.AddRelaxed(&c.BytesSent, l.BytesSent)
	kx.AddRelaxed(&c.MsgsRecv, l.Read)
	kx.AddRelaxed(&c.BytesRecv, l.BytesRead)
	kx.AddRelaxed(&s.msgs, l.Read)
	s.exit()
}
