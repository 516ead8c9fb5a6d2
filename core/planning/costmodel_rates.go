package planning

import (
	"kylix/core/kernels"
	"kylix/core/keyset"
	"kylix/core/kx"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// MeasureComputeRates times the data path's kernels on this machine, one thread, on
// uniformly scattered data of a realistic size (2^20 keys, 2^21 values: past the caches, as a
// rank's share of a large job is): the best of three runs each, about 0.2 s in all. The
// combine streams through increasing maps (the layers' merges); the gather follows a random
// permutation (the top's, from the caller's order). The first call measures; later calls
// return the same figures.
func MeasureComputeRates() ComputeRates {
	ratesOnce.Do(func() { rates = measureRates(1<<20, 1<<21, 3) })
	return rates
}

// QuickComputeRates is MeasureComputeRates on 2^14 keys and 2^15 values, best of two: about
// 3 ms, for the link measurement to hand the planner (cache-resident sizes flatter the
// kernels a little; the planner compares plans, which share that bias).
func QuickComputeRates() ComputeRates {
	quickOnce.Do(func() { quick = measureRates(1<<14, 1<<15, 2) })
	return quick
}

var (
	ratesOnce, quickOnce sync.Once
	rates, quick         ComputeRates
)

// measureRates times the kernels on n keys and nv values, best of reps runs.
func measureRates(n, nv, reps int) ComputeRates {
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int64, n)
	for i := range idx {
		idx[i] = int64(rng.Uint64N(1 << 24))
	}
	best := func(f func()) float64 {
		b := time.Duration(1 << 62)
		for range reps {
			t := time.Now()
			f()
			b = min(b, time.Since(t))
		}
		return float64(b.Nanoseconds())
	}
	var r ComputeRates
	var keys []uint64
	r.SortNs = best(func() { keys, _ = keyset.SortUnique(idx, 1) }) / float64(n)
	a, b := everyOther(keys, 0), everyOther(keys, 1)
	r.MergeNs = best(func() { keyset.Merge2(a, b) }) / float64(len(keys))
	src := make([]byte, 4*nv)
	dst := make([]byte, 4*nv)
	inc := make([]int32, nv) // increasing: the maps of a merge
	for i := range inc {
		inc[i] = int32(i)
	}
	r.CombineNs = best(func() { kernels.ScatterCombine(kx.F32, kx.Sum, dst, src, inc, 1) }) / float64(nv)
	perm := slices.Clone(inc)
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	r.GatherNs = best(func() { kernels.Gather(kx.F32, kx.Sum, dst, src, perm, 1) }) / float64(nv)
	var enc keyset.IndexEncoder
	var dec keyset.IndexDecoder
	list := keys[:len(keys)/4] // a destination's share: a quarter of a rank's keys
	var blob []byte
	r.EncodeNs = best(func() { blob = enc.AppendList(blob[:0], list) }) / float64(len(list))
	r.DecodeNs = best(func() { dec.DecodeList(blob, len(list), 0) }) / float64(len(list))
	return r
}

func everyOther(k []uint64, from int) []uint64 {
	var out []uint64
	for i := from; i < len(k); i += 2 {
		out = append(out, k[i])
	}
	return out
}
