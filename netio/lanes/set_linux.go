//go:build linux

package lanes

import (
	"kylix/core/kx"
	"kylix/netio/shm"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Set is a transport's lanes.
type Set struct {
	cfg     Config
	segs    func() []*shm.Segment // the segment of each rank's ring (nil: none), at the claim
	claimed atomic.Bool
	held    []*shm.Segment // held mapped from the claim until the lanes close
	// A segment closed on its peer's loss is held until this rank's next collective on the
	// lanes after the one that found it closed (sweep): its peer's last message may still be
	// read in that one, and no later one reads it. Written by the lane calls, one at a time.
	gone  []bool
	swept uint64 // the collective (tag.Seq+1) last swept
	// calls in flight, plus closing once Close began: the holds go with the last one
	state   atomic.Int64
	release sync.Once

	// Counted by the comm's collective, one call at a time (kx.AddRelaxed): messages by peer,
	// messages read, waits that slept.
	stats        []kx.PeerCounters
	msgs, sleeps atomic.Uint64
}

const closing = 1 << 62

// New makes a transport's lanes over the segments segs returns when a comm claims them.
func New(cfg Config, segs func() []*shm.Segment) *Set {
	return &Set{cfg: cfg, segs: segs, stats: make([]kx.PeerCounters, cfg.Size)}
}

// ClaimLanes gives the lanes to the first comm that asks (kx.Lanes), and holds every ring's
// segment mapped until the lanes close: a message a peer put before it finalized or died is
// still read after its segment was closed on that news (the rings' frames are read before their
// bye; a lane's message has no place in that order).
func (s *Set) ClaimLanes() bool {
	if !s.claimed.CompareAndSwap(false, true) {
		return false
	}
	s.held = s.segs()
	s.gone = make([]bool, len(s.held))
	for r, seg := range s.held {
		if seg != nil && seg.Hold() != nil {
			s.held[r] = nil // closed already
		}
	}
	return true
}

// Close is the transport's: the holds go with the last lane call in flight, or now.
func (s *Set) Close() {
	if s.state.Add(closing) == closing {
		s.releaseHolds()
	}
}

func (s *Set) enter() error {
	if s.state.Add(1)&closing != 0 {
		s.exit()
		return s.cfg.Closed()
	}
	return nil
}

func (s *Set) exit() {
	if s.state.Add(-1) == closing {
		s.releaseHolds()
	}
}

func (s *Set) releaseHolds() {
	s.release.Do(func() {
		for _, seg := range s.held {
			if seg != nil {
				seg.Unhold()
			}
		}
	})
}

// sweep lets go of the segments closed since before collective seq began (sweep's comment on
// gone): their descriptors and mapping go with their last hold, not with the transport.
func (s *Set) sweep(seq uint64) {
	if seq == s.swept {
		return
	}
	s.swept = seq
	for r, seg := range s.held {
		switch {
		case seg == nil || !seg.Closed():
		case s.gone[r]:
			s.held[r] = nil
			seg.Unhold()
		default:
			s.gone[r] = true
		}
	}
}

// seg is rank's segment, nil before the claim or where there is none.
func (s *Set) seg(rank int) *shm.Segment {
	if rank < 0 || rank >= len(s.held) {
		return nil
	}
	return s.held[rank]
}

// LaneMax: a lane to each peer with a shared-memory ring (kx.Lanes).
func (s *Set) LaneMax(rank int) int {
	if s.seg(rank) == nil {
		return 0
	}
	return shm.LaneMax
}

// LanePut (kx.Lanes).
func (s *Set) LanePut(to int, tag kx.Tag, b []byte) error {
	seg := s.seg(to)
	if seg == nil || len(b) > shm.LaneMax {
		return kx.Errorf(kx.CodeInternal, "lane put of %d bytes to rank %d, which has no lane for it", len(b), kx.RankRef(to))
	}
	if err := s.cfg.Dead(to); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	var w wait
	seq := tag.Seq + 1 // the lanes' sequences are never 0
	s.sweep(seq)
	for !seg.LanePut(seq, metaOf(tag.FP), b) {
		// the peer has not read its last two messages: it runs late, or failed them
		if err := w.step(s, to, tag, func(d time.Duration) { seg.LaneSleep(seq, d) }); err != nil {
			return err
		}
	}
	s.stats[to].Count(len(b), true, true)
	return nil
}

// LaneAwait (kx.Lanes): the call stays counted in flight until LaneDone.
func (s *Set) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	seg := s.seg(from)
	if seg == nil {
		return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeInternal, "lane wait for rank %d, which has no lane", kx.RankRef(from))
	}
	if err := s.enter(); err != nil {
		return kx.Fingerprint{}, nil, err
	}
	seq := tag.Seq + 1
	var w wait
	for {
		if meta, b, ok := seg.LaneLook(seq); ok {
			return s.read(from, meta, b)
		}
		if err := w.step(s, from, tag, func(d time.Duration) { seg.LaneSleep(seq, d) }); err != nil {
			// One last look: a peer that put its message and then finalized or died is
			// reported after the put is seen, and what it sent is still read (as its frames are).
			if meta, b, ok := seg.LaneLook(seq); ok {
				return s.read(from, meta, b)
			}
			s.exit()
			return kx.Fingerprint{}, nil, err
		}
	}
}

func (s *Set) read(from int, meta [2]uint64, b []byte) (kx.Fingerprint, []byte, error) {
	s.stats[from].Count(len(b), false, true)
	kx.AddRelaxed(&s.msgs, 1)
	return fpOf(meta), b, nil
}

// LaneDone (kx.Lanes).
func (s *Set) LaneDone(from int, tag kx.Tag) {
	s.seg(from).LaneDone(tag.Seq + 1)
	s.exit()
}

// Stats are the lane messages exchanged with each rank; Counts the messages read and the waits
// that slept (kx.ShmStats).
func (s *Set) Stats() []kx.PeerStats         { return kx.Snapshot(s.stats) }
func (s *Set) Counts() (msgs, sleeps uint64) { return s.msgs.Load(), s.sleeps.Load() }

// wait is one lane wait's window.
type wait struct {
	looks int
	start time.Time
}

// step is one look's wait: a spin, a yield or a nap (sleep), after the mailbox's verdict on the
// collective and the timeout (both looked at every 64 looks while the wait spins, at every look
// after).
func (w *wait) step(s *Set, from int, tag kx.Tag, sleep func(time.Duration)) error {
	c := &s.cfg
	w.looks++
	if c.Spin && w.looks&63 != 0 {
		return nil
	}
	now := time.Now()
	if w.start.IsZero() {
		w.start = now
	}
	if err := c.Check(from, tag); err != nil {
		return err
	}
	waited := now.Sub(w.start)
	if waited >= c.Timeout {
		return kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its lane message of collective %d",
			kx.RankRef(from), c.Timeout, kx.SeqRef(tag.Seq))
	}
	switch {
	case c.Spin && waited < c.Quiet:
	case c.Spin && waited < c.SpinFor || !c.Spin && waited < c.YieldFor:
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	default:
		kx.AddRelaxed(&s.sleeps, 1)
		sleep(min(nap, c.Timeout-waited))
	}
	return nil
}
