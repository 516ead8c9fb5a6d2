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

// get64 and get32 read an accumulator.
func get64(a []byte) (h uint64, l0, l1, l2 int64) {
	_ = a[Acc64Bytes-1]
	w0, w1, w2 := le.Uint64(a), le.Uint64(a[8:]), le.Uint64(a[16:])
	return header64(w0, w1, w2), limb(w0, limbBits64), limb(w1, limbBits64), limb(w2, limbBits64)
}

func get32(a []byte) (h uint64, l0, l1 int64) {
	_ = a[Acc32Bytes-1]
	w0, w1 := le.Uint64(a), le.Uint64(a[8:])
	return header32(w0, w1), limb(w0, limbBits32), limb(w1, limbBits32)
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
		h, p0, rest, neg := split(math.Float64bits(x), 52, 63)
		put64(acc[i*Acc64Bytes:i*Acc64Bytes+Acc64Bytes], h,
			(int64(p0)^neg)-neg, (int64(rest>>binBits)^neg)-neg, (int64(rest&binMask)^neg)-neg)
	}
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
		h, p0, rest, neg := split(uint64(math.Float32bits(x)), 23, 31)
		// The 24-bit significand leaves at most 23 bits for the second bin: rest's top half.
		put32(acc[i*Acc32Bytes:i*Acc32Bytes+Acc32Bytes], h, (int64(p0)^neg)-neg, (int64(rest>>binBits)^neg)-neg)
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
func AddScatterF64(dst []byte, vals []float64, idx []int32) { addScatterValues(dst, vals, idx) }

// AddScatterF32 is AddScatterF64 for F32.
func AddScatterF32(dst []byte, vals []float32, idx []int32) { addScatterValues(dst, vals, idx) }

func addScatterValues[T float32 | float64](dst []byte, vals []T, idx []int32) {
	// Through a stack buffer that stays in L1: one call per chunk rather than per value.
	var buf [chunk * Acc64Bytes]byte
	idx = idx[:len(vals)]
	for len(vals) > 0 {
		n := min(len(vals), chunk)
		switch v := any(vals[:n]).(type) {
		case []float64:
			FromF64(buf[:n*Acc64Bytes], v)
			addRows64(dst, buf[:n*Acc64Bytes], idx[:n])
		case []float32:
			FromF32(buf[:n*Acc32Bytes], v)
			addRows32(dst, buf[:n*Acc32Bytes], idx[:n])
		}
		vals, idx = vals[n:], idx[n:]
	}
}

// chunk is the number of values AddScatterF64/F32 convert at a time (6 KiB of F64
// accumulators on the stack).
const chunk = 256

// addSame adds two words of accumulators with the same top bin: the limbs add modulo
// 2^lb in place and, the top bins being equal, the merged header is the OR of the slices.
func addSame(a, b uint64, lb uint) uint64 {
	const all = ^uint64(0)
	return (a+b)&(all>>(64-lb)) | (a|b)&(all<<lb)
}

// addRows64 adds src's accumulators into dst's, the j-th into the j-th or, with idx, into the
// idx[j]-th. The common case, both windows on the same top bin, works on the packed words in
// the loop (a call per value costs as much as the work); the others go to add64Shift.
func addRows64(dst, src []byte, idx []int32) {
	for j := range len(src) / Acc64Bytes {
		o := j * Acc64Bytes
		if idx != nil {
			o = int(idx[j]) * Acc64Bytes
		}
		d := dst[o : o+Acc64Bytes : o+Acc64Bytes]
		s := src[j*Acc64Bytes : j*Acc64Bytes+Acc64Bytes : j*Acc64Bytes+Acc64Bytes]
		a0, a1, a2 := le.Uint64(d), le.Uint64(d[8:]), le.Uint64(d[16:])
		b0, b1, b2 := le.Uint64(s), le.Uint64(s[8:]), le.Uint64(s[16:])
		if a0|a1|a2 == 0 { // the empty sum (zero bytes) is the identity: the sum is src, bit for bit
			le.PutUint64(d, b0)
			le.PutUint64(d[8:], b1)
			le.PutUint64(d[16:], b2)
			continue
		}
		// The top bin is header bits 5-11: the top 3 bits of word 1 and the top 4 of word 2.
		if (a1^b1)>>61|(a2^b2)>>60 != 0 {
			add64Shift(d, s)
			continue
		}
		le.PutUint64(d, addSame(a0, b0, limbBits64))
		le.PutUint64(d[8:], addSame(a1, b1, limbBits64))
		le.PutUint64(d[16:], addSame(a2, b2, limbBits64))
	}
}

// addRows32 is addRows64 for F32.
func addRows32(dst, src []byte, idx []int32) {
	for j := range len(src) / Acc32Bytes {
		o := j * Acc32Bytes
		if idx != nil {
			o = int(idx[j]) * Acc32Bytes
		}
		d := dst[o : o+Acc32Bytes : o+Acc32Bytes]
		s := src[j*Acc32Bytes : j*Acc32Bytes+Acc32Bytes : j*Acc32Bytes+Acc32Bytes]
		a0, a1 := le.Uint64(d), le.Uint64(d[8:])
		b0, b1 := le.Uint64(s), le.Uint64(s[8:])
		if a0|a1 == 0 { // the empty sum is the identity
			le.PutUint64(d, b0)
			le.PutUint64(d[8:], b1)
			continue
		}
		// The top bin is header bits 5-9: the top 5 bits of word 1.
		if (a1^b1)>>59 != 0 {
			add32Shift(d, s)
			continue
		}
		le.PutUint64(d, addSame(a0, b0, limbBits32))
		le.PutUint64(d[8:], addSame(a1, b1, limbBits32))
	}
}

// add64Shift aligns the two windows on the higher top bin and adds limb by limb; the limbs of
// the lower window that fall below the higher one's bottom are dropped. No carries move
// between limbs, so every kept limb is the plain sum of the same per-contribution parts
// whatever the grouping (doc.go has the argument). addRows64 handles equal top bins itself;
// the case stays here so that the function is right for any pair.
func add64Shift(d, s []byte) {
	hd, d0, d1, d2 := get64(d)
	hs, s0, s1, s2 := get64(s)
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
func add32Shift(d, s []byte) {
	hd, d0, d1 := get32(d)
	hs, s0, s1 := get32(s)
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

// ToF64 rounds each accumulator of acc to the nearest float64 (ties to even) into dst.
func ToF64(dst []float64, acc []byte) {
	acc = acc[:len(dst)*Acc64Bytes]
	for i := range dst {
		h, l0, l1, l2 := get64(acc[i*Acc64Bytes : i*Acc64Bytes+Acc64Bytes])
		dst[i] = math.Float64frombits(finish(h, l0, l1, l2, binBits*(int(h>>topShift)-2)-1074, &f64))
	}
}

// ToF32 rounds each accumulator of acc to the nearest float32 (ties to even) into dst,
// directly from the exact window (no double rounding through float64).
func ToF32(dst []float32, acc []byte) {
	acc = acc[:len(dst)*Acc32Bytes]
	for i := range dst {
		h, l0, l1 := get32(acc[i*Acc32Bytes : i*Acc32Bytes+Acc32Bytes])
		e2 := binBits*(int(h>>topShift)-1) - 149
		// The common case through the FPU: when the value is an int64 v times 2^e2,
		// float32(v) is the one correct rounding (the conversion rounds to nearest even) and
		// the scaling through float64 is exact, or overflows to ±Inf exactly when the correctly
		// rounded value would. A subnormal result needs no second rounding either: it is an
		// integer below 2^23 times 2^-149 (no limb holds bits below that), so v is exact.
		if h&(flagNaN|flagPInf|flagNInf) == 0 && uint64(l0+1<<30) < 1<<31 {
			if v := l0<<binBits + l1; v != 0 {
				dst[i] = float32(float64(float32(v)) * math.Float64frombits(uint64(e2+1023)<<52))
				continue
			}
		}
		dst[i] = math.Float32frombits(uint32(finish(h, 0, l0, l1, e2, &f32)))
	}
}
