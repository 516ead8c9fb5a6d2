//go:build amd64 && !noasm

package core

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestAddAVX2Equivalence compares the assembly Sum with the Go loop for every length 0..257 and
// every start offset 0..7 elements (unaligned vector loads), on data with NaN payloads, ±Inf,
// ±0 and subnormals; the 16 elements past the end of dst (sentinels) must stay unchanged. Bits
// must agree except for a Sum of two NaNs, where the Go compiler may commute the operands
// (it does under -race) and either payload is allowed.
func TestAddAVX2Equivalence(t *testing.T) {
	if !kernHasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(21, 22))
	const guard = 16 // elements of sentinel
	f32 := func() float32 { return math.Float32frombits(uint32(randElem(F32, r))) }
	f64 := func() float64 { return math.Float64frombits(randElem(F64, r)) }
	for n := 0; n <= 257; n++ {
		for off := 0; off < 8; off++ {
			// f32
			{
				base := make([]float32, off+n+guard)
				src := make([]float32, off+n)
				for i := range base {
					base[i] = f32()
				}
				for i := range src {
					src[i] = f32()
				}
				ref := append([]float32(nil), base...)
				orig := append([]float32(nil), base...)
				kernAddGo(ref[off:off+n], src[off:])
				kernAddF32AVX2(base[off:off+n], src[off:off+n])
				for i := range base {
					if i >= off && i < off+n && orig[i] != orig[i] && src[i] != src[i] && base[i] != base[i] {
						continue // NaN + NaN
					}
					if math.Float32bits(base[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("f32 n=%d off=%d element %d: asm %#x go %#x", n, off, i-off,
							math.Float32bits(base[i]), math.Float32bits(ref[i]))
					}
				}
			}
			// f64
			{
				base := make([]float64, off+n+guard)
				src := make([]float64, off+n)
				for i := range base {
					base[i] = f64()
				}
				for i := range src {
					src[i] = f64()
				}
				ref := append([]float64(nil), base...)
				orig := append([]float64(nil), base...)
				kernAddGo(ref[off:off+n], src[off:])
				kernAddF64AVX2(base[off:off+n], src[off:off+n])
				for i := range base {
					if i >= off && i < off+n && orig[i] != orig[i] && src[i] != src[i] && base[i] != base[i] {
						continue // NaN + NaN
					}
					if math.Float64bits(base[i]) != math.Float64bits(ref[i]) {
						t.Fatalf("f64 n=%d off=%d element %d: asm %#x go %#x", n, off, i-off,
							math.Float64bits(base[i]), math.Float64bits(ref[i]))
					}
				}
			}
		}
	}
}

// TestCombineSumBytesMatchesGo checks the public entry point (dispatch threshold included)
// against the Go loop through byte buffers with a 4-byte-offset f32 start.
func TestCombineSumBytesMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for n := 0; n <= 257; n++ {
		dst, src := randBuf(F32, n+1, r)[4:], randBuf(F32, n+1, r)[4:]
		x := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(dst))), n)
		y := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(src))), n)
		ref := append([]float32(nil), x...)
		orig := append([]float32(nil), x...)
		kernAddGo(ref, y)
		Combine(F32, Sum, dst, src)
		for i := range n {
			if orig[i] != orig[i] && y[i] != y[i] && x[i] != x[i] {
				continue // NaN + NaN
			}
			if math.Float32bits(x[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("n=%d element %d", n, i)
			}
		}
	}
}
