package kernels

import (
	"kylix/core/kx"
	"kylix/core/rsum"
	"math"
	"math/rand"
	"testing"
)

// A layer-0 combine as reduce runs it on one rank of the issue-20 benchmark (4 ranks, 1M
// hashed draws a rank over 4M keys, one direct layer): the rank owns a quarter of the keys,
// cut into 4 sub-ranges; each of the 4 sources sends its draws of the sub-range in caller
// order, merged in order of first appearance (sender order, then row order), as
// keyset.SortLayer0 does for a plan of one layer with in = out. Per sub-range, as combineSub
// does: Sum from its identity, the sources folded in source order; RSum the sources' floats
// started and folded into accumulators (FromScatterCombineFresh), then rounded in place.
type layer0Bench struct {
	rows []int     // rows of each sub-range
	maps [][]int32 // [sub*4+g]: source g's merged rows in sub-range sub
	vals [][]byte  // [sub*4+g]: its f64 values
}

func newBenchCombine() *layer0Bench {
	const ranks, draws, space = 4, 1_000_000, 4_000_000
	nsub := benchNsub
	rng := rand.New(rand.NewSource(3))
	owned := space / ranks
	sub := owned / nsub
	b := &layer0Bench{rows: make([]int, nsub), maps: make([][]int32, nsub*ranks), vals: make([][]byte, nsub*ranks)}
	place := make([]int32, owned)
	for i := range place {
		place[i] = -1
	}
	for g := 0; g < ranks; g++ {
		for i := 0; i < draws/ranks; i++ { // the draws that land in this rank's keys
			k := rng.Intn(owned)
			s := k / sub
			v := math.Ldexp(1+float64(i%977)/977, (i*ranks+g)%121-60)
			if place[k] < 0 {
				place[k] = int32(b.rows[s])
				b.rows[s]++
			}
			b.maps[s*ranks+g] = append(b.maps[s*ranks+g], place[k])
			var w [8]byte
			putF64(w[:], v)
			b.vals[s*ranks+g] = append(b.vals[s*ranks+g], w[:]...)
		}
	}
	return b
}

func (b *layer0Bench) run(dst []byte, o kx.Op) {
	for s := range b.rows {
		b.combine(dst, o, s)
		if o == kx.RSum {
			b.round(dst, s)
		}
	}
}

// combine combines sub-range s into the front of dst.
func (b *layer0Bench) combine(dst []byte, o kx.Op, s int) {
	d := dst[:b.rows[s]*ElemBytes(kx.F64, o)]
	if o != kx.RSum {
		Identity(kx.F64, o, d)
	}
	fresh := 0
	for g := 0; g < 4; g++ {
		if o == kx.RSum {
			fresh = FromScatterCombineFresh(kx.F64, d, b.vals[s*4+g], b.maps[s*4+g], 1, fresh)
		} else {
			ScatterCombine(kx.F64, o, d, b.vals[s*4+g], b.maps[s*4+g], 1)
		}
	}
}

// round rounds sub-range s's accumulators at the front of dst in place.
func (b *layer0Bench) round(dst []byte, s int) {
	n := b.rows[s]
	Round(kx.F64, dst[:n*8], dst[:n*rsum.Acc64Bytes])
}

func BenchmarkCombineLayer0(b *testing.B) {
	bc := newBenchCombine()
	n := 0
	for _, r := range bc.rows {
		n = max(n, r)
	}
	for _, o := range []kx.Op{kx.Sum, kx.RSum} {
		b.Run(o.String(), func(b *testing.B) {
			dst := AlignedBytes(n * ElemBytes(kx.F64, o))
			b.ReportAllocs()
			for b.Loop() {
				bc.run(dst, o)
			}
		})
	}
	// The two parts of rsum apart: each sub-range combined, or rounded right after its
	// combine (as combineSub does: the accumulators still in cache).
	dst := AlignedBytes(n * ElemBytes(kx.F64, kx.RSum))
	b.Run("rsum-combine", func(b *testing.B) {
		for b.Loop() {
			for s := range bc.rows {
				bc.combine(dst, kx.RSum, s)
			}
		}
	})
	b.Run("rsum-round", func(b *testing.B) {
		for b.Loop() {
			for s := range bc.rows {
				b.StopTimer()
				bc.combine(dst, kx.RSum, s)
				b.StartTimer()
				bc.round(dst, s)
			}
		}
	})
}

var benchNsub = 4
