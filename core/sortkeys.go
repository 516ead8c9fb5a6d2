package core

// sortUnique hashes idx, sorts the hashed keys and removes repeats. It returns the sorted
// unique keys and, for every position of idx, the position of its key in that list — the map
// that lets reduce combine repeated indices and answer in the caller's order.
//
// An LSD radix sort on (key, position) pairs: linear time and no comparisons, which matters at
// 10^7 indices (a comparison sort is several times slower here).
func sortUnique(idx []int64) (keys []uint64, pos []int32) {
	n := len(idx)
	pos = make([]int32, n)
	if n == 0 {
		return nil, pos
	}
	k := make([]uint64, n)
	p := make([]int32, n)
	for i, v := range idx {
		k[i] = Mix(uint64(v))
		p[i] = int32(i)
	}
	if n > 1 {
		k, p = radixSortPairs(k, p)
	}
	keys = k[:0]
	u := int32(-1)
	var last uint64
	for i := 0; i < n; i++ {
		if i == 0 || k[i] != last {
			u++
			last = k[i]
			keys = append(keys, last) // in place: keys never overtakes k
		}
		pos[p[i]] = u
	}
	return keys, pos
}

// radixSortPairs sorts keys ascending, carrying vals along; stable. It skips byte positions in
// which every key agrees (common when keys are few or share high bits).
func radixSortPairs(keys []uint64, vals []int32) ([]uint64, []int32) {
	n := len(keys)
	k2 := make([]uint64, n)
	v2 := make([]int32, n)
	var counts [8][256]int
	for _, x := range keys {
		for b := 0; b < 8; b++ {
			counts[b][byte(x>>(8*b))]++
		}
	}
	for b := 0; b < 8; b++ {
		c := &counts[b]
		if c[byte(keys[0]>>(8*b))] == n {
			continue // all keys share this byte
		}
		sum := 0
		for i := range c {
			c[i], sum = sum, sum+c[i]
		}
		shift := uint(8 * b)
		for i, x := range keys {
			d := byte(x >> shift)
			j := c[d]
			c[d]++
			k2[j] = x
			v2[j] = vals[i]
		}
		keys, k2 = k2, keys
		vals, v2 = v2, vals
	}
	return keys, vals
}
