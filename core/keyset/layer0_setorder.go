package keyset

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/pierrec/lz4/v4"
)

// Set order: the layout of a sender's rows for a member its layer-0 config message goes to
// compressed.
//
// A compressed list is a set, sorted; a rows message must also say which row holds which key.
// In caller order that is a permutation of the set, which costs log2(n!) bits however it is
// coded (about 2 bytes a row at the sizes met: more than the compressed set itself), so
// compressed configs shrank 2x where the index lists shrink 6-8x. So the sender lays out the
// rows it sends compressed in the one order the receiver can rebuild from the set alone: bucket
// by bucket (layer-0 bucket order stays), ascending original index inside a bucket (the order
// the codec decodes them in), a repeated index's rows adjacent and in caller order. The message
// then carries the set and, only when some index repeats, a bitmap of the rows that repeat the
// row before (lz4: nearly nothing when repeats are rare; stored as it is when lz4 would make a
// byte carry more than repeatsPerByte repeats, so that rows cost the receiver bytes). The
// sender's Dst follows the rows, so reduces fill and answer the same rows; filling them from
// caller order becomes a scatter inside each bucket (caller order that is already ascending
// moves nothing). A repeated index's rows keep their caller order, so the member combines
// exactly as with caller order: results are bitwise those of an uncompressed config.

// SetOrder puts the rows of every member g with pack[g] (layer-0 degree d0) in set order, and
// Dst with them; the other members' rows keep caller order. Workers take whole buckets, so the
// result does not depend on their number.
func SetOrder(t *Layer0Rows, d0 int, pack []bool, threads int) {
	b := subBits(d0)
	var jobs []int // buckets of more than one row to order
	rows := 0
	for g, p := range pack {
		for q := g << b; p && q < (g+1)<<b; q++ {
			if n := t.bounds[q+1] - t.bounds[q]; n > 1 {
				jobs, rows = append(jobs, q), rows+n
			}
		}
	}
	if len(jobs) == 0 {
		return
	}
	remap := make([]int32, len(t.Keys)) // old row -> new row; entries of unmoved rows stay -1
	for i := range remap {
		remap[i] = -1
	}
	w := min(WorkersFor(rows, threads), len(jobs))
	moved := make([]bool, w)
	Parallel(w, func(k int) {
		var s setOrderScratch
		for j := k; j < len(jobs); j += w {
			lo, hi := t.bounds[jobs[j]], t.bounds[jobs[j]+1]
			if s.order(t.Keys[lo:hi], remap[lo:hi], lo) {
				moved[k] = true
			}
		}
	})
	if !slices.Contains(moved, true) {
		return
	}
	ParallelRanges(len(t.Dst), threads, func(lo, hi int) {
		for j, r := range t.Dst[lo:hi] {
			if m := remap[r]; m >= 0 {
				t.Dst[lo+j] = m
			}
		}
	})
}

type setOrderScratch struct {
	x, tmp, keys []uint64
}

// order puts one bucket's rows (keys, the first at row base) in ascending original index,
// stably, and notes each moved row's new row in remap. It reports whether any row moved.
func (s *setOrderScratch) order(keys []uint64, remap []int32, base int) bool {
	n := len(keys)
	s.x = growU64(s.x, n)
	x := s.x
	var all uint64
	sorted := true
	for i, k := range keys {
		v := Unhash(k)
		x[i], all = v, all|v
		sorted = sorted && (i == 0 || v >= x[i-1])
	}
	if sorted {
		return false
	}
	s.keys = growU64(s.keys, n)
	old := s.keys
	copy(old, keys)
	ib, ob := bits.Len(uint(n-1)), bits.Len64(all)
	if ib+ob <= 64 { // index and row in one word: a radix sort on the index bits, stable
		for i := range x {
			x[i] = x[i]<<ib | uint64(i)
		}
		s.tmp = growU64(s.tmp, n)
		mask := uint64(1)<<ib - 1
		for p, v := range radixSortBits(x, s.tmp, ib, ob) {
			i := int(v & mask)
			keys[p] = old[i]
			remap[i] = int32(base + p)
		}
		return true
	}
	ord := make([]int32, n) // indices too wide to share a word with the row (beyond 2^40 or so)
	for i := range ord {
		ord[i] = int32(i)
	}
	slices.SortStableFunc(ord, func(a, b int32) int { return cmp.Compare(x[a], x[b]) })
	for p, i := range ord {
		keys[p] = old[i]
		remap[i] = int32(base + p)
	}
	return true
}

// repeatsPerByte bounds the repeated rows of one side of a compressed rows message by the
// payload bytes of its repeat bitmap. A raw bitmap holds 8 rows a byte, so an honest sender can
// always meet it (appendRows stores the bitmap raw when lz4 would pack more repeats into a
// byte); without it a forged row count behind a few bytes of lz4 made the receiver allocate 8
// bytes a row for about 2,000 rows a byte.
const repeatsPerByte = 8

// appendRows appends rows (layer-0 rows in set order) compressed: the list of their distinct
// keys, then, when some row repeats the one before, the repeat bitmap (bit r of byte r/8: row
// r holds row r-1's key) as one chunk of width 1, of at least one payload byte per
// repeatsPerByte repeats. It returns the bytes of the list and of the bitmap, and how many
// distinct keys there are.
func (e *IndexEncoder) appendRows(dst []byte, rows []uint64) (b []byte, list, reps, set int) {
	e.set = e.set[:0]
	var bm []byte
	for r, k := range rows {
		if r > 0 && k == rows[r-1] {
			if bm == nil {
				bm = growBytesLen(&e.bits, (len(rows)+7)/8)
				clear(bm)
			}
			bm[r/8] |= 1 << (r % 8)
			continue
		}
		e.set = append(e.set, k)
	}
	h := len(dst)
	dst = e.AppendList(dst, e.set)
	list = len(dst) - h
	if bm != nil {
		repeats := len(rows) - len(e.set)
		dst = e.appendChunk(dst, bm, 1, (repeats+repeatsPerByte-1)/repeatsPerByte)
	}
	return dst, list, len(dst) - h - list, len(e.set)
}

// growBytesLen returns *b resized to n bytes (contents not kept), keeping the array.
func growBytesLen(b *[]byte, n int) []byte {
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	return (*b)[:n]
}

// decodeRows is appendRows undone: n distinct keys in list, nrows rows in all, reps the
// repeat bitmap's chunk (empty when no row repeats). The rows come back in set order for
// layer-0 degree d0, in a new slice. Everything is checked before the rows are allocated: the
// list's framing (checkList: n is at most codecMaxExpansion keys a byte of list), the bitmap's
// (at most repeatsPerByte repeats a byte of it), and that the bitmap marks exactly nrows-n
// repeats with row 0 not among them. So a side allocates 8 bytes a row, nrows <= n + 8·len(reps),
// and scratch of 8 bytes a key and a bit a row, all bounded by the bytes received.
func (d *IndexDecoder) decodeRows(list, reps []byte, n, nrows, d0, from int) ([]uint64, error) {
	bad := func(why string, args ...any) error { return corrupt(from, n, len(list)+len(reps), why, args...) }
	if err := checkList(list, n, from); err != nil {
		return nil, err
	}
	var bm []byte
	switch {
	case nrows < n:
		return nil, bad("%d rows for %d distinct keys", nrows, n)
	case len(reps) == 0 && nrows != n:
		return nil, bad("%d rows and no repeats", nrows)
	case len(reps) > 0:
		if len(reps) < codecHdr || nrows == n {
			return nil, bad("a repeat bitmap of %d bytes for %d rows", len(reps), nrows)
		}
		mode, w, size := int(reps[0]>>4), int(reps[0]&15), int(binary.LittleEndian.Uint32(reps[1:]))
		want := (nrows + 7) / 8
		payload := reps[codecHdr:]
		if w != 1 || mode > codecModeLZ4 || size != len(payload) {
			return nil, bad("a repeat bitmap of mode %d, width %d, %d payload bytes in %d", mode, w, size, len(payload))
		}
		if uint64(nrows-n) > repeatsPerByte*uint64(size) {
			return nil, bad("%d repeated rows in a repeat bitmap of %d payload bytes (at most %d a byte)", nrows-n, size, repeatsPerByte)
		}
		bm = payload
		if mode == codecModeLZ4 {
			if uint64(want) > codecMaxExpansion*uint64(size) {
				return nil, bad("a repeat bitmap of %d bytes from %d lz4 bytes, beyond lz4's expansion", want, size)
			}
			bm = growBytesLen(&d.bits, want)
			if k, err := lz4.UncompressBlock(payload, bm); err != nil || k != want {
				return nil, bad("the repeat bitmap does not decompress to %d bytes", want)
			}
		} else if size != want {
			return nil, bad("the repeat bitmap holds %d bytes, want %d", size, want)
		}
		if bm[0]&1 != 0 {
			return nil, bad("row 0 repeats")
		}
		if k := nrows - repeatCount(bm, nrows); k != n {
			return nil, bad("%d of %d distinct keys in the rows", k, n)
		}
	}
	d.tmp = growU64(d.tmp, n)
	x := d.tmp[:n]
	if err := d.decodeSorted(list, x, from); err != nil {
		return nil, err
	}
	// The set in set order: ascending original index (as decoded), hashed, partitioned by
	// bucket stably, into the last n rows; the rows then fill from the front, each distinct
	// row taking the next of them (a row is written only once the set entry there was read:
	// row r follows at most nrows-n repeats, so r < nrows-n+k while k set entries are read).
	b := subBits(d0)
	cnt := make([]int, d0<<b+1)
	for i, v := range x {
		k := Hash(v)
		x[i] = k
		cnt[layer0Bucket(k, d0, b)+1]++
	}
	for q := 1; q < len(cnt); q++ {
		cnt[q] += cnt[q-1]
	}
	rows := make([]uint64, nrows)
	set := rows[nrows-n:]
	for _, k := range x {
		q := layer0Bucket(k, d0, b)
		set[cnt[q]] = k
		cnt[q]++
	}
	if bm == nil {
		return rows, nil
	}
	k := nrows - n
	for r := range rows {
		if bm[r/8]>>(r%8)&1 != 0 {
			rows[r] = rows[r-1]
			continue
		}
		rows[r] = rows[k]
		k++
	}
	return rows, nil
}

// repeatCount is the number of bits set among the first nrows of bitmap bm.
func repeatCount(bm []byte, nrows int) int {
	c := 0
	full := nrows / 8
	for _, v := range bm[:full] {
		c += bits.OnesCount8(v)
	}
	if r := nrows % 8; r != 0 {
		c += bits.OnesCount8(bm[full] & (1<<r - 1))
	}
	return c
}
