package rsum

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestScatterFastPath checks AddScatterF64/F32 (branch-free, prefetching, words written out)
// against the general code they replace, value by value: FromF64/FromF32 into a buffer, then
// addWords64/addWords32 (add64Shift and addSame), on rows that already hold sums of every
// kind (empty, each top bin, flags set, cancelled to zero) and on values of every kind: NaN,
// ±Inf, ±0, subnormals, the largest floats (overflow), exponents over ±60 with cancellation,
// and raw bit patterns. Repeated indices, lengths across the prefetch blocks, and rows far
// apart (top bins up to the largest) are all in it.
func TestScatterFastPath(t *testing.T) {
	defer SetAsm(true, true)
	rng := rand.New(rand.NewPCG(31, 32))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, 0x1p-1022, -0x1p-1023,
		math.MaxFloat64, -math.MaxFloat64, math.MaxFloat32, -math.MaxFloat32,
		float64(math.SmallestNonzeroFloat32), 0x1p-126, -0x1p-127, 1, -1}
	draw := func(n int, f64 bool) []float64 {
		var v []float64
		switch rng.IntN(4) {
		case 0:
			v = genSpread(rng, n, 60, f64)
		case 1:
			v = genBits(rng, n, f64)
		case 2:
			v = genSpread(rng, n, 1100, f64)
		default:
			v = genSpread(rng, n, 3, f64)
		}
		for i := range v {
			if rng.IntN(10) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			}
			if !f64 {
				v[i] = float64(float32(v[i]))
			}
		}
		return v
	}
	for iter := range 3000 {
		for _, f64 := range []bool{true, false} {
			ab := AccBytes(f64)
			rows := 1 + rng.IntN(40)
			n := rng.IntN(3 * scatterBlock * 2)
			if iter%50 == 0 {
				n = rng.IntN(2000)
			}
			// Rows prefilled with sums of a few values each (some left empty).
			got := make([]byte, rows*ab)
			for r := range rows {
				for _, x := range draw(rng.IntN(4), f64) {
					one := make([]byte, ab)
					if f64 {
						FromF64(one, []float64{x})
					} else {
						FromF32(one, []float32{float32(x)})
					}
					Add(f64, got[r*ab:r*ab+ab], one)
				}
			}
			want := bytes.Clone(got)
			vals := draw(n, f64)
			idx := make([]int32, n)
			for j := range idx {
				idx[j] = int32(rng.IntN(rows))
			}
			var one [Acc64Bytes]byte
			for j, x := range vals { // the reference: one value at a time, the general add
				d := want[int(idx[j])*ab : int(idx[j])*ab+ab]
				if f64 {
					FromF64(one[:ab], []float64{x})
					addWords64(d, le.Uint64(one[:]), le.Uint64(one[8:]), le.Uint64(one[16:]))
				} else {
					FromF32(one[:ab], []float32{float32(x)})
					addWords32(d, le.Uint64(one[:]), le.Uint64(one[8:]))
				}
			}
			asm, _ := SetAsm(iter%2 == 0, true) // both paths: the assembly loop where it runs, and Go
			if f64 {
				AddScatterF64(got, vals, idx)
			} else {
				v32 := make([]float32, n)
				for i, x := range vals {
					v32[i] = float32(x)
				}
				AddScatterF32(got, v32, idx)
			}
			if !bytes.Equal(got, want) {
				for r := range rows {
					if !bytes.Equal(got[r*ab:r*ab+ab], want[r*ab:r*ab+ab]) {
						t.Fatalf("f64 %v asm %v, iteration %d, row %d: got %x, want %x", f64, asm, iter, r, got[r*ab:r*ab+ab], want[r*ab:r*ab+ab])
					}
				}
			}
		}
	}
}

// TestRoundFastPath checks ToF64 and ToF32 against finish on accumulators chosen to reach each
// branch of the fast paths: the leading one in the top limb, a 128-bit sum whose high word is
// zero (lo below and above 2^63), negative sums, zero sums with each zero flag, sticky bits
// below the 64 leading ones, the top bins at both ends of the fast range and past them. Both
// run on batches too (the AVX-512 loops take eight at a time; batches of mostly plain sums let
// them run whole groups, the others send groups back to the scalar loops), on every path, into
// their own buffer and in place.
func TestRoundFastPath(t *testing.T) {
	defer SetAsm(true, true)
	rng := rand.New(rand.NewPCG(41, 42))
	var a [Acc64Bytes]byte
	out32 := make([]float32, 1)
	anyLimb := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return int64(rng.Uint64() >> 32) // a part: below 2^32
		case 2:
			return -int64(rng.Uint64() >> 32)
		case 3:
			return 1 << 31 // lo >= 2^63 with l0 = 0
		}
		return int64(rng.Uint64()) >> (64 - limbBits64 + 1 + uint(rng.IntN(limbBits64-1)))
	}
	for iter := range 100000 {
		asm, avx := SetAsm(iter%3 != 2, iter%3 == 0) // every path: AVX-512, scalar assembly, Go
		plain := iter%2 == 0
		n := 1 + rng.IntN(40)
		acc := make([]byte, n*Acc64Bytes)
		want := make([]uint64, n)
		acc32 := make([]byte, n*Acc32Bytes)
		want32 := make([]uint64, n)
		for i := range n {
			top := uint64(rng.IntN(70))
			if rng.IntN(2) == 0 {
				top = uint64([]int{0, 1, 2, 3, 4, 5, 64, 65, 66}[rng.IntN(9)])
			}
			h := uint64(rng.IntN(1<<topShift)) & (flagNegZero | flagOther)
			if rng.IntN(32) == 0 {
				h |= uint64(rng.IntN(8))
			}
			l0, l1, l2 := anyLimb(), anyLimb(), anyLimb()
			if rng.IntN(3) == 0 {
				l0 = 0
			}
			if plain && rng.IntN(50) != 0 { // a sum the fast paths take
				top, h = 4+uint64(rng.IntN(62)), h&^(flagNaN|flagPInf|flagNInf)
				for l0 == 0 {
					l0 = anyLimb()
				}
			}
			h |= top << topShift
			if top < 2 {
				l2 = 0
			}
			if top < 1 {
				l1 = 0
			}
			put64(acc[i*Acc64Bytes:], h, l0, l1, l2)
			want[i] = finish(h, l0, l1, l2, binBits*(int(top)-2)-1074, &f64)
			h32 := h&flagMask | top%9<<topShift
			if plain && rng.IntN(20) != 0 { // a top limb the fast paths take: below 2^30
				l1 = int64(rng.Uint64()>>34) * (1 - 2*int64(rng.IntN(2)))
			}
			if h32>>topShift == 0 { // bin -1 holds nothing
				l2 = 0
			}
			put32(a[:Acc32Bytes], h32, l1, l2)
			want32[i] = finish(h32, 0, l1, l2, binBits*(int(top%9)-1)-149, &f32)
			ToF32(out32, a[:Acc32Bytes])
			if got := uint64(math.Float32bits(out32[0])); got != want32[i] {
				t.Fatalf("ToF32(h %#x, %d %d) = %#x, want %#x", h32, l1, l2, got, want32[i])
			}
			copy(acc32[i*Acc32Bytes:], a[:Acc32Bytes])
		}
		batch32 := make([]float32, n)
		ToF32(batch32, acc32)
		inPlace32 := unsafe.Slice((*float32)(unsafe.Pointer(&acc32[0])), n)
		ToF32(inPlace32, acc32)
		for i := range n {
			if got := uint64(math.Float32bits(batch32[i])); got != want32[i] {
				t.Fatalf("ToF32 (avx512 %v) row %d of %d = %#x, want %#x", avx, i, n, got, want32[i])
			}
			if got := uint64(math.Float32bits(inPlace32[i])); got != want32[i] {
				t.Fatalf("ToF32 in place (avx512 %v) row %d of %d = %#x, want %#x", avx, i, n, got, want32[i])
			}
		}
		out := make([]float64, n)
		ToF64(out, acc)
		inPlace := unsafe.Slice((*float64)(unsafe.Pointer(&acc[0])), n)
		ToF64(inPlace, acc)
		for i := range n {
			if got := math.Float64bits(out[i]); got != want[i] {
				t.Fatalf("ToF64 (asm %v, avx512 %v) row %d of %d = %#x, want %#x", asm, avx, i, n, got, want[i])
			}
			if got := math.Float64bits(inPlace[i]); got != want[i] {
				t.Fatalf("ToF64 in place (asm %v, avx512 %v) row %d of %d = %#x, want %#x", asm, avx, i, n, got, want[i])
			}
		}
	}
}

// TestScatterFresh checks AddScatterF64Fresh/F32Fresh against clearing the fresh rows first and
// AddScatterF64/F32: rows below fresh hold sums, rows from fresh on hold garbage; the indices
// come in order of first appearance (no gaps: the plan's case), or in any order (gaps cleared).
// The rows below the returned bound must match, the bound must be one past the highest row
// touched, and the rows from it on must be left as they were.
func TestScatterFresh(t *testing.T) {
	defer SetAsm(true, true)
	rng := rand.New(rand.NewPCG(51, 52))
	for iter := range 4000 {
		for _, f64 := range []bool{true, false} {
			ab := AccBytes(f64)
			rows := 1 + rng.IntN(60)
			fresh := rng.IntN(rows + 1)
			n := rng.IntN(100)
			vals := genSpread(rng, n, 60, f64)
			for i := range vals {
				if rng.IntN(12) == 0 {
					vals[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0x1p-1074}[rng.IntN(6)]
				}
			}
			idx := make([]int32, n)
			next := fresh
			for j := range idx {
				switch {
				case iter%2 == 0 && next < rows && (next == 0 || rng.IntN(2) == 0): // first appearance
					idx[j] = int32(next)
					next++
				case iter%2 == 0 && next > 0:
					idx[j] = int32(rng.IntN(next))
				default:
					idx[j] = int32(rng.IntN(rows))
				}
			}
			got := make([]byte, rows*ab)
			for r := range fresh {
				x := genSpread(rng, 1, 60, f64)[0]
				if f64 {
					FromF64(got[r*ab:], []float64{x})
				} else {
					FromF32(got[r*ab:], []float32{float32(x)})
				}
			}
			for i := fresh * ab; i < len(got); i++ {
				got[i] = byte(rng.Uint32())
			}
			want := bytes.Clone(got)
			clear(want[fresh*ab:])
			wantFresh := fresh
			for _, r := range idx {
				wantFresh = max(wantFresh, int(r)+1)
			}
			garbage := bytes.Clone(got[wantFresh*ab:])
			var gotFresh int
			if f64 {
				SetAsm(false, false) // the reference: the Go loop
				AddScatterF64(want, vals, idx)
				SetAsm(iter%3 != 0, true)
				gotFresh = AddScatterF64Fresh(got, vals, idx, fresh)
			} else {
				v32 := make([]float32, n)
				for i, x := range vals {
					v32[i] = float32(x)
				}
				AddScatterF32(want, v32, idx)
				gotFresh = AddScatterF32Fresh(got, v32, idx, fresh)
			}
			if gotFresh != wantFresh {
				t.Fatalf("f64 %v iteration %d: fresh %d, want %d", f64, iter, gotFresh, wantFresh)
			}
			if !bytes.Equal(got[:wantFresh*ab], want[:wantFresh*ab]) {
				t.Fatalf("f64 %v iteration %d: rows below %d differ:\n%x\n%x", f64, iter, wantFresh, got[:wantFresh*ab], want[:wantFresh*ab])
			}
			if !bytes.Equal(got[wantFresh*ab:], garbage) {
				t.Fatalf("f64 %v iteration %d: rows from %d on were written", f64, iter, wantFresh)
			}
		}
	}
}
