package core_test

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"kylix/core"
)

// The data path's promises: a reduce on a configured plan allocates no value memory (only a
// small constant of bookkeeping, whatever the sizes), and results are bitwise the same for
// every number of worker threads and on every run.

// reduceAllocs is the heap allocations of one reduce on every rank of an m-rank in-memory job
// with k indices per rank (averaged by testing.AllocsPerRun, which counts the whole process).
func reduceAllocs(t *testing.T, m, k int, degrees string) (allocs, bytes float64) {
	j := newLiveJob(t, m, kx.Options{Degrees: degrees, Threads: 1})
	plans := j.plans(t, benchSets(m, k, 20*k))
	vals := make([][]byte, m)
	res := make([][]byte, m)
	for r := range vals {
		vals[r] = make([]byte, 4*k)
		res[r] = make([]byte, 4*k)
	}
	run := func() {
		j.each(t, func(r int, c *core.Comm) error {
			return plans[r].Reduce(vals[r], res[r], kx.F32, kx.Sum, 1)
		})
	}
	run() // sizes the plans' buffers
	allocs = testing.AllocsPerRun(10, run)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 10; i++ {
		run()
	}
	runtime.ReadMemStats(&after)
	return allocs, float64(after.TotalAlloc-before.TotalAlloc) / 10
}

func TestReduceAllocatesNoValueMemory(t *testing.T) {
	for _, tc := range []struct {
		m       int
		degrees string
	}{{4, "direct"}, {8, "2x2x2"}, {3, "direct"}} {
		small, _ := reduceAllocs(t, tc.m, 1000, tc.degrees)
		large, bytes := reduceAllocs(t, tc.m, 100_000, tc.degrees)
		t.Logf("m=%d %s: %.0f allocations per reduce (all ranks) at 1K keys, %.0f (%.0f bytes) at 100K",
			tc.m, tc.degrees, small, large, bytes)
		// What is left is per message and per collective (send goroutines, the collective's
		// mailbox box and stats record): a constant. 40 per rank bounds it. A value buffer
		// would be one allocation of a size that scales: the byte count catches that (the
		// values alone are 400 KB per rank).
		if limit := float64(40 * tc.m); small > limit || large > limit {
			t.Errorf("m=%d: %.0f / %.0f allocations per reduce, want at most %.0f", tc.m, small, large, limit)
		}
		if bytes > float64(tc.m*32<<10) && !raceOn { // the race detector's pools drop buffers
			t.Errorf("m=%d: %.0f bytes allocated per reduce at 100K keys, want under 32 KiB per rank", tc.m, bytes)
		}
		if large > small*1.5+float64(4*tc.m) {
			t.Errorf("m=%d: allocations grow with the size: %.0f at 1K keys, %.0f at 100K", tc.m, small, large)
		}
	}
}

// A loop of small reduces on a kept plan allocates nothing once warm: an allocation a call
// brings the garbage collector's pauses into the loop (a 248-key reduce on 2 ranks lost 14% of
// its mean to them, docs/measurements.md "Small steps: no allocation a reduce"). Counted over
// all ranks of an in-memory job (the process's count): one allocation a call would be
// thousands. RSum has specs of its own (the up phase's), so it is looped too.
func TestSmallReduceAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		m       int
		degrees string
		d       kx.Dtype
		o       kx.Op
	}{{2, "direct", kx.F32, kx.Sum}, {3, "direct", kx.F64, kx.RSum}, {4, "2x2", kx.F32, kx.Max}} {
		t.Run(fmt.Sprintf("m%d_%s_%s_%s", tc.m, tc.degrees, tc.d, tc.o), func(t *testing.T) {
			const k, calls = 248, 2000
			j := newLiveJob(t, tc.m, kx.Options{Degrees: tc.degrees, Threads: 1})
			plans := j.plans(t, benchSets(tc.m, k, 1_000_000))
			var before, after runtime.MemStats
			loop := func(n int) {
				j.each(t, func(r int, c *core.Comm) error {
					v, res := make([]byte, k*tc.d.Size()), make([]byte, k*tc.d.Size())
					for i := 0; i < n; i++ {
						if err := plans[r].Reduce(v, res, tc.d, tc.o, 1); err != nil {
							return err
						}
					}
					return nil
				})
			}
			loop(50) // sizes the plans' buffers and the transport's free lists
			runtime.ReadMemStats(&before)
			loop(calls)
			runtime.ReadMemStats(&after)
			// The loop's own goroutines and buffers are a few dozen allocations, once; with the
			// race detector, whose pools drop a quarter of what is put back, about a hundred
			// payload buffers more. One allocation a call would be thousands either way.
			n := after.Mallocs - before.Mallocs
			t.Logf("%d allocations over %d reduces on each of %d ranks", n, calls, tc.m)
			if limit := uint64(calls / 20); n > limit && !raceOn || n > 4*limit {
				t.Errorf("%d allocations over %d reduces on each of %d ranks, want next to none", n, calls, tc.m)
			}
		})
	}
}

// randomData is rank data with random floats (not exact in any order): a change in the order
// of operations changes the bits.
func randomData(seed int64, rank, n, k, width int) rankData {
	rng := rand.New(rand.NewSource(seed*7919 + int64(rank)))
	d := rankData{}
	for i := 0; i < k; i++ {
		d.out = append(d.out, int64(rng.Intn(n)))
		d.in = append(d.in, int64(rng.Intn(n)))
	}
	d.out = append(d.out, d.out[:k/10]...) // repeated out indices
	for i := 0; i < len(d.out)*width; i++ {
		d.vals = append(d.vals, rng.NormFloat64()*math.Pow(10, float64(rng.Intn(8)-4)))
	}
	return d
}

// encodeRaw writes float64 values as dtype d without valueFor's exactness clamp.
func encodeRaw(d kx.Dtype, vals []float64) []byte {
	b := make([]byte, len(vals)*d.Size())
	for i, v := range vals {
		switch d {
		case kx.F32:
			putU32(b[4*i:], math.Float32bits(float32(v)))
		case kx.F64:
			putU64(b[8*i:], math.Float64bits(v))
		case kx.I32:
			putU32(b[4*i:], uint32(int32(v*1000)))
		default:
			putU64(b[8*i:], uint64(int64(v*1e6)))
		}
	}
	return b
}

func putU32(b []byte, x uint32) {
	b[0], b[1], b[2], b[3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
}
func putU64(b []byte, x uint64) { putU32(b, uint32(x)); putU32(b[4:], uint32(x>>32)) }

// TestThreadsBitwise runs every dtype x op x width on 1..8 ranks with threads 1, 2 and 4 (with
// the per-worker minimum lowered so that these sizes split) and twice each: every run must give
// the same bytes as threads=1. The exact-value brute-force check runs with threads=4.
func TestThreadsBitwise(t *testing.T) {
	defer core.SetMinPerWorker(16)()
	plans := []struct {
		m       int
		degrees string
	}{{1, "auto"}, {2, "direct"}, {3, "direct"}, {4, "2x2"}, {5, "direct"}, {6, "3x2"}, {7, "direct"}, {8, "2x4"}, {8, "binary"}}
	for _, pl := range plans {
		t.Run(fmt.Sprintf("m%d_%s", pl.m, pl.degrees), func(t *testing.T) {
			const n, k = 3000, 700
			var want [][]byte // per (rank, case), from threads=1
			for _, threads := range []int{1, 2, 4, 2} {
				j := newLiveJob(t, pl.m, kx.Options{Degrees: pl.degrees, Threads: threads})
				got := make([][][]byte, pl.m)
				j.each(t, func(r int, c *core.Comm) error {
					for _, width := range []int{1, 3} {
						rd := randomData(int64(pl.m*10+width), r, n, k, width)
						p, err := c.Config(rd.out, rd.in)
						if err != nil {
							return err
						}
						for _, d := range allDtypes {
							for _, o := range opsFor(d) {
								in := make([]byte, len(rd.in)*width*d.Size())
								if err := p.Reduce(encodeRaw(d, rd.vals), in, d, o, width); err != nil {
									return fmt.Errorf("reduce %s %s: %w", d, o, err)
								}
								in2 := make([]byte, len(in))
								if _, err := c.ConfigReduce(rd.out, encodeRaw(d, rd.vals), rd.in, in2, d, o, width, false); err != nil {
									return fmt.Errorf("config_reduce %s %s: %w", d, o, err)
								}
								if !bytes.Equal(in, in2) {
									return fmt.Errorf("%s %s width %d: config_reduce and reduce differ", d, o, width)
								}
								got[r] = append(got[r], in)
							}
						}
						p.Free()
					}
					return nil
				})
				if threads == 4 { // and against brute force, on exact values
					all := make([]rankData, pl.m)
					for r := range all {
						all[r] = genRank(int64(pl.m), r, n, k, k/2, 2)
					}
					j.each(t, func(_ int, c *core.Comm) error { return checkEveryDtypeOp(t, c, all, 2, false) })
				}
				for r := range got {
					for i, b := range got[r] {
						if threads == 1 {
							want = append(want, b)
						} else if !bytes.Equal(b, want[r*len(got[r])+i]) {
							t.Fatalf("threads=%d rank %d case %d: bytes differ from threads=1", threads, r, i)
						}
					}
				}
			}
		})
	}
}

// A small step allocates nothing once warm: a blocking allreduce's body is not kept (its closure
// stays on the stack), sends hand the transport the comm's one-buffer list, and small payloads
// come from the pool. Counted over both ranks of an in-memory job (the count is the process's):
// an allocation a call would be thousands.
func TestSmallAllreduceAllocatesNothing(t *testing.T) {
	const calls = 2000
	var mallocs [2]uint64
	errs := runJob(t, 2, "direct", func(c *core.Comm) error {
		send, recv := make([]byte, 32), make([]byte, 32)
		step := func() error { return c.Allreduce(send, recv, kx.F32, kx.Sum) }
		for i := 0; i < 100; i++ {
			if err := step(); err != nil {
				return err
			}
		}
		var ms runtime.MemStats
		if c.Rank() == 0 {
			runtime.ReadMemStats(&ms)
			mallocs[0] = ms.Mallocs
		}
		for i := 0; i < calls; i++ {
			if err := step(); err != nil {
				return err
			}
		}
		if c.Rank() == 0 {
			runtime.ReadMemStats(&ms)
			mallocs[1] = ms.Mallocs
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if n := mallocs[1] - mallocs[0]; n > calls/20 {
		t.Errorf("%d allocations over %d allreduces of 8 floats on 2 ranks, want next to none", n, calls)
	}
}
