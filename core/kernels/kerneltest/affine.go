// Package kerneltest holds the test user op shared by the kernel tests and the butterfly tests:
// an associative, non-commutative op that records how it was called.
package kerneltest

import (
	"encoding/binary"
	"fmt"
	"kylix/core/kx"
	"sync"
	"unsafe"
)

// Affine is an associative, non-commutative op on raw element bits: an element of 2h bits
// holds (a, b), the map x -> a·x + b mod 2^h, and inout (+) in is "inout, then in":
// (a1, b1) (+) (a2, b2) = (a1·a2, a2·b1 + b2). A wrong operand order or a wrong fold order
// shows up at once. It reads bits only, so float dtypes carry arbitrary patterns (NaNs too).
func Affine(d kx.Dtype, x, y uint64) uint64 {
	h := uint(d.Size() * 4)
	mask := uint64(1)<<h - 1
	a1, b1 := x&mask, x>>h&mask
	a2, b2 := y&mask, y>>h&mask
	return (a1*a2)&mask | ((a2*b1+b2)&mask)<<h
}

// UserOpStats records what the callback saw; Bad holds the first broken promise.
type UserOpStats struct {
	mu       sync.Mutex
	Calls    int
	MaxCount int
	Bad      string
}

// Reset forgets every call.
func (s *UserOpStats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls, s.MaxCount, s.Bad = 0, 0, ""
}

// Snapshot reads the record.
func (s *UserOpStats) Snapshot() (calls, maxCount int, bad string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Calls, s.MaxCount, s.Bad
}

// Check records one call and the first promise it breaks: count in 1..maxCount, both operands
// count elements, aligned and not overlapping.
func (s *UserOpStats) Check(inout, in []byte, count, maxCount int, d kx.Dtype) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls++
	s.MaxCount = max(s.MaxCount, count)
	size := d.Size()
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(inout)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	switch {
	case s.Bad != "":
	case !d.Valid():
		s.Bad = fmt.Sprintf("dtype %d", d)
	case count < 1 || count > maxCount:
		s.Bad = fmt.Sprintf("count %d", count)
	case len(inout) != count*size || len(in) != count*size:
		s.Bad = fmt.Sprintf("count %d but %d and %d bytes", count, len(inout), len(in))
	case a0%uintptr(size) != 0 || b0%uintptr(size) != 0:
		s.Bad = fmt.Sprintf("misaligned %s operands %#x %#x", d, a0, b0)
	case a0 < b0+uintptr(len(in)) && b0 < a0+uintptr(len(inout)):
		s.Bad = "inout and in overlap"
	}
}

// AffineFn is Affine as a user op (kernels.UserFn) that records its calls in st; maxCount is
// the most elements a call may be given.
func AffineFn(st *UserOpStats, maxCount int) func(inout, in []byte, count int, d kx.Dtype) {
	return func(inout, in []byte, count int, d kx.Dtype) {
		st.Check(inout, in, count, maxCount, d)
		for i := range count {
			SetElem(d, inout, i, Affine(d, Elem(d, inout, i), Elem(d, in, i)))
		}
	}
}

// Elem reads element i of b as raw bits.
func Elem(d kx.Dtype, b []byte, i int) uint64 {
	if d.Size() == 4 {
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return binary.LittleEndian.Uint64(b[8*i:])
}

// SetElem writes element i of b from raw bits.
func SetElem(d kx.Dtype, b []byte, i int, v uint64) {
	if d.Size() == 4 {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(b[8*i:], v)
}
