package rsum

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFastPaths checks the specialised paths against the general code they shortcut, on
// inputs the model tests rarely reach: words64/words32 against split and put64/put32 on
// random bit patterns, and ToF64/ToF32 against finish on random reachable accumulators
// (unnormalised limbs up to the headroom, every top bin, cancellation to small and zero sums).
func TestFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for range 1000000 {
		b := rng.Uint64()
		if rng.IntN(8) == 0 { // exponent field at its edges: subnormals, the top normals, Inf/NaN
			b = b&^(0x7ff<<52) | uint64(rng.IntN(3)+[]int{0, 2043}[rng.IntN(2)])<<52
		}
		if w0, w1, w2, ok := words64(b); ok {
			if s0, s1, s2 := slowWords64(b); [3]uint64{w0, w1, w2} != [3]uint64{s0, s1, s2} {
				t.Fatalf("words64(%#x) = %#x %#x %#x, want %#x %#x %#x", b, w0, w1, w2, s0, s1, s2)
			}
		} else if e := b >> 52 & 0x7ff; e != 0 && e != 0x7ff {
			t.Fatalf("words64(%#x): not ok for a normal value", b)
		}
		b32 := uint32(b)
		if w0, w1, ok := words32(b32); ok {
			if s0, s1 := slowWords32(b32); [2]uint64{w0, w1} != [2]uint64{s0, s1} {
				t.Fatalf("words32(%#x) = %#x %#x, want %#x %#x", b32, w0, w1, s0, s1)
			}
		} else if e := b32 >> 23 & 0xff; e != 0 && e != 0xff {
			t.Fatalf("words32(%#x): not ok for a normal value", b32)
		}
	}
	limb := func(lb uint) int64 {
		l := int64(rng.Uint64()) >> (64 - lb + uint(rng.IntN(int(lb)))) // any width up to the headroom
		if rng.IntN(4) == 0 {
			l = 0
		}
		return l
	}
	var a [Acc64Bytes]byte
	out64, out32 := make([]float64, 1), make([]float32, 1)
	for range 1000000 {
		h := uint64(rng.IntN(70))<<topShift | uint64(rng.IntN(1<<topShift))&^(flagNaN|flagPInf|flagNInf)
		if rng.IntN(64) == 0 {
			h |= uint64(rng.IntN(8))
		}
		l0, l1, l2 := limb(limbBits64), limb(limbBits64), limb(limbBits64)
		if rng.IntN(8) == 0 { // cancellation: the high limbs' parts cancel
			l0, l1 = 0, -l2>>32
		}
		// Bins below position 0 hold nothing in a reachable accumulator.
		if h>>topShift < 2 {
			l2 = 0
		}
		if h>>topShift < 1 {
			l1 = 0
		}
		put64(a[:], h, l0, l1, l2)
		ToF64(out64, a[:])
		want := finish(h, l0, l1, l2, binBits*(int(h>>topShift)-2)-1074, &f64)
		if got := math.Float64bits(out64[0]); got != want {
			t.Fatalf("ToF64(h %#x, %d %d %d) = %#x, want %#x", h, l0, l1, l2, got, want)
		}
		h32 := h&flagMask | uint64(rng.IntN(9))<<topShift
		m0, m1 := limb(limbBits32), limb(limbBits32)
		if h32>>topShift == 0 {
			m1 = 0
		}
		put32(a[:Acc32Bytes], h32, m0, m1)
		ToF32(out32, a[:Acc32Bytes])
		want = finish(h32, 0, m0, m1, binBits*(int(h32>>topShift)-1)-149, &f32)
		if got := uint64(math.Float32bits(out32[0])); got != want {
			t.Fatalf("ToF32(h %#x, %d %d) = %#x, want %#x", h32, m0, m1, got, want)
		}
	}
}
