package keyset

import "sync"

// SortUnique hashes idx, sorts the hashed keys and removes repeats. It returns the sorted
// unique keys and, for every position of idx, the position of its key in that list — the map
// that lets reduce combine repeated indices and answer in the caller's order.
//
// Hashed keys are uniform over 2^64, so a most-significant-digit radix sort finishes them in
// two counting passes (the radix sorts for uniform keys in STYLE's notes): the first, with the
// hash fused into it, on the top 11 bits (2048 buckets whose write heads stay in L2), the
// second inside each bucket, now in L1, on the next bits, leaving runs of one or two keys that
// an insertion pass completes. Up to `threads` workers share every pass: each takes a
// contiguous part of the input (pass 1) or of the buckets (pass 2, unique), so the output does
// not depend on the number of workers.
func SortUnique(idx []int64, threads int) (keys []uint64, pos []int32) {
	s := SortUniqueInto(idx, threads, nil)
	return s.Keys, s.Pos
}

// Sorted is what sortUniqueInto finds: the Sorted unique keys, every input position's place
// among them (pos), and the inverse: first[u] is the first input position holding key u, and
// rest lists the input positions that repeat an earlier one, ascending.
type Sorted struct {
	Keys        []uint64
	Pos         []int32
	First, Rest []int32
}

// SortUniqueInto is sortUnique with the inverse map, and with the big scratch array taken from
// (and returned to) *buf, so repeated configs of one comm reuse memory instead of
// page-faulting in a fresh array each time.
func SortUniqueInto(idx []int64, threads int, buf *[]keyPos) Sorted {
	n := len(idx)
	pos := make([]int32, n)
	if n == 0 {
		return Sorted{Pos: pos}
	}
	const topBits = 11
	const nb = 1 << topBits
	const shift = 64 - topBits
	w := WorkersFor(n, threads)

	// Pass 1: hash and count per worker, then scatter by the top bits, stably.
	hist := make([][nb]int, w)
	parts := Split(n, w)
	Parallel(w, func(t int) {
		h := &hist[t]
		for _, v := range idx[parts[t]:parts[t+1]] {
			h[Hash(uint64(v))>>shift]++
		}
	})
	var start [nb + 1]int
	off := make([][nb]int, w)
	sum, biggest := 0, 0
	for b := 0; b < nb; b++ {
		start[b] = sum
		for t := 0; t < w; t++ {
			off[t][b] = sum
			sum += hist[t][b]
		}
		biggest = max(biggest, sum-start[b])
	}
	start[nb] = n
	var tmp []keyPos
	if buf != nil && cap(*buf) >= n {
		tmp = (*buf)[:n]
	} else {
		tmp = make([]keyPos, n)
		if buf != nil {
			*buf = tmp
		}
	}
	Parallel(w, func(t int) {
		o := &off[t]
		lo := parts[t]
		for i, v := range idx[lo:parts[t+1]] {
			k := Hash(uint64(v))
			b := k >> shift
			tmp[o[b]] = keyPos{k, int32(lo + i)}
			o[b]++
		}
	})

	// Pass 2: sort each bucket in place (through a bucket-sized scratch that stays in cache)
	// and count its distinct keys. Workers take runs of buckets of about equal total size.
	bparts := splitBuckets(start[:], w)
	distinct := make([]int32, nb+1)
	Parallel(w, func(t int) {
		scratch := make([]keyPos, biggest)
		for b := bparts[t]; b < bparts[t+1]; b++ {
			a := tmp[start[b]:start[b+1]]
			sortBucket(a, scratch[:len(a)], shift)
			u := int32(0)
			for i := range a {
				if i == 0 || a[i].k != a[i-1].k {
					u++
				}
			}
			distinct[b+1] = u
		}
	})
	for b := 1; b <= nb; b++ {
		distinct[b] += distinct[b-1]
	}

	// Pass 3: the keys, every input position's place among them and the inverse. Every pass
	// is stable, so a run of equal keys lists its input positions in ascending order.
	keys := make([]uint64, distinct[nb])
	first := make([]int32, distinct[nb])
	var repeat []bool // input positions that repeat an earlier one (each written by one worker)
	if int(distinct[nb]) < n {
		repeat = make([]bool, n)
	}
	Parallel(w, func(t int) {
		for b := bparts[t]; b < bparts[t+1]; b++ {
			u := distinct[b] - 1
			a := tmp[start[b]:start[b+1]]
			for i, kp := range a {
				if i == 0 || kp.k != a[i-1].k {
					u++
					keys[u] = kp.k
					first[u] = kp.p
				} else {
					repeat[kp.p] = true
				}
				pos[kp.p] = u
			}
		}
	})
	rest := make([]int32, 0, n-int(distinct[nb]))
	for q, r := range repeat { // ascending, by a streaming pass
		if r {
			rest = append(rest, int32(q))
		}
	}
	return Sorted{Keys: keys, Pos: pos, First: first, Rest: rest}
}

type keyPos struct {
	k uint64
	p int32
}

// sortBucket sorts a, whose keys agree above bit `shift`, in place; scratch is as long as a.
// A counting pass on the next bits (about two keys per sub-bucket) moves a into scratch, then
// insertion sort, linear on what is left nearly in order, finishes it (sortSmall), and the
// result is copied back. Sub-buckets that are large because the input repeats an index (equal
// keys) cost nothing more: insertion sort never moves equal keys.
func sortBucket(a, scratch []keyPos, shift int) {
	var cnt [1<<11 + 1]int32
	if r := sortSmall(a, scratch, &cnt, shift); len(r) > 0 && &r[0] != &a[0] {
		copy(a, r)
	}
}

// maxRun is the largest sub-bucket, given the end offsets of the sub-buckets.
func maxRun(ends []int32) int {
	var m, prev int32
	for _, e := range ends {
		m = max(m, e-prev)
		prev = e
	}
	return int(m)
}

func insertionSort(a []keyPos) {
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

// ---- workers ----

// MinPerWorker is the least work worth a goroutine of its own (a variable so that tests can
// make small inputs take the parallel paths).
var MinPerWorker = 1 << 16

// WorkersFor is how many workers share n items when up to threads may.
func WorkersFor(n, threads int) int {
	return max(1, min(threads, n/MinPerWorker))
}

// Split cuts n items into w contiguous parts: part t is [b[t], b[t+1]).
func Split(n, w int) []int {
	b := make([]int, w+1)
	for t := range b {
		b[t] = n * t / w
	}
	return b
}

// splitBuckets cuts the buckets whose starts are given (len = buckets+1) into w runs of about
// equal size, returned as bucket bounds.
func splitBuckets(start []int, w int) []int {
	nb := len(start) - 1
	n := start[nb]
	b := make([]int, w+1)
	b[w] = nb
	k := 0
	for t := 1; t < w; t++ {
		for k < nb && start[k] < n*t/w {
			k++
		}
		b[t] = k
	}
	return b
}

// ParallelRanges cuts [0, n) into contiguous ranges, one per worker (up to threads), and runs
// fn on each at once. A caller that makes every range's result depend only on the range gets
// the same bits for every number of workers.
func ParallelRanges(n, threads int, fn func(lo, hi int)) {
	w := WorkersFor(n, threads)
	b := Split(n, w)
	Parallel(w, func(t int) { fn(b[t], b[t+1]) })
}

// Parallel runs fn(0..w-1), each on its own goroutine but the last, and waits for all.
func Parallel(w int, fn func(t int)) {
	if w == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for t := 0; t < w-1; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(t)
		}()
	}
	fn(w - 1)
	wg.Wait()
}
