package netio

import "sync/atomic"

// PeerStats counts the data messages exchanged with one rank (payload bytes, headers excluded).
type PeerStats struct {
	Rank      int
	BytesSent uint64
	MsgsSent  uint64
	BytesRecv uint64
	MsgsRecv  uint64
}

type counters struct {
	bytesSent, msgsSent, bytesRecv, msgsRecv atomic.Uint64
}

func snapshot(cs []counters) []PeerStats {
	out := make([]PeerStats, len(cs))
	for i := range cs {
		c := &cs[i]
		out[i] = PeerStats{Rank: i, BytesSent: c.bytesSent.Load(), MsgsSent: c.msgsSent.Load(),
			BytesRecv: c.bytesRecv.Load(), MsgsRecv: c.msgsRecv.Load()}
	}
	return out
}
