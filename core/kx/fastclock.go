package kx

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// FastMono is MonoNow read through the CPU's time-stamp counter: where the kernel itself keeps
// time with the counter (clocksource "tsc": invariant and synchronized across cores), one
// counter read and a multiply on a line fitted to MonoNow, about 10 ns a read on the machines
// measured against 23 for MonoNow's vDSO call (docs/measurements.md, "The clock of a small
// step"). A small step reads the clock at its start and end and at every message received.
//
// The line is fitted over the span since the process's first read (the rate's error shrinks as
// the span grows) and taken again from a fresh (counter, MonoNow) pair every fastAnchorNs of
// counter time. Its rate is lowered by its error bound, so it never reads ahead of MonoNow and
// falls behind it by at most that bound times the time since the anchor: under a microsecond
// while the fit spans the first milliseconds, a nanosecond once it spans a second. A new line
// never starts behind the last one's reading, so a goroutine's readings go back by at most
// that lag (one taken from MonoNow, before the first line, may be ahead of the next). Anywhere
// else (no counter, another clocksource, the first millisecond) FastMono is MonoNow.
func FastMono() int64 {
	if l := fast.line.Load(); l != nil {
		if d := TSC() - l.t0; d >= 0 && d < l.span {
			return l.ns0 + l.ns(d)
		}
	}
	return fast.refit()
}

// fastCalibNs is the shortest span the first rate is fitted over (a pair of readings is good
// to tens of ns: the rate to about 1e-4, lowered by that).
const fastCalibNs = 1_000_000

// fastAnchorNs: a line serves this long (counter time) before it is taken again.
const fastAnchorNs = 10_000_000

type fastLine struct {
	t0, ns0 int64  // the anchor: counter and MonoNow
	span    int64  // counter ticks the line serves from t0
	rate    uint64 // ns per tick, 32.32 fixed point
}

func (l *fastLine) ns(ticks int64) int64 {
	hi, lo := bits.Mul64(uint64(ticks), l.rate)
	return int64(hi<<32 | lo>>32)
}

type fastClock struct {
	line  atomic.Pointer[fastLine]
	state atomic.Int32 // 0: not looked at; 1: the counter serves; -1: it does not
	mu    sync.Mutex   // refit's
	// the first pair (counter, MonoNow, the pair's window in ticks)
	t0, n0, w0 int64
}

var fast fastClock

// refit is FastMono outside a line's span: a new line when the counter serves and no other
// thread is fitting one, else the last line read past its span (or MonoNow before the first),
// so that a goroutine's readings do not go back beyond the line's lag.
func (f *fastClock) refit() int64 {
	if f.state.Load() < 0 {
		return MonoNow()
	}
	if !f.mu.TryLock() {
		return f.extend()
	}
	defer f.mu.Unlock()
	if f.state.Load() == 0 {
		f.state.Store(-1)
		if TSCUsable() {
			if tk, ns, w, ok := fastPair(); ok {
				f.t0, f.n0, f.w0 = tk, ns, w
				f.state.Store(1)
			}
		}
		return MonoNow()
	}
	tk, ns, w, ok := fastPair()
	if !ok || ns-f.n0 < fastCalibNs || tk <= f.t0 {
		return f.extend()
	}
	r := float64(ns-f.n0) / float64(tk-f.t0)
	// each pair's counter reading is late by at most its window: lowered by both windows,
	// the rate is not above the true one
	slack := float64(f.w0+w) / float64(tk-f.t0)
	if slack > 1e-3 {
		return f.extend() // a loose pair (the thread was interrupted): the next read tries again
	}
	l := &fastLine{t0: tk, ns0: ns, rate: uint64(r * (1 - slack) * (1 << 32)), span: int64(fastAnchorNs / r)}
	if old := f.line.Load(); old != nil {
		at := old.ns0 + old.ns(max(tk-old.t0, 0))
		if at-ns > fastAheadNs {
			// a line that never reads ahead did: the counter's rate changed under it (a VM
			// moved to another host?). Fit again from here; meanwhile FastMono is MonoNow.
			f.t0, f.n0, f.w0 = tk, ns, w
			f.line.Store(nil)
			return ns
		}
		l.ns0 = max(ns, at) // never back
	}
	f.line.Store(l)
	return l.ns0
}

// fastAheadNs: a line this far ahead of MonoNow at a refit no longer fits the counter.
const fastAheadNs = 1000

// extend is the last line read past its span, or MonoNow before the first line.
func (f *fastClock) extend() int64 {
	if l := f.line.Load(); l != nil {
		return l.ns0 + l.ns(max(TSC()-l.t0, 0))
	}
	return MonoNow()
}

// fastPair reads the counter, MonoNow and the counter again, the tightest of a few tries: tk
// is the second counter reading, w the window between the two in ticks.
func fastPair() (tk, ns, w int64, ok bool) {
	w = math.MaxInt64
	for i := 0; i < 3; i++ {
		a := TSC()
		n := MonoNow()
		b := TSC()
		if d := b - a; d >= 0 && d < w {
			w, tk, ns = d, b, n
		}
	}
	return tk, ns, w, w < math.MaxInt64
}

// For code that reads the counter itself (the C ABI's express allreduce times its calls with
// it): TickNanos is a span of ticks in ns, and TicksIn a span of ns in ticks, at the rate of
// FastMono's current line; false before the first line, or where the counter does not serve.
func TickNanos(ticks int64) (int64, bool) {
	if l := fast.line.Load(); l != nil && l.rate > 0 {
		return l.ns(ticks), true
	}
	return 0, false
}

func TicksIn(ns int64) (int64, bool) {
	if l := fast.line.Load(); l != nil && l.rate > 0 {
		return int64((uint64(ns) << 32) / l.rate), true
	}
	return 0, false
}
