// Package fuzzcheck holds what the fuzz targets of every package check besides their own
// properties: that a decoder's allocations follow the bytes it was given, not the lengths those
// bytes claim.
package fuzzcheck

import (
	"runtime/metrics"
	"testing"
)

// Slack is what any decode may allocate beyond its bound: small objects are counted a whole
// span at a time when a span is refilled (and every span is handed back at each collection), so
// a call that allocates a few small objects of many sizes can count a few hundred KiB. A forged
// length asks for far more.
const Slack = 1 << 20

var allocs = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

// heapAllocated is the bytes allocated on the heap since the program started. Large objects
// (over 32 KiB, the ones a forged length would ask for) are counted when allocated.
func heapAllocated() uint64 {
	metrics.Read(allocs)
	return allocs[0].Value.Uint64()
}

// Bounded runs decode and fails t when it allocated more than perByte bytes for each of the n
// input bytes (plus Slack): a length field of 2^60 must cost an error, not 2^60 bytes.
func Bounded(t testing.TB, what string, n int, perByte uint64, decode func()) {
	t.Helper()
	before := heapAllocated()
	decode()
	got := heapAllocated() - before
	if limit := perByte*uint64(n) + Slack; got > limit {
		t.Fatalf("%s: %d input bytes made it allocate %d bytes (bound %d)", what, n, got, limit)
	}
}
