package stats

import (
	"sync/atomic"
	"time"

	"kylix/core/kx"
	"kylix/core/trace"
)

// The running collective's own counts. One collective runs at a time on a comm, and its Begin,
// its hooks (Enter, EnterWait, EnterSend, Count, Step) and its End come one after the other
// from the goroutine that runs it. Those hooks count into the collective's record
// (activeColl.own, .ownTl, .tl) without the recorder's lock, and End folds the counts into the
// shared records under it: a small reduce took the lock about ten times, at 10 ns a lock round
// trip. Sends beside the collective (coll.Sends' background sends, a link probe's) run on
// goroutines of their own and count under the lock (CountAside, EnterAside). A snapshot sees a
// collective's messages once it ends.

// ownLayers: a message of a deeper layer is counted under the lock (no plan is that deep at
// the sizes where a lock matters).
const ownLayers = 8

type ownCounts struct {
	resets       uint64 // Recorder.resets when these counts started
	kind         Traffic
	agree, links Traffic
	layers       [ownLayers][numSlots]Traffic
	nLayers      int // layers touched
	secs         [numSlots]time.Duration
}

// ownTimeline is the timeline's byte counts of the running collective: kept apart from
// ownCounts, which a reset drops (the timeline's counters run on across resets).
type ownTimeline struct {
	sent, recv int64
	layers     [trace.MaxCounterLayers]int64
	nLayers    int
}

func (t *ownTimeline) begin() {
	t.sent, t.recv = 0, 0
	clear(t.layers[:t.nLayers])
	t.nLayers = 0
}

// count is tlCount for the running collective, on its own goroutine.
func (t *ownTimeline) count(tag kx.Tag, n int, sent bool) {
	if sent {
		t.sent += int64(n)
	} else {
		t.recv += int64(n)
	}
	if l := int(tag.Layer); countedLayer(tag) && l < trace.MaxCounterLayers {
		t.layers[l] += int64(n)
		t.nLayers = max(t.nLayers, l+1)
	}
}

// begin starts the counts of a collective (the record may be an ended one's, reused).
func (o *ownCounts) begin(resets uint64) {
	o.resets = resets
	o.kind, o.agree, o.links = Traffic{}, Traffic{}, Traffic{}
	clear(o.layers[:o.nLayers])
	o.nLayers = 0
	o.secs = [numSlots]time.Duration{}
}

// owned is the running collective's record when seq is it and its hooks count without the
// lock; nil otherwise. Only the collective's own goroutine may call it (see above).
func (s *Recorder) owned(seq uint64) *activeColl {
	if a := s.cur; a != nil && a.seq == seq {
		return a
	}
	return nil
}

// caughtUp applies a Reset that came while collective a ran: what a counted before it is
// dropped, and its times run from the reset.
func (s *Recorder) caughtUp(a *activeColl) {
	r := atomic.LoadUint64(&s.resets)
	if r == a.own.resets {
		return
	}
	at := atomic.LoadInt64(&s.resetMono)
	a.own.begin(r)
	a.start, a.slotStart = max(a.start, at), max(a.slotStart, at)
}

// enterOwn is enterLocked for the running collective, on its own goroutine.
func (s *Recorder) enterOwn(a *activeColl, tag kx.Tag) {
	if a.plan == nil || tag.Phase == kx.PhaseSmall {
		return
	}
	if sl := slotOf(a.kind, tag.Phase); sl != a.slot {
		now := kx.FastMono()
		s.caughtUp(a)
		a.own.secs[a.slot] += time.Duration(now - a.slotStart)
		a.slot, a.slotStart = sl, now
	}
}

// countOwn is countLocked for the running collective, on its own goroutine; false when the
// message must be counted under the lock (a layer past ownLayers).
func (s *Recorder) countOwn(a *activeColl, tag kx.Tag, u Traffic) bool {
	o := &a.own
	sl := -1
	if a.plan != nil && tag.Phase != kx.PhaseSmall && tag.Phase != kx.PhaseLinks {
		if int(tag.Layer) >= ownLayers {
			return false
		}
		sl = slotOf(a.kind, tag.Phase)
	}
	s.caughtUp(a)
	if s.tl != nil {
		a.ownTl.count(tag, int(u.BytesSent+u.BytesRecv), u.MsgsSent > 0)
	}
	o.kind.Add(u)
	switch {
	case a.plan == nil:
	case tag.Phase == kx.PhaseSmall:
		o.agree.Add(u)
	case tag.Phase == kx.PhaseLinks:
		o.links.Add(u)
	default:
		o.layers[tag.Layer][sl].Add(u)
		o.nLayers = max(o.nLayers, int(tag.Layer)+1)
	}
	return true
}

// foldOwn adds what collective a counted on its own into the shared records; mu is held.
func (s *Recorder) foldOwn(a *activeColl) {
	s.caughtUp(a)
	o := &a.own
	s.kinds[a.kind].tr.Add(o.kind)
	if p := a.plan; p != nil {
		p.agree.Add(o.agree)
		p.links.Add(o.links)
		for len(p.layers) < o.nLayers {
			p.layers = append(p.layers, [numSlots]Traffic{})
		}
		for i := range o.nLayers {
			for sl := range o.layers[i] {
				p.layers[i][sl].Add(o.layers[i][sl])
			}
		}
		for sl := range o.secs {
			p.secs[sl] += o.secs[sl]
		}
	}
	if t := &a.ownTl; s.tl != nil {
		a.tl.sent += t.sent
		a.tl.recv += t.recv
		for l := range t.nLayers {
			s.tlBytes[l] += t.layers[l]
		}
		s.tlLayers = max(s.tlLayers, t.nLayers)
	}
	// Begin starts the next collective's counts afresh (the record is reused)
}

// CountAside is Count for a message sent beside the running collective, on a goroutine of its
// own: under the lock, whatever collective it belongs to.
func (s *Recorder) CountAside(tag kx.Tag, n int) {
	s.mu.Lock()
	s.countLocked(tag, n, Traffic{BytesSent: uint64(n), MsgsSent: 1})
	s.mu.Unlock()
}
