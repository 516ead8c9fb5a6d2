package trace

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// The timeline's clock. A small call reads it about six times (each phase's start, before and
// after each wait that can block), and the runtime's monotonic clock (a vDSO clock_gettime:
// a switch to the system stack, an ordered counter read, the kernel's conversion) costs
// 25-40 ns a read on the machines measured, a tenth of the timeline's cost on such a call.
// Where the kernel itself keeps time with the CPU's time-stamp counter (clocksource "tsc":
// invariant and synchronized across cores, or the kernel would not use it), the timeline reads
// that counter directly (one instruction) and turns ticks into the monotonic clock's
// nanoseconds from an anchor: a (ticks, ns) pair that the library's own clock readings refresh
// at the start and end of every collective (At), at a rate calibrated against the monotonic
// clock over a span that keeps doubling (the writer refines it). Between anchors the two clocks
// part by the rate's error times the time since the anchor: nanoseconds within a call.
// Anywhere else (no counter, another clocksource, before calibration) Now is the monotonic
// clock itself.

// calibSpan is the shortest span the first rate is measured over: a pair of readings is good
// to about 50 ns, so the rate is good to 5e-5 and a 10 µs extrapolation to half a nanosecond.
const calibSpan = 1_000_000 // ns

type tscClock struct {
	on bool // the counter serves (tscUsable)
	// cal is the line from counter to local clock (nil until calibrated); corr, added to it,
	// is the anchors' correction: one word, so that an anchor is one store.
	cal  atomic.Pointer[calLine]
	corr atomic.Int64
	// the calibration's first pair (on the local clock) and the span of the current rate,
	// under Tracer.calMu.
	t0, n0, span int64
}

// calLine: local clock = ns0 + corr + (ticks − t0) × rate, the rate in ns per tick as a
// 32.32 fixed-point number: an integer multiply, shorter on a read's critical path than
// float conversions.
type calLine struct {
	t0, ns0 int64
	rate    uint64
}

// ns is the line at tk (without corr); a reading before t0 (another core's counter a few
// ticks behind) counts as t0.
func (l *calLine) ns(tk int64) int64 {
	hi, lo := bits.Mul64(uint64(max(tk-l.t0, 0)), l.rate)
	return l.ns0 + int64(hi<<32|lo>>32)
}

// pair reads the counter and the local clock (nanotime-based) back to back, the tightest of a
// few tries; ok is false when every try was interrupted.
func (t *Tracer) pair() (tk, ns int64, ok bool) {
	best := int64(math.MaxInt64)
	for i := 0; i < 5; i++ {
		a := rdtsc()
		n := nanotime() - t.baseMono
		b := rdtsc()
		if d := b - a; d >= 0 && d < best {
			best, tk, ns = d, a+d/2, n
		}
	}
	return tk, ns, best < math.MaxInt64
}

// startClock takes the calibration's first pair (Open).
func (t *Tracer) startClock() {
	c := &t.clk
	c.on = tscUsable()
	if c.on {
		c.t0, c.n0, c.on = t.pair()
	}
}

// calibrate measures the rate over the span since Open when that span is at least twice the
// current rate's (first: at least calibSpan; wait for it when must), and anchors there.
// calMu is held.
func (t *Tracer) calibrate(must bool) {
	c := &t.clk
	if !c.on {
		return
	}
	tk, ns, ok := t.pair()
	for must && ok && c.span == 0 && ns-c.n0 < calibSpan {
		tk, ns, ok = t.pair()
	}
	d := ns - c.n0
	if !ok || d < calibSpan || d < 2*c.span || tk <= c.t0 {
		return
	}
	c.span = d
	rate := uint64(float64(d) / float64(tk-c.t0) * (1 << 32))
	c.cal.Store(&calLine{t0: tk, ns0: ns - c.corr.Load(), rate: rate})
}

// now is the local clock: the counter on its line, or nanotime.
func (t *Tracer) now() int64 {
	c := &t.clk
	if c.on {
		if l := c.cal.Load(); l != nil {
			return l.ns(rdtsc()) + c.corr.Load()
		}
	}
	return nanotime() - t.baseMono
}

// maxAnchorGap: an anchor from At pairs the caller's clock reading with a counter read a few
// instructions later; when the counter says more than this has passed since (the thread was
// descheduled between), the pair is read afresh.
const maxAnchorGap = 2000 // ns

// anchorAt moves the line so that it reads ns, the local clock read just before (At), now:
// what the call records next is not before its start, and the line's drift since the last
// call is gone.
func (t *Tracer) anchorAt(l *calLine, ns int64) {
	c := &t.clk
	tk := rdtsc()
	corr := c.corr.Load()
	ext := l.ns(tk) + corr
	if ext-ns > maxAnchorGap {
		var ok bool
		if tk, ns, ok = t.pair(); !ok {
			return
		}
		ext = l.ns(tk) + corr
	}
	if ext != ns {
		c.corr.Store(corr + ns - ext)
	}
}
