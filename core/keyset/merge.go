package keyset

// TreeMerge returns the sorted union of sorted, duplicate-free lists and, for each list, the
// position of each of its elements in the union. Lists are merged pairwise up a balanced tree
// (paper §VI-A): every merge joins two sequences of similar length, so the total cost is
// O(N log d) with sequential memory access, which beats hashing by a wide margin.
func TreeMerge(lists [][]uint64) (union []uint64, maps [][]int32) {
	maps = make([][]int32, len(lists))
	union = mergeRange(lists, maps, 0, len(lists))
	return union, maps
}

func mergeRange(lists [][]uint64, maps [][]int32, lo, hi int) []uint64 {
	switch hi - lo {
	case 0:
		return nil
	case 1:
		m := make([]int32, len(lists[lo]))
		for i := range m {
			m[i] = int32(i)
		}
		maps[lo] = m
		return lists[lo]
	}
	mid := (lo + hi) / 2
	a := mergeRange(lists, maps, lo, mid)
	b := mergeRange(lists, maps, mid, hi)
	u, pa, pb := Merge2(a, b)
	for i := lo; i < mid; i++ {
		compose(maps[i], pa)
	}
	for i := mid; i < hi; i++ {
		compose(maps[i], pb)
	}
	return u
}

// compose rewrites m[i] = p[m[i]]: positions in a child union become positions in the parent.
func compose(m, p []int32) {
	for i, x := range m {
		m[i] = p[x]
	}
}

// Merge2 merges two sorted unique lists, returning the union and where each element went.
// The loop has no data-dependent branch: hashed keys interleave at random, so a branchy merge
// mispredicts about every other step. Each step writes the smaller head (min), records the
// output position for both heads (a head that does not advance is written again, correctly,
// when it does) and advances the head or heads that were output.
func Merge2(a, b []uint64) (u []uint64, pa, pb []int32) {
	u = make([]uint64, len(a)+len(b))
	pa = make([]int32, len(a))
	pb = make([]int32, len(b))
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		u[k] = min(x, y)
		pa[i], pb[j] = int32(k), int32(k)
		i += BoolInt(x <= y)
		j += BoolInt(y <= x)
		k++
	}
	for ; i < len(a); i, k = i+1, k+1 {
		pa[i] = int32(k)
		u[k] = a[i]
	}
	for ; j < len(b); j, k = j+1, k+1 {
		pb[j] = int32(k)
		u[k] = b[j]
	}
	return u[:k], pa, pb
}

// BoolInt is 1 for true and 0 for false, without a branch.
func BoolInt(c bool) int {
	var n int
	if c {
		n = 1
	}
	return n
}

// Lookup maps each element of sorted unique want to its position in sorted unique have, or -1:
// the bottom layer's map from in-keys to reduced out-values.
func Lookup(want, have []uint64) []int32 {
	m := make([]int32, len(want))
	j := 0
	for i, x := range want {
		for j < len(have) && have[j] < x {
			j++
		}
		if j < len(have) && have[j] == x {
			m[i] = int32(j)
		} else {
			m[i] = -1
		}
	}
	return m
}
