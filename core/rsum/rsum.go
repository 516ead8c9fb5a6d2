package rsum

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	// Acc32Bytes and Acc64Bytes are the sizes of one accumulator: two (F32) or three (F64)
	// 64-bit words, each a limb with a slice of the header in its top bits. See doc.go.
	Acc32Bytes = 8 * limbs32
	Acc64Bytes = 8 * limbs64

	limbs32 = 2
	limbs64 = 3

	// binBits is the payload width of a limb: a part of one contribution is below 2^32.
	binBits = 32
	binMask = 1<<binBits - 1

	// A limb is a two's-complement integer of limbBits bits; the header fills the bits above,
	// 4 a word for F64 (12 bits, a top bin up to 65), 5 for F32 (10 bits, up to 8). What is
	// left above the payload is carry headroom: 2^27 (F64) and 2^26 (F32) contributions to one
	// index never overflow a limb.
	limbBits64 = 60
	limbBits32 = 59

	// Header: sticky flags in the low bits, the top bin above them. Zero bytes are the
	// identity: top bin 0 (the floor), no flags, zero limbs.
	flagNaN  = 1 << 0
	flagPInf = 1 << 1
	flagNInf = 1 << 2
	// flagNegZero and flagOther keep IEEE's sign of a zero sum without depending on order:
	// the sum is -0 only when every contribution was -0.
	flagNegZero = 1 << 3
	flagOther   = 1 << 4
	flagMask    = 1<<5 - 1
	topShift    = 5
)

var le = binary.LittleEndian

// word packs a limb and a header slice into a word; limb and header64/header32 undo it.
func word(limb int64, hdr uint64, lb uint) uint64 {
	return uint64(limb)&(1<<lb-1) | hdr<<lb
}

func limb(w uint64, lb uint) int64 { return int64(w<<(64-lb)) >> (64 - lb) }

// header64 and header32 gather the header slices of an accumulator's words.
func header64(w0, w1, w2 uint64) uint64 {
	return w0>>limbBits64 | w1>>limbBits64<<(64-limbBits64) | w2>>limbBits64<<(2*(64-limbBits64))
}

func header32(w0, w1 uint64) uint64 {
	return w0>>limbBits32 | w1>>limbBits32<<(64-limbBits32)
}

// put64 and put32 write limbs and header into an accumulator.
func put64(a []byte, h uint64, l0, l1, l2 int64) {
	_ = a[Acc64Bytes-1]
	const n = 64 - limbBits64
	le.PutUint64(a, word(l0, h&(1<<n-1), limbBits64))
	le.PutUint64(a[8:], word(l1, h>>n&(1<<n-1), limbBits64))
	le.PutUint64(a[16:], word(l2, h>>(2*n), limbBits64))
}

func put32(a []byte, h uint64, l0, l1 int64) {
	_ = a[Acc32Bytes-1]
	const n = 64 - limbBits32
	le.PutUint64(a, word(l0, h&(1<<n-1), limbBits32))
	le.PutUint64(a[8:], word(l1, h>>n, limbBits32))
}

// AccBytes returns the accumulator bytes per value: 24 for F64, 16 for F32.
func AccBytes(isF64 bool) int {
	if isF64 {
		return Acc64Bytes
	}
	return Acc32Bytes
}

// Identity sets every accumulator in acc to the empty sum (zero bytes).
func Identity(acc []byte) { clear(acc) }

// special returns the header of a zero, infinite or NaN contribution: flags only, no limbs,
// and the top bin at the floor, so the top bin stays the largest bin of the finite nonzero
// contributions.
func special(neg, isZero, isInf bool) uint64 {
	h := uint64(flagNaN | flagOther)
	switch {
	case isZero && neg:
		h = flagNegZero
	case isZero:
		h = flagOther
	case isInf && neg:
		h = flagNInf | flagOther
	case isInf:
		h = flagPInf | flagOther
	}
	return h
}

// place splits a finite nonzero value, given its biased exponent e and stored fraction m, at
// the 32-bit bin boundaries: it returns the top bin (the bin of the leading bit), the value's
// part in that bin, and the rest of the significand left-aligned in a word, so that its top
// and bottom halves are the parts in the next two bins down. Positions count from the lowest
// subnormal bit; subnormals share the lowest normal exponent, without the implicit bit.
func place(e, m, implicit uint64) (top, part0, rest uint64) {
	pos := uint64(0)
	if e != 0 {
		pos = e - 1
		m |= implicit
	}
	lz := uint64(bits.LeadingZeros64(m))
	lead := pos + 63 - lz // position of the leading bit
	o := lead % binBits   // its offset in the top bin: the top part has o+1 bits
	u := m << (lz & 63)   // left-aligned; the masks tell the compiler the shifts are below 64
	return lead / binBits, u >> ((63 - o) & 63), u << ((o + 1) & 63)
}

// FromF64 writes the accumulator of each value of vals into acc (len(acc) must be
// len(vals)*Acc64Bytes). Exact: a float64 spans at most three 32-bit bins.
func FromF64(acc []byte, vals []float64) {
	acc = acc[:len(vals)*Acc64Bytes]
	for i, x := range vals {
		w0, w1, w2, ok := words64(math.Float64bits(x))
		if !ok {
			w0, w1, w2 = slowWords64(math.Float64bits(x))
		}
		a := acc[i*Acc64Bytes : i*Acc64Bytes+Acc64Bytes : i*Acc64Bytes+Acc64Bytes]
		le.PutUint64(a, w0)
		le.PutUint64(a[8:], w1)
		le.PutUint64(a[16:], w2)
	}
}

// words64 returns the packed words of a normal float64's accumulator, with ok false for a zero,
// subnormal, infinity or NaN (slowWords64 has those). It is split, place and put64 specialised
// to the common case, small enough to inline into the loops: the leading bit of a normal value
// is its implicit bit, so its position is e+51 without a leading-zero count, and the header is
// flagOther with the top bin, whose 4-bit slices are known (0 in word 0: no other flag).
func words64(b uint64) (w0, w1, w2 uint64, ok bool) {
	e := b >> 52 & 0x7ff
	lead := e + 51 // position of the implicit bit: (e-1) + 52
	o := lead % binBits
	u := (b<<11 | 1<<63) // the significand left-aligned, as place's u
	p0 := u >> ((63 - o) & 63)
	rest := u << ((o + 1) & 63)
	neg := -int64(b >> 63)
	const lm = 1<<limbBits64 - 1
	top := lead / binBits
	w0 = uint64((int64(p0)^neg)-neg) & lm
	w1 = uint64((int64(rest>>binBits)^neg)-neg)&lm | (flagOther>>4|top%8<<1)<<limbBits64
	w2 = uint64((int64(rest&binMask)^neg)-neg)&lm | top/8<<limbBits64
	return w0, w1, w2, e-1 < 0x7fe
}

// slowWords64 is words64 for any float64, through split and put64.
func slowWords64(b uint64) (w0, w1, w2 uint64) {
	h, p0, rest, neg := split(b, 52, 63)
	var a [Acc64Bytes]byte
	put64(a[:], h, (int64(p0)^neg)-neg, (int64(rest>>binBits)^neg)-neg, (int64(rest&binMask)^neg)-neg)
	return le.Uint64(a[:]), le.Uint64(a[8:]), le.Uint64(a[16:])
}

// words32 is words64 for a normal float32: implicit bit at position e+22, 5-bit header slices
// (flagOther is bit 4 of word 0's slice, the top bin all of word 1's).
func words32(b uint32) (w0, w1 uint64, ok bool) {
	e := uint64(b >> 23 & 0xff)
	lead := e + 22
	o := lead % binBits
	u := uint64(b)<<40 | 1<<63
	p0 := u >> ((63 - o) & 63)
	rest := u << ((o + 1) & 63)
	neg := -int64(b >> 31)
	const lm = 1<<limbBits32 - 1
	w0 = uint64((int64(p0)^neg)-neg)&lm | flagOther<<limbBits32
	w1 = uint64((int64(rest>>binBits)^neg)-neg)&lm | lead/binBits<<limbBits32
	return w0, w1, e-1 < 0xfe
}

// slowWords32 is words32 for any float32.
func slowWords32(b uint32) (w0, w1 uint64) {
	h, p0, rest, neg := split(uint64(b), 23, 31)
	var a [Acc32Bytes]byte
	put32(a[:], h, (int64(p0)^neg)-neg, (int64(rest>>binBits)^neg)-neg)
	return le.Uint64(a[:]), le.Uint64(a[8:])
}

// split decodes the bits b of a float with fracBits stored fraction bits and the sign at
// signBit into the header of its accumulator, its parts in the top bin and below (see place)
// and neg, -1 for a negative finite value, else 0 (x^-1 - -1 == -x negates without a branch).
// Zeros, infinities and NaNs have flags only (see special).
func split(b uint64, fracBits, signBit uint) (h, p0, rest uint64, neg int64) {
	e := b >> fracBits & (1<<(signBit-fracBits) - 1)
	m := b & (1<<fracBits - 1)
	isNeg := b>>signBit != 0
	if e == 1<<(signBit-fracBits)-1 || b<<(64-signBit) == 0 {
		return special(isNeg, b<<(64-signBit) == 0, m == 0), 0, 0, 0
	}
	top, p0, rest := place(e, m, 1<<fracBits)
	return top<<topShift | flagOther, p0, rest, -int64(b >> signBit)
}

// FromF32 writes the accumulator of each value of vals into acc (len(acc) must be
// len(vals)*Acc32Bytes). Exact: a float32 spans at most two 32-bit bins.
func FromF32(acc []byte, vals []float32) {
	acc = acc[:len(vals)*Acc32Bytes]
	for i, x := range vals {
		w0, w1, ok := words32(math.Float32bits(x))
		if !ok {
			w0, w1 = slowWords32(math.Float32bits(x))
		}
		a := acc[i*Acc32Bytes : i*Acc32Bytes+Acc32Bytes : i*Acc32Bytes+Acc32Bytes]
		le.PutUint64(a, w0)
		le.PutUint64(a[8:], w1)
	}
}

// Add adds src into dst element by element (dst[i] += src[i]); both hold the same number of
// accumulators of the given type. The operation is exactly associative and commutative. dst
// and src may be the same slice (doubling) but must not otherwise overlap.
func Add(isF64 bool, dst, src []byte) {
	if len(dst) != len(src) || len(dst)%AccBytes(isF64) != 0 {
		panic("rsum: Add: dst and src lengths differ or are not whole accumulators")
	}
	if isF64 {
		addRows64(dst, src, nil)
	} else {
		addRows32(dst, src, nil)
	}
}

// AddScatter adds src's j-th accumulator into dst's idx[j]-th: dst[idx[j]] += src[j].
// Repeated indices accumulate; an index out of range panics.
func AddScatter(isF64 bool, dst, src []byte, idx []int32) {
	if isF64 {
		addRows64(dst, src[:len(idx)*Acc64Bytes], idx)
	} else {
		addRows32(dst, src[:len(idx)*Acc32Bytes], idx)
	}
}

// AddScatterF64 adds each value into an accumulator of dst: dst[idx[j]] += vals[j]. It is
// FromF64 and AddScatter without a caller's buffer, for combining repeated indices on one
// rank straight from the caller's values.
func AddScatterF64(dst []byte, vals []float64, idx []int32) {
	addScatter64(dst, vals, idx, len(dst)/Acc64Bytes)
}

// AddScatterF32 is AddScatterF64 for F32.
func AddScatterF32(dst []byte, vals []float32, idx []int32) {
	addScatter32(dst, vals, idx, len(dst)/Acc32Bytes)
}

// AddScatterF64Fresh is AddScatterF64 on accumulators of which those from row fresh on hold
// no sum yet (any bytes: they are never read as sums). The first value into such a row starts
// it, as if the row were the empty sum; rows skipped over (below a started one) are set to the
// empty sum. It returns the new bound, one past the highest row started (or fresh).
//
// The merged rows of a plan of one layer come in order of first appearance, so they start in
// order without gaps: the vector needs no clearing pass before the sum (Identity writes every
// row once more), and a row's first value is written without reading a sum from it.
func AddScatterF64Fresh(dst []byte, vals []float64, idx []int32, fresh int) int {
	return addScatter64(dst, vals, idx, fresh)
}

// AddScatterF32Fresh is AddScatterF64Fresh for F32.
func AddScatterF32Fresh(dst []byte, vals []float32, idx []int32, fresh int) int {
	return addScatter32(dst, vals, idx, fresh)
}

// scatterBlock is how many values addScatter64 adds between two prefetches: the rows of the
// block after next are asked for while this block adds.
const scatterBlock = 16

func addScatter64(dst []byte, vals []float64, idx []int32, fresh int) int {
	return addScatter(dst, vals, idx, fresh, Acc64Bytes, addValues64Asm, addValues64Go)
}

// addScatter folds vals into dst's rows (rows of ab bytes) with asm where the assembly loops
// run (they prefetch as they go), else with goLoop a block at a time, the rows of the block
// after next prefetched while this one adds.
func addScatter[T float32 | float64](dst []byte, vals []T, idx []int32, fresh, ab int, asm, goLoop func([]byte, []T, []int32, int) int) int {
	idx = idx[:len(vals)]
	dst = dst[:len(dst):len(dst)] // a row past the end panics, even within dst's capacity
	if useAsm {
		return asm(dst, vals, idx, fresh)
	}
	if len(vals) == 0 {
		return fresh
	}
	_ = dst[len(dst)-1]
	prefetchRows(&dst[0], idx[:min(len(idx), 2*scatterBlock)], ab)
	for lo := 0; lo < len(vals); lo += scatterBlock {
		hi := min(lo+scatterBlock, len(vals))
		if p := hi + scatterBlock; p < len(idx) {
			prefetchRows(&dst[0], idx[p:min(len(idx), p+scatterBlock)], ab)
		}
		fresh = goLoop(dst, vals[lo:hi], idx[lo:hi], fresh)
	}
	return fresh
}

// addValues64Go adds each value into its row of dst, dst[idx[j]] += vals[j], without a branch on
// the row: words64 inline, then the general aligned add on the packed words (add64Shift's
// arithmetic: the window with the higher top bin is kept, the other's limbs move down by the
// difference, at most 3 as past that they all fall below the window, and add in; the flags
// OR). An empty row, top bin 0, needs no case of its own: its zero limbs shift out. Whether a
// row is empty or holds the value's top bin is a coin toss when ranks' contributions meet, and
// a mispredicted branch on a row that missed the cache also holds back the rows after it.
//
// Rows from fresh on hold no sum yet (AddScatterF64Fresh): the first value into one reads it
// as empty, by a mask on the words loaded (no branch), and moves fresh past it.
func addValues64Go(dst []byte, vals []float64, idx []int32, fresh int) int {
	const lm = 1<<limbBits64 - 1
	idx = idx[:len(vals)]
	var t [8]uint64 // t[3:6]: the lower window's words; t[0:3] stay zero (shifted-in limbs)
	for j, x := range vals {
		r := int(idx[j])
		if r > fresh { // rows skipped over: the empty sum (never, in order of first appearance)
			clear(dst[fresh*Acc64Bytes : r*Acc64Bytes])
			fresh = r
		}
		o := r * Acc64Bytes
		d := dst[o : o+Acc64Bytes : o+Acc64Bytes]
		// words64, written out (the compiler would not inline it here).
		b := math.Float64bits(x)
		e := b >> 52 & 0x7ff
		lead := e + 51
		u := b<<11 | 1<<63
		p0 := u >> ((63 - lead%binBits) & 63)
		rest := u << ((lead%binBits + 1) & 63)
		neg := -int64(b >> 63)
		tb := lead / binBits
		b0 := uint64((int64(p0)^neg)-neg) & lm
		b1 := uint64((int64(rest>>binBits)^neg)-neg)&lm | (flagOther>>4|tb%8<<1)<<limbBits64
		b2 := uint64((int64(rest&binMask)^neg)-neg)&lm | tb/8<<limbBits64
		if e-1 >= 0x7fe { // zero, subnormal, Inf, NaN
			b0, b1, b2 = slowWords64(b)
			tb = b1>>61 | b2>>60<<3
		}
		started := uint64(int64(r-fresh) >> 63) // all ones when row r holds a sum
		fresh += int(^started & 1)
		a0, a1, a2 := le.Uint64(d)&started, le.Uint64(d[8:])&started, le.Uint64(d[16:])&started
		ta := a1>>61 | a2>>60<<3
		// The higher window h and the lower l, selected by a mask (no branch).
		diff := int64(ta - tb)
		m := uint64(diff >> 63) // all ones when b's window is the higher
		x0, x1, x2 := (a0^b0)&m, (a1^b1)&m, (a2^b2)&m
		h0, h1, h2 := a0^x0, a1^x1, a2^x2
		t[3], t[4], t[5] = b0^x0, b1^x1, b2^x2
		k := uint64((diff ^ int64(m)) - int64(m)) // |ta - tb|
		k = 3 ^ (k^3)&uint64(int64(k-3)>>63)      // min(k, 3), which the compiler branches on
		s0, s1, s2 := t[(3-k)&7], t[(4-k)&7], t[(5-k)&7]
		le.PutUint64(d, (h0+s0)&lm|(a0|b0)&^lm)
		le.PutUint64(d[8:], (h1+s1)&lm|(a1|b1)&(1<<limbBits64)|h1&^(lm|1<<limbBits64))
		le.PutUint64(d[16:], (h2+s2)&lm|h2&^lm)
	}
	return fresh
}

// addScatter32 is addScatter64 for F32 (rows of 16 bytes).
func addScatter32(dst []byte, vals []float32, idx []int32, fresh int) int {
	return addScatter(dst, vals, idx, fresh, Acc32Bytes, addValues32Asm, addValues32Go)
}

// addValues32Go is addValues64Go for F32: two limbs, so the lower window moves down by at most 2;
// the flags are word 0's header slice, the top bin word 1's.
func addValues32Go(dst []byte, vals []float32, idx []int32, fresh int) int {
	const lm = 1<<limbBits32 - 1
	idx = idx[:len(vals)]
	var t [4]uint64 // t[2:4]: the lower window's words; t[0:2] stay zero (shifted-in limbs)
	for j, x := range vals {
		r := int(idx[j])
		if r > fresh { // rows skipped over: the empty sum
			clear(dst[fresh*Acc32Bytes : r*Acc32Bytes])
			fresh = r
		}
		o := r * Acc32Bytes
		d := dst[o : o+Acc32Bytes : o+Acc32Bytes]
		// words32, written out.
		b := math.Float32bits(x)
		e := uint64(b >> 23 & 0xff)
		lead := e + 22
		u := uint64(b)<<40 | 1<<63
		p0 := u >> ((63 - lead%binBits) & 63)
		rest := u << ((lead%binBits + 1) & 63)
		neg := -int64(b >> 31)
		b0 := uint64((int64(p0)^neg)-neg)&lm | flagOther<<limbBits32
		b1 := uint64((int64(rest>>binBits)^neg)-neg)&lm | lead/binBits<<limbBits32
		if e-1 >= 0xfe { // zero, subnormal, Inf, NaN
			b0, b1 = slowWords32(b)
		}
		started := uint64(int64(r-fresh) >> 63) // all ones when row r holds a sum
		fresh += int(^started & 1)
		a0, a1 := le.Uint64(d)&started, le.Uint64(d[8:])&started
		diff := int64(a1>>limbBits32 - b1>>limbBits32)
		m := uint64(diff >> 63) // all ones when b's window is the higher
		x0, x1 := (a0^b0)&m, (a1^b1)&m
		h0, h1 := a0^x0, a1^x1
		t[2], t[3] = b0^x0, b1^x1
		k := uint64((diff ^ int64(m)) - int64(m)) // |ta - tb|
		k = 2 ^ (k^2)&uint64(int64(k-2)>>63)      // min(k, 2)
		s0, s1 := t[(2-k)&3], t[(3-k)&3]
		le.PutUint64(d, (h0+s0)&lm|(a0|b0)&^lm)
		le.PutUint64(d[8:], (h1+s1)&lm|h1&^lm)
	}
	return fresh
}

// addSame adds two words of accumulators with the same top bin: the limbs add modulo
// 2^lb in place and, the top bins being equal, the merged header is the OR of the slices.
func addSame(a, b uint64, lb uint) uint64 {
	const all = ^uint64(0)
	return (a+b)&(all>>(64-lb)) | (a|b)&(all<<lb)
}

// addRows64 adds src's accumulators into dst's, the j-th into the j-th or, with idx, into the
// idx[j]-th.
func addRows64(dst, src []byte, idx []int32) {
	for j := range len(src) / Acc64Bytes {
		o := j * Acc64Bytes
		if idx != nil {
			o = int(idx[j]) * Acc64Bytes
		}
		s := src[j*Acc64Bytes : j*Acc64Bytes+Acc64Bytes : j*Acc64Bytes+Acc64Bytes]
		addWords64(dst[o:o+Acc64Bytes:o+Acc64Bytes], le.Uint64(s), le.Uint64(s[8:]), le.Uint64(s[16:]))
	}
}

// addWords64 adds the accumulator with words b0, b1, b2 into d. The common case, both windows
// on the same top bin, works on the packed words here (small enough to inline: a call per
// value costs as much as the work); the others go to add64Shift. An empty d (zero bytes, top
// bin 0) takes the same-bin path when b's top bin is 0 too, where adding to zero gives b's
// bytes anyway, so only the other branch needs to test for it.
func addWords64(d []byte, b0, b1, b2 uint64) {
	a0, a1, a2 := le.Uint64(d), le.Uint64(d[8:]), le.Uint64(d[16:])
	// The top bin is header bits 5-11: the top 3 bits of word 1 and the top 4 of word 2.
	if (a1^b1)>>61|(a2^b2)>>60 != 0 {
		add64Shift(d, a0, a1, a2, b0, b1, b2)
		return
	}
	le.PutUint64(d, addSame(a0, b0, limbBits64))
	le.PutUint64(d[8:], addSame(a1, b1, limbBits64))
	le.PutUint64(d[16:], addSame(a2, b2, limbBits64))
}

// addRows32 is addRows64 for F32.
func addRows32(dst, src []byte, idx []int32) {
	for j := range len(src) / Acc32Bytes {
		o := j * Acc32Bytes
		if idx != nil {
			o = int(idx[j]) * Acc32Bytes
		}
		s := src[j*Acc32Bytes : j*Acc32Bytes+Acc32Bytes : j*Acc32Bytes+Acc32Bytes]
		addWords32(dst[o:o+Acc32Bytes:o+Acc32Bytes], le.Uint64(s), le.Uint64(s[8:]))
	}
}

// addWords32 is addWords64 for F32.
func addWords32(d []byte, b0, b1 uint64) {
	a0, a1 := le.Uint64(d), le.Uint64(d[8:])
	// The top bin is header bits 5-9: the top 5 bits of word 1.
	if (a1^b1)>>59 != 0 {
		add32Shift(d, a0, a1, b0, b1)
		return
	}
	le.PutUint64(d, addSame(a0, b0, limbBits32))
	le.PutUint64(d[8:], addSame(a1, b1, limbBits32))
}

// add64Shift aligns the two windows on the higher top bin and adds limb by limb; the limbs of
// the lower window that fall below the higher one's bottom are dropped. No carries move
// between limbs, so every kept limb is the plain sum of the same per-contribution parts
// whatever the grouping (doc.go has the argument). addRows64 handles equal top bins itself;
// the case stays here so that the function is right for any pair.
func add64Shift(d []byte, a0, a1, a2, b0, b1, b2 uint64) {
	if a0|a1|a2 == 0 { // the empty sum (zero bytes) is the identity: the sum is b, bit for bit
		le.PutUint64(d, b0)
		le.PutUint64(d[8:], b1)
		le.PutUint64(d[16:], b2)
		return
	}
	hd, d0, d1, d2 := header64(a0, a1, a2), limb(a0, limbBits64), limb(a1, limbBits64), limb(a2, limbBits64)
	hs, s0, s1, s2 := header64(b0, b1, b2), limb(b0, limbBits64), limb(b1, limbBits64), limb(b2, limbBits64)
	td, ts := hd>>topShift, hs>>topShift
	switch {
	case td == ts:
		d0, d1, d2 = d0+s0, d1+s1, d2+s2
	case td == ts+1:
		d1, d2 = d1+s0, d2+s1
	case td == ts+2:
		d2 += s0
	case td > ts:
	case ts == td+1:
		d0, d1, d2 = s0, s1+d0, s2+d1
	case ts == td+2:
		d0, d1, d2 = s0, s1, s2+d0
	default:
		d0, d1, d2 = s0, s1, s2
	}
	put64(d, mergeHeader(hd, hs), d0, d1, d2)
}

// add32Shift is add64Shift with two limbs.
func add32Shift(d []byte, a0, a1, b0, b1 uint64) {
	if a0|a1 == 0 { // the empty sum is the identity
		le.PutUint64(d, b0)
		le.PutUint64(d[8:], b1)
		return
	}
	hd, d0, d1 := header32(a0, a1), limb(a0, limbBits32), limb(a1, limbBits32)
	hs, s0, s1 := header32(b0, b1), limb(b0, limbBits32), limb(b1, limbBits32)
	td, ts := hd>>topShift, hs>>topShift
	switch {
	case td == ts:
		d0, d1 = d0+s0, d1+s1
	case td == ts+1:
		d1 += s0
	case td > ts:
	case ts == td+1:
		d0, d1 = s0, s1+d0
	default:
		d0, d1 = s0, s1
	}
	put32(d, mergeHeader(hd, hs), d0, d1)
}

// mergeHeader keeps the larger top bin and ORs the sticky flags.
func mergeHeader(hd, hs uint64) uint64 {
	return (hd|hs)&flagMask | max(hd, hs)>>topShift<<topShift
}

// ToF64 rounds each accumulator of acc to the nearest float64 (ties to even) into dst. dst may
// start where acc starts (rounding in place): float i is written after accumulator i is read,
// and its bytes lie below accumulator i+1's.
func ToF64(dst []float64, acc []byte) {
	if useAsm {
		toF64Asm(dst, acc)
		return
	}
	toF64Go(dst, acc)
}

func toF64Go(dst []float64, acc []byte) {
	acc = acc[:len(dst)*Acc64Bytes]
	for i := range dst {
		a := acc[i*Acc64Bytes : i*Acc64Bytes+Acc64Bytes : i*Acc64Bytes+Acc64Bytes]
		w0, w1, w2 := le.Uint64(a), le.Uint64(a[8:]), le.Uint64(a[16:]) // get64, written out
		l0, l1, l2 := limb(w0, limbBits64), limb(w1, limbBits64), limb(w2, limbBits64)
		e2 := binBits*(int(w1>>61|w2>>60<<3)-2) - 1074
		// The common case through the FPU. The exact value is v * 2^e2 with v the limbs'
		// 128-bit sum; top, its 64 highest bits from the leading one down, with a sticky one
		// in bit 0 when a bit below them is set, rounds by float64(top) exactly as v would
		// (the rounding position, bit 11 or above, is well clear of bit 0), and the scaling
		// by 2^k is exact: the result is at least 2^(63+e2), normal, whenever v >= 2^63; a
		// smaller v sits in lo unshifted (hi = 0), where float64 rounds it correctly and the
		// product, a multiple of 2^e2 >= 2^-1074, is exact even if subnormal. Overflow gives
		// ±Inf exactly when the correctly rounded value exceeds the largest float, as
		// roundBits does. e2 in [-1022, 942] (top bins 4 to 65, the largest a float64 reaches)
		// keeps 2^k a normal float; NaN, ±Inf (header bits 0-2: word 0's bits 60-62) and zero
		// sums (the sign of zero comes from the flags) go to finish.
		if w0&(7<<limbBits64) == 0 && uint(e2+1022) <= 942+1022 {
			lo, c := bits.Add64(uint64(l2), uint64(l1)<<32, 0)
			hi := uint64(l2>>63) + uint64(l1>>32) + uint64(l0) + c
			sign := hi >> 63
			mask := -sign
			lo, c = bits.Add64(lo^mask, sign, 0)
			hi = hi ^ mask + c
			if hi != 0 { // the leading one in hi: normalise
				z := uint(bits.LeadingZeros64(hi))
				top := hi<<z | lo>>1>>(63-z)
				sticky := lo << z
				// top has bit 63 set: float64(top) is float64(top>>1 | top&1) * 2 (what the
				// compiler emits for a uint64, with a branch), the sticky bit kept in bit 0.
				y := top>>1 | (top|(sticky|-sticky)>>63)&1
				r := float64(int64(y)) * math.Float64frombits(uint64(e2+65-int(z)+1023)<<52)
				dst[i] = math.Float64frombits(math.Float64bits(r) | sign<<63)
				continue
			}
			if lo != 0 {
				r := float64(lo) * math.Float64frombits(uint64(e2+1023)<<52)
				dst[i] = math.Float64frombits(math.Float64bits(r) | sign<<63)
				continue
			}
		}
		dst[i] = math.Float64frombits(finish(header64(w0, w1, w2), l0, l1, l2, e2, &f64))
	}
}

// ToF32 rounds each accumulator of acc to the nearest float32 (ties to even) into dst,
// directly from the exact window (no double rounding through float64). dst may start where acc
// starts, as for ToF64.
func ToF32(dst []float32, acc []byte) {
	if useAVX512 {
		toF32Asm(dst, acc)
		return
	}
	toF32Go(dst, acc)
}

func toF32Go(dst []float32, acc []byte) {
	acc = acc[:len(dst)*Acc32Bytes]
	for i := range dst {
		a := acc[i*Acc32Bytes : i*Acc32Bytes+Acc32Bytes : i*Acc32Bytes+Acc32Bytes]
		w0, w1 := le.Uint64(a), le.Uint64(a[8:]) // get32, written out
		l0, l1 := limb(w0, limbBits32), limb(w1, limbBits32)
		e2 := binBits*(int(w1>>limbBits32)-1) - 149
		// The common case through the FPU: when the value is an int64 v times 2^e2,
		// float32(v) is the one correct rounding (the conversion rounds to nearest even) and
		// the scaling through float64 is exact, or overflows to ±Inf exactly when the correctly
		// rounded value would. A subnormal result needs no second rounding either: it is an
		// integer below 2^23 times 2^-149 (no limb holds bits below that), so v is exact.
		// NaN and ±Inf are header bits 0-2, word 0's bits 59-61.
		if w0&(7<<limbBits32) == 0 && uint64(l0+1<<30) < 1<<31 {
			if v := l0<<binBits + l1; v != 0 {
				dst[i] = float32(float64(float32(v)) * math.Float64frombits(uint64(e2+1023)<<52))
				continue
			}
		}
		dst[i] = math.Float32frombits(uint32(finish(header32(w0, w1), 0, l0, l1, e2, &f32)))
	}
}
