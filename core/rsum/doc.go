// Package rsum is the numeric heart of KYLIX_RSUM (include/kylix.h): an
// accumulator whose value after any sequence of additions depends only on the multiset of
// float contributions, never on their order or grouping, and its rounding to a float.
//
// # Method
//
// A binned fixed-point window, after Demmel and Nguyen's binned summation (ReproBLAS), but with
// integer limbs, so that the additions themselves are exact and associative.
//
// Positions are absolute: position 0 is the lowest subnormal bit (2^-1074 for F64, 2^-149 for
// F32), and bin b holds positions [32b, 32b+32). A finite nonzero value x has a top bin,
// top(x), the bin of its leading bit, and its part in bin j, part_j(x), is the sign of x times
// the bits of |x| in bin j (an integer below 2^32). An accumulator of a multiset S stores
//
//	T(S)    = max(0, max top(x) over the finite nonzero x in S)
//	limb_j  = sum over x in S of part_j(x), for the K bins j = T(S), T(S)-1, ..., T(S)-K+1
//
// with K = 3 for F64 and K = 2 for F32. A single value spans at most K bins (53 bits need
// three 32-bit bins, 24 bits two), so FromF64/FromF32 are exact.
//
// # Why the result depends only on the multiset
//
// Add(A, B) keeps T = max(T(A), T(B)) and, for each of the K bins of that window, adds the
// limbs A and B hold for it; a bin a side does not hold is either above that side's top bin,
// where every part of its contributions is zero, or below the window, where it is dropped.
// Hence the sum holds exactly T(A∪B) and, per kept bin, the sum of part_j over A∪B: the same
// state the definition gives, whatever the grouping. Limbs are never normalised (no carry
// moves between limbs), because a carry moved up before a bin is dropped would survive in one
// grouping and vanish in another. Integer addition is associative and commutative, max and OR
// (the flags) are too, so every merge tree, order and scatter path gives the same bytes, and
// ToF64/ToF32 is a function of those bytes.
//
// # Accuracy
//
// The final value is sum over S of x truncated toward zero at the window's bottom,
// 2^(32(T-K+1)) in position units, rounded once to nearest, ties to even (no double rounding:
// F32 rounds from the integer window directly). It is the correctly rounded exact sum
// whenever every contribution's lowest set bit lies within the window: surely when it is at
// most 64 bit positions below the largest contribution's leading bit for F64 (32 for F32),
// and up to 95 (63) when that leading bit sits high in its bin. Otherwise each truncation
// loses less than 2^-64 (F64) or 2^-32 (F32) of max|x|, so
//
//	|result - exact| <= ulp(result)/2 + n * max|x| * 2^-64   (F64; 2^-32 for F32)
//
// against a plain sum's bound of (n-1) * 2^-53 * sum|x| (2^-24 for F32) plus its own last
// rounding: never larger. TestErrorBound and TestExactWhenInWindow check both claims.
//
// # Special values and zeros
//
// Sticky flags, combined by OR, so they too depend only on the multiset: any NaN gives NaN (the
// canonical quiet NaN: a payload would depend on which NaN came first); +Inf and -Inf together
// give NaN; otherwise +Inf or -Inf give that infinity; a finite sum whose rounding exceeds the
// largest float gives ±Inf, as round to nearest does. A zero sum is -0 only when every
// contribution was -0 (IEEE's rule for -0 + -0, made order-free), otherwise +0; the empty sum
// is +0.
//
// # Format and cost
//
// An accumulator is K little-endian 64-bit words, the limbs from bin T down. Each word holds
// its limb as a two's-complement integer in its low 60 bits (F64) or 59 bits (F32) and a
// slice of the header above: 4 bits a word for F64, 5 for F32, the low slice in the first
// word. The header is 5 flag bits (bit 0 NaN, 1 +Inf, 2 -Inf, 3 saw -0, 4 saw anything other
// than -0) with the top bin T above them. F64: 24 bytes a value (3x a float64); F32: 16 bytes
// (4x a float32). Zero bytes are the empty sum.
//
// A limb holds 32 bits of payload a contribution, so its headroom is 2^27 (F64) or 2^26
// (F32) contributions to one index; past that a limb may wrap and the result is wrong. The
// header rides in the limbs' top bits rather than in a word of its own because the bytes on
// the wire are the cost that matters (a 4th word would make F64 32 bytes); the price is
// headroom, 2^31 with a separate header word.
//
// The words are little-endian on every host, so accumulators may cross between hosts as they
// are.
//
// Use the accumulator form only on the wire and in combine buffers: convert the inputs with
// FromF64/FromF32 (or fold a rank's values, repeated indices included, straight into
// accumulators with AddScatterF64/F32), combine with Add/AddScatter, and round once at the end
// with ToF64/ToF32. Folding a received float with AddScatterF64 gives the same bytes as
// receiving its accumulator, so a hop that carries single contributions (a rank's own values
// with no repeats) may send plain floats. Every function streams over its arguments and
// allocates nothing.
//
// # Speed
//
// Folding floats into accumulators (AddScatterF64/F32) is the cost that matters: a reduce's
// layer 0 does it once per contribution, at rows scattered over a few MiB. Its loop adds
// without a branch on the row (the higher window is chosen by a mask, the lower one read
// shifted from a zero-padded buffer), since whether a row is empty or shares the value's top
// bin is a coin toss when ranks' contributions meet, and prefetches the rows ahead. The
// AddScatter*Fresh variants start rows from their first value instead of adding to cleared
// ones, so a combine whose rows come in order of first appearance needs no clearing pass. On
// amd64 with BMI2 the scatter loops and ToF64's common case are assembly (rsum_amd64.s; the
// values and rows they leave, zeros, subnormals, NaN, ±Inf and the like, go through the Go
// loops one at a time); SetAsm switches them, kernels' SIMD level sets it (KYLIX_NOSIMD), and
// the tests compare every path with the general code bit for bit.
package rsum
