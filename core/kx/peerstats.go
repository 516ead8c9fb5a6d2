package kx

import "sync/atomic"

// PeerStats counts the data messages a transport exchanged with one rank (payload bytes,
// headers excluded).
type PeerStats struct {
	Rank      int
	BytesSent uint64
	MsgsSent  uint64
	BytesRecv uint64
	MsgsRecv  uint64
}

// PeerCounters are a transport's running counts for one peer, updated as messages go.
type PeerCounters struct {
	BytesSent, MsgsSent, BytesRecv, MsgsRecv atomic.Uint64
}

// Count adds a message of n bytes, sent or received. relaxed: its counters have one writer at
// a time (AddRelaxed, no locked instruction); else they take atomic adds.
func (c *PeerCounters) Count(n int, sent, relaxed bool) {
	bytes, msgs := &c.BytesRecv, &c.MsgsRecv
	if sent {
		bytes, msgs = &c.BytesSent, &c.MsgsSent
	}
	if relaxed {
		AddRelaxed(bytes, uint64(n))
		AddRelaxed(msgs, 1)
		return
	}
	bytes.Add(uint64(n))
	msgs.Add(1)
}

// Snapshot reads the counters of every peer (cs[r] is rank r's).
func Snapshot(cs []PeerCounters) []PeerStats {
	out := make([]PeerStats, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = PeerStats{Rank: i, BytesSent: c.BytesSent.Load(), MsgsSent: c.MsgsSent.Load(),
			BytesRecv: c.BytesRecv.Load(), MsgsRecv: c.MsgsRecv.Load()}
	}
	return out
}
