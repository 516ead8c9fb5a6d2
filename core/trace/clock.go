package trace

import (
	"math"
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
	// seq is odd while an anchor is written; tsc, ns: the anchor; rate: ns per tick (float64
	// bits), 0 until calibrated.
	seq  atomic.Uint64
	tsc  atomic.Int64
	ns   atomic.Int64
	rate atomic.Uint64
	// the calibration's first pair (on the local clock) and the span of the current rate,
	// written by one goroutine at a time (Open, then SetClock, then the writer).
	t0, n0, span int64
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
	t.anchor(tk, ns, math.Float64bits(float64(d)/float64(tk-c.t0)))
}

// anchor sets the clock's anchor (and rate, when not 0); a concurrent writer wins, this one
// skips: the next call anchors again.
func (t *Tracer) anchor(tk, ns int64, rate uint64) {
	c := &t.clk
	s := c.seq.Load()
	if s&1 != 0 || !c.seq.CompareAndSwap(s, s+1) {
		return
	}
	c.tsc.Store(tk)
	c.ns.Store(ns)
	if rate != 0 {
		c.rate.Store(rate)
	}
	c.seq.Store(s + 2)
}

// now is the local clock: the counter from the anchor, or nanotime.
func (t *Tracer) now() int64 {
	if t.clk.on {
		if ns, ok := t.at(rdtsc()); ok {
			return ns
		}
	}
	return nanotime() - t.baseMono
}

// at is the counter's reading tk on the local clock; ok is false before calibration (or when
// anchors kept changing under the read).
func (t *Tracer) at(tk int64) (int64, bool) {
	c := &t.clk
	for i := 0; i < 4; i++ {
		s := c.seq.Load()
		r := c.rate.Load()
		if s&1 != 0 || r == 0 {
			return 0, false
		}
		atk, ans := c.tsc.Load(), c.ns.Load()
		if c.seq.Load() == s {
			return ans + int64(float64(tk-atk)*math.Float64frombits(r)), true
		}
	}
	return 0, false
}

// maxAnchorGap: an anchor from At pairs the caller's clock reading with a counter read a few
// instructions later; when the counter says more than this has passed since (the thread was
// descheduled between), the pair is read afresh.
const maxAnchorGap = 2000 // ns

// anchorAt anchors the counter at ns, the local clock read just before (At).
func (t *Tracer) anchorAt(ns int64) {
	tk := rdtsc()
	if ext, ok := t.at(tk); ok && ext-ns > maxAnchorGap {
		if tk, ns, ok = t.pair(); !ok {
			return
		}
	}
	t.anchor(tk, ns, 0)
}
