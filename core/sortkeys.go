package core

import (
	"cmp"
	"slices"
)

// sortUnique hashes idx, sorts the hashed keys and removes repeats. It returns the sorted
// unique keys and, for every position of idx, the position of its key in that list — the map
// that lets reduce combine repeated indices and answer in the caller's order.
//
// Hashed keys are uniform over 2^64, so a most-significant-digit bucket sort finishes them in
// two counting passes: the first on the top 10 bits (1024 buckets, whose write heads stay in
// cache), the second inside each bucket on the next bits down to buckets of ~8 that an
// insertion sort completes. A one-pass scatter into 10^5 buckets misses cache on every write.
func sortUnique(idx []int64) (keys []uint64, pos []int32) {
	n := len(idx)
	pos = make([]int32, n)
	if n == 0 {
		return nil, pos
	}
	pairs := make([]keyPos, n)
	for i, v := range idx {
		pairs[i] = keyPos{Mix(uint64(v)), int32(i)}
	}
	tmp := make([]keyPos, n)
	bucketSort(pairs, tmp, 0)
	keys = make([]uint64, 0, n)
	u := int32(-1)
	for i, kp := range pairs {
		if i == 0 || kp.k != keys[u] {
			keys = append(keys, kp.k)
			u++
		}
		pos[kp.p] = u
	}
	return keys, pos
}

// bucketSort sorts a by key, given that all keys agree on their top `done` bits; tmp is
// scratch of the same length. Small or exhausted ranges go to sortPairs.
func bucketSort(a, tmp []keyPos, done int) {
	n := len(a)
	if n <= 48 || done >= 48 {
		sortPairs(a)
		return
	}
	bits := 1
	for n>>bits > 8 && bits < 10 {
		bits++
	}
	shift := 64 - done - bits
	mask := uint64(1)<<bits - 1
	var counts [1025]int
	for _, kp := range a {
		counts[(kp.k>>shift)&mask+1]++
	}
	for b := 1; b <= 1<<bits; b++ {
		counts[b] += counts[b-1]
	}
	next := counts
	for _, kp := range a {
		b := (kp.k >> shift) & mask
		tmp[next[b]] = kp
		next[b]++
	}
	copy(a, tmp)
	for b := 0; b < 1<<bits; b++ {
		lo, hi := counts[b], counts[b+1]
		bucketSort(a[lo:hi], tmp[lo:hi], done+bits)
	}
}

type keyPos struct {
	k uint64
	p int32
}

// sortPairs sorts a bucket by key: insertion sort for the usual handful, pdqsort beyond (a
// bucket is only large when the input repeats an index many times).
func sortPairs(a []keyPos) {
	if len(a) > 48 {
		slices.SortFunc(a, func(x, y keyPos) int { return cmp.Compare(x.k, y.k) })
		return
	}
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i
		for j > 0 && a[j-1].k > x.k {
			a[j] = a[j-1]
			j--
		}
		a[j] = x
	}
}
