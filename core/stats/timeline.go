package stats

import (
	"kylix/core/kx"
	"kylix/core/trace"
)

// The recorder's side of the timeline (option timeline, core/trace): the same hooks that count
// for kylix_stats_json also give the timeline its calls, messages and byte counters; Step adds
// the phases only core's algorithms know. Every hook is a nil test when the timeline is off.

// tlColl is a running collective as the timeline sees it.
type tlColl struct {
	fp         kx.Fingerprint
	start      int64 // timeline clock
	step       trace.Step
	stepLayer  int
	stepStart  int64
	sent, recv int64
	// steps are the phases so far, kept for the call's own event while the call is short;
	// spilled: recorded as events of their own (a long call, or more than trace.InlineSteps).
	steps   [trace.InlineSteps]int64
	nsteps  int
	spilled bool
	// prefixes: per source, how much of its message a wait already covered (EnterWait).
	prefixes  [8]prefixSeen
	nprefixes int
}

// begin starts t for a collective: every field a zero tlColl has, but the prefixes past
// nprefixes, which are never read (a third of the record, zeroed every call otherwise).
func (t *tlColl) begin(fp kx.Fingerprint, start int64) {
	t.fp, t.start, t.step, t.stepLayer, t.stepStart, t.sent, t.recv = fp, start, 0, 0, 0, 0, 0
	t.steps, t.nsteps, t.spilled, t.nprefixes = [trace.InlineSteps]int64{}, 0, false, 0
}

type prefixSeen struct {
	peer  int
	layer uint8
	phase kx.Phase
	n     int
}

// newPrefix records a wait for the first n bytes of peer's message of tag (n < 0: the whole
// message, after its rows were waited for) and says whether it can block: not when a wait for
// as much or more of it returned already.
func (t *tlColl) newPrefix(tag kx.Tag, peer, n int) bool {
	for i := range t.prefixes[:t.nprefixes] {
		p := &t.prefixes[i]
		if p.peer == peer && p.layer == tag.Layer && p.phase == tag.Phase {
			if n <= p.n {
				return false
			}
			p.n = n
			return true
		}
	}
	if n >= 0 && t.nprefixes < len(t.prefixes) {
		t.prefixes[t.nprefixes] = prefixSeen{peer, tag.Layer, tag.Phase, n}
		t.nprefixes++
	}
	return true
}

// timedSendBytes: sends smaller than this are not timed. They are written on the caller's
// thread and return at once (the data path sends larger ones on a goroutine of their own), so
// timing them would cost a small call two clock reads a send to record nothing.
const timedSendBytes = 64 << 10

// EnterSend is Enter for a send of bufs; with the timeline on it reads the clock only for a
// send large enough to take time.
func (s *Recorder) EnterSend(tag kx.Tag, bufs [][]byte) int64 {
	if a := s.owned(tag.Seq); a != nil {
		s.enterOwn(a, tag)
		return s.sendClock(bufs)
	}
	return s.enterSend(tag, bufs)
}

// sendClock is EnterSend's return once the phase is entered: the clock for a send worth
// timing, 0 with the timeline off, -1 (Message records nothing) for a small send.
func (s *Recorder) sendClock(bufs [][]byte) int64 {
	if s.tl == nil {
		return 0
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n < timedSendBytes {
		return -1
	}
	return s.tl.Now()
}

// EnterAside is EnterSend for a send beside the running collective, on a goroutine of its own
// (CountAside): the collective's phase is its own goroutine's to switch.
func (s *Recorder) EnterAside(bufs [][]byte) int64 { return s.sendClock(bufs) }

func (s *Recorder) enterSend(tag kx.Tag, bufs [][]byte) int64 {
	if s.idle() {
		return 0
	}
	s.mu.Lock()
	s.enterLocked(s.find(tag.Seq), tag)
	s.mu.Unlock()
	return s.sendClock(bufs)
}

// EnterWait is Enter for a wait for the first n bytes of peer's message of tag, or with n < 0
// for the whole message. With the timeline on it reads the clock only when the wait can block:
// a combine that goes sub-range by sub-range after waiting for the whole message asks again
// for parts already landed, and the wait for the whole message after the combine waited for
// all its rows finds it landed; a small call would spend more on clock reads than on waits.
func (s *Recorder) EnterWait(tag kx.Tag, peer, n int) int64 {
	if a := s.owned(tag.Seq); a != nil {
		s.enterOwn(a, tag)
		if s.tl != nil && a.tl.newPrefix(tag, peer, n) {
			return s.tl.Now()
		}
		return -1 // Message records nothing
	}
	if s.idle() {
		return -1 // Message records nothing
	}
	s.mu.Lock()
	a := s.find(tag.Seq)
	s.enterLocked(a, tag)
	timed := s.tl != nil && (a == nil || a.tl.newPrefix(tag, peer, n))
	s.mu.Unlock()
	if timed {
		return s.tl.Now()
	}
	return -1 // Message records nothing
}

// inlineCallNs: a call shorter than this carries its phases in its own event (at most
// trace.MaxInline: an inline phase's start and duration are packed in 24 bits each).
const inlineCallNs = 200_000

var _ [trace.MaxInline - inlineCallNs]struct{} // fails to build when inlineCallNs is too long

// SetTracer attaches the timeline (nil detaches it). Called before the comm's first collective.
func (s *Recorder) SetTracer(t *trace.Tracer) {
	s.mu.Lock()
	s.tl = t
	s.mu.Unlock()
}

// Tracer is the attached timeline, or nil.
func (s *Recorder) Tracer() *trace.Tracer { return s.tl }

// Step marks the start of phase st of layer in collective seq: the phase before it ends here.
func (s *Recorder) Step(seq uint64, st trace.Step, layer int) {
	if s.tl != nil {
		s.step(seq, st, layer)
	}
}

// step takes no lock for the running collective (own.go): nothing but its own goroutine writes
// its phases. A step of any other collective (none in core) takes the lock.
func (s *Recorder) step(seq uint64, st trace.Step, layer int) {
	if a := s.owned(seq); a != nil {
		s.stepIn(seq, a, st, layer)
		return
	}
	s.mu.Lock()
	if a := s.find(seq); a != nil {
		s.stepIn(seq, a, st, layer)
	}
	s.mu.Unlock()
}

func (s *Recorder) stepIn(seq uint64, a *activeColl, st trace.Step, layer int) {
	var now int64
	if st == trace.StepFill && a.tl.step == 0 && a.tl.nsteps == 0 && !a.tl.spilled {
		// reduce's fill comes first, right after posting where messages land: the call's
		// start serves, one clock read less on a small call
		now = a.tl.start
	} else {
		now = s.tl.Now()
	}
	s.endStep(seq, a, now)
	a.tl.step, a.tl.stepLayer, a.tl.stepStart = st, layer, now
}

// endStep ends the running phase of a: kept inline while the call is short, else recorded.
func (s *Recorder) endStep(seq uint64, a *activeColl, now int64) {
	t := &a.tl
	if t.step == 0 {
		return
	}
	now = max(now, t.stepStart) // see tlEnd
	if !t.spilled && t.nsteps < trace.InlineSteps && now-t.start < inlineCallNs {
		t.steps[t.nsteps] = trace.InlineStep(t.stepStart-t.start, now-t.stepStart, t.step, t.stepLayer)
		t.nsteps++
	} else {
		s.spill(seq, a)
		s.tl.Step(seq, t.step, t.stepLayer, t.stepStart, now)
	}
	t.step = 0
}

// spill records a's inline phases as events of their own.
func (s *Recorder) spill(seq uint64, a *activeColl) {
	t := &a.tl
	for i := 0; i < t.nsteps; i++ {
		rel, d, st, layer := trace.UnpackStep(t.steps[i])
		at := t.start + rel
		s.tl.Step(seq, st, layer, at, at+d)
	}
	t.nsteps, t.spilled = 0, true
	clear(t.steps[:])
}

// minMessageNs: a send or a wait is recorded only when it took at least this long (or
// failed). Most small sends return at once and most waits find their bytes landed: such events
// say nothing the bytes counter does not, and would cost a small call a tenth of its time.
const minMessageNs = 2000

// Message records a send or receive that the data path began at t0 (Enter's return): n bytes
// to or from peer, or, with n < 0, a wait for part of a message.
func (s *Recorder) Message(tag kx.Tag, peer, n int, sent bool, t0 int64, err error) {
	if s.tl != nil {
		s.message(tag, peer, n, sent, t0, err)
	}
}

func (s *Recorder) message(tag kx.Tag, peer, n int, sent bool, t0 int64, err error) {
	if t0 < 0 && err == nil {
		return // a wait that could not block (EnterWait) or a small send (EnterSend)
	}
	now := s.tl.Now()
	if t0 < 0 {
		t0 = now // a failed wait's moment
	}
	if now-t0 < minMessageNs && err == nil {
		return
	}
	n = max(n, 0)
	s.tl.Message(tag, peer, n, sent, t0, now, err)
}

// Instant records a moment worth seeing on the timeline (a resize, a link probe's result).
func (s *Recorder) Instant(name, detail string) {
	if s.tl != nil {
		s.tl.Instant(name, s.tl.Now(), detail)
	}
}

// tlCount adds a message's bytes to its collective and its layer's counter; mu is held.
func (s *Recorder) tlCount(a *activeColl, tag kx.Tag, n int, sent bool) {
	if sent {
		a.tl.sent += int64(n)
	} else {
		a.tl.recv += int64(n)
	}
	if l := int(tag.Layer); countedLayer(tag) && l < trace.MaxCounterLayers {
		s.tlBytes[l] += int64(n)
		s.tlLayers = max(s.tlLayers, l+1)
	}
}

// countedLayer: a message of the butterfly's layers, which the bytes counter shows.
func countedLayer(tag kx.Tag) bool {
	switch tag.Phase {
	case kx.PhaseConfig, kx.PhaseDown, kx.PhaseUp, kx.PhaseConfigDown:
		return true
	}
	return false
}

// tlEnd records the call that ends, with its last phase and the bytes counter; mu is held.
func (s *Recorder) tlEnd(seq uint64, a *activeColl, err error, at int64) {
	// not before the call's start nor its last phase's: kx.FastMono, which at and the phases
	// read, may step back by nanoseconds when its first line is fitted, and an inline phase's
	// duration is packed unsigned (trace.InlineStep)
	now := max(s.tl.AtMono(at), a.tl.start, a.tl.stepStart)
	s.endStep(seq, a, now)
	var keysOut, keysIn int64
	if a.plan != nil && a.plan.configured {
		keysOut, keysIn = int64(a.plan.static.NOut), int64(a.plan.static.NIn)
	}
	var steps *[trace.InlineSteps]int64
	if now-a.tl.start < inlineCallNs && a.tl.nsteps > 0 {
		steps = &a.tl.steps
	} else {
		s.spill(seq, a)
	}
	s.tl.Call(seq, a.tl.fp, a.tl.start, now, a.tl.sent, a.tl.recv, keysOut, keysIn, steps, err)
	if a.tl.sent+a.tl.recv > 0 && s.tlLayers > 0 {
		s.tl.Counter(now, &s.tlBytes, s.tlLayers) // sampled: at most one event a millisecond
	}
}
