package trace

import (
	"encoding/binary"
	"kylix/core/kx"
)

// Collectives is what Align needs of a comm: its rank, a barrier and a broadcast from rank 0.
type Collectives interface {
	Rank() int
	Barrier() error
	Bcast(buf []byte, root int) error
}

// AlignRounds is how many barrier + broadcast rounds Align takes; the tightest one counts.
const AlignRounds = 8

// Align measures the offset of this rank's wall clock (now, in ns) to rank 0's over the comm's
// own connections, and its error bound. Every rank of the comm calls it at the same point.
//
// A round: each rank reads its clock (t1) and enters a barrier; rank 0, once out of it, reads
// its clock (T) and broadcasts it; each rank reads its clock again (t3) when the broadcast
// lands. Rank 0 left the barrier only after every rank had entered it, and the broadcast lands
// after rank 0 sent it, so rank 0's reading falls between t1 and t3 in real time: rank 0's
// clock at (t1+t3)/2 is T within (t3−t1)/2, the round's error bound (as NTP's). The round with
// the smallest bound gives the offset.
func Align(c Collectives, now func() int64, rounds int) (offsetNs, errNs int64, err error) {
	var b [8]byte
	errNs = -1
	for r := 0; r < rounds; r++ {
		t1 := now()
		if err := c.Barrier(); err != nil {
			return 0, -1, err
		}
		if c.Rank() == 0 {
			binary.LittleEndian.PutUint64(b[:], uint64(now()))
		}
		if err := c.Bcast(b[:], 0); err != nil {
			return 0, -1, err
		}
		t3 := now()
		if c.Rank() == 0 {
			continue
		}
		T := int64(binary.LittleEndian.Uint64(b[:]))
		if e := (t3 - t1 + 1) / 2; errNs < 0 || e < errNs {
			offsetNs, errNs = T-(t1+(t3-t1)/2), e
		}
	}
	if c.Rank() == 0 {
		return 0, 0, nil
	}
	if errNs < 0 {
		return 0, -1, kx.Errorf(kx.CodeInternal, "timeline: no clock round")
	}
	return offsetNs, errNs, nil
}

// AlignWith runs Align on c with t's clock and sets it (rank and host for the metadata).
func (t *Tracer) AlignWith(c Collectives, host string) error {
	off, e, err := Align(c, t.wall, AlignRounds)
	if err != nil {
		return err
	}
	t.SetClock(off, e, c.Rank(), host)
	return nil
}
