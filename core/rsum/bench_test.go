package rsum

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// Benchmarks on 1M values, each next to the plain float loop it replaces; ns/value is the
// figure to compare (SetBytes counts accumulator bytes for the rsum kernels, float bytes for
// the plain loops). "Normal" values keep most windows in one bin; "Spread60" (exponents over
// ±60) makes the windows differ, which exercises the shifting paths of Add.
// On a shared machine take the minimum over several runs (-count) and compare within a run.

const benchN = 1 << 20

func benchVals(spread bool) []float64 {
	rng := rand.New(rand.NewPCG(1, 1))
	if spread {
		return genSpread(rng, benchN, 60, true)
	}
	v := make([]float64, benchN)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

func benchVals32(spread bool) []float32 {
	v64 := benchVals(spread)
	v := make([]float32, len(v64))
	for i, x := range v64 {
		v[i] = float32(x)
	}
	return v
}

// loop wraps b.Loop to report ns/value at the end.
type loop struct{ b *testing.B }

func newLoop(b *testing.B) loop {
	runtime.GC() // the setup's garbage, so that a collection does not land in the timing
	return loop{b}
}

func (l loop) next() bool {
	if l.b.Loop() {
		return true
	}
	l.b.ReportMetric(float64(l.b.Elapsed().Nanoseconds())/float64(l.b.N)/benchN, "ns/value")
	return false
}

func BenchmarkFromF64x1M(b *testing.B) {
	v := benchVals(false)
	acc := make([]byte, benchN*Acc64Bytes)
	b.SetBytes(int64(len(acc)))
	for l := newLoop(b); l.next(); {
		FromF64(acc, v)
	}
}

func BenchmarkFromF32x1M(b *testing.B) {
	v := benchVals32(false)
	acc := make([]byte, benchN*Acc32Bytes)
	b.SetBytes(int64(len(acc)))
	for l := newLoop(b); l.next(); {
		FromF32(acc, v)
	}
}

func benchAdd(b *testing.B, isF64, spread bool) {
	var dst, src []byte
	if isF64 {
		dst, src = make([]byte, benchN*Acc64Bytes), make([]byte, benchN*Acc64Bytes)
		FromF64(dst, benchVals(spread))
		v := benchVals(spread)
		for i := range v {
			v[i] = -v[(i+7)%len(v)] / 3
		}
		FromF64(src, v)
	} else {
		dst, src = make([]byte, benchN*Acc32Bytes), make([]byte, benchN*Acc32Bytes)
		FromF32(dst, benchVals32(spread))
		v := benchVals32(spread)
		for i := range v {
			v[i] = -v[(i+7)%len(v)] / 3
		}
		FromF32(src, v)
	}
	b.SetBytes(int64(len(src)))
	for l := newLoop(b); l.next(); {
		Add(isF64, dst, src)
	}
}

func BenchmarkAddF64x1MNormal(b *testing.B)   { benchAdd(b, true, false) }
func BenchmarkAddF64x1MSpread60(b *testing.B) { benchAdd(b, true, true) }
func BenchmarkAddF32x1MNormal(b *testing.B)   { benchAdd(b, false, false) }
func BenchmarkAddF32x1MSpread60(b *testing.B) { benchAdd(b, false, true) }

// benchPerm returns a random permutation of 0..benchN-1: the butterfly's row maps scatter
// into rows in an order unrelated to the source.
func benchPerm() []int32 {
	rng := rand.New(rand.NewPCG(2, 2))
	idx := make([]int32, benchN)
	for i, p := range rng.Perm(benchN) {
		idx[i] = int32(p)
	}
	return idx
}

func BenchmarkAddScatterF64x1M(b *testing.B) {
	dst, src := make([]byte, benchN*Acc64Bytes), make([]byte, benchN*Acc64Bytes)
	FromF64(src, benchVals(false))
	idx := benchPerm()
	b.SetBytes(int64(len(src)))
	for l := newLoop(b); l.next(); {
		AddScatter(true, dst, src, idx)
	}
}

func BenchmarkToF64x1M(b *testing.B) {
	acc := make([]byte, benchN*Acc64Bytes)
	FromF64(acc, benchVals(false))
	dst := make([]float64, benchN)
	b.SetBytes(int64(len(acc)))
	forAsm(b, func(b *testing.B) {
		for l := newLoop(b); l.next(); {
			ToF64(dst, acc)
		}
	})
}

// forAsm runs f on each path that runs here: the assembly loops with AVX-512, without, and Go.
func forAsm(b *testing.B, f func(b *testing.B)) {
	defer SetAsm(true, true)
	for _, m := range []struct {
		name     string
		asm, avx bool
	}{{"avx512", true, true}, {"asm", true, false}, {"go", false, false}} {
		if asm, avx := SetAsm(m.asm, m.avx); asm == m.asm && avx == m.avx {
			b.Run(m.name, f)
		}
	}
}

func BenchmarkToF32x1M(b *testing.B) {
	acc := make([]byte, benchN*Acc32Bytes)
	FromF32(acc, benchVals32(false))
	dst := make([]float32, benchN)
	b.SetBytes(int64(len(acc)))
	for l := newLoop(b); l.next(); {
		ToF32(dst, acc)
	}
}

// The baselines: what KYLIX_SUM's combine does on the same data, in plain Go.

func BenchmarkPlainAddF64x1M(b *testing.B) {
	dst, src := benchVals(false), benchVals(true)
	b.SetBytes(8 * benchN)
	for l := newLoop(b); l.next(); {
		for i, x := range src {
			dst[i] += x
		}
	}
}

func BenchmarkPlainAddF32x1M(b *testing.B) {
	dst, src := benchVals32(false), benchVals32(true)
	b.SetBytes(4 * benchN)
	for l := newLoop(b); l.next(); {
		for i, x := range src {
			dst[i] += x
		}
	}
}

func BenchmarkPlainAddScatterF64x1M(b *testing.B) {
	dst, src := make([]float64, benchN), benchVals(false)
	idx := benchPerm()
	b.SetBytes(8 * benchN)
	for l := newLoop(b); l.next(); {
		for j, i := range idx {
			dst[i] += src[j]
		}
	}
}

func BenchmarkAddScatterValuesF64x1M(b *testing.B) {
	dst, src := make([]byte, benchN*Acc64Bytes), benchVals(false)
	idx := benchPerm()
	b.SetBytes(8 * benchN)
	forAsm(b, func(b *testing.B) {
		for l := newLoop(b); l.next(); {
			AddScatterF64(dst, src, idx)
		}
	})
}
