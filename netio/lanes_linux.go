//go:build linux

package netio

import (
	"kylix/core/kx"
	"kylix/netio/shm"
	"time"

	"golang.org/x/sys/unix"
)

// Lanes (kx.Lanes) between ranks of one host: the shared-memory segment's slots
// (netio/shm/lane.go), one small message a collective to each peer, read in place. A lane's
// waits are the driving waits' in shape (selfread_linux.go): spin where the host's ranks fit
// its CPUs, offer the CPU where they do not, then sleep until the peer's put wakes them; now
// and then they ask the mailbox whether the collective failed or the peer is gone, as the
// reader goroutines file the frames that say so.

// ClaimLanes gives the lanes to the first comm that asks (kx.Lanes), and holds every ring's
// segment mapped until the transport closes: a message a peer put before it finalized or died
// is still read after its segment was closed on that news (the rings' frames are read before
// their bye; a lane's message has no place in that order).
func (t *TCP) ClaimLanes() bool {
	if !t.lanesClaimed.CompareAndSwap(false, true) {
		return false
	}
	t.laneHeld = make([]*shm.Segment, len(t.peers))
	for r, p := range t.peers {
		if p != nil && p.ring() != nil && p.ring().seg.Hold() == nil {
			t.laneHeld[r] = p.ring().seg
		}
	}
	return true
}

// laneEnter counts a lane call in flight, so that the transport's close releases the segments'
// holds only after the last one (laneExit); it fails once the transport closes.
func (t *TCP) laneEnter() error {
	if t.laneState.Add(1)&laneClosing != 0 {
		t.laneExit()
		return t.closedErr()
	}
	return nil
}

func (t *TCP) laneExit() {
	if t.laneState.Add(-1) == laneClosing {
		t.releaseLanes()
	}
}

const laneClosing = 1 << 62

// closeLanes is Close's: the holds go with the last lane call in flight, or now.
func (t *TCP) closeLanes() {
	if t.laneState.Add(laneClosing) == laneClosing {
		t.releaseLanes()
	}
}

func (t *TCP) releaseLanes() {
	t.laneRelease.Do(func() {
		for _, seg := range t.laneHeld {
			if seg != nil {
				seg.Unhold()
			}
		}
	})
}

// laneNap bounds one sleep of a lane wait: the peer's put wakes it, and between naps it looks
// for the collective's failure, which nothing wakes it for.
const laneNap = 5 * time.Millisecond

// laneWait is one lane wait's window.
type laneWait struct {
	looks int
	start time.Time
}

// step is one look's wait: a spin, a yield or a nap (sleep), after the mailbox's verdict on the
// collective and the timeout (both looked at every 64 looks while the wait spins, at every look
// after).
func (w *laneWait) step(t *TCP, from int, tag kx.Tag, sleep func(time.Duration)) error {
	w.looks++
	if t.spin && w.looks&63 != 0 {
		return nil
	}
	now := time.Now()
	if w.start.IsZero() {
		w.start = now
	}
	if laneChecking != nil {
		laneChecking()
	}
	if err := t.laneCheck(from, tag); err != nil {
		return err
	}
	waited := now.Sub(w.start)
	if waited >= t.timeout {
		return kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its lane message of collective %d",
			kx.RankRef(from), t.timeout, kx.SeqRef(tag.Seq))
	}
	switch {
	case t.spin && waited < driveQuiet:
	case t.spin && waited < driveSpin || !t.spin && waited < driveYield:
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	default:
		kx.AddRelaxed(&t.laneSleeps, 1)
		sleep(min(laneNap, t.timeout-waited))
	}
	return nil
}

// laneCheck is the mailbox's verdict on a lane wait for rank from in collective tag.Seq: nil
// while the message may still come; else the collective's failure, the peer's loss or the
// transport's close. It looks for a message nobody sends, so that only what ends a wait answers.
func (t *TCP) laneCheck(from int, tag kx.Tag) error {
	if t.closing.Load() {
		return t.closedErr()
	}
	b, ok, err := t.mb.TryRecv(from, kx.Tag{Seq: tag.Seq, Layer: laneNone, Phase: kx.PhaseSmall, FP: tag.FP})
	if b != nil {
		t.mb.Release(b)
	}
	if ok && err == nil {
		err = kx.Errorf(kx.CodeInternal, "rank %d sent a frame on the lane's check key", kx.RankRef(from))
	}
	return err
}

// laneChecking runs, when set (tests), before a lane wait asks the mailbox, after a look that
// found nothing.
var laneChecking func()

// laneNone is the layer of the key laneCheck looks for: no collective sends on it.
const laneNone = 255

// laneMeta packs a lane message's fingerprint in two words: a lane's count fits in 32 bits.
func laneMeta(fp kx.Fingerprint) [2]uint64 {
	return [2]uint64{uint64(fp.Kind) | uint64(fp.Dtype)<<8 | uint64(fp.Op)<<16 | uint64(uint32(fp.Width))<<32,
		uint64(fp.Plan) | uint64(uint32(fp.Count))<<32}
}

func laneFP(m [2]uint64) kx.Fingerprint {
	return kx.Fingerprint{Kind: kx.Kind(m[0]), Dtype: uint8(m[0] >> 8), Op: uint16(m[0] >> 16), Width: int32(uint32(m[0] >> 32)),
		Plan: uint32(m[1]), Count: int64(uint32(m[1] >> 32))}
}

// LaneMax: a lane to each peer with a shared-memory ring (kx.Lanes).
func (t *TCP) LaneMax(rank int) int {
	if t.laneSeg(rank) == nil {
		return 0
	}
	return shm.LaneMax
}

// laneSeg is the segment of rank's ring, whose lanes ClaimLanes holds mapped; nil before the
// claim, or where it found none (no ring, or one closed already).
func (t *TCP) laneSeg(rank int) *shm.Segment {
	if rank < 0 || rank >= len(t.laneHeld) {
		return nil
	}
	return t.laneHeld[rank]
}

// LanePut (kx.Lanes).
func (t *TCP) LanePut(to int, tag kx.Tag, b []byte) error {
	seg := t.laneSeg(to)
	switch {
	case t.closing.Load():
		return t.closedErr()
	case seg == nil || len(b) > shm.LaneMax:
		return kx.Errorf(kx.CodeInternal, "lane put of %d bytes to rank %d, which has no lane for it", len(b), kx.RankRef(to))
	}
	if err := t.mb.Dead(to); err != nil {
		return err
	}
	if err := t.laneEnter(); err != nil {
		return err
	}
	defer t.laneExit()
	var w laneWait
	seq := tag.Seq + 1 // the lanes' sequences are never 0
	for !seg.LanePut(seq, laneMeta(tag.FP), b) {
		// the peer has not read its last two messages: it runs late, or failed them
		if err := w.step(t, to, tag, func(d time.Duration) { seg.LaneSleep(seq, d) }); err != nil {
			return err
		}
	}
	t.laneStats[to].Count(len(b), true, true)
	return nil
}

// LaneAwait (kx.Lanes): the call stays counted in flight until LaneDone.
func (t *TCP) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	seg := t.laneSeg(from)
	if seg == nil {
		return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeInternal, "lane wait for rank %d, which has no lane", kx.RankRef(from))
	}
	if err := t.laneEnter(); err != nil {
		return kx.Fingerprint{}, nil, err
	}
	seq := tag.Seq + 1
	var w laneWait
	for {
		if meta, b, ok := seg.LaneLook(seq); ok {
			t.laneStats[from].Count(len(b), false, true)
			kx.AddRelaxed(&t.laneMsgs, 1)
			return laneFP(meta), b, nil
		}
		if err := w.step(t, from, tag, func(d time.Duration) { seg.LaneSleep(seq, d) }); err != nil {
			// One last look: a peer that put its message and then finalized or died is
			// reported after the put is seen, and what it sent is still read (as its frames are).
			if meta, b, ok := seg.LaneLook(seq); ok {
				t.laneStats[from].Count(len(b), false, true)
				kx.AddRelaxed(&t.laneMsgs, 1)
				return laneFP(meta), b, nil
			}
			t.laneExit()
			return kx.Fingerprint{}, nil, err
		}
	}
}

// LaneDone (kx.Lanes).
func (t *TCP) LaneDone(from int, tag kx.Tag) {
	seg := t.laneSeg(from)
	seg.LaneDone(tag.Seq + 1)
	t.laneExit()
}
