package core

import (
	"sort"
	"unsafe"
)

// The top of the butterfly in destination order.
//
// A rank's values come in the caller's order, and the answers go back in it. Keeping the
// rank's layer-0 vector in sorted key order would cost a random permutation of the whole vector
// at both ends of every reduce: a cache miss per value, the largest cost of a reduce on 2 cores
// (perf: 52% of its CPU in those two gathers, 4 ranks, 2M keys each). The paper's direct
// all-to-all instead partitions the values by destination, stably, which streams.
//
// So, in a plan with layers, the rank's layer-0 vector holds its unique keys grouped by "top
// bucket" — the layer-0 member a key goes to and one of 2^b sub-ranges of the key below that
// digit — and inside a bucket in the order of each key's first caller position. Filling it from
// the caller's values is a stable partition into at most topStreams write streams, and
// answering in caller order reads from as many streams. The member that receives a bucket maps
// it into its merged keys with a map that is random only inside the bucket's part of the merged
// vector (about 1/2^b of it, a few hundred KiB: L2), and combines sub-range by sub-range. The
// index lists still travel sorted (the merge and the codec need that); a config message at
// layer 0 carries, besides, each key's row in the sender's bucket order (perm).

// topStreams bounds the buckets of the top. Fewer streams partition faster (2M f32, quiet:
// 1.1 ms with 4-16 write streams, 1.4 ms with 64, 2.0 ms with 256), more make the members'
// sub-ranges smaller. Measured end to end (4 ranks on 2 cores, 2M keys each, reduce wall
// time): 4 streams 39.5 ms, 8: 37.5, 16: 35.5, 32: 40.5, 64: 44.
const topStreams = 16

// subBits is b for layer-0 degree d0: each member's key range is cut into 2^b sub-ranges, so
// that d0<<b buckets stay within topStreams (b = 0 when d0 alone exceeds it).
func subBits(d0 int) int {
	b := 0
	for d0<<(b+1) <= topStreams && b < 16 {
		b++
	}
	return b
}

// topBucket is key k's top bucket: layer-0 digit g, then the top b bits of the rest.
func topBucket(k uint64, d0, b int) int {
	g, r := Digit(k, d0)
	return g<<b | int(r>>(64-b)) // r >> 64 is 0 when b = 0
}

// bucketBounds returns the n+1 boundaries of buckets first..first+n-1 in keys (sorted, every
// key in those buckets): keys[bd[i]:bd[i+1]] are the keys of bucket first+i.
func bucketBounds(keys []uint64, d0, b, first, n int) []int {
	bd := make([]int, n+1)
	lo := 0
	for i := 1; i < n; i++ {
		rest := keys[lo:]
		lo += sort.Search(len(rest), func(j int) bool { return topBucket(rest[j], d0, b) >= first+i })
		bd[i] = lo
	}
	bd[n] = len(keys)
	return bd
}

// packTop places a rank's keys in top-bucket order. keys are the sorted unique keys of idx,
// pos[j] the position of idx[j]'s key among them, repeat[j] whether idx[j] repeats an earlier
// index (nil: none does). It returns key[r], the sorted key held by row r relative to the
// first key of r's layer-0 member (so that a member's slice of it is the perm its config
// message carries, as it is), and dst[j], the row a caller position fills: its key's for a
// first occurrence, and for a repeat len(keys) plus its rank among the repeats (rows that
// reduce folds in after). The rows are a permutation inside each bucket's range, which is the
// bucket's range in sorted order. Both are written in streams (a row's key, not a key's row:
// that would be a random write per key). Workers take contiguous parts of the caller's
// positions and every row is fixed by counts, so the result does not depend on the number of
// workers.
//
// key is taken from *buf when it is large enough (and becomes it otherwise), so that repeated
// configs do not page-fault in a fresh array each time.
func packTop(idx []int64, keys []uint64, pos []int32, repeat []bool, d0, threads int, buf *[]int32) (key, dst []int32) {
	n := len(idx)
	b := subBits(d0)
	nb := d0 << b
	bounds := bucketBounds(keys, d0, b, 0, nb)
	if cap(*buf) >= len(keys) {
		key = (*buf)[:len(keys)]
	} else {
		key = make([]int32, len(keys))
		*buf = key
	}
	dst = make([]int32, n)
	w := workersFor(n, threads)
	parts := split(n, w)
	// Per worker: first occurrences per bucket, then repeats. A worker's rows start after the
	// earlier workers' in every bucket, so the last part needs no count (nor does a lone one).
	counts := make([][]int32, w)
	counts[w-1] = make([]int32, nb+1)
	parallel(w, func(t int) {
		if t == w-1 {
			return
		}
		c := make([]int32, nb+1)
		for j := parts[t]; j < parts[t+1]; j++ {
			if repeat != nil && repeat[j] {
				c[nb]++
				continue
			}
			c[topBucket(Mix(uint64(idx[j])), d0, b)]++
		}
		counts[t] = c
	})
	base := make([]int32, d0) // each member's first key: key[] is relative to it
	for g := range base {
		base[g] = int32(bounds[g<<b])
	}
	offs := make([][]int32, w)
	for t := range offs {
		offs[t] = make([]int32, nb+1)
	}
	for k := 0; k <= nb; k++ {
		at := int32(len(keys)) // the repeats' rows follow the keys'
		if k < nb {
			at = int32(bounds[k])
		}
		for t := 0; t < w; t++ {
			offs[t][k] = at
			at += counts[t][k]
		}
	}
	parallel(w, func(t int) {
		o := offs[t]
		for j := parts[t]; j < parts[t+1]; j++ {
			if repeat != nil && repeat[j] {
				dst[j] = o[nb]
				o[nb]++
				continue
			}
			k := topBucket(Mix(uint64(idx[j])), d0, b)
			s := o[k]
			o[k]++
			dst[j] = s
			key[s] = pos[j] - base[k>>b]
		}
	})
	return key, dst
}

// answerRows is the row each caller position of a list reads its answer from: dst with every
// repeat sent to its key's row, the row of the key's first occurrence (first, from
// sortUniqueInto). dst itself when nothing repeats.
func answerRows(dst, pos, first []int32, repeat []bool) []int32 {
	if repeat == nil {
		return dst
	}
	a := append([]int32(nil), dst...)
	for j, r := range repeat {
		if r {
			a[j] = dst[first[pos[j]]]
		}
	}
	return a
}

// packedMap turns a member's map of a sender's sorted keys (sorted[k]: merged position of
// sorted key k) into its map of the sender's bucket-ordered rows, m[r] = sorted[perm[r]] (a
// read at random inside each bucket's part of sorted only), checking on the way that perm,
// from the sender's config message, is a permutation: corrupt input gives an error naming the
// sender, never a map that points outside the plan's buffers.
func packedMap(sorted, perm []int32, from int) ([]int32, error) {
	if len(perm) != len(sorted) {
		return nil, Errorf(CodeInternal, "rank %d sent a malformed config message: %d rows of bucket order for %d keys", RankRef(from), len(perm), len(sorted))
	}
	m := make([]int32, len(perm))
	seen := make([]uint64, (len(perm)+63)/64)
	for r, k := range perm {
		if k < 0 || int(k) >= len(perm) || seen[k>>6]&(1<<(k&63)) != 0 {
			return nil, Errorf(CodeInternal, "rank %d sent a malformed config message: row %d of its bucket order holds key %d (not a permutation of %d keys)",
				RankRef(from), r, k, len(perm))
		}
		seen[k>>6] |= 1 << (k & 63)
		m[r] = sorted[k]
	}
	return m, nil
}

// permBytes views a perm as its in-memory bytes (little-endian hosts, as keyBytes).
func permBytes(p []int32) []byte {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(p)*4)
}

// bytesPerm copies a perm out of a message (any alignment).
func bytesPerm(b []byte) []int32 {
	p := make([]int32, len(b)/4)
	copy(permBytes(p), b)
	return p
}
