package keyset

import (
	"kylix/core/kx"
	"math"
	"math/bits"
	"slices"
)

// Layer 0 of the butterfly in destination order, as the paper's direct all-to-all does it.
//
// A rank's values come in the caller's order, and the answers go back in it. Keeping the
// rank's layer-0 vector in sorted key order would cost a random permutation of the whole vector
// at both ends of every reduce: a cache miss per value, the largest cost of a reduce on 2 cores
// (perf: 52% of its CPU in those two gathers, 4 ranks, 2M keys each). Sorting the keys at config
// costs the sender, besides, the largest part of config (a radix sort of every key, out of
// cache). The direct all-to-all does neither: the sender partitions its indices by destination,
// stably, which streams, and only the home sorts what it received.
//
// So, in a plan with layers, every caller position is a row of the rank's layer-0 vector, and
// the rows are grouped by "layer-0 bucket" — the layer-0 member a key goes to and one of 2^b
// sub-ranges of the key below that digit — and inside a bucket in caller order (PackLayer0).
// Filling the vector from the caller's values is a stable partition into at most topStreams
// write streams, and answering in caller order reads from as many streams. The config message
// carries the rows' keys as they are, unsorted and with any repeats (msgRows). The member sorts
// what its senders sent, sub-range by sub-range (SortLayer0, layer0_sort.go): that gives the merged
// keys and, for every sender's row, its merged position. Those maps are random only inside the
// sub-range's part of the merged vector (about 1/2^b of it, a few hundred KiB: L2), so down
// combines and up gathers sub-range by sub-range. A repeated index costs its own row (as in the
// direct all-to-all); the member folds it in, in caller order.

// layer0Streams bounds the layer-0 buckets: fewer write streams partition faster, more make the
// members' sub-ranges smaller, and 16 measured best end to end (docs/measurements.md).
const layer0Streams = 16

// subBits is b for layer-0 degree d0: each member's key range is cut into 2^b sub-ranges, so
// that d0<<b buckets stay within topStreams (b = 0 when d0 alone exceeds it).
func subBits(d0 int) int {
	b := 0
	for d0<<(b+1) <= layer0Streams && b < 16 {
		b++
	}
	return b
}

// layer0Bucket is key k's layer-0 bucket: layer-0 digit g, then the top b bits of the rest. It is
// floor(k·d0 / 2^(64-b)), so buckets are ranges of keys in ascending order (bucketStart).
func layer0Bucket(k uint64, d0, b int) int {
	g, r := Digit(k, d0)
	return g<<b | int(r>>(64-b)) // r >> 64 is 0 when b = 0
}

// bucketStart is the least key of layer-0 bucket q (q = d0<<b: 2^64, returned as 0 with end set):
// ceil(q·2^(64-b) / d0), the inverse of topBucket.
func bucketStart(q, d0, b int) (start uint64, end bool) {
	hi, lo := uint64(q)>>b, uint64(q)<<(64-b) // q·2^(64-b) as 128 bits (b = 0: lo = 0)
	if hi >= uint64(d0) {
		return 0, true
	}
	s, r := bits.Div64(hi, lo, uint64(d0))
	if r != 0 {
		s++
	}
	return s, false
}

// Layer0Rows is one index list of a rank laid out as layer-0 rows in layer-0 bucket order.
type Layer0Rows struct {
	Keys   []uint64 // keys[r]: the hashed key row r holds
	Dst    []int32  // dst[j]: the row caller position j fills (out) or reads its answer from (in)
	bounds []int    // the rows of bucket q are [bounds[q], bounds[q+1]); d0<<b + 1 entries
}

// Split is the rows' Split among the layer-0 members: member g's rows are [s[g], s[g+1]).
func (t Layer0Rows) Split(d0 int) []int {
	b := subBits(d0)
	s := make([]int, d0+1)
	for g := range s {
		s[g] = t.bounds[g<<b]
	}
	return s
}

// PackLayer0 lays idx out in layer-0 bucket order for layer-0 degree d0: a stable partition of the
// caller's positions by bucket, every position a row. Workers take contiguous parts of idx and
// every row is fixed by counts, so the result does not depend on the number of workers. The
// keys are taken from *buf when it is large enough (and become it otherwise): repeated configs
// do not page-fault in a fresh array each time.
func PackLayer0(idx []int64, d0, threads int, buf *[]uint64) Layer0Rows {
	n := len(idx)
	b := subBits(d0)
	nb := d0 << b
	keys := *buf
	if cap(keys) < n {
		keys = make([]uint64, n)
		*buf = keys
	}
	t := Layer0Rows{Keys: keys[:n], Dst: make([]int32, n), bounds: make([]int, nb+1)}
	w := WorkersFor(n, threads)
	parts := Split(n, w)
	counts := make([][]int, w)
	Parallel(w, func(k int) {
		c := make([]int, nb)
		for _, x := range idx[parts[k]:parts[k+1]] {
			c[layer0Bucket(Hash(uint64(x)), d0, b)]++
		}
		counts[k] = c
	})
	at := 0
	for q := 0; q < nb; q++ { // worker k's rows of bucket q follow the earlier workers'
		t.bounds[q] = at
		for k := 0; k < w; k++ {
			c := counts[k][q]
			counts[k][q] = at
			at += c
		}
	}
	t.bounds[nb] = n
	Parallel(w, func(k int) {
		o := counts[k]
		lo := parts[k]
		for j, x := range idx[lo:parts[k+1]] {
			key := Hash(uint64(x))
			q := layer0Bucket(key, d0, b)
			r := o[q]
			o[q]++
			t.Dst[lo+j] = int32(r)
			t.Keys[r] = key
		}
	})
	return t
}

// RowBounds checks that rows (a sender's rows for member me of a layer of degree d0, from its
// config message) are in layer-0 bucket order inside the member's range, and returns where each of
// the member's 2^b sub-ranges starts and ends in them. Corrupt input gives an error naming the
// sender, never bounds the member's sort could overrun.
func RowBounds(rows []uint64, d0, me, from int) ([]int, error) {
	b := subBits(d0)
	first := me << b
	bd := make([]int, 1<<b+1)
	q := first
	for r, k := range rows {
		kq := layer0Bucket(k, d0, b)
		if kq < q || kq >= first+1<<b {
			return nil, kx.Errorf(kx.CodeInternal, "rank %d sent a malformed config message: row %d holds a key of bucket %d, not in layer-0 bucket order within buckets %d..%d",
				kx.RankRef(from), r, kq, first, first+1<<b-1)
		}
		for ; q < kq; q++ {
			bd[q+1-first] = r
		}
	}
	for ; q < first+1<<b; q++ {
		bd[q+1-first] = len(rows)
	}
	return bd, nil
}

// EstimateUnique is the number of distinct indices in idx, for degrees=auto's density when
// the sender does not sort (a packed plan). Small lists are counted exactly; larger ones by
// linear counting (Whang et al.) on a bitmap of 2 to 4 bits per index (small enough for L2 at
// 2M indices: the random bit writes stay cheap), whose standard error is at most about
// 0.55/sqrt(n): 0.04% at 2M indices, far inside the planner's two significant digits. Workers
// fill bitmaps of their own, or-ed after, so the count does not depend on them.
func EstimateUnique(idx []int64, threads int) int {
	n := len(idx)
	if n <= 1<<12 {
		ks := slices.Clone(idx)
		slices.Sort(ks)
		return len(slices.Compact(ks))
	}
	lg := bits.Len(uint(2*n - 1)) // m = 2^lg bits, at least 2n
	words := 1 << (lg - 6)
	w := WorkersFor(n, threads)
	parts := Split(n, w)
	maps := make([][]uint64, w)
	Parallel(w, func(k int) {
		m := make([]uint64, words)
		for _, x := range idx[parts[k]:parts[k+1]] {
			h := Hash(uint64(x)) >> (64 - lg)
			m[h>>6] |= 1 << (h & 63)
		}
		maps[k] = m
	})
	zeros := 0
	for i := 0; i < words; i++ {
		v := maps[0][i]
		for k := 1; k < w; k++ {
			v |= maps[k][i]
		}
		zeros += 64 - bits.OnesCount64(v)
	}
	m := float64(int(1) << lg)
	if zeros == 0 {
		return n
	}
	est := int(m*math.Log(m/float64(zeros)) + 0.5)
	return max(1, min(n, est))
}
