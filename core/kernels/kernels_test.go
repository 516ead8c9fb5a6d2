package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The reference works on one element at a time, decoded with encoding/binary into a uint64 bit
// pattern, and computes each op independently of the kernels: floats in float64 (exact for
// f32 products and correctly rounded for f32 sums, since 53 >= 2·24+2), NaN and signed zeros by
// explicit cases, integers in 64-bit two's complement truncated to the width.

var allDtypes = []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64, kx.U64}
var allOps = []kx.Op{kx.Sum, kx.Prod, kx.Min, kx.Max, kx.Band, kx.Bor, kx.Bxor}

func validPairs() [][2]int {
	var out [][2]int
	for _, d := range allDtypes {
		for _, o := range allOps {
			if CheckDtypeOp(d, o) == nil {
				out = append(out, [2]int{int(d), int(o)})
			}
		}
	}
	return out
}

func toF(d kx.Dtype, v uint64) float64 {
	if d == kx.F32 {
		return float64(math.Float32frombits(uint32(v)))
	}
	return math.Float64frombits(v)
}

func fromF(d kx.Dtype, f float64) uint64 {
	if d == kx.F32 {
		return uint64(math.Float32bits(float32(f)))
	}
	return math.Float64bits(f)
}

func isNaNBits(d kx.Dtype, v uint64) bool { return d.IsFloat() && math.IsNaN(toF(d, v)) }

// sext sign-extends a 32-bit pattern for i32.
func sext(d kx.Dtype, v uint64) int64 {
	if d == kx.I32 {
		return int64(int32(uint32(v)))
	}
	return int64(v)
}

func trunc(d kx.Dtype, v uint64) uint64 {
	if d.Size() == 4 {
		return uint64(uint32(v))
	}
	return v
}

func refOp(d kx.Dtype, o kx.Op, a, b uint64) uint64 {
	if d.IsFloat() {
		fa, fb := toF(d, a), toF(d, b)
		if math.IsNaN(fa) {
			return a // dst NaN is kept (for Sum/Prod of two NaNs see bothNaN)
		}
		if math.IsNaN(fb) {
			return b
		}
		switch o {
		case kx.Sum:
			return fromF(d, fa+fb)
		case kx.Prod:
			return fromF(d, fa*fb)
		case kx.Min, kx.Max:
			if fa == fb { // equal, possibly ±0: Min prefers the negative sign, Max the positive
				if math.Signbit(fa) == (o == kx.Min) {
					return a
				}
				return b
			}
			if (fa < fb) == (o == kx.Min) {
				return a
			}
			return b
		}
		panic("ref: float op")
	}
	switch o {
	case kx.Sum:
		return trunc(d, a+b)
	case kx.Prod:
		return trunc(d, a*b)
	case kx.Band:
		return a & b
	case kx.Bor:
		return a | b
	case kx.Bxor:
		return a ^ b
	case kx.Min, kx.Max:
		var less bool
		if d == kx.U64 {
			less = a < b
		} else {
			less = sext(d, a) < sext(d, b)
		}
		if less == (o == kx.Min) {
			return a
		}
		return b
	}
	panic("ref: int op")
}

// sameResult compares bit patterns. Where the reference marked the element "any NaN" (a
// Sum/Prod of two NaNs, whose payload is the compiler's pick) only NaN-ness is compared.
func sameResult(d kx.Dtype, got, want uint64, anyNaN bool) bool {
	return got == want || anyNaN && isNaNBits(d, got) && isNaNBits(d, want)
}

// bothNaN reports whether op(a, b) is a Sum/Prod of two NaNs.
func bothNaN(d kx.Dtype, o kx.Op, a, b uint64) bool {
	return (o == kx.Sum || o == kx.Prod) && isNaNBits(d, a) && isNaNBits(d, b)
}

// randElem draws values that exercise the ops: small integers (so Prod does not always
// overflow to 0/Inf), extremes, and for floats NaNs with distinct payloads, ±Inf, ±0, subnormals.
func randElem(d kx.Dtype, r *rand.Rand) uint64 {
	if d.IsFloat() {
		var specials []float64
		if d == kx.F32 {
			specials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1e-45, -1e-40,
				math.MaxFloat32, -math.MaxFloat32, 1, -1}
		} else {
			specials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 5e-324, -1e-310,
				math.MaxFloat64, -math.MaxFloat64, 1, -1}
		}
		switch k := r.IntN(20); {
		case k == 0: // quiet NaN with a random payload and sign
			if d == kx.F32 {
				return uint64(0x7fc00000 | r.Uint32()&0x803fffff)
			}
			return 0x7ff8000000000000 | r.Uint64()&0x8007ffffffffffff
		case k < 4:
			return fromF(d, specials[r.IntN(len(specials))])
		case k < 12:
			return fromF(d, float64(r.IntN(9)-4)*0.5)
		default:
			return fromF(d, r.NormFloat64()*math.Pow(2, float64(r.IntN(40)-20)))
		}
	}
	switch k := r.IntN(10); {
	case k == 0:
		ext := []uint64{0, 1, math.MaxUint64, 1 << 63, 1<<63 - 1, 1 << 31, 1<<31 - 1, 0xffffffff}
		return trunc(d, ext[r.IntN(len(ext))])
	case k < 6:
		return trunc(d, uint64(int64(r.IntN(7)-3)))
	default:
		return trunc(d, r.Uint64())
	}
}

func randBuf(d kx.Dtype, n int, r *rand.Rand) []byte {
	b := make([]byte, n*d.Size())
	for i := range n {
		kerneltest.SetElem(d, b, i, randElem(d, r))
	}
	return b
}

func compareBufs(t *testing.T, what string, d kx.Dtype, o kx.Op, got, want []byte, anyNaN []bool) {
	t.Helper()
	for i := range len(want) / d.Size() {
		g, w := kerneltest.Elem(d, got, i), kerneltest.Elem(d, want, i)
		if !sameResult(d, g, w, anyNaN != nil && anyNaN[i]) {
			t.Fatalf("%s %s/%s element %d: got %#x want %#x", what, d, o, i, g, w)
		}
	}
}

// refScatter applies the reference op row by row in increasing p; it returns the expected
// buffer and the any-NaN mask (once set, an element stays NaN: every op keeps a NaN dst).
func refScatter(d kx.Dtype, o kx.Op, dst, src []byte, idx []int32, w int) ([]byte, []bool) {
	want := slices.Clone(dst)
	mask := make([]bool, len(dst)/d.Size())
	for p, j := range idx {
		for c := range w {
			k := int(j)*w + c
			a, b := kerneltest.Elem(d, want, k), kerneltest.Elem(d, src, p*w+c)
			mask[k] = mask[k] || bothNaN(d, o, a, b)
			kerneltest.SetElem(d, want, k, refOp(d, o, a, b))
		}
	}
	return want, mask
}

func TestCombineReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		for _, n := range []int{0, 1, 3, 15, 16, 17, 100, 1031} {
			dst, src := randBuf(d, n, r), randBuf(d, n, r)
			idx := iota32(n)
			want, mask := refScatter(d, o, dst, src, idx, 1)
			srcCopy := slices.Clone(src)
			Combine(d, o, dst, src)
			compareBufs(t, fmt.Sprintf("Combine n=%d", n), d, o, dst, want, mask)
			if !bytes.Equal(src, srcCopy) {
				t.Fatal("Combine modified src")
			}
		}
	}
}

func TestScatterCombineReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		for _, w := range []int{1, 3, 40} {
			const rows, n = 37, 300 // n > rows: every row is hit several times, in p order
			idx := make([]int32, n)
			for i := range idx {
				idx[i] = int32(r.IntN(rows))
			}
			dst, src := randBuf(d, rows*w, r), randBuf(d, n*w, r)
			want, mask := refScatter(d, o, dst, src, idx, w)
			ScatterCombine(d, o, dst, src, idx, w)
			compareBufs(t, fmt.Sprintf("ScatterCombine w=%d", w), d, o, dst, want, mask)

			// Sorted distinct indices (the butterfly's case) and the empty call.
			sorted := []int32{0, 2, 3, 7, 20, 36}
			dst, src = randBuf(d, rows*w, r), randBuf(d, len(sorted)*w, r)
			want, mask = refScatter(d, o, dst, src, sorted, w)
			ScatterCombine(d, o, dst, src, sorted, w)
			compareBufs(t, fmt.Sprintf("ScatterCombine sorted w=%d", w), d, o, dst, want, mask)
			ScatterCombine(d, o, dst, nil, nil, w)
			compareBufs(t, "ScatterCombine empty", d, o, dst, want, mask)
		}
	}
}

// identityBits is the expected identity, written out independently of the kernels.
func identityBits(d kx.Dtype, o kx.Op) uint64 {
	switch o {
	case kx.Sum, kx.Bor, kx.Bxor:
		return 0
	case kx.Prod:
		if d.IsFloat() {
			return fromF(d, 1)
		}
		return 1
	case kx.Band:
		return trunc(d, math.MaxUint64)
	}
	min := o == kx.Min // identity of Min is the largest value
	switch d {
	case kx.F32, kx.F64:
		if min {
			return fromF(d, math.Inf(1))
		}
		return fromF(d, math.Inf(-1))
	case kx.I32:
		if min {
			return 0x7fffffff
		}
		return 0x80000000
	case kx.I64:
		if min {
			return 0x7fffffffffffffff
		}
		return 0x8000000000000000
	case kx.U64:
		if min {
			return math.MaxUint64
		}
		return 0
	}
	panic("identityBits")
}

func TestIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		const n = 33
		buf := randBuf(d, n, r)
		Identity(d, o, buf)
		want := identityBits(d, o)
		for i := range n {
			if g := kerneltest.Elem(d, buf, i); g != want {
				t.Fatalf("Identity %s/%s element %d = %#x, want %#x", d, o, i, g, want)
			}
		}
		// op(identity, x) == x for every x, except Sum: +0 + -0 = +0.
		src := randBuf(d, n, r)
		Combine(d, o, buf, src)
		for i := range n {
			g, x := kerneltest.Elem(d, buf, i), kerneltest.Elem(d, src, i)
			if g != x && !(d.IsFloat() && o == kx.Sum && x == fromF(d, math.Copysign(0, -1)) && g == 0) {
				t.Fatalf("%s/%s: op(identity, %#x) = %#x", d, o, x, g)
			}
		}
	}
	Identity(kx.F64, kx.Sum, nil) // empty is fine
}

func TestGatherReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		for _, w := range []int{1, 3, 20} {
			const rows, n = 29, 101
			idx := make([]int32, n)
			for i := range idx {
				idx[i] = int32(r.IntN(rows+rows/3)) - int32(rows/3) // about a quarter are negative
			}
			idx[0], idx[n-1] = -1, math.MinInt32
			src := randBuf(d, rows*w, r)
			dst := randBuf(d, n*w, r)
			Gather(d, o, dst, src, idx, w)
			checkGather(t, fmt.Sprintf("Gather %s/%s w=%d", d, o, w), d, o, dst, src, idx, w)
		}
	}
}

// checkGather compares dst with the rows of src that idx names, or the op's identity.
func checkGather(t *testing.T, what string, d kx.Dtype, o kx.Op, dst, src []byte, idx []int32, w int) {
	t.Helper()
	id := identityBits(d, o)
	for p, j := range idx {
		for c := range w {
			want := id
			if j >= 0 {
				want = kerneltest.Elem(d, src, int(j)*w+c)
			}
			if g := kerneltest.Elem(d, dst, p*w+c); g != want {
				t.Fatalf("%s row %d (idx %d) col %d: %#x want %#x", what, p, j, c, g, want)
			}
		}
	}
}

func TestMinMaxSpecialValues(t *testing.T) {
	negZero := math.Copysign(0, -1)
	nan1 := math.Float64frombits(0x7ff8000000000001)
	nan2 := math.Float64frombits(0xfff8000000000002)
	cases := []struct {
		o          kx.Op
		a, b, want float64
	}{
		{kx.Min, 0, negZero, negZero}, {kx.Min, negZero, 0, negZero},
		{kx.Max, 0, negZero, 0}, {kx.Max, negZero, 0, 0},
		{kx.Min, nan1, 1, nan1}, {kx.Min, 1, nan1, nan1}, {kx.Max, nan1, nan2, nan1}, {kx.Max, nan2, nan1, nan2},
		{kx.Min, math.Inf(-1), 3, math.Inf(-1)}, {kx.Max, math.Inf(-1), 3, 3},
	}
	for _, c := range cases {
		dst, src := make([]byte, 8), make([]byte, 8)
		binary.LittleEndian.PutUint64(dst, math.Float64bits(c.a))
		binary.LittleEndian.PutUint64(src, math.Float64bits(c.b))
		Combine(kx.F64, c.o, dst, src)
		if g := binary.LittleEndian.Uint64(dst); g != math.Float64bits(c.want) {
			t.Errorf("%s(%v, %v) = %#x want %#x", c.o, c.a, c.b, g, math.Float64bits(c.want))
		}
	}
}

// TestMisaligned runs every kernel on buffers at odd addresses and compares with the aligned
// result; bytes around the misaligned dst must be untouched.
func TestMisaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		sz := d.Size()
		const rows, n, w = 13, 40, 3
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(r.IntN(rows+2)) - 2
		}
		scIdx := make([]int32, n)
		for i := range scIdx {
			scIdx[i] = int32(r.IntN(rows))
		}
		for _, off := range []int{1, 2, 3, 4, 5} {
			misplace := func(b []byte) []byte { // same bytes at base+off inside a guard area
				big := make([]byte, len(b)+off+16)
				for i := range big {
					big[i] = 0xA5
				}
				copy(big[off:], b)
				return big[off : off+len(b) : off+len(b)+16]
			}
			guardOK := func(m []byte) bool { // the 16 bytes after a misplaced buffer
				for _, c := range m[len(m) : len(m)+16 : len(m)+16] {
					if c != 0xA5 {
						return false
					}
				}
				return true
			}
			// Combine
			dst, src := randBuf(d, rows*w, r), randBuf(d, rows*w, r)
			md, ms := misplace(dst), misplace(src)
			Combine(d, o, dst, src)
			Combine(d, o, md, ms)
			if !bytes.Equal(dst, md) || !guardOK(md) {
				t.Fatalf("Combine %s/%s offset %d differs", d, o, off)
			}
			// ScatterCombine
			dst, src = randBuf(d, rows*w, r), randBuf(d, n*w, r)
			md, ms = misplace(dst), misplace(src)
			ScatterCombine(d, o, dst, src, scIdx, w)
			ScatterCombine(d, o, md, ms, scIdx, w)
			if !bytes.Equal(dst, md) || !guardOK(md) {
				t.Fatalf("ScatterCombine %s/%s offset %d differs", d, o, off)
			}
			// Gather
			dst, src = randBuf(d, n*w, r), randBuf(d, rows*w, r)
			md, ms = misplace(dst), misplace(src)
			Gather(d, o, dst, src, idx, w)
			Gather(d, o, md, ms, idx, w)
			if !bytes.Equal(dst, md) || !guardOK(md) {
				t.Fatalf("Gather %s/%s offset %d differs", d, o, off)
			}
			// Identity, with guard bytes checked on both sides.
			big := make([]byte, off+rows*sz+8)
			for i := range big {
				big[i] = 0xA5
			}
			Identity(d, o, big[off:off+rows*sz])
			for i := range big {
				if (i < off || i >= off+rows*sz) && big[i] != 0xA5 {
					t.Fatalf("Identity %s/%s offset %d wrote byte %d outside dst", d, o, off, i)
				}
			}
			for i := range rows {
				if kerneltest.Elem(d, big[off:], i) != identityBits(d, o) {
					t.Fatalf("Identity %s/%s offset %d element %d", d, o, off, i)
				}
			}
		}
	}
}

func TestKernelsDoNotAllocate(t *testing.T) {
	const n, w = 4096, 3
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i * 7 % n)
	}
	for _, p := range validPairs() {
		d, o := kx.Dtype(p[0]), kx.Op(p[1])
		dst := make([]byte, n*w*d.Size())
		src := make([]byte, n*w*d.Size())
		allocs := testing.AllocsPerRun(5, func() {
			Identity(d, o, dst)
			Combine(d, o, dst, src)
			ScatterCombine(d, o, dst, src, idx, w)
			ScatterCombine(d, o, dst[:n*d.Size()], src[:n*d.Size()], idx, 1)
			Gather(d, o, dst, src, idx, w)
		})
		if allocs != 0 {
			t.Errorf("%s/%s: %v allocations per call set", d, o, allocs)
		}
	}
}

func TestKernelPanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	b8, b16 := make([]byte, 8), make([]byte, 16)
	mustPanic("Band on f32", func() { Combine(kx.F32, kx.Band, b8, b8) })
	mustPanic("Bxor scatter on f64", func() { ScatterCombine(kx.F64, kx.Bxor, b8, b8, []int32{0}, 1) })
	mustPanic("Bor identity on f64", func() { Identity(kx.F64, kx.Bor, b8) })
	mustPanic("unregistered user op", func() { Combine(kx.I32, kx.Op(math.MaxUint16), b8, b8) })
	mustPanic("bad dtype", func() { Combine(kx.Dtype(9), kx.Sum, b8, b8) })
	mustPanic("length mismatch", func() { Combine(kx.F32, kx.Sum, b8, b16) })
	mustPanic("partial element", func() { Combine(kx.F64, kx.Sum, b8[:5], b8[:5]) })
	mustPanic("src length", func() { ScatterCombine(kx.F32, kx.Sum, b16, b16, []int32{0}, 1) })
	mustPanic("index out of range", func() { ScatterCombine(kx.F32, kx.Sum, b8, b8[:4], []int32{2}, 1) })
	mustPanic("negative scatter index", func() { ScatterCombine(kx.F32, kx.Sum, b8, b8[:4], []int32{-1}, 1) })
	mustPanic("gather out of range", func() { Gather(kx.I64, kx.Sum, b8, b8, []int32{1}, 1) })
	mustPanic("zero width", func() { Gather(kx.I64, kx.Sum, b8, b8, []int32{0}, 0) })
}

// ---- benchmarks: names give dtype, op, width when > 1, and element count ----

func benchCombine(b *testing.B, d kx.Dtype, o kx.Op, n int) {
	dst, src := make([]byte, n*d.Size()), make([]byte, n*d.Size())
	Identity(d, kx.Prod, src) // ones: no NaN/Inf/denormal effects
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for range b.N {
		Combine(d, o, dst, src)
	}
}

func BenchmarkCombineF32Sum64K(b *testing.B)  { benchCombine(b, kx.F32, kx.Sum, 1<<16) }
func BenchmarkCombineF32Sum16M(b *testing.B)  { benchCombine(b, kx.F32, kx.Sum, 1<<24) }
func BenchmarkCombineF64Sum64K(b *testing.B)  { benchCombine(b, kx.F64, kx.Sum, 1<<16) }
func BenchmarkCombineF64Sum16M(b *testing.B)  { benchCombine(b, kx.F64, kx.Sum, 1<<24) }
func BenchmarkCombineI64Sum64K(b *testing.B)  { benchCombine(b, kx.I64, kx.Sum, 1<<16) }
func BenchmarkCombineF32Max64K(b *testing.B)  { benchCombine(b, kx.F32, kx.Max, 1<<16) }
func BenchmarkCombineU64Bxor64K(b *testing.B) { benchCombine(b, kx.U64, kx.Bxor, 1<<16) }

// benchScatter scatters n rows into a vector of 2n rows at sorted positions (every other row,
// as after a tree merge), or at random positions.
func benchScatter(b *testing.B, d kx.Dtype, o kx.Op, n, w int, random bool) {
	idx := make([]int32, n)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range idx {
		if random {
			idx[i] = int32(r.IntN(2 * n))
		} else {
			idx[i] = int32(2 * i)
		}
	}
	dst, src := make([]byte, 2*n*w*d.Size()), make([]byte, n*w*d.Size())
	Identity(d, kx.Prod, src)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for range b.N {
		ScatterCombine(d, o, dst, src, idx, w)
	}
}

func BenchmarkScatterCombineF32Sum1M(b *testing.B) { benchScatter(b, kx.F32, kx.Sum, 1<<20, 1, false) }
func BenchmarkScatterCombineF32Sum1MRandom(b *testing.B) {
	benchScatter(b, kx.F32, kx.Sum, 1<<20, 1, true)
}
func BenchmarkScatterCombineF64Sum1M(b *testing.B) { benchScatter(b, kx.F64, kx.Sum, 1<<20, 1, false) }
func BenchmarkScatterCombineF32SumW3_1M(b *testing.B) {
	benchScatter(b, kx.F32, kx.Sum, 1<<20, 3, false)
}
func BenchmarkScatterCombineF32SumW64_64K(b *testing.B) {
	benchScatter(b, kx.F32, kx.Sum, 1<<16, 64, false)
}
func BenchmarkScatterCombineF32Min1M(b *testing.B)  { benchScatter(b, kx.F32, kx.Min, 1<<20, 1, false) }
func BenchmarkScatterCombineI64Bor1M(b *testing.B)  { benchScatter(b, kx.I64, kx.Bor, 1<<20, 1, false) }
func BenchmarkScatterCombineF32Sum16M(b *testing.B) { benchScatter(b, kx.F32, kx.Sum, 1<<24, 1, false) }

func benchGather(b *testing.B, d kx.Dtype, n, w int) {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(2 * i)
	}
	idx[n/2] = -1
	dst, src := make([]byte, n*w*d.Size()), make([]byte, 2*n*w*d.Size())
	b.SetBytes(int64(len(dst)))
	b.ResetTimer()
	for range b.N {
		Gather(d, kx.Sum, dst, src, idx, w)
	}
}

func BenchmarkGatherF32_1M(b *testing.B)   { benchGather(b, kx.F32, 1<<20, 1) }
func BenchmarkGatherF32W3_1M(b *testing.B) { benchGather(b, kx.F32, 1<<20, 3) }
