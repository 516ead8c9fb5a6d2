package keyset

import (
	"math/bits"
	"slices"
)

// The two sorts of the index codec. The encoder sorts original indices, which are not uniform
// (power-law data crowds some ranges), so it uses LSD radix: its cost does not depend on the
// distribution. The decoder sorts hashed keys, which are uniform over their range, so an MSD
// pass on the top bits leaves buckets of a few keys that finish in cache.

// radixSortU64 sorts x, whose values fit in nbits bits, using tmp (as long as x) as scratch, and
// returns the sorted slice: x or tmp.
func radixSortU64(x, tmp []uint64, nbits int) []uint64 { return radixSortBits(x, tmp, 0, nbits) }

// radixSortBits sorts x stably by bits [shift, shift+nbits) of its values (the bits above are
// zero), using tmp (as long as x) as scratch, and returns the sorted slice: x or tmp. The bits
// below shift ride along: SetOrder keeps a row's place there.
func radixSortBits(x, tmp []uint64, shift, nbits int) []uint64 {
	if len(x) < 2 || nbits == 0 {
		return x
	}
	passes := (nbits + 10) / 11
	width := (nbits + passes - 1) / passes
	mask := uint64(1)<<width - 1
	var count [1 << 11]int
	for p := 0; p < passes; p++ {
		s := shift + p*width
		cnt := count[:1<<width]
		clear(cnt)
		for _, v := range x {
			cnt[v>>s&mask]++
		}
		sum := 0
		for i, c := range cnt {
			cnt[i] = sum
			sum += c
		}
		for _, v := range x {
			b := v >> s & mask
			tmp[cnt[b]] = v
			cnt[b]++
		}
		x, tmp = tmp, x
	}
	return x
}

// hashSort replaces each index of x by its key (Mix) and sorts the keys ascending, in place;
// tmp is scratch as long as x. The keys must be distinct (the decoder's are).
func hashSort(x, tmp []uint64) {
	n := len(x)
	if n == 0 {
		return
	}
	lo, hi := ^uint64(0), uint64(0)
	for i, v := range x {
		k := Hash(v)
		x[i] = k
		lo, hi = min(lo, k), max(hi, k)
	}
	if n <= 32 {
		insertionSortU64(x)
		return
	}
	// Pass 1: 2^11 buckets on the top bits of k-lo, into tmp.
	const topBits = 11
	shift := max(0, bits.Len64(hi-lo)-topBits)
	var start [1<<topBits + 1]int
	for _, k := range x {
		start[(k-lo)>>shift+1]++
	}
	for b := 1; b <= 1<<topBits; b++ {
		start[b] += start[b-1]
	}
	head := start
	for _, k := range x {
		b := (k - lo) >> shift
		tmp[head[b]] = k
		head[b]++
	}
	// Pass 2: each bucket back into x, by its next bits, then insertion sort on what is left
	// nearly in order.
	for b := 0; b < 1<<topBits; b++ {
		src, dst := tmp[start[b]:start[b+1]], x[start[b]:start[b+1]]
		sortBucketU64(src, dst, lo, shift)
	}
}

// sortBucketU64 sorts src, whose keys agree on (k-lo)>>shift, into dst (as long as src).
func sortBucketU64(src, dst []uint64, lo uint64, shift int) {
	n := len(src)
	if n <= 32 || shift == 0 {
		copy(dst, src)
		insertionSortU64(dst)
		return
	}
	nb := min(bits.Len(uint(n/2)), 11, shift) // about two keys per sub-bucket
	s := shift - nb
	mask := uint64(1)<<nb - 1
	var all [1<<11 + 1]int
	cnt := all[:1<<nb+1]
	for _, k := range src {
		cnt[(k-lo)>>s&mask+1]++
	}
	biggest := 0
	for i := 1; i <= 1<<nb; i++ {
		biggest = max(biggest, cnt[i])
		cnt[i] += cnt[i-1]
	}
	for _, k := range src {
		b := (k - lo) >> s & mask
		dst[cnt[b]] = k
		cnt[b]++
	}
	if biggest > 256 { // not uniform (a hostile list): insertion sort would be quadratic
		slices.Sort(dst)
		return
	}
	insertionSortU64(dst)
}

func insertionSortU64(a []uint64) {
	for i := 1; i < len(a); i++ {
		x := a[i]
		j := i
		for j > 0 && a[j-1] > x {
			a[j] = a[j-1]
			j--
		}
		a[j] = x
	}
}
