package rsum

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	// Acc32Bytes and Acc64Bytes are the sizes of one accumulator: a header word and two (F32)
	// or three (F64) limbs of 8 bytes each. See doc.go for the layout.
	Acc32Bytes = 8 + 8*limbs32
	Acc64Bytes = 8 + 8*limbs64

	limbs32 = 2
	limbs64 = 3

	// binBits is the payload width of a limb. 32 leaves 31 bits of carry headroom in an int64,
	// so 2^31 contributions to one index never overflow a limb (see doc.go).
	binBits = 32
	binMask = 1<<binBits - 1

	// Header word: the top bin in the low byte, sticky flags above it. Zero bytes are the
	// identity: top bin 0 (the floor), no flags, zero limbs.
	topMask  = 0xff
	flagNaN  = 1 << 8
	flagPInf = 1 << 9
	flagNInf = 1 << 10
	// flagNegZero and flagOther keep IEEE's sign of a zero sum without depending on order:
	// the sum is -0 only when every contribution was -0.
	flagNegZero = 1 << 11
	flagOther   = 1 << 12
)

var le = binary.LittleEndian

// AccBytes returns the accumulator bytes per value: 32 for F64, 24 for F32.
func AccBytes(isF64 bool) int {
	if isF64 {
		return Acc64Bytes
	}
	return Acc32Bytes
}

// Identity sets every accumulator in acc to the empty sum (zero bytes).
func Identity(acc []byte) { clear(acc) }

// writeSpecial writes the accumulator of a zero, infinite or NaN contribution: flags only, no
// limbs, and the top bin at the floor, so the top bin stays the largest bin of the finite
// nonzero contributions.
func writeSpecial(a []byte, neg, isZero, isInf bool) {
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
	le.PutUint64(a, h)
	clear(a[8:])
}

// place returns, for a finite nonzero value's biased exponent e and stored fraction m, the top
// bin, the absolute position of the significand's lowest bit (position 0 is the lowest
// subnormal bit; subnormals share the lowest normal exponent, without the implicit bit) and
// the significand.
func place(e, m, implicit uint64) (top, pos, sig uint64) {
	if e != 0 {
		pos = e - 1
		m |= implicit
	}
	return (pos + 63 - uint64(bits.LeadingZeros64(m))) / binBits, pos, m
}

// FromF64 writes the accumulator of each value of vals into acc (len(acc) must be
// len(vals)*Acc64Bytes). Exact: a float64 spans at most three 32-bit bins.
func FromF64(acc []byte, vals []float64) {
	acc = acc[:len(vals)*Acc64Bytes]
	for i, x := range vals {
		from64(acc[i*Acc64Bytes:i*Acc64Bytes+Acc64Bytes], x)
	}
}

func from64(a []byte, x float64) {
	_ = a[Acc64Bytes-1]
	b := math.Float64bits(x)
	e := b >> 52 & 0x7ff
	m := b & (1<<52 - 1)
	if e == 0x7ff || b<<1 == 0 {
		writeSpecial(a, b>>63 != 0, b<<1 == 0, m == 0)
		return
	}
	top, pos, m := place(e, m, 1<<52)
	// Place the significand against the window's bottom, 32*(top-2): at most 96 bits.
	// Unsigned shifts of 64 or more give 0, which makes this a branch-free 128-bit shift.
	sh := pos + 2*binBits - binBits*top
	lo := m << sh
	hi := m<<(sh-64) | m>>(64-sh)
	neg := -int64(b >> 63)
	le.PutUint64(a, top|flagOther)
	le.PutUint64(a[8:], uint64((int64(hi)^neg)-neg))
	le.PutUint64(a[16:], uint64((int64(lo>>binBits)^neg)-neg))
	le.PutUint64(a[24:], uint64((int64(lo&binMask)^neg)-neg))
}

// FromF32 writes the accumulator of each value of vals into acc (len(acc) must be
// len(vals)*Acc32Bytes). Exact: a float32 spans at most two 32-bit bins.
func FromF32(acc []byte, vals []float32) {
	acc = acc[:len(vals)*Acc32Bytes]
	for i, x := range vals {
		from32(acc[i*Acc32Bytes:i*Acc32Bytes+Acc32Bytes], x)
	}
}

func from32(a []byte, x float32) {
	_ = a[Acc32Bytes-1]
	b := math.Float32bits(x)
	e := uint64(b >> 23 & 0xff)
	m := uint64(b & (1<<23 - 1))
	if e == 0xff || b<<1 == 0 {
		writeSpecial(a, b>>31 != 0, b<<1 == 0, m == 0)
		return
	}
	top, pos, m := place(e, m, 1<<23)
	v := m << (pos + binBits - binBits*top) // at most 64 bits against the bottom, 32*(top-1)
	neg := -int64(b >> 31)
	le.PutUint64(a, top|flagOther)
	le.PutUint64(a[8:], uint64((int64(v>>binBits)^neg)-neg))
	le.PutUint64(a[16:], uint64((int64(v&binMask)^neg)-neg))
}

// Add adds src into dst element by element (dst[i] += src[i]); both hold the same number of
// accumulators of the given type. The operation is exactly associative and commutative.
func Add(isF64 bool, dst, src []byte) {
	if len(dst) != len(src) {
		panic("rsum: Add: dst and src lengths differ")
	}
	if isF64 {
		for i := 0; i+Acc64Bytes <= len(dst); i += Acc64Bytes {
			add64(dst[i:i+Acc64Bytes], src[i:i+Acc64Bytes])
		}
		return
	}
	for i := 0; i+Acc32Bytes <= len(dst); i += Acc32Bytes {
		add32(dst[i:i+Acc32Bytes], src[i:i+Acc32Bytes])
	}
}

// AddScatter adds src's j-th accumulator into dst's idx[j]-th: dst[idx[j]] += src[j].
// Repeated indices accumulate; an index out of range panics.
func AddScatter(isF64 bool, dst, src []byte, idx []int32) {
	if isF64 {
		src = src[:len(idx)*Acc64Bytes]
		for j, i := range idx {
			o := int(i) * Acc64Bytes
			add64(dst[o:o+Acc64Bytes], src[j*Acc64Bytes:j*Acc64Bytes+Acc64Bytes])
		}
		return
	}
	src = src[:len(idx)*Acc32Bytes]
	for j, i := range idx {
		o := int(i) * Acc32Bytes
		add32(dst[o:o+Acc32Bytes], src[j*Acc32Bytes:j*Acc32Bytes+Acc32Bytes])
	}
}

// mergeHeader keeps the larger top bin and ORs the sticky flags.
func mergeHeader(hd, hs uint64) uint64 {
	return (hd|hs)&^topMask | max(hd&topMask, hs&topMask)
}

// add64 aligns the two windows on the higher top bin and adds limb by limb; the limbs of the
// lower window that fall below the higher one's bottom are dropped. No carries move between
// limbs, so every kept limb is the plain sum of the same per-contribution parts whatever the
// grouping (doc.go has the argument).
func add64(d, s []byte) {
	_, _ = d[Acc64Bytes-1], s[Acc64Bytes-1]
	hd, hs := le.Uint64(d), le.Uint64(s)
	td, ts := hd&topMask, hs&topMask
	d0, d1, d2 := int64(le.Uint64(d[8:])), int64(le.Uint64(d[16:])), int64(le.Uint64(d[24:]))
	s0, s1, s2 := int64(le.Uint64(s[8:])), int64(le.Uint64(s[16:])), int64(le.Uint64(s[24:]))
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
	le.PutUint64(d, mergeHeader(hd, hs))
	le.PutUint64(d[8:], uint64(d0))
	le.PutUint64(d[16:], uint64(d1))
	le.PutUint64(d[24:], uint64(d2))
}

// add32 is add64 with two limbs.
func add32(d, s []byte) {
	_, _ = d[Acc32Bytes-1], s[Acc32Bytes-1]
	hd, hs := le.Uint64(d), le.Uint64(s)
	td, ts := hd&topMask, hs&topMask
	d0, d1 := int64(le.Uint64(d[8:])), int64(le.Uint64(d[16:]))
	s0, s1 := int64(le.Uint64(s[8:])), int64(le.Uint64(s[16:]))
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
	le.PutUint64(d, mergeHeader(hd, hs))
	le.PutUint64(d[8:], uint64(d0))
	le.PutUint64(d[16:], uint64(d1))
}

// ToF64 rounds each accumulator of acc to the nearest float64 (ties to even) into dst.
func ToF64(dst []float64, acc []byte) {
	acc = acc[:len(dst)*Acc64Bytes]
	for i := range dst {
		a := acc[i*Acc64Bytes : i*Acc64Bytes+Acc64Bytes]
		h := le.Uint64(a)
		dst[i] = math.Float64frombits(finish(h,
			int64(le.Uint64(a[8:])), int64(le.Uint64(a[16:])), int64(le.Uint64(a[24:])),
			binBits*(int(h&topMask)-2)-1074, &f64))
	}
}

// ToF32 rounds each accumulator of acc to the nearest float32 (ties to even) into dst,
// directly from the exact window (no double rounding through float64).
func ToF32(dst []float32, acc []byte) {
	acc = acc[:len(dst)*Acc32Bytes]
	for i := range dst {
		a := acc[i*Acc32Bytes : i*Acc32Bytes+Acc32Bytes]
		h := le.Uint64(a)
		dst[i] = math.Float32frombits(uint32(finish(h,
			0, int64(le.Uint64(a[8:])), int64(le.Uint64(a[16:])),
			binBits*(int(h&topMask)-1)-149, &f32)))
	}
}
