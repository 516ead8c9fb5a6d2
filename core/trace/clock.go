package trace

import (
	"kylix/core/kx"
	"math"
	"math/bits"
	"sync/atomic"
)

// The timeline's clock. A small call reads it about six times (each phase's start, before and
// after each wait that can block), and the runtime's monotonic clock (a vDSO clock_gettime:
// a switch to the system stack, an ordered counter read, the kernel's conversion) costs
// 20-40 ns a read on the machines measured, a fifth of the timeline's cost on such a call.
// Where the kernel itself keeps time with the CPU's time-stamp counter (clocksource "tsc":
// invariant and synchronized across cores, or the kernel would not use it), the timeline reads
// that counter directly and turns ticks into the monotonic clock's nanoseconds on a line: a
// rate calibrated against the monotonic clock over a span that keeps doubling (the writer
// refines it), through an anchor, a (ticks, ns) pair read back to back, taken again at a
// collective's start or end at most every anchorEvery.
//
// The line never reads ahead of the monotonic clock: the anchor takes the counter's reading
// after the clock's, the rate is lowered by its error bound, and an anchor only moves the line
// forward. So a phase or wait never ends after its call (whose end the caller reads from the
// monotonic clock). Now is also never before the latest collective start or end (At): a
// phase never starts before its call. Between anchors the line falls behind by at most the
// rate's error bound times the time since the anchor (tens of ns at the first rate, under a
// nanosecond once refined).
//
// Anywhere else (no counter, another clocksource, before calibration) Now is the monotonic
// clock itself.

// calibSpan is the shortest span the first rate is measured over: a pair of readings is good
// to about 30 ns, so the rate is good to about 6e-5.
const calibSpan = 1_000_000 // ns

// anchorEvery: a collective's start or end takes a new anchor when the last one is older than
// this (a pair of readings costs about 150 ns; a small call is a few µs).
const anchorEvery = 500_000 // ns

type tscClock struct {
	on bool // the counter serves (tscUsable)
	// cal is the line from counter to local clock (nil until calibrated); corr, added to it,
	// is the anchors' correction, one word: an anchor is one compare-and-swap.
	cal  atomic.Pointer[calLine]
	corr atomic.Int64
	// lastAt: the latest At (read with atomic.LoadInt64, written with kx.StoreRelaxed);
	// anchored: the local clock at the last anchor.
	lastAt   int64
	anchored atomic.Int64
	// the calibration's first pair (ticks, local clock, the pair's window in ticks) and the
	// span of the current rate, under Tracer.calMu.
	t0, n0, w0, span int64
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

// pair reads the counter, the local clock (kx.MonoNow) and the counter again, the
// tightest of a few tries: tk is the second counter reading (at or after the clock's
// reading), w the window between the two in ticks; ok is false when every try was
// interrupted.
func (t *Tracer) pair() (tk, ns, w int64, ok bool) {
	w = math.MaxInt64
	for i := 0; i < 5; i++ {
		a := kx.TSC()
		n := kx.MonoNow() - t.baseMono
		b := kx.TSC()
		if d := b - a; d >= 0 && d < w {
			w, tk, ns = d, b, n
		}
	}
	return tk, ns, w, w < math.MaxInt64
}

// startClock takes the calibration's first pair (Open).
func (t *Tracer) startClock() {
	c := &t.clk
	c.on = kx.TSCUsable()
	if c.on {
		c.t0, c.n0, c.w0, c.on = t.pair()
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
	tk, ns, w, ok := t.pair()
	for must && ok && c.span == 0 && ns-c.n0 < calibSpan {
		tk, ns, w, ok = t.pair()
	}
	d := ns - c.n0
	if !ok || d < calibSpan || d < 2*c.span || tk <= c.t0 {
		return
	}
	r := float64(d) / float64(tk-c.t0)
	// each pair's counter reading is late by at most its window: the span in ticks is off by
	// at most the two windows; lowered by that, the rate is not above the true one
	slack := float64(c.w0+w) / float64(tk-c.t0)
	if slack > 0.01 {
		return // a pair too loose to trust (a descheduled thread): the next try
	}
	c.span = d
	corr := c.corr.Load()
	if old := c.cal.Load(); old != nil {
		ns = max(ns, old.ns(tk)+corr) // both at or behind the monotonic clock: never back
	}
	c.cal.Store(&calLine{t0: tk, ns0: ns - corr, rate: uint64(r * (1 - slack) * (1 << 32))})
	c.anchored.Store(ns)
}

// now is the local clock: the counter on its line (not before the latest At), or kx.MonoNow.
func (t *Tracer) now() int64 {
	c := &t.clk
	if c.on {
		if l := c.cal.Load(); l != nil {
			return max(l.ns(kx.TSC())+c.corr.Load(), atomic.LoadInt64(&c.lastAt))
		}
	}
	return kx.MonoNow() - t.baseMono
}

// at is At's work with the counter: ns, the local clock just read by the caller, becomes the
// floor of Now, and the line is anchored again when its anchor is old.
func (t *Tracer) at(l *calLine, ns int64) {
	c := &t.clk
	if ns > atomic.LoadInt64(&c.lastAt) {
		kx.StoreRelaxed(&c.lastAt, ns) // no fence: the floor needs none
	}
	if ns-c.anchored.Load() >= anchorEvery {
		t.anchor(l)
	}
}

// anchor moves the line forward to a fresh pair when it has fallen behind (never back: what
// was read before stays before).
func (t *Tracer) anchor(l *calLine) {
	c := &t.clk
	tk, ns, _, ok := t.pair()
	if !ok {
		return
	}
	corr := c.corr.Load()
	if d := ns - (l.ns(tk) + corr); d > 0 {
		c.corr.CompareAndSwap(corr, corr+d)
	}
	c.anchored.Store(ns)
}

// fresh is Now, anchored first when the anchor is old: for the caller's marks, which come
// between collectives (a long way from the last anchor, maybe) and are few.
func (t *Tracer) fresh() int64 {
	v := t.Now()
	if c := &t.clk; c.on {
		if l := c.cal.Load(); l != nil && v-c.anchored.Load() >= anchorEvery {
			t.anchor(l)
			v = t.Now()
		}
	}
	return v
}
