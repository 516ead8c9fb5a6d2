package keyset

import "unsafe"

// Keys travel as their in-memory bytes: hosts are little-endian (amd64, arm64), and this
// avoids an encode pass over every index on every layer.

// WordBytes views words as their bytes, without copying.
func WordBytes(k []uint64) []byte {
	if len(k) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&k[0])), len(k)*8)
}

// BytesWords views b as keys; b comes from a Go allocation or an 8-aligned offset in one.
func BytesWords(b []byte) []uint64 {
	if len(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}
