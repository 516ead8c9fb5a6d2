//go:build !amd64 || noasm

package rsum

// No assembly loops here: useAsm is false and the Asm functions are never called.
const useAsm, useAVX512 = false, false

func prefetchRows(base *byte, idx []int32, size int) {}

// SetAsm reports that there are no assembly loops here.
func SetAsm(on, avx512 bool) (bool, bool) { return false, false }

func addValues64Asm(dst []byte, vals []float64, idx []int32, fresh int) int {
	return addValues64Go(dst, vals, idx, fresh)
}

func addValues32Asm(dst []byte, vals []float32, idx []int32, fresh int) int {
	return addValues32Go(dst, vals, idx, fresh)
}

func toF64Asm(dst []float64, acc []byte) { toF64Go(dst, acc) }

func toF32Asm(dst []float32, acc []byte) { toF32Go(dst, acc) }
