package kernels

import (
	"fmt"
	"kylix/core/kernels/kerneltest"
	"kylix/core/kx"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every SIMD level this build and CPU offer ("go" alone under -tags noasm) is checked against
// the element-wise reference of kernels_test.go on every length 0..257 and a few large ones,
// with sentinel bytes after dst that must survive.

// kernLengths is 0..257 plus a few lengths past the block sizes and the caches' comfort.
var kernLengths = func() []int {
	var l []int
	for n := 0; n <= 257; n++ {
		l = append(l, n)
	}
	return append(l, 1000, 4096+13, 1<<16+7)
}()

// forEachLevel runs f with each available SIMD level forced, restoring the start-up level.
func forEachLevel(t *testing.T, f func(t *testing.T)) {
	saved := Level()
	defer kernSetLevel(saved)
	for _, l := range kernLevels() {
		kernSetLevel(l)
		t.Run(l, f)
	}
}

func TestKernelCombineEquivalence(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, p := range validPairs() {
			d, o := kx.Dtype(p[0]), kx.Op(p[1])
			for _, n := range kernLengths {
				for off := range 3 { // start 0..2 elements into the buffers: unaligned vectors
					sz := d.Size()
					base, src := randBuf(d, off+n, r), randBuf(d, off+n, r)
					all, _ := kerneltest.Guarded(base)
					dst := all[off*sz : (off+n)*sz : (off+n)*sz]
					idx := iota32(n)
					want, mask := refScatter(d, o, slices.Clone(dst), src[off*sz:], idx, 1)
					Combine(d, o, dst, src[off*sz:])
					what := fmt.Sprintf("Combine n=%d off=%d", n, off)
					compareBufs(t, what, d, o, dst, want, mask)
					kerneltest.CheckGuard(t, what, all, (off+n)*sz)
				}
			}
		}
	})
}

// kernIdx builds n indices into m rows: "mono" strictly increasing with gaps, "perm" a random
// permutation of distinct rows, "dup" random with repeats; with neg, about one in eight is a
// negative (identity) entry, -1 or MinInt32.
func kernIdx(kind string, n, m int, neg bool, r *rand.Rand) []int32 {
	idx := make([]int32, n)
	switch kind {
	case "mono", "perm":
		rows := r.Perm(m)[:n]
		if kind == "mono" {
			slices.Sort(rows)
		}
		for i, v := range rows {
			idx[i] = int32(v)
		}
	case "dup":
		for i := range idx {
			idx[i] = int32(r.IntN(m))
		}
	}
	if neg {
		for i := range idx {
			if r.IntN(8) == 0 {
				idx[i] = []int32{-1, math.MinInt32}[r.IntN(2)]
			}
		}
	}
	return idx
}

func TestKernelGatherEquivalence(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(33, 34))
		for _, p := range validPairs() {
			d, o := kx.Dtype(p[0]), kx.Op(p[1])
			sz := d.Size()
			for _, w := range []int{1, 2} {
				for _, n := range kernLengths {
					if w > 1 && n > 300 {
						continue
					}
					for _, kind := range []string{"mono", "perm", "dup"} {
						m := n + n/3 + 1
						idx := kernIdx(kind, n, m, true, r)
						src := randBuf(d, m*w, r)
						all, dst := kerneltest.Guarded(randBuf(d, n*w, r))
						Gather(d, o, dst, src, idx, w)
						what := fmt.Sprintf("Gather %s/%s w=%d n=%d %s", d, o, w, n, kind)
						checkGather(t, what, d, o, dst, src, idx, w)
						kerneltest.CheckGuard(t, what, all, n*w*sz)
					}
				}
			}
		}
	})
}

// TestKernelGatherOutOfRange puts one index >= len(src) at every position of a 70-index call:
// each level must panic (the Go loop's bounds check), never read or write past the buffers.
func TestKernelGatherOutOfRange(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		for _, d := range []kx.Dtype{kx.F32, kx.F64} {
			const n, m = 70, 40
			for bad := range n {
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = int32(i % m)
				}
				idx[bad] = int32(m + bad%3)
				if bad%2 == 1 {
					idx[bad] = math.MaxInt32
				}
				all, dst := kerneltest.Guarded(make([]byte, n*d.Size()))
				src := make([]byte, m*d.Size())
				func() {
					defer func() {
						if recover() == nil {
							t.Fatalf("Gather %s: index %d at %d did not panic", d, idx[bad], bad)
						}
					}()
					Gather(d, kx.Sum, dst, src, idx, 1)
				}()
				kerneltest.CheckGuard(t, "Gather out of range", all, n*d.Size())
			}
		}
	})
}

// TestKernelScatterEquivalence: ScatterCombine (whose Sum rows of 32+ elements use the dense
// kernel) on increasing, permuted and repeating indices.
func TestKernelScatterEquivalence(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(35, 36))
		for _, p := range validPairs() {
			d, o := kx.Dtype(p[0]), kx.Op(p[1])
			sz := d.Size()
			for _, w := range []int{1, 3, 40} {
				for _, n := range kernLengths {
					if w > 1 && n > 100 || n > 300 && o != kx.Sum {
						continue
					}
					for _, kind := range []string{"mono", "perm", "dup"} {
						m := n + n/2 + 1
						idx := kernIdx(kind, n, m, false, r)
						src := randBuf(d, n*w, r)
						all, dst := kerneltest.Guarded(randBuf(d, m*w, r))
						want, mask := refScatter(d, o, slices.Clone(dst), src, idx, w)
						ScatterCombine(d, o, dst, src, idx, w)
						what := fmt.Sprintf("ScatterCombine w=%d n=%d %s", w, n, kind)
						compareBufs(t, what, d, o, dst, want, mask)
						kerneltest.CheckGuard(t, what, all, m*w*sz)
					}
				}
			}
		}
	})
}

// TestKernelGatherBigTable covers 8-byte gathers from tables past kernGatherBigTable, which
// go to the Go loop, with increasing and random indices.
func TestKernelGatherBigTable(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(39, 40))
		const m = 17<<20/8 + 5 // rows of f64: just past 16 MiB
		src := randBuf(kx.F64, m, r)
		for _, kind := range []string{"mono", "perm"} {
			for _, n := range []int{16, 1000, 4099} {
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = int32(m - 3*n + 3*i)
					if kind == "perm" {
						idx[i] = int32(r.IntN(m))
					}
				}
				idx[n/3] = -1
				all, dst := kerneltest.Guarded(randBuf(kx.F64, n, r))
				Gather(kx.F64, kx.Max, dst, src, idx, 1)
				checkGather(t, fmt.Sprintf("big table %s n=%d", kind, n), kx.F64, kx.Max, dst, src, idx, 1)
				kerneltest.CheckGuard(t, "big table", all, n*8)
			}
		}
	})
}

// ---- benchmarks per level: Benchmark<Kernel><Dtype>/<level>/<idx shape>/<elements> ----

var kernBenchSizes = []struct {
	name string
	n    int
}{{"4K", 1 << 12}, {"256K", 1 << 18}, {"4M", 1 << 22}}

func benchLevels(b *testing.B, f func(b *testing.B)) {
	saved := Level()
	defer kernSetLevel(saved)
	for _, l := range kernLevels() {
		b.Run(l, func(b *testing.B) {
			kernSetLevel(l)
			f(b)
		})
	}
}

// benchKernIdx gives n indices into 2n rows: "mono" every other row, "perm" a random
// permutation of the same rows (the caller-order maps).
func benchKernIdx(shape string, n int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(2 * i)
	}
	if shape == "perm" {
		r := rand.New(rand.NewPCG(5, 6))
		r.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

func benchKernSum(b *testing.B, d kx.Dtype) {
	benchLevels(b, func(b *testing.B) {
		for _, s := range kernBenchSizes {
			b.Run(s.name, func(b *testing.B) {
				dst, src := make([]byte, s.n*d.Size()), make([]byte, s.n*d.Size())
				Identity(d, kx.Prod, src)
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					Combine(d, kx.Sum, dst, src)
				}
			})
		}
	})
}

func BenchmarkKernelSumF32(b *testing.B) { benchKernSum(b, kx.F32) }
func BenchmarkKernelSumF64(b *testing.B) { benchKernSum(b, kx.F64) }
func BenchmarkKernelSumI32(b *testing.B) { benchKernSum(b, kx.I32) }
func BenchmarkKernelSumI64(b *testing.B) { benchKernSum(b, kx.I64) }

func benchKernGather(b *testing.B, d kx.Dtype) {
	benchLevels(b, func(b *testing.B) {
		for _, shape := range []string{"mono", "perm"} {
			for _, s := range kernBenchSizes {
				b.Run(shape+"/"+s.name, func(b *testing.B) {
					idx := benchKernIdx(shape, s.n)
					idx[s.n/2] = -1
					dst, src := make([]byte, s.n*d.Size()), make([]byte, 2*s.n*d.Size())
					b.SetBytes(int64(len(dst)))
					for b.Loop() {
						Gather(d, kx.Sum, dst, src, idx, 1)
					}
				})
			}
		}
	})
}

func BenchmarkKernelGatherF32(b *testing.B) { benchKernGather(b, kx.F32) }
func BenchmarkKernelGatherF64(b *testing.B) { benchKernGather(b, kx.F64) }

// BenchmarkKernelVsGo times each SIMD level against the Go loop interleaved in short rounds
// (go, avx2, avx512, go, …, 21 rounds of about 2 ms each), so that load from other processes on
// a noisy machine hits every level alike; it reports the median time per call of each level and
// the speedup of each over "go". Run it once per count: -bench KernelVsGo -benchtime 1x -count 5.
func BenchmarkKernelVsGo(b *testing.B) {
	type kcase struct {
		name string
		run  func(n int) func()
	}
	sum := func(d kx.Dtype) func(n int) func() {
		return func(n int) func() {
			dst, src := make([]byte, n*d.Size()), make([]byte, n*d.Size())
			Identity(d, kx.Prod, src)
			return func() { Combine(d, kx.Sum, dst, src) }
		}
	}
	gather := func(d kx.Dtype, shape string) func(n int) func() {
		return func(n int) func() {
			idx := benchKernIdx(shape, n)
			idx[n/2] = -1
			dst, src := make([]byte, n*d.Size()), make([]byte, 2*n*d.Size())
			return func() { Gather(d, kx.Sum, dst, src, idx, 1) }
		}
	}
	minmax := func(d kx.Dtype, o kx.Op) func(n int) func() {
		return func(n int) func() {
			r := rand.New(rand.NewPCG(7, 8))
			dst, src := make([]byte, n*d.Size()), make([]byte, n*d.Size())
			for i := range n { // random order: the Go loop's branches are unpredictable
				a, b := fromF(d, r.NormFloat64()), fromF(d, r.NormFloat64())
				if !d.IsFloat() {
					a, b = trunc(d, r.Uint64()), trunc(d, r.Uint64())
				}
				kerneltest.SetElem(d, dst, i, a)
				kerneltest.SetElem(d, src, i, b)
			}
			return func() { Combine(d, o, dst, src) }
		}
	}
	var cases []kcase
	for _, d := range []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64} {
		cases = append(cases, kcase{"Sum" + d.String(), sum(d)})
	}
	for _, d := range []kx.Dtype{kx.F32, kx.F64, kx.I32, kx.I64, kx.U64} {
		cases = append(cases, kcase{"Min" + d.String(), minmax(d, kx.Min)},
			kcase{"Max" + d.String(), minmax(d, kx.Max)})
	}
	for _, d := range []kx.Dtype{kx.I32, kx.I64} {
		cases = append(cases, kcase{"Bxor" + d.String(), minmax(d, kx.Bxor)})
	}
	for _, d := range []kx.Dtype{kx.F32, kx.F64} {
		for _, shape := range []string{"mono", "perm"} {
			cases = append(cases, kcase{"Gather" + d.String() + "/" + shape, gather(d, shape)})
		}
	}
	saved := Level()
	defer kernSetLevel(saved)
	levels := kernLevels()
	for _, c := range cases {
		for _, s := range kernBenchSizes {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				f := c.run(s.n)
				kernSetLevel(kernLevelGo)
				f()
				t0 := time.Now()
				f()
				reps := max(1, int(2*time.Millisecond/max(time.Since(t0), 1)))
				const rounds = 21
				times := make([][]float64, len(levels))
				for r := range rounds {
					for k := range levels {
						l := (k + r) % len(levels) // rotate who goes first
						kernSetLevel(levels[l])
						t0 := time.Now()
						for range reps {
							f()
						}
						times[l] = append(times[l], float64(time.Since(t0).Nanoseconds())/float64(reps))
					}
				}
				med := make([]float64, len(levels))
				for l := range levels {
					slices.Sort(times[l])
					med[l] = times[l][rounds/2]
				}
				b.ReportMetric(med[len(levels)-1], "ns/call")
				for l := 1; l < len(levels); l++ {
					b.ReportMetric(med[0]/med[l], "x-"+levels[l])
				}
			})
		}
	}
}
