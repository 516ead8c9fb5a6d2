//go:build !amd64 || noasm

package rsum

func prefetchRows(base *byte, idx []int32, size int) {}

// SetAsm reports that there are no assembly loops here.
func SetAsm(on bool) bool { return false }

func addValues64(dst []byte, vals []float64, idx []int32, fresh int) int {
	return addValues64Go(dst, vals, idx, fresh)
}

func addValues32(dst []byte, vals []float32, idx []int32, fresh int) int {
	return addValues32Go(dst, vals, idx, fresh)
}
