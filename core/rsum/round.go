package rsum

import "math/bits"

// floatFormat describes an IEEE binary format for the final rounding.
type floatFormat struct {
	prec    int    // significand bits with the implicit one: 53, 24
	qmin    int    // exponent of the lowest subnormal bit: -1074, -149
	signBit uint   // 63, 31
	inf     uint64 // bits of +Inf
	nan     uint64 // bits of the canonical quiet NaN
}

var (
	f64 = floatFormat{prec: 53, qmin: -1074, signBit: 63, inf: 0x7ff0000000000000, nan: 0x7ff8000000000000}
	f32 = floatFormat{prec: 24, qmin: -149, signBit: 31, inf: 0x7f800000, nan: 0x7fc00000}
)

// finish turns one accumulator into the bits of its float: the flags decide NaN, ±Inf and the
// sign of zero; otherwise the exact value l0*2^64 + l1*2^32 + l2, times 2^e2, is rounded to
// nearest, ties to even, overflowing to ±Inf.
func finish(h uint64, l0, l1, l2 int64, e2 int, f *floatFormat) uint64 {
	if h&(flagNaN|flagPInf|flagNInf) != 0 {
		switch {
		case h&flagNaN != 0 || h&(flagPInf|flagNInf) == flagPInf|flagNInf:
			return f.nan
		case h&flagPInf != 0:
			return f.inf
		}
		return f.inf | 1<<f.signBit
	}
	// Sum the limbs in 128-bit two's complement. The limbs are not normalised, but each is
	// below 2^59 in magnitude (60-bit limbs), so |value| < 2^124.
	lo, c := bits.Add64(uint64(l2), uint64(l1)<<32, 0)
	hi := uint64(l2>>63) + uint64(l1>>32) + uint64(l0) + c
	if hi|lo == 0 {
		if h&(flagNegZero|flagOther) == flagNegZero {
			return 1 << f.signBit
		}
		return 0
	}
	// Magnitude without a branch: half the sums are negative, in no predictable order.
	sign := hi >> 63
	mask := -sign
	lo, c = bits.Add64(lo^mask, sign, 0)
	hi = hi ^ mask + c
	return roundBits(hi, lo, e2, f) | sign<<f.signBit
}

// roundBits rounds the positive value (hi:lo) * 2^e2 to the nearest float of format f, ties
// to even, and returns its bits without the sign.
func roundBits(hi, lo uint64, e2 int, f *floatFormat) uint64 {
	// Bring the leading bit into hi, so that top, the 64 highest bits left-aligned, and low,
	// nonzero when a bit below them is set, come from one shift; lead is the leading bit's
	// exponent.
	lead := e2 + 127
	if hi == 0 {
		hi, lo, lead = lo, 0, lead-64
	}
	z := uint(bits.LeadingZeros64(hi))
	top := hi<<z | lo>>(64-z)
	low := lo << z
	lead -= int(z)
	// q is the exponent of the result's lowest bit: prec bits below the leading one, but not
	// below the subnormal floor.
	q := max(lead-f.prec+1, f.qmin)
	keep := lead - q + 1
	if keep < 0 {
		return 0 // below half the smallest subnormal
	}
	// Round half to even without a data-dependent branch: adding half-1, plus one when the kept
	// part is odd or bits below top are set, carries into the kept part exactly when it must
	// round up. The sum may carry out of 64 bits, hence Add64.
	drop := uint(64 - keep) // 11..64; Go's shifts of 64 give 0, which the next lines rely on
	sticky := (low | -low) >> 63
	inc := uint64(1)<<(drop-1) - 1 + (top>>drop&1 | sticky)
	sum, carry := bits.Add64(top, inc, 0)
	m := sum>>drop | carry<<(64-drop)
	if m == 1<<f.prec {
		m >>= 1
		q++
	}
	// For a normal m the implicit bit adds the one that makes the biased exponent q-qmin+1; a
	// subnormal has q == qmin and no implicit bit, so the same sum encodes both.
	r := uint64(q-f.qmin)<<(f.prec-1) + m
	if r >= f.inf {
		return f.inf
	}
	return r
}
