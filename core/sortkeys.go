package core

import (
	"cmp"
	"slices"
)

// sortUnique hashes idx, sorts the hashed keys and removes repeats. It returns the sorted
// unique keys and, for every position of idx, the position of its key in that list — the map
// that lets reduce combine repeated indices and answer in the caller's order.
//
// Hashed keys are uniform over 2^64, so one counting pass on their top bits spreads them into
// buckets of ~16 that a small sort finishes: two passes over memory instead of a radix sort's
// eight, and no comparison sort over the whole set.
func sortUnique(idx []int64) (keys []uint64, pos []int32) {
	n := len(idx)
	pos = make([]int32, n)
	if n == 0 {
		return nil, pos
	}
	bits := 4
	for (n>>bits) > 16 && bits < 20 {
		bits++
	}
	shift := 64 - bits
	counts := make([]int32, (1<<bits)+1)
	for _, v := range idx {
		counts[Mix(uint64(v))>>shift+1]++
	}
	for b := 1; b < len(counts); b++ {
		counts[b] += counts[b-1]
	}
	pairs := make([]keyPos, n)
	next := append([]int32(nil), counts[:len(counts)-1]...)
	for i, v := range idx {
		k := Mix(uint64(v))
		b := k >> shift
		pairs[next[b]] = keyPos{k, int32(i)}
		next[b]++
	}
	for b := 0; b+1 < len(counts); b++ {
		sortPairs(pairs[counts[b]:counts[b+1]])
	}
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
