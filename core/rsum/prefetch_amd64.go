//go:build amd64 && !noasm

package rsum

// prefetchRows asks for the rows idx[j] of an accumulator vector at base, size bytes a row,
// to be brought into cache. Every index must be a row of the vector.
//
//go:noescape
func prefetchRows(base *byte, idx []int32, size int)
