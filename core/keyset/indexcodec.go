package keyset

import (
	"encoding/binary"
	"kylix/core/kx"
	"math"
	"math/bits"

	"github.com/pierrec/lz4/v4"
)

// Index-list compression for config messages (compress=lz4, and compress=auto where the
// measured link makes it pay).
//
// A config message carries sorted hashed keys. Hashed keys are uniform over 2^64, so their gaps
// are about 2^64/n and the list is nearly incompressible. The original indices behind them are
// not: sorted, their gaps are about 1/density, a byte or two each on power-law data. So the
// encoder undoes the hash (Unmix, a bijection), sorts the originals (LSD radix on the bits they
// use), writes each gap minus one (a dense run becomes zeros), shuffles the bytes so that byte b
// of every gap sits together (the high planes are nearly all zero) and compresses that with lz4.
//
// The receiver's merge (treeMerge) takes hash-sorted lists and stays one streaming pass: the
// decoder hashes the decoded indices and puts them back in hash order with a two-pass radix sort
// that works in cache (hashSort). Decoding checks everything it reads: a corrupt or hostile
// payload gives CodeInternal naming the sender, never a panic or a write outside the output.
//
// Layout of one list of n keys (n travels in the message header): ceil(n/codecChunk) chunks,
// each covering the next codecChunk keys (fewer in the last):
//
//	byte 0       mode<<4 | w: w in 1..8 is the bytes per gap; mode 0: the w planes follow as
//	             they are, mode 1: they follow as one lz4 block
//	bytes 1..4   payload length, little-endian
//	payload      planes 0..w-1, plane b holding byte b of each of the chunk's gaps
//
// Gaps run on across chunks: gap j is x_j - x_{j-1} - 1 with x_{-1} = -1. Chunks bound the
// scratch (a chunk's planes fit the lz4 window and L2), let the width follow the local density,
// and let the decoder check every chunk's framing, and that its payload can expand to it,
// before it allocates the keys (checkList).

const (
	codecChunk   = 1 << 13 // keys per chunk
	codecHdr     = 5       // chunk header bytes
	codecModeRaw = 0
	codecModeLZ4 = 1
	// lz4 expands a block at most about 255-fold (a match length costs one byte per 255); a
	// chunk claiming more bytes than this for its payload is corrupt, refused before allocating.
	// Honest dense runs come close (a chunk of all-zero gaps: 8192 keys in 54 lz4 bytes), so
	// this, not a tighter bound, is what a list's keys per byte received are held to.
	codecMaxExpansion = 256
)

// IndexEncoder holds the scratch of encoding, reused message after message (not concurrently).
type IndexEncoder struct {
	orig, tmp []uint64
	gaps      [codecChunk]uint64
	planes    []byte
	lz        lz4.Compressor
	set       []uint64 // appendRows' distinct keys
	bits      []byte   // and repeat bitmap
}

// AppendList appends the encoding of keys (sorted, unique hashed keys) to dst.
func (e *IndexEncoder) AppendList(dst []byte, keys []uint64) []byte {
	n := len(keys)
	if n == 0 {
		return dst
	}
	e.orig = growU64(e.orig, n)
	e.tmp = growU64(e.tmp, n)
	x := e.orig[:n]
	var all uint64
	for i, k := range keys {
		v := Unhash(k)
		x[i] = v
		all |= v
	}
	x = radixSortU64(x, e.tmp[:n], bits.Len64(all))
	if cap(e.planes) < 8*codecChunk {
		e.planes = make([]byte, 8*codecChunk)
	}
	prev := ^uint64(0) // x_{-1} = -1: the first gap is x_0
	for lo := 0; lo < n; lo += codecChunk {
		c := min(codecChunk, n-lo)
		g := e.gaps[:c]
		var or uint64
		for j, v := range x[lo : lo+c] {
			g[j] = v - prev - 1
			or |= g[j]
			prev = v
		}
		w := max(1, (bits.Len64(or)+7)/8)
		p := e.planes[:c*w]
		for b := 0; b < w; b++ {
			pb, s := p[b*c:(b+1)*c], 8*b
			for j, v := range g {
				pb[j] = byte(v >> s)
			}
		}
		dst = e.appendChunk(dst, p, w, (len(p)+codecMaxExpansion-1)/codecMaxExpansion)
	}
	return dst
}

// appendChunk appends one chunk: its planes lz4-compressed when that makes them smaller and
// leaves at least minSize payload bytes (what the decoder holds the chunk to), stored otherwise.
func (e *IndexEncoder) appendChunk(dst, planes []byte, w, minSize int) []byte {
	h := len(dst)
	bound := lz4.CompressBlockBound(len(planes))
	dst = growBytes(dst, codecHdr+bound)[:h+codecHdr+bound]
	body := dst[h+codecHdr:]
	mode, size := codecModeLZ4, 0
	if k, err := e.lz.CompressBlock(planes, body); err == nil && k >= max(1, minSize) && k < len(planes) {
		size = k
	} else { // incompressible: store the planes
		mode, size = codecModeRaw, copy(body, planes)
	}
	dst[h] = byte(mode<<4 | w)
	binary.LittleEndian.PutUint32(dst[h+1:], uint32(size))
	return dst[:h+codecHdr+size]
}

// IndexDecoder holds the scratch of decoding.
type IndexDecoder struct {
	planes []byte
	tmp    []uint64
	bits   []byte // decodeRows' repeat bitmap
}

// DecodeList decodes the n keys of one list from b, which must hold exactly that list, and
// returns them hash-sorted in a new slice. from is the sender, named in errors.
func (d *IndexDecoder) DecodeList(b []byte, n int, from int) ([]uint64, error) {
	if err := checkList(b, n, from); err != nil || n == 0 {
		return nil, err
	}
	x := make([]uint64, n)
	if err := d.decodeSorted(b, x, from); err != nil {
		return nil, err
	}
	d.tmp = growU64(d.tmp, n)
	hashSort(x, d.tmp[:n])
	return x, nil
}

// corrupt is the error of a compressed list that does not decode.
func corrupt(from, n, size int, why string, args ...any) error {
	return kx.Errorf(kx.CodeInternal, "rank %d sent a corrupt compressed index list (%d keys in %d bytes): "+why,
		append([]any{kx.RankRef(from), n, size}, args...)...)
}

// checkList checks the framing of a list of n keys in b without decoding or allocating: every
// chunk's header is whole, its mode and width are valid, its payload is in b and can hold the
// chunk (raw: exactly; lz4: within codecMaxExpansion), and nothing follows the last chunk. So
// the n keys a list claims are at most codecMaxExpansion per byte of b (n <= 256·len(b)), and
// the decoder may allocate them once it passes.
func checkList(b []byte, n int, from int) error {
	bad := func(why string, args ...any) error { return corrupt(from, n, len(b), why, args...) }
	switch {
	case n == 0 && len(b) != 0:
		return bad("bytes for no keys")
	case n < 0 || n > maxListKeys || uint64(n) > codecMaxExpansion*uint64(len(b)):
		return bad("more keys than the bytes can hold")
	}
	off := 0
	for lo := 0; lo < n; lo += codecChunk {
		c := min(codecChunk, n-lo)
		if len(b)-off < codecHdr {
			return bad("chunk %d is cut short", lo/codecChunk)
		}
		mode, w := int(b[off]>>4), int(b[off]&15)
		size := int(binary.LittleEndian.Uint32(b[off+1:]))
		off += codecHdr
		if w < 1 || w > 8 || mode > codecModeLZ4 || size > len(b)-off {
			return bad("chunk %d has mode %d, width %d, %d payload bytes", lo/codecChunk, mode, w, size)
		}
		if mode == codecModeRaw && size != c*w {
			return bad("chunk %d holds %d bytes, want %d", lo/codecChunk, size, c*w)
		}
		if mode == codecModeLZ4 && uint64(c*w) > codecMaxExpansion*uint64(size) {
			return bad("chunk %d claims %d bytes from %d lz4 bytes, beyond lz4's expansion", lo/codecChunk, c*w, size)
		}
		off += size
	}
	if off != len(b) {
		return bad("%d bytes after the last chunk", len(b)-off)
	}
	return nil
}

// decodeSorted decodes the len(x) keys of one list from b (checked by checkList) into x as the
// codec wrote them: original indices (unhashed), ascending.
func (d *IndexDecoder) decodeSorted(b []byte, x []uint64, from int) error {
	n := len(x)
	bad := func(why string, args ...any) error { return corrupt(from, n, len(b), why, args...) }
	if cap(d.planes) < 8*codecChunk {
		d.planes = make([]byte, 8*codecChunk)
	}
	next := uint64(0) // x_{j-1} + 1: the smallest allowed next index
	off := 0
	for lo := 0; lo < n; lo += codecChunk {
		c := min(codecChunk, n-lo)
		mode, w := int(b[off]>>4), int(b[off]&15)
		size := int(binary.LittleEndian.Uint32(b[off+1:]))
		off += codecHdr
		payload := b[off : off+size]
		off += size
		p := payload
		if mode == codecModeLZ4 {
			p = d.planes[:c*w]
			k, err := lz4.UncompressBlock(payload, p)
			if err != nil || k != c*w {
				return bad("chunk %d does not decompress to %d bytes", lo/codecChunk, c*w)
			}
		}
		for j := 0; j < c; j++ {
			var g uint64
			for k := 0; k < w; k++ {
				g |= uint64(p[k*c+j]) << (8 * k)
			}
			if g > math.MaxInt64-next { // indices are int64 >= 0, strictly increasing
				return bad("index %d overflows", lo+j)
			}
			x[lo+j] = next + g
			next += g + 1
		}
	}
	return nil
}

// growU64 returns s with room for n elements (contents not kept).
func growU64(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n)
	}
	return s[:n]
}

// growBytes returns b with room for k more bytes beyond len(b) (len unchanged).
func growBytes(b []byte, k int) []byte {
	if cap(b)-len(b) >= k {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+k))
	copy(nb, b)
	return nb
}
