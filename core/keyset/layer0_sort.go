package keyset

import (
	"cmp"
	"kylix/core/kx"
	"math"
	"math/bits"
	"slices"
)

// SortLayer0 is a layer-0 member's merge of what its senders sent (layer0_pack.go): lists[g] are
// sender g's rows for this member (member me of degree d0), in layer-0 bucket order, and
// bounds[g] where each of the member's 2^b sub-ranges starts and ends in them (rowBounds). It
// returns the distinct keys of all rows, maps[g][r], the position of sender g's row r among
// them, and where each sub-range starts in the merged keys (2^b + 1 bounds). Inside each
// sub-range the keys are sorted, or with appearance in order of first appearance (sender
// order, then row order; hashTable.firsts, appearanceOrder).
//
// Each sub-range is a range of keys of its own, sorted on its own (sortRange): one counting
// pass on the top bits of the key's offset in the range, reading every sender's run of it in
// sender order, then each bucket sorted and written out while it is in cache. That is the radix
// sort of sortUniqueInto, but over a range a few times smaller than the whole key space, and
// the map it writes falls in the sub-range's rows only (a window of each sender's). Up to
// `threads` workers take whole sub-ranges, so the result does not depend on their number.
//
// The entries are taken from *buf when it is large enough (and become it otherwise).
func SortLayer0(lists [][]uint64, bounds [][]int, d0, me, threads int, appearance bool, buf *Layer0Scratch) (merged []uint64, maps [][]int32, mb []int, err error) {
	b := subBits(d0)
	nsub := 1 << b
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total > math.MaxInt32 {
		return nil, nil, nil, kx.Errorf(kx.CodeNoMem, "a layer-0 member would merge %d keys; plans index keys with 32 bits", total)
	}
	flat := make([]int32, total)
	maps = make([][]int32, len(lists))
	off := make([]int, len(lists))
	at := 0
	for g, l := range lists {
		off[g] = at
		maps[g] = flat[at : at+len(l) : at+len(l)]
		at += len(l)
	}
	// Sub-range s's entries take ent[es[s]:es[s+1]].
	es := make([]int, nsub+1)
	hashed := make([]bool, nsub) // merged by hashTable.firsts, not sorted
	sorts := false
	for s := 0; s < nsub; s++ {
		es[s+1] = es[s]
		for g := range lists {
			es[s+1] += bounds[g][s+1] - bounds[g][s]
		}
		hashed[s] = appearance && es[s+1]-es[s] <= HashMaxRows
		sorts = sorts || !hashed[s]
	}
	var ent []keyPos
	if sorts {
		if cap(buf.Ent) < total {
			buf.Ent = make([]keyPos, total)
		}
		ent = buf.Ent[:total]
	}
	ranges := make([][2]uint64, nsub) // start, width (0: 2^64)
	for s := range ranges {
		lo, _ := bucketStart(me<<b+s, d0, b)
		hi, _ := bucketStart(me<<b+s+1, d0, b) // 0 past the last bucket: width wraps to 2^64 - lo
		ranges[s] = [2]uint64{lo, hi - lo}
	}
	// Each sub-range writes its keys into merged from es[s] and its maps counted from 0; once
	// the counts are known the keys move down into place (in order: the regions overlap) and
	// the maps of each sub-range's rows (a window of every sender's) get the sub-range's base.
	uniq := make([]int, nsub+1)
	merged = make([]uint64, total)
	w := min(WorkersFor(total, threads), nsub)
	parts := splitBuckets(es, w)
	for len(buf.tabs) < w {
		buf.tabs = append(buf.tabs, new(hashTable))
	}
	Parallel(w, func(t int) {
		var scratch []keyPos
		runs := make([]rowRun, len(lists))
		for s := parts[t]; s < parts[t+1]; s++ {
			for g, l := range lists {
				runs[g] = rowRun{keys: l[bounds[g][s]:bounds[g][s+1]], at: off[g] + bounds[g][s]}
			}
			keys := merged[es[s]:es[s+1]]
			if hashed[s] {
				uniq[s+1] = buf.tabs[t].firsts(runs, ranges[s][0], ranges[s][1], es[s+1]-es[s], keys, flat)
				continue
			}
			uniq[s+1], scratch = sortRange(runs, ranges[s][0], ranges[s][1], ent[es[s]:es[s+1]], scratch, keys, flat, appearance)
			if appearance {
				appearanceOrder(runs, keys, flat)
			}
		}
	})
	mb = make([]int, nsub+1)
	for s := 0; s < nsub; s++ {
		mb[s+1] = mb[s] + uniq[s+1]
		copy(merged[mb[s]:mb[s+1]], merged[es[s]:es[s]+uniq[s+1]])
	}
	Parallel(w, func(t int) {
		for s := parts[t]; s < parts[t+1]; s++ {
			if base := int32(mb[s]); base != 0 {
				for g := range lists {
					m := maps[g][bounds[g][s]:bounds[g][s+1]]
					for i := range m {
						m[i] += base
					}
				}
			}
		}
	})
	return merged[:mb[nsub]:mb[nsub]], maps, mb, nil
}

// Layer0Scratch is SortLayer0's scratch, kept by the comm between configs so that each one does not
// page-fault in fresh arrays: the sort's entries, and a hash table per worker.
type Layer0Scratch struct {
	Ent  []keyPos
	tabs []*hashTable
}

// hashTable is an open-addressing table (linear probing) from key to place, for firsts.
type hashTable struct {
	slots []hashSlot
}

type hashSlot struct {
	k uint64
	v int32 // place + 1; 0: empty
}

// HashMaxRows bounds the rows of a sub-range that hashTable.firsts merges (a table of at most
// 4 MiB); larger ones are sorted, then put in order of first appearance (appearanceOrder). The
// table's probes are random: measured alternating builds (kylix_sparse, config ms), hashing
// won at 300K keys a rank (4 ranks: 17-29 against 28-34 sorting, tables of 2 MiB; 8 ranks:
// 48-56 against 61-65, 4 MiB) and lost at 2M (8 ranks, 16 MiB tables: 362-376 against
// 343-358). A variable so that tests can send small inputs down either path.
var HashMaxRows = 1 << 18

// firsts is the merge of one sub-range when nothing needs its keys sorted (a plan of one layer
// with in = out): the distinct keys of runs (all in [lo, lo+width), width 0: 2^64; rows of
// them in all) in order of first appearance, sender order then row order, written into keys,
// and each row's place among them into flat. It returns how many distinct keys there are. One
// pass, a probe per row into a table of at least as many slots as rows, addressed by the top
// bits of the key's offset in the range (uniform: the keys are hashes).
func (h *hashTable) firsts(runs []rowRun, lo, width uint64, rows int, keys []uint64, flat []int32) int {
	if rows == 0 {
		return 0
	}
	l := rangeBits(width)
	tb := bits.Len(uint(rows - 1))
	size := 1 << tb
	if cap(h.slots) < size {
		h.slots = make([]hashSlot, size)
	}
	tab := h.slots[:size]
	clear(tab)
	sh := max(l-tb, 0)
	mask := uint64(size - 1)
	next := int32(0)
	for _, r := range runs {
		m := flat[r.at : r.at+len(r.keys)]
		for i, k := range r.keys {
			slot := ((k - lo) >> sh) & mask
			for {
				e := &tab[slot]
				if e.v == 0 {
					e.k, e.v = k, next+1
					keys[next] = k
					m[i] = next
					next++
					break
				}
				if e.k == k {
					m[i] = e.v - 1
					break
				}
				slot = (slot + 1) & mask
			}
		}
	}
	return int(next)
}

// appearanceOrder puts a sub-range's distinct keys in order of first appearance (sender order,
// then row order) and maps the rows to them. sortRange has left in flat, for every row, the map
// index of the first row holding its key; the rows are walked in map-index order, so a first
// row takes the next place (its key read in stream from its run) and a later one the place its
// first row took. Then the first sender's rows map to increasing places, and so do the later
// senders' rows of keys no earlier sender had: where the keys are a set per sender, combining
// and gathering stream through those instead of landing at random (measured in configTop).
func appearanceOrder(runs []rowRun, keys []uint64, flat []int32) {
	next := int32(0)
	for _, r := range runs {
		m := flat[r.at : r.at+len(r.keys)]
		for i, k := range r.keys {
			if f := m[i]; int(f) == r.at+i {
				m[i] = next
				keys[next] = k
				next++
			} else {
				m[i] = flat[f] // f < r.at+i: placed already
			}
		}
	}
}

// rangeBits is how many low bits a key's offset in a range of this width (0: 2^64) takes.
func rangeBits(width uint64) int {
	if width == 0 {
		return 64
	}
	return bits.Len64(width - 1)
}

// rowRun is one sender's rows of a sub-range and where their map entries start.
type rowRun struct {
	keys []uint64
	at   int
}

// sortRange sorts the rows of runs, whose keys lie in [lo, lo+width) (width 0: 2^64), writes
// their distinct keys in ascending order into keys and each row's position among them into
// flat (at the row's map index), and returns how many distinct keys there are. With firsts it
// writes into flat instead, for appearanceOrder, the map index of the first row holding the
// row's key (and keys is not written). A counting pass on the top bits of the key's offset in
// the range moves the rows, as (offset, map index), into ent in sender order and row order;
// each bucket is then sorted (sortSmall) and written out while it is in L1. The first pass
// takes 8 bits, fewer write heads than pages the TLB holds, which measured best
// (docs/measurements.md). scratch is grown as needed and returned for the next call.
func sortRange(runs []rowRun, lo, width uint64, ent, scratch []keyPos, keys []uint64, flat []int32, firsts bool) (int, []keyPos) {
	l := rangeBits(width)
	nbits := min(8, l)
	sh := l - nbits
	var all [1<<8 + 1]int
	counts := all[:1<<nbits+1]
	for _, r := range runs {
		for _, k := range r.keys {
			counts[(k-lo)>>sh+1]++
		}
	}
	for q := 1; q < len(counts); q++ {
		counts[q] += counts[q-1]
	}
	for _, r := range runs {
		for i, k := range r.keys {
			q := (k - lo) >> sh
			ent[counts[q]] = keyPos{k - lo, int32(r.at + i)}
			counts[q]++
		}
	}
	// counts[q] is now the end of bucket q.
	var cnt [1<<11 + 1]int32
	u, start := 0, 0
	for q := 0; q < 1<<nbits; q++ {
		a := ent[start:counts[q]]
		start = counts[q]
		if len(a) > cap(scratch) {
			scratch = make([]keyPos, max(len(a), 2*cap(scratch)))
		}
		a = sortSmall(a, scratch[:len(a)], &cnt, sh)
		prev := ^uint64(0) // keys of different buckets differ: a bucket's first row is new
		if len(a) > 0 {
			prev = a[0].k + 1
		}
		if firsts { // for appearanceOrder: each row's first row (the least map index: stable)
			first := int32(0)
			for _, e := range a {
				if e.k != prev {
					first = e.p
					u++
				}
				prev = e.k
				flat[e.p] = first
			}
			continue
		}
		// Branch-free (half the rows repeat a key of another sender's at random): every row
		// writes its key into the next free slot, and only a new key takes the slot; a repeat
		// leaves the next slot written, which exists (fewer keys than rows) and is written
		// again or unused.
		for _, e := range a {
			keys[u] = e.k + lo
			u += BoolInt(e.k != prev)
			prev = e.k
			flat[e.p] = int32(u - 1)
		}
	}
	return u, scratch
}

// sortSmall sorts a, whose keys agree above bit `shift`, stably, and returns the sorted rows:
// a itself, or scratch (as long as a). As sortBucket, without its copy back: a counting pass on
// the next bits (about two keys per sub-bucket) into scratch, then insertion sort there. cnt
// is the counting pass's scratch (only the part used is cleared).
func sortSmall(a, scratch []keyPos, cnt *[1<<11 + 1]int32, shift int) []keyPos {
	n := len(a)
	if n <= 32 || shift < 12 {
		if n <= 32 {
			insertionSort(a)
		} else { // a range too narrow for a counting pass (not met at real degrees)
			slices.SortStableFunc(a, func(x, y keyPos) int { return cmp.Compare(x.k, y.k) })
		}
		return a
	}
	nb := 1
	for n>>nb > 2 && nb < 11 {
		nb++
	}
	s := shift - nb
	mask := uint64(1)<<nb - 1
	counts := cnt[:1<<nb+1]
	clear(counts)
	for _, kp := range a {
		counts[(kp.k>>s)&mask+1]++
	}
	for q := 1; q <= 1<<nb; q++ {
		counts[q] += counts[q-1]
	}
	for _, kp := range a {
		q := (kp.k >> s) & mask
		scratch[counts[q]] = kp
		counts[q]++
	}
	if maxRun(counts[:1<<nb]) > 256 { // many distinct keys in one sub-bucket: not uniform input
		slices.SortStableFunc(scratch, func(x, y keyPos) int { return cmp.Compare(x.k, y.k) })
		return scratch
	}
	insertionSort(scratch)
	return scratch
}
